"""`harness run` re-measures against the rule compare will judge by: the same --rel/--abs-us/--min-golden-us
(one definition, harness/cli/options.py), recorded in each sidecar's ``remeasure.rule``, and compare warns in one
line when its own rule differs from the one a run re-measured with."""

from __future__ import annotations

import json
import time

import pytest

from harness.cli import main
from harness.compare.compare import compare_files
from harness.compare.notes import remeasured_under
from harness.run.interleave import _Referee
from harness.verdict.remeasure import Board, Budget, Remeasure, remeasure_policy
from harness.verdict.rule import Rule
from tests.compare.test_referee import row
from tests.conftest import DATA


def _cli(capsys, *argv) -> tuple[int, str]:
    with pytest.raises(SystemExit) as ex:
        main([str(a) for a in argv])
    return int(ex.value.code or 0), capsys.readouterr().err


def test_the_policy_referees_with_the_rule_given_and_records_it():
    aiter = remeasure_policy(True, 12, 0.3)
    assert aiter.rule == {"rel": 1.005, "abs_us": 0.5, "min_golden_us": 4.0}
    loose = remeasure_policy(True, 12, 0.3, Rule(rel=1.10))
    assert loose.rule == {"rel": 1.10, "abs_us": 0.5, "min_golden_us": 4.0}
    # 7 % slower, 3 % noise: straddles AITER's 5.5 % limit at 10 µs; far below a 10 % + 0.5 µs one
    pair = [row(10.0), row(10.7, spread=0.03)]
    assert aiter.referee({"k": pair}) == set() and loose.referee({"k": pair}) == {"k"}
    assert remeasure_policy(False, 12, 0.3, Rule(rel=1.10)) is None


def test_the_run_records_the_rule_in_each_sidecar(tmp_path):
    outs = [tmp_path / "a.csv", tmp_path / "b.csv"]
    for o in outs:
        o.with_name(o.name + ".env.json").write_text(json.dumps({"env_name": o.stem}))
    policy = Remeasure(lambda cases: set(cases), Budget(), rule={"rel": 1.01, "abs_us": 0.5, "min_golden_us": 4.0})
    _Referee(Board(2), policy, outs, time.monotonic()).judge()  # nothing held: decided at once
    for o in outs:
        side = json.loads(o.with_name(o.name + ".env.json").read_text())
        assert side["remeasure"]["rule"] == {"rel": 1.01, "abs_us": 0.5, "min_golden_us": 4.0}
        assert side["remeasure"]["stopped"] == "decided"
    bare = Remeasure(lambda cases: set(cases), Budget())  # a caller that describes no rule: none is written
    _Referee(Board(2), bare, outs[:1], time.monotonic()).judge()
    fresh = tmp_path / "c.csv"
    fresh.with_name("c.csv.env.json").write_text("{}")
    _Referee(Board(2), bare, [fresh], time.monotonic()).judge()
    assert "rule" not in json.loads(fresh.with_name("c.csv.env.json").read_text())["remeasure"]


def test_compare_warns_once_when_the_run_remeasured_against_another_rule():
    rec = {"remeasure": {"rule": {"rel": 1.01, "abs_us": 0.5, "min_golden_us": 4.0}}}
    w = remeasured_under(rec, rec, Rule())
    assert w.startswith("golden and TOT re-measured undecided cases against another rule (tot > 1.01 x golden")
    assert "than this comparison's (tot > 1.005 x golden + 0.5 us, golden >= 4 us)" in w
    assert "--rel/--abs-us/--min-golden-us" in w and "\n" not in w
    assert remeasured_under(rec, {}, Rule(rel=1.01)) == ""  # the same rule
    assert remeasured_under({}, {}, Rule()) == "" and remeasured_under({"remeasure": {}}, {}, Rule()) == ""
    assert remeasured_under({}, rec, Rule()).startswith("TOT re-measured")
    assert "unreadable rule" in remeasured_under({"remeasure": {"rule": {"rel": "x"}}}, {}, Rule())


def test_compare_files_carries_the_warning(tmp_path):
    g, t = tmp_path / "g.csv", tmp_path / "t.csv"
    for src, dst in ((DATA / "golden.csv", g), (DATA / "tot.csv", t)):
        dst.write_bytes(src.read_bytes())
    side = {"env_name": "golden", "remeasure": {"rule": {"rel": 1.005, "abs_us": 0.5, "min_golden_us": 4.0}}}
    g.with_name("g.csv.env.json").write_text(json.dumps(side))
    assert not [w for w in compare_files(g, t).warnings if "re-measured" in w]
    assert [w for w in compare_files(g, t, Rule(abs_us=1.0)).warnings if "re-measured" in w]


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--rel", "1.01"], "--rel/--abs-us/--min-golden-us: the rule only referees re-measuring"),
        (["--with-env", "x", "--with-out", "y.csv", "--no-remeasure", "--abs-us", "1"], "only referees"),
        (["--with-env", "x", "--with-out", "y.csv", "--rel", "0.5"], "rel must be >= 1"),
        (["--with-env", "x", "--with-out", "y.csv", "--min-golden-us", "-1"], "min_golden_us must be a finite"),
    ],
)
def test_run_refuses_a_rule_it_cannot_use_in_one_line(capsys, tmp_path, extra, says):
    rc, err = _cli(capsys, "run", "--env", "x", "--suite", tmp_path / "s.yaml", "--out", tmp_path / "o.csv", *extra)
    assert rc == 2 and len(err.strip().splitlines()) == 1 and says in err, err
    assert not (tmp_path / "o.csv").exists()


def test_run_compare_and_calibrate_share_one_definition_of_the_rule_options():
    """The same option names, help and defaults (typer's view of each command's parameters)."""
    import typer.main

    from harness.cli import app

    cmd = typer.main.get_command(app)
    seen = {}
    for name in ("run", "compare", "calibrate"):
        params = {p.name: p for p in cmd.commands[name].params}
        seen[name] = [(params[k].opts, params[k].help, params[k].default) for k in ("rel", "abs_us", "min_golden_us")]
    assert seen["run"] == seen["compare"] == seen["calibrate"]
    assert [d for _, _, d in seen["run"]] == [1.005, 0.5, 4.0]

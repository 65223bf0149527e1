"""`harness bisect` refuses what it cannot stand behind, before measuring: releases equal to golden's or TOT's
version, releases out of order, an --out over its inputs or another's folder, a --resume with other options; a
release spec named like TOT keeps its own measurements; without matplotlib every file but the plot is written."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import harness.bisect.bisect as B
import harness.bisect.plan as P
import harness.bisect.render as R
from harness.bisect.model import Stack
from harness.envs.spec import load_env_spec
from harness.errors import HarnessError
from harness.outdir import MARKER
from tests.bisect.known_times import KnownTimes, comparison, const, plan

GOLDEN, BAD, GOOD = [40.0, 40.2, 40.1], [60.0, 60.1, 60.2], [30.0, 30.1, 30.2]
TIMES = {("golden", "step380"): GOLDEN, ("3.7.1", "step380"): GOOD, ("3.8.0", "step380"): BAD, ("tot", "step380"): BAD}
QUIET = {"log": lambda m: None}


@pytest.fixture
def cmp_csv(tmp_path) -> Path:
    return comparison(tmp_path / "in", {"step380": GOLDEN}, {"step380": BAD})


def known() -> KnownTimes:
    return KnownTimes({k: const(*v) for k, v in TIMES.items()})


def stacks(*versions: str) -> list[Stack]:
    """golden, the releases and TOT with these Triton versions (the first and last: golden and TOT)."""
    env = None
    out = [Stack("golden", "golden", env, versions[0])]
    out += [Stack(v, "release", env, v, asked=v) for v in versions[1:-1]]
    return [*out, Stack("tot", "tot", env, versions[-1])]


@pytest.fixture
def planned(tmp_path, cmp_csv, monkeypatch):
    """bisect() with make_plan replaced by a plan over known times (nothing probed); returns the --out."""
    out = tmp_path / "bis"

    def fake_plan(compare_csv, versions, out_, *, log, **options):
        p = plan(tmp_path, compare_csv, versions)
        p.out = out_
        for v in versions:  # as make_plan does: the releases' env specs, written into OUT/envs
            (out_ / "envs").mkdir(parents=True, exist_ok=True)
            (out_ / "envs" / f"triton-{v}.yaml").write_text(f"triton: {v}\n")
        p.opts.resume = bool(options.get("opts") and options["opts"].resume)
        if options.get("opts") is not None:
            p.opts.reps = options["opts"].reps
        return p

    monkeypatch.setattr(B, "make_plan", fake_plan)
    return out


# ------------------------------------------------------------------------------------------- the releases


def test_a_release_equal_to_tots_version_is_refused():
    with pytest.raises(HarnessError, match=r"--versions: 3.9.0 runs Triton 3.9.0, TOT's version"):
        P.check_order(stacks("3.6.0", "3.8.0", "3.9.0", "3.9.0"))


def test_a_release_equal_to_goldens_version_is_refused():
    with pytest.raises(HarnessError, match=r"--versions: 3.6.0 runs Triton 3.6.0, golden's version"):
        P.check_order(stacks("3.6.0", "3.6.0", "3.9.0"))


def test_releases_out_of_order_are_refused():
    with pytest.raises(
        HarnessError, match=r"--versions: Triton 3.8.0 is not older than 3.7.1: give the releases in order"
    ):
        P.check_order(stacks("3.6.0", "3.8.0", "3.7.1", "3.9.0"))
    with pytest.raises(HarnessError, match=r"Triton 3.9.1 is not older than 3.9.0 \(TOT\)"):
        P.check_order(stacks("3.6.0", "3.9.1", "3.9.0"))  # past TOT


def test_releases_in_order_and_unversioned_builds_pass():
    P.check_order(stacks("3.6.0", "3.7.1", "3.8.0", "3.9.0"))
    P.check_order(stacks("3.6.0", "3.8.0", "?"))  # TOT's version unknown: the releases' order is still checked
    P.check_order(stacks("3.6.0", "my-build", "3.9.0"))  # not a release: its place cannot be checked


def test_a_release_spec_named_tot_keeps_its_own_file_and_numbers(tmp_path):
    spec = tmp_path / "tot.yaml"
    spec.write_text(f"name: tot\npython: {sys.executable}\n")
    golden = load_env_spec(spec)
    made = P.release_stacks([str(spec)], "venv", golden, tmp_path, QUIET["log"])
    assert [s.key for s in made] == ["release-tot"]  # not runs/round-N/tot.csv, TOT's own file
    assert made[0].key not in P.RESERVED


# ---------------------------------------------------------------------------------------------- --out


def test_out_holding_the_comparison_is_refused_before_any_plan(tmp_path, cmp_csv, planned):
    meas = known()
    with pytest.raises(HarnessError, match=r"--out .*in holds the input .*compare.csv"):
        B.bisect(cmp_csv, ["3.7.1", "3.8.0"], cmp_csv.parent, meas, **QUIET)
    assert meas.calls == []


def test_out_written_by_another_command_is_refused(tmp_path, cmp_csv, planned):
    planned.mkdir()
    (planned / MARKER).write_text(json.dumps({"written_by": "harness report"}))
    with pytest.raises(HarnessError, match=r"was written by `harness report`, not `harness bisect`"):
        B.bisect(cmp_csv, ["3.7.1", "3.8.0"], planned, known(), **QUIET)


def test_out_of_unrelated_files_is_refused_and_left_alone(tmp_path, cmp_csv, planned):
    planned.mkdir()
    (planned / "thesis.tex").write_text("mine")
    with pytest.raises(HarnessError, match=r"holds files harness did not write \(thesis.tex\)"):
        B.bisect(cmp_csv, ["3.7.1", "3.8.0"], planned, known(), **QUIET)
    assert [p.name for p in planned.iterdir()] == ["thesis.tex"]


def test_out_under_a_file_is_one_line(tmp_path, cmp_csv, planned):
    (tmp_path / "f").write_text("x")
    with pytest.raises(HarnessError, match=r"--out .*f/bis: .*f is a file, not a folder"):
        B.bisect(cmp_csv, ["3.7.1", "3.8.0"], tmp_path / "f" / "bis", known(), **QUIET)


# ------------------------------------------------------------------------------------------- the outputs


def test_without_matplotlib_everything_but_the_plot_is_written(tmp_path, cmp_csv, planned, monkeypatch):
    monkeypatch.setattr(R, "can_plot", lambda: False)
    said = []
    B.bisect(cmp_csv, ["3.7.1", "3.8.0"], planned, known(), log=said.append)
    assert any("matplotlib is not installed" in m for m in said[:1])  # said before measuring
    names = {p.name for p in planned.iterdir()}
    assert {"bisect.md", "bisect.json", "culprits.csv", "series.csv", MARKER} <= names
    assert "timeline.png" not in names
    assert "No timeline.png: matplotlib is not installed" in (planned / "bisect.md").read_text()


def test_a_plot_that_fails_loses_no_measurement(tmp_path, cmp_csv, planned, monkeypatch):
    def boom(res):
        raise RuntimeError("plotting broke")

    monkeypatch.setattr(R, "plot", boom)
    with pytest.raises(RuntimeError):
        B.bisect(cmp_csv, ["3.7.1", "3.8.0"], planned, known(), **QUIET)
    assert (planned / "bisect.md").is_file() and (planned / "bisect.json").is_file()


# ------------------------------------------------------------------------------------------------ --resume


def test_resume_with_other_options_is_refused(tmp_path, cmp_csv, planned):
    from harness.run.options import RunOptions

    B.bisect(cmp_csv, ["3.7.1", "3.8.0"], planned, known(), opts=RunOptions(reps=3), **QUIET)
    assert json.loads((planned / "options.json").read_text())["versions"] == ["3.7.1", "3.8.0"]
    with pytest.raises(HarnessError, match=r"--resume: --reps differs from the bisection in .* \(was 3, now 5\)"):
        B.bisect(cmp_csv, ["3.7.1", "3.8.0"], planned, known(), opts=RunOptions(reps=5, resume=True), **QUIET)
    with pytest.raises(HarnessError, match=r"--resume: --versions differs"):
        B.bisect(cmp_csv, ["3.8.0"], planned, known(), opts=RunOptions(reps=3, resume=True), **QUIET)
    again = known()
    B.bisect(cmp_csv, ["3.7.1", "3.8.0"], planned, again, opts=RunOptions(reps=3, resume=True), **QUIET)
    assert again.calls == []  # the same options: resumed, nothing measured twice


def test_resume_with_other_cases_is_refused(tmp_path):
    rec = {"cases": ["k/a"], "reps": 3}
    P.check_options(tmp_path, rec, resume=False)
    with pytest.raises(HarnessError, match=r"--resume: --case differs .*was \['k/a'\], now \['k/b'\]"):
        P.check_options(tmp_path, {**rec, "cases": ["k/b"]}, resume=True)

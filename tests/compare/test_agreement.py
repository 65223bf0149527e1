"""`harness agree` (harness/compare/agreement.py): among the verdicts two comparisons both call confident, how many
agree and which flip; cases run with other configs left out unless --any-config; the gates and the refusals."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from harness.compare.agreement import agreement, lines
from tests.conftest import cli

HEADER = (
    "kernel",
    "case_id",
    "golden_us",
    "tot_us",
    "verdict",
    "confidence",
    "delta_pct",
    "golden_config",
    "tot_config",
)
CFG, OTHER = '{"BLOCK_SIZE_M":64}', '{"BLOCK_SIZE_M":128}'
A_ROWS = [
    ("k", "same", 100, 102, "regression", "confident", 2.0, CFG, ""),
    ("k", "flip", 100, 97, "improvement", "confident", -3.0, CFG, ""),
    ("k", "unsure", 100, 100.9, "regression", "ambiguous", 0.9, CFG, ""),
    ("k", "retuned", 100, 102.5, "regression", "confident", 2.5, CFG, ""),
    ("k", "only_a", 100, 100.1, "ok", "confident", 0.1, CFG, ""),
]
B_ROWS = [
    ("k", "same", 100, 102.2, "regression", "confident", 2.2, CFG, ""),
    ("k", "flip", 100, 105, "regression", "confident", 5.0, CFG, ""),
    ("k", "unsure", 100, 100.2, "ok", "confident", 0.2, CFG, ""),
    ("k", "retuned", 100, 100.1, "ok", "confident", 0.1, OTHER, ""),
]


def _write(path, rows, gpu=None):
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(HEADER)
        w.writerows(rows)
    if gpu:
        env = {"gpu": {"name": gpu, "uuid": "GPU-0123abcd-0000"}, "triton": {"version": "3.6.0"}}
        meta = {"golden": {"env": env}, "tot": {"env": {**env, "triton": {"version": "3.9.0"}}}}
        path.with_name(path.name + ".meta.json").write_text(json.dumps(meta))
    return str(path)


def pair(tmp_path, gpu_a=None, gpu_b=None):
    """Two compare CSVs: 4 cases in both, one of them run with another config; confident in both with the same
    configs: same (agrees) and flip (improvement → regression)."""
    return _write(tmp_path / "a.csv", A_ROWS, gpu_a), _write(tmp_path / "b.csv", B_ROWS, gpu_b)


def _tables():
    import pandas as pd

    return pd.DataFrame(A_ROWS, columns=HEADER), pd.DataFrame(B_ROWS, columns=HEADER)


def test_only_confident_verdicts_of_the_same_configs_count():
    ag = agreement(*_tables())
    assert (ag.only_a, ag.only_b, ag.both, ag.other_config, ag.compared) == (1, 0, 4, 1, 3)
    assert (ag.confident, ag.same) == (2, 1) and ag.share == 50.0
    assert [(d.case_id, d.flip) for d in ag.differ] == [("flip", True)]


def test_any_config_compares_a_retuned_case_too():
    ag = agreement(*_tables(), any_config=True)
    assert (ag.compared, ag.other_config, ag.confident, ag.same) == (4, 0, 3, 1)
    retuned = next(d for d in ag.differ if d.case_id == "retuned")
    assert not retuned.flip and (retuned.a_verdict, retuned.b_verdict) == ("regression", "ok")
    assert lines(ag)[3:5] == ["  k/flip  FLIP", "    improvement -3.00 % → regression +5.00 %"]


def test_no_confident_case_in_both_is_no_agreement_never_100_percent(tmp_path, capsys):
    a, b = _tables()
    a["confidence"] = "ambiguous"
    ag = agreement(a, b)
    assert ag.share is None and "nothing to agree on" in lines(ag)[1]
    fa, fb = pair(tmp_path)
    Path(fa).write_text(Path(fa).read_text().replace(",confident,", ",ambiguous,"))
    code, out, _ = cli(capsys, "agree", fa, fb, "--min-agree", "95", "--fail-on-flip")
    assert code == 1 and "nothing to agree on" in out and "100.0 %" not in out


def test_two_comparisons_without_a_case_in_common_are_refused(tmp_path, capsys):
    fa = _write(tmp_path / "a.csv", A_ROWS)
    fb = _write(tmp_path / "b.csv", [("other", *r[1:]) for r in B_ROWS])
    code, out, err = cli(capsys, "agree", fa, fb, "--min-agree", "95", "--fail-on-flip")
    assert code == 2 and "no case in common" in err and len(err.strip().splitlines()) == 1


def test_the_command_prints_both_sides_and_gates_on_a_flip(tmp_path, capsys):
    a, b = pair(tmp_path, "NVIDIA H100 80GB HBM3", "NVIDIA H200")
    code, out, _ = cli(capsys, "agree", a, b)
    assert code == 0
    assert "NVIDIA H100 80GB HBM3 0123abcd, triton 3.6.0 vs 3.9.0" in out.splitlines()[0]
    assert "confident in both: 2; the same verdict: 1 (50.0 %); opposite flips: 1" in out
    assert "other GPU models" in out
    assert cli(capsys, "agree", a, b, "--fail-on-flip")[0] == 1
    assert cli(capsys, "agree", a, b, "--min-agree", "50")[0] == 0
    assert cli(capsys, "agree", a, b, "--min-agree", "51")[0] == 1


def test_one_model_says_nothing_of_models(tmp_path, capsys):
    code, out, _ = cli(capsys, "agree", *pair(tmp_path, "NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"))
    assert code == 0 and "GPU models" not in out


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    a, b = pair(tmp_path)
    code, _, err = cli(capsys, "agree", a, tmp_path / "missing.csv")
    assert code == 2 and "missing.csv: no such compare file" in err and "Traceback" not in err
    old = tmp_path / "old.csv"
    old.write_text("kernel,case_id,golden_us,tot_us,verdict\nk,same,100,101,ok\n")
    code, _, err = cli(capsys, "agree", old, b)
    assert code == 2 and "no confidence column" in err and len(err.strip().splitlines()) == 1

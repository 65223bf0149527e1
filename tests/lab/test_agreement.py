"""lab/gpu_validation/agreement.py, which gives #32's cross-machine figures: among the verdicts two comparisons
both call confident, how many agree and which flip; --same-config leaves out the cases run with other configs."""

from __future__ import annotations

import csv
import subprocess
import sys

from tests.conftest import ROOT

HEADER = ("kernel", "case_id", "verdict", "confidence", "delta_pct", "limit_us", "golden_config", "tot_config")
CFG, OTHER = '{"BLOCK_SIZE_M":64}', '{"BLOCK_SIZE_M":128}'


def _write(path, rows):
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(HEADER)
        w.writerows(rows)
    return str(path)


def _agree(*args):
    cmd = [sys.executable, str(ROOT / "lab/gpu_validation/agreement.py"), *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)


def _pair(tmp_path):
    a = _write(
        tmp_path / "a.csv",
        [
            ("k", "same", "regression", "confident", 2.0, 10.0, CFG, ""),
            ("k", "flip", "improvement", "confident", -3.0, 10.0, CFG, ""),
            ("k", "unsure", "regression", "ambiguous", 0.9, 10.0, CFG, ""),
            ("k", "retuned", "regression", "confident", 2.5, 10.0, CFG, ""),
            ("k", "only_a", "ok", "confident", 0.1, 10.0, CFG, ""),
        ],
    )
    b = _write(
        tmp_path / "b.csv",
        [
            ("k", "same", "regression", "confident", 2.2, 10.0, CFG, ""),
            ("k", "flip", "regression", "confident", 5.0, 10.0, CFG, ""),
            ("k", "unsure", "ok", "confident", 0.2, 10.0, CFG, ""),
            ("k", "retuned", "ok", "confident", 0.1, 10.0, OTHER, ""),
        ],
    )
    return a, b


def test_confident_verdicts_agree_or_flip(tmp_path):
    r = _agree(*_pair(tmp_path))
    assert r.returncode == 0, r.stderr
    # the cases in both: same, flip, unsure, retuned; confident in both: same, flip, retuned
    assert "4 cases in both; confident in both: 3; the same verdict: 1 (33.3 %); opposite flips: 1" in r.stdout
    assert "differ: k/flip: improvement -3.00 %" in r.stdout


def test_same_config_leaves_out_a_case_run_with_other_configs(tmp_path):
    r = _agree(*_pair(tmp_path), "--same-config")
    assert r.returncode == 0, r.stderr
    assert "1 of 4 cases left out: run with other configs" in r.stdout
    assert "3 cases in both; confident in both: 2; the same verdict: 1 (50.0 %); opposite flips: 1" in r.stdout
    assert "retuned" not in r.stdout


def test_a_comparison_without_confidence_is_one_line(tmp_path):
    old = tmp_path / "old.csv"
    old.write_text("kernel,case_id,verdict\nk,same,ok\n")
    r = _agree(str(old), _pair(tmp_path)[1])
    assert r.returncode == 2
    assert r.stderr.strip().endswith("judge it again with harness compare")
    assert "Traceback" not in r.stderr

"""lab/gpu_validation/agreement.py: `harness agree`'s figures with each side's confident regressions per kernel
family, every case compared unless --same-config (tests/compare/test_agreement.py tests the figures)."""

from __future__ import annotations

import subprocess
import sys

from tests.compare.test_agreement import pair
from tests.conftest import ROOT


def _agree(*args):
    cmd = [sys.executable, str(ROOT / "lab/gpu_validation/agreement.py"), *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)


def test_every_case_unless_same_config_and_the_family_counts(tmp_path):
    a, b = pair(tmp_path)
    r = _agree(a, b, "--family", "k")
    assert r.returncode == 0, r.stderr
    assert "4 cases in both (1 only in A, 0 only in B); 0 of them run with other configs" in r.stdout
    assert "A: regressions 3, confident 2; k*: 3 (2 confident)" in r.stdout
    r = _agree(a, b, "--same-config")
    assert "1 of them run with other configs, left out" in r.stdout


def test_a_comparison_without_confidence_is_one_line(tmp_path):
    old = tmp_path / "old.csv"
    old.write_text("kernel,case_id,verdict\nk,same,ok\n")
    r = _agree(str(old), pair(tmp_path)[1])
    assert r.returncode == 2
    assert r.stderr.strip().endswith("judge it again with harness compare")
    assert "Traceback" not in r.stderr

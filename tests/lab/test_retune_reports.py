"""The retune reports' tables come from their scripts: run on the committed runs, each script prints the table
that is committed beside them."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPORTS_DIR, ROOT, needs_reports

GPU = ROOT / "lab" / "gpu_validation"
RUNS = REPORTS_DIR / "h100-retune"
pytestmark = needs_reports


def script(name: str, *args) -> str:
    r = subprocess.run([sys.executable, str(GPU / name), *map(str, args)], capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


@pytest.mark.parametrize(
    "run, source",
    [("run-1", ["--before", RUNS / "run-1" / "before"]), ("run-2", ["--retune", RUNS / "run-2/retune/retune.json"])],
)
def test_the_proof_tables(run, source):
    out = script("retune_proof.py", RUNS / run / "after", *source)
    assert out == (RUNS / run / "proof.md").read_text()
    assert "Golden slower with the new files: 0" in out


def test_the_search_summary(tmp_path):
    search = REPORTS_DIR / "h100-retune-search"
    compare = REPORTS_DIR / "h100-triton-3.6.0-vs-3.9.0" / "compare.csv"
    script("retune_search_summary.py", search, compare, "--markdown", tmp_path / "s.md")
    assert (tmp_path / "s.md").read_text() == (search / "summary.md").read_text()

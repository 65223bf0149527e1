"""benchmarks/tune_pick.py turns sweep results into config files by each kernel's ConfigLookup: the committed
sweeps give back the committed files."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import REPORTS_DIR, ROOT, needs_reports

pytestmark = needs_reports

PICK = ROOT / "benchmarks" / "tune_pick.py"
LIBRARY = REPORTS_DIR / "h100-library-triton-3.6.0-vs-3.9.0" / "tuning"


def pick(tmp_path, *sweeps) -> dict[str, dict]:
    r = subprocess.run([sys.executable, str(PICK), *map(str, sweeps), "--out", str(tmp_path), "--summary",
                        str(tmp_path / "picked.md")], capture_output=True, text=True, cwd=ROOT)  # fmt: skip
    assert r.returncode == 0, r.stderr
    return {f.name: json.loads(f.read_text()) for f in tmp_path.glob("*.json")}


@pytest.mark.parametrize("family", ["attention", "norms", "gemm", "scaled_mxfp4"])
def test_the_library_sweeps_give_the_shipped_config_files(tmp_path, family):
    files = pick(tmp_path, LIBRARY / f"sweep-{family}.csv")
    assert files
    for name, buckets in files.items():
        assert buckets == json.loads((ROOT / "kernels" / "configs" / name).read_text()), name


def test_files_follow_each_kernels_lookup(tmp_path):
    files = pick(tmp_path, LIBRARY / "sweep-attention.csv", LIBRARY / "sweep-norms.csv")
    assert "sm90-ATTN-FWD-D=128-causal=True.json" in files  # specialized on (D, causal)
    assert set(files["sm90-ATTN-FWD-D=128-causal=True.json"]) == {"S_LEQ_1024", "S_LEQ_4096", "any"}  # by S
    assert "sm90-RMSNORM-FWD.json" in files  # no specialize: the default file, bucketed by N
    assert all(k.startswith("N_LEQ_") or k == "any" for k in files["sm90-RMSNORM-FWD.json"])


def untuned(buckets: dict) -> dict:
    """The buckets `harness retune` has not changed since (it stamps those it changed in ``_tuned_for``)."""
    retuned = set(buckets.get("_tuned_for", {}))
    return {b: c for b, c in buckets.items() if b != "_tuned_for" and b not in retuned}


def test_the_older_batched_sweep_gives_its_files(tmp_path):
    files = pick(tmp_path, REPORTS_DIR / "tuning" / "sweep-sm90.csv")
    shipped = {n: json.loads((ROOT / "kernels" / "configs" / n).read_text()) for n in files}
    same = [n for n, b in files.items() if untuned(shipped[n]) == {k: b.get(k) for k in untuned(shipped[n])}]
    # the two others were re-picked from the persistent-variant sweep since (reports/tuning/picked-*.md); five
    # have buckets retuned for Triton 3.9.0 since (reports/h100-retune, reports/h200x2-retune), the rest of each
    # is still the sweep's
    assert len(files) == 9 and len(same) == 7
    assert sum("_tuned_for" in b for b in shipped.values()) == 5

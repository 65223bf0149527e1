"""benchmarks/tune_pick.py turns sweep results into config files by each kernel's ConfigLookup: the committed
sweeps give back the committed files."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT

PICK = ROOT / "benchmarks" / "tune_pick.py"
LIBRARY = ROOT / "reports" / "h100-library-triton-3.6.0-vs-3.9.0" / "tuning"


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


def test_the_older_batched_sweep_gives_its_files(tmp_path):
    files = pick(tmp_path, ROOT / "reports" / "tuning" / "sweep-sm90.csv")
    same = [n for n, b in files.items() if b == json.loads((ROOT / "kernels" / "configs" / n).read_text())]
    # the two others were re-picked from the persistent-variant sweep since (reports/tuning/picked-*.md)
    assert len(files) == 9 and len(same) == 7

"""lab/gpu_validation/aiter_stats.py, the summary of run.sh's step `aiter`, on a three-way run written here: the
stacks and the library's commit from the sidecars, per-kernel statuses and verdicts, the configs that ran, the
largest changes beside their A/A, and the failures."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

from tests.conftest import ROOT

RESULT = ("kernel", "case_id", "status", "config_source", "config", "error")
COMPARE = ("kernel", "case_id", "verdict", "delta_pct", "golden_us", "tot_us")
SRC = "gemm/gfx950-BATCHED_GEMM-A8W8.json:M_LEQ_128 (configs of gfx950)"


def _csv(path, header, rows):
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)


def test_the_summary_of_a_three_way_run(tmp_path):
    for stack, version in (("golden", "3.6.0"), ("tot", "3.9.0"), ("golden-aa", "3.6.0")):
        failed = stack == "tot"
        _csv(tmp_path / f"{stack}.csv", RESULT, [
            ("aiter_batched_gemm_a8w8", "B128_M16", "ok", SRC, '{"BLOCK_SIZE_M":128}', ""),
            ("aiter_batched_gemm_a8w8", "B128_M64", "runtime_error" if failed else "unstable", SRC, "{}",
             "KeyError: 'Keyword argument waves_per_eu was specified but unrecognised'\ntraceback" if failed else ""),
        ])  # fmt: skip
        side = {
            "triton": {"version": version, "path": f"/t/{version}"},
            "gpu": {"name": "NVIDIA H100 80GB HBM3"},
            "libraries": {"aiter": {"path": "/r/.stage/aiter", "commit": "e4048607a535ace3a2b5"}},
            "config_lookup": {"aiter_batched_gemm_a8w8": {"config_arch": "gfx950"}},
        }
        (tmp_path / f"{stack}.csv.env.json").write_text(json.dumps(side))
    _csv(
        tmp_path / "compare.csv",
        COMPARE,
        [("aiter_batched_gemm_a8w8", "B128_M16", "regression", "6.5", "100", "106.5")],
    )
    _csv(tmp_path / "compare-aa.csv", COMPARE, [("aiter_batched_gemm_a8w8", "B128_M16", "ok", "-0.4", "100", "99.6")])
    r = subprocess.run([sys.executable, str(ROOT / "lab/gpu_validation/aiter_stats.py"), str(tmp_path)],
                       capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert out == (tmp_path / "summary.md").read_text()
    assert (
        "- tot: Triton 3.9.0 (/t/3.9.0), NVIDIA H100 80GB HBM3; aiter e4048607a5 (/r/.stage/aiter); configs of gfx950"
        in out
    )
    assert (
        "| aiter_batched_gemm_a8w8 | 2 | ok 1, unstable 1 / ok 1, runtime_error 1 / ok 1, unstable 1 | regression 1 | +6.50 | ok 1 | 0.40 | 0.40 |"
        in out
    )
    assert f"- aiter_batched_gemm_a8w8: {SRC} x1: " in out  # unstable is timed: its config ran too
    assert "- aiter_batched_gemm_a8w8/B128_M16: 100.0 -> 106.5 us, +6.50%, regression; A/A -0.40%" in out
    assert "- aiter_batched_gemm_a8w8 runtime_error: B128_M64: KeyError: 'Keyword argument waves_per_eu" in out

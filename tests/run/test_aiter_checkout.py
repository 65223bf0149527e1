"""The AITER adapter against a real checkout of ROCm/aiter, on the CPU interpreter: skipped unless $AITER_CHECKOUT
names one (never committed here; `git clone https://github.com/ROCm/aiter`). Every config file of the five
families in the checkout passes the suite's checks, and AITER's own bf16 and a8w8 run correct through harness."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.inputs.suite import load_suite
from harness.results.load import load_results
from tests.conftest import DATA, ROOT

CHECKOUT = os.environ.get("AITER_CHECKOUT", "")
pytestmark = pytest.mark.skipif(
    not (CHECKOUT and (Path(CHECKOUT) / "aiter" / "ops" / "triton").is_dir()),
    reason="set AITER_CHECKOUT to a checkout of ROCm/aiter",
)
EXAMPLE = ROOT / "examples" / "aiter"


def test_the_example_suite_loads_against_the_checkouts_config_files():
    cases = load_suite(EXAMPLE / "batched_gemm.yaml")
    assert len(cases) == 120 and {c.config_arch for c in cases} <= {"gfx950", os.environ.get("AITER_CONFIG_ARCH")}


def test_aiters_bf16_and_a8w8_run_correct_on_the_cpu(tmp_path):
    env = {**os.environ, "HARNESS_TEST_PYTHON": sys.executable, "PYTHONPATH": str(ROOT), "TRITON_INTERPRET": "1"}
    out = tmp_path / "cpu.csv"
    args = ["run", "--env", str(DATA / "cpu-env.yaml"), "--suite", str(EXAMPLE / "cpu.yaml"), "--out", str(out)]
    r = subprocess.run(
        [sys.executable, "-m", "harness", *args, "--reps", "1", "--launches", "1"],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    df = load_results(out)
    assert (df["status"] == "ok").all(), df[["kernel", "case_id", "status", "error"]]
    assert set(df["kernel"]) == {"aiter_batched_gemm_bf16", "aiter_batched_gemm_a8w8"}
    assert df["config_source"].str.startswith("gemm/gfx950-BATCHED_GEMM-").all()
    bf16 = df[df["kernel"] == "aiter_batched_gemm_bf16"]
    assert all("SPLITK_BLOCK_SIZE" in json.loads(c) for c in bf16["config"])  # AITER's post-processing ran


def test_every_case_compiles_for_an_h100_on_this_cpu():
    """AITER's wrappers launch with ``**config``, and Triton's CUDA launcher refuses a keyword that is neither an
    argument of the kernel nor a CUDA option, which the CPU interpreter never checks. Every case of the example
    suite goes the worker's way to an sm90 compile (lab/gpu_validation/sm90_compile_check.py): compiled, or
    skipped (the MXFP4 ops on anything but gfx950 / gfx1250)."""
    r = subprocess.run(
        [sys.executable, str(ROOT / "lab/gpu_validation/sm90_compile_check.py"), str(EXAMPLE / "batched_gemm.yaml"),
         "--filter", "_M(16|2048)_"],
        capture_output=True, text=True, cwd=ROOT, timeout=1200,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert r.stdout.splitlines()[-1].endswith("30 cases, 18 ok, 12 skipped"), r.stdout[-500:]


def test_harness_preview_picks_what_aiters_own_lookup_picks_on_every_arch():
    """lab/library/aiter_agreement.py: every lookup of the five batched families (every arch folder of the
    checkout, M around every standard bound, every per-shape file), the bf16 op's gluon backend on gfx1250
    included, against AITER's get_gemm_config; on 2026-08-22's snapshot 3,315 of 3,315."""
    r = subprocess.run([sys.executable, str(ROOT / "lab/library/aiter_agreement.py")], capture_output=True,
                       text=True, cwd=ROOT, timeout=900)  # fmt: skip
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert r.stdout.splitlines()[-1].endswith("lookups agree")

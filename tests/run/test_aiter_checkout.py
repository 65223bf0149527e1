"""The AITER adapter against a real checkout of ROCm/aiter, on the CPU interpreter: skipped unless $AITER_CHECKOUT
names one (never committed here; `git clone https://github.com/ROCm/aiter`). Every config file of the five
families in the checkout passes the suite's checks, and AITER's own bf16 and a8w8 run correct through harness."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.inputs.suite import load_suite
from harness.kernel_api.configs import for_backend
from harness.results.load import load_results
from harness.run.suiteview import view
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


def _kernel_arguments(op: str) -> set[str]:
    """The arguments of AITER's Triton kernel of ``op`` (read from the source: nothing imported)."""
    path = Path(CHECKOUT) / "aiter/ops/triton/_triton_kernels/gemm/batched" / f"{op}.py"
    fns = [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.FunctionDef)]
    fn = next(f for f in fns if f.name.endswith("_kernel") and "reduce" not in f.name)  # the GEMM, not split-K's
    return {a.arg for a in fn.args.args}


def test_every_config_reaches_nvidias_launcher_with_only_what_it_accepts():
    """AITER's wrappers launch with ``**config``. Triton's CUDA launcher refuses a keyword that is neither an
    argument of the kernel nor a CUDA option ("Keyword argument waves_per_eu was specified but unrecognised"):
    every case of the example suite, its config as the worker hands it to the op on an NVIDIA GPU, passes that
    check, which the CPU interpreter never makes."""
    from triton.backends.nvidia.compiler import CUDAOptions

    cuda = set(CUDAOptions.__dataclass_fields__)
    cases = load_suite(EXAMPLE / "batched_gemm.yaml")
    bad = []
    for case, v in zip(cases, view(cases, "sm90"), strict=True):
        args = _kernel_arguments(case.name.removeprefix("aiter_"))
        cfg = for_backend(v.config, "cuda", case.spec.config_keys)
        bad += [(case.name, v.source, k) for k in cfg if k not in args and k not in cuda]
    assert not bad, bad[:5]

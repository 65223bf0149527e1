"""lab/gpu_validation/multigpu_smoke.py run for real on the CPU: two ranks over gloo (torch.distributed.run),
the Triton interpreter, a suite of W = 2 cases. The baselines run (their all-gather crosses the ranks) and pass;
the fused kernel, which needs GPUs with peer memory, is listed as skipped; the script refuses to start with NVLink
multicast left on."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "lab" / "gpu_validation" / "multigpu_smoke.py"
OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
pytestmark = pytest.mark.slow  # two CPU ranks, each a torch process


def _run(suite: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", str(SCRIPT),
           "--suite", str(suite), "--reps", "2"]  # fmt: skip
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def test_two_cpu_ranks_check_the_baselines_and_skip_the_fused_kernel(tmp_path):
    suite = tmp_path / "w2.yaml"
    suite.write_text(
        "entries:\n"
        f"  - kernel: [{ROOT}/baselines/torch_gemm.py, {ROOT}/baselines/torch_gemm_all_gather.py]\n"
        "    dtype: fp16\n"
        "    W: 2\n"
        "    M: [3, 20]\n"
        "    zip: [{N: 40, K: 72}]\n"
        "  - {kernel: gemm_all_scatter, dtype: fp16, W: 2, M: 3, N: 40, K: 72}\n"
        "  - {kernel: gemm_all_scatter, dtype: fp16, W: 1, M: 3, N: 40, K: 72}\n"
    )
    env = {**os.environ, **OFF, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    done = _run(suite, env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    lines = [line for line in done.stdout.splitlines() if "/M" in line]
    assert "5 cases at W=2" in done.stdout, "the W = 1 case is not this group's"
    assert sum(" ok " in line for line in lines) == 4, done.stdout
    assert any(line.startswith("gemm_all_scatter/M3_N40_K72_fp16_W2") and "skipped" in line for line in lines)


def test_refuses_to_start_with_nvls_left_on(tmp_path):
    """Each rank refuses before the process group is made, so one process of the script, without the launcher
    and its second rank (two torch imports fewer), is what every rank does."""
    env = {**os.environ, **OFF, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT), "NCCL_NVLS_ENABLE": "1"}
    cmd = [sys.executable, str(SCRIPT), "--suite", str(ROOT / "suites" / "ci_multigpu.yaml"), "--reps", "2"]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode != 0 and "NCCL_NVLS_ENABLE=0" in done.stdout + done.stderr

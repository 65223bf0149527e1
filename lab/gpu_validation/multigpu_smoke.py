"""The multi-GPU kernels checked and timed on W GPUs without the harness's worker group: every case of a suite with
W equal to this group's size, each rank running make_inputs / launch / reference on its own GPU exactly as the
issue's contract says (torch.distributed over NCCL initialized first, the device set to LOCAL_RANK).

    NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 \\
      python3 -m torch.distributed.run --standalone --nproc-per-node 4 \\
      lab/gpu_validation/multigpu_smoke.py [--suite suites/multigpu.yaml] [--filter REGEX] [--reps 20]

Per case, on every rank:
  skewed  rank r sleeps r x 20 ms, then fills its Y with NaN and launches at once: a rank whose peers wrote into its
          Y before its own fill would lose their tiles (the barrier before the kernel prevents it); checked against
          the reference on every rank
  timed   --reps launches, each after a host barrier, a device sync and a 256 MiB write (L2 flushed), timed with
          CUDA events around launch() (the barrier kernels included); the case's time is the slowest rank's median
  steady  the output checked again after the timed launches (back-to-back launches must not race either)
Rank 0 prints one line per case (the worst rank's error, pass/fail, slowest and fastest rank's µs, TFLOPS over all
ranks, each rank's NVLink GB/s out) and the process exits 1 if any case failed. It refuses to start unless the
three variables above turn NVLink multicast off. With TRITON_INTERPRET=1 it runs on the CPU over gloo (wall-clock
times; cases whose ``supported`` hook refuses the CPU are listed as skipped): how its own test checks it.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from harness.inputs.suite import load_suite  # noqa: E402
from harness.kernel_api.configs import resolve  # noqa: E402
from harness.worker.cases import load_kernel  # noqa: E402
from kernels import common as C  # noqa: E402
from kernels import gemm_all_scatter as gas  # noqa: E402


def config_of(case: Any) -> dict[str, Any]:
    spec, p = case.kernel.spec, case.params
    if spec.config is None:
        return {**spec.default_config, **case.overrides}
    lk = spec.config
    return resolve(
        lk.family, C.arch(), int(p[lk.bucket]), lk.file_key(p), lk.bucket, overrides=case.overrides or None
    ).config


def worst(value: float) -> float:
    """The largest of every rank's ``value``."""
    t = torch.tensor([value], dtype=torch.float64, device=C.device())
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t.item())


def sync() -> None:
    if C.device() == "cuda":
        torch.cuda.synchronize()


def launch_us(mod: Any, inputs: dict[str, Any], cfg: dict[str, Any]) -> float:
    """One launch's µs: CUDA events around it on a GPU, the wall clock on the CPU."""
    if C.device() != "cuda":
        t0 = time.perf_counter()
        mod.launch(inputs, cfg)
        return (time.perf_counter() - t0) * 1e6
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    mod.launch(inputs, cfg)
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e3


def timed(mod: Any, inputs: dict[str, Any], cfg: dict[str, Any], reps: int, flush: torch.Tensor) -> float:
    """This rank's median µs of launch(), each after an L2 flush, a device sync and a host barrier."""
    samples = []
    for _ in range(reps):
        flush.add_(1)
        sync()
        dist.barrier()
        samples.append(launch_us(mod, inputs, cfg))
    return statistics.median(samples)


def run_case(case: Any, reps: int, flush: torch.Tensor) -> dict[str, Any]:
    rank = dist.get_rank()
    mod = load_kernel(case.kernel.source, str(ROOT))
    spec, p = case.kernel.spec, case.params
    why = mod.supported(p) if "supported" in spec.hooks else None
    if why:
        return {"skipped": why}
    cfg, tol = config_of(case), spec.tolerance_of(p)
    inputs = mod.make_inputs(p, int(p.get("seed", 0)))
    mod.launch(inputs, cfg)  # compile
    sync()
    dist.barrier()
    time.sleep(0.02 * rank)
    C.poison_(inputs["y"])
    y = mod.launch(inputs, cfg)
    sync()
    skewed = C.rel_frobenius(y, mod.reference(inputs))
    us = timed(mod, inputs, cfg, reps, flush)
    sync()
    steady = C.rel_frobenius(y, mod.reference(inputs))
    err = worst(max(skewed, steady))
    return {
        "err": err,
        "ok": err <= tol,
        "us_max": worst(us),
        "us_min": -worst(-us),
        "tflops": spec.flops_of(p) / (worst(us) * 1e-6) / 1e12,
        "link_gbs": gas.link_bytes(p) / (worst(us) * 1e-6) / 1e9 if spec.name != "torch_gemm" else 0.0,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--suite", default=str(ROOT / "suites" / "multigpu.yaml"))
    ap.add_argument("--filter", help="only cases whose 'kernel/case_id' matches this regex")
    ap.add_argument("--reps", type=int, default=20)
    a = ap.parse_args()
    gas.require_multicast_off()
    if C.device() == "cuda":
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group("nccl" if C.device() == "cuda" else "gloo")
    world, rank = dist.get_world_size(), dist.get_rank()
    cases = [c for c in load_suite(a.suite) if c.kernel.spec.world_size_of(c.params) == world]
    cases = [c for c in cases if not a.filter or re.search(a.filter, f"{c.kernel.name}/{c.case_id}")]
    flush = torch.empty((256 if C.device() == "cuda" else 1) * 2**20 // 4, dtype=torch.float32, device=C.device())
    failed = 0
    if rank == 0:
        where = torch.cuda.get_device_name() if C.device() == "cuda" else "the CPU (Triton interpreter, gloo)"
        print(f"{len(cases)} cases at W={world} on {where}", flush=True)
        print(f"{'case':58} {'rel_err':>9} {'':4} {'max us':>9} {'min us':>9} {'TFLOPS':>7} {'GB/s out':>8}")
    for case in cases:
        name = f"{case.kernel.name}/{case.case_id}"
        try:
            r = run_case(case, a.reps, flush)
        except Exception as exc:  # noqa: BLE001 - a case's failure is its line; a hung collective is not caught
            r = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:100]}"}
        failed += not r.get("ok", "skipped" in r)
        if rank == 0 and "skipped" in r:
            print(f"{name:58} skipped: {r['skipped']}", flush=True)
        elif rank == 0 and "error" in r:
            print(f"{name:58} ERROR (rank 0) {r['error']}", flush=True)
        elif rank == 0:
            verdict = "ok" if r["ok"] else "FAIL"
            print(f"{name:58} {r['err']:9.2e} {verdict:4} {r['us_max']:9.1f} {r['us_min']:9.1f} {r['tflops']:7.1f} "
                  f"{r['link_gbs']:8.1f}", flush=True)  # fmt: skip
    dist.destroy_process_group()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""Compiling a suite in parallel before measuring it: each case's kernels compiled once in one of ``jobs`` worker
processes, filling the env's Triton cache so the measuring worker then loads them from it."""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from harness.envs.spec import EnvSpec
from harness.run.workers import WorkerDied, WorkerProc, WorkerTimeout


def default_compile_jobs() -> int:
    """Parallel compile workers when not given: half the cores, at most 8 (each holds a CUDA context)."""
    return max(1, min(8, (os.cpu_count() or 2) // 2))


def precompile(
    spec: EnvSpec, timing: str, cases: list[dict[str, Any]], log_dir: Path, jobs: int, timeout_s: float
) -> dict[str, Any]:
    """Compile every case's kernels in ``jobs`` worker processes at once (Triton compiles on the CPU, one kernel
    at a time per process), filling the env's TRITON_CACHE_DIR so the measuring worker then loads them from cache.
    Nothing measured here is kept: a case that fails to compile fails again, and is reported, in phase 1."""
    shards = [cases[i::jobs] for i in range(jobs)]

    def one(shard: list[dict[str, Any]]) -> int:
        done, w = 0, None
        for case in shard:
            try:
                if w is None or w.proc.poll() is not None:
                    w = WorkerProc(spec, timing, log_dir, mem_budget=0.0)
                    w.request({"op": "hello"}, timeout=300)
                w.request({"op": "prepare", "case": case, "check": False, "compile_only": True}, timeout=timeout_s)
                done += 1
            except (WorkerDied, WorkerTimeout):
                if w is not None:
                    w.kill()
                w = None  # a crashing kernel: a fresh worker for the rest of the shard
        if w is not None:
            w.close()
        return done

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        compiled = sum(pool.map(one, [s for s in shards if s]))
    return {"jobs": jobs, "cases": compiled, "wall_s": round(time.perf_counter() - t0, 2)}

"""Compiling a suite in parallel before measuring it: each case's kernels compiled once in one of ``jobs`` worker
processes, filling the env's Triton cache so the measuring worker then loads them from it.

Cases that probably share compiled kernels (one kernel, dtype, overrides and config file: the bucket value may
still pick another config) go to the same worker one after the other, so the second finds the first's binaries in
the cache; spread over several workers at once, each would compile them again (the cache has no lock). On the
library suite that is 38 blocks for 260 cases. Workers take the largest block left, so none idles while another
has a long queue."""

from __future__ import annotations

import json
import os
import queue
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from harness.envs.spec import EnvSpec
from harness.run.workers import WorkerDied, WorkerProc, WorkerTimeout


def default_compile_jobs() -> int:
    """Parallel compile workers when not given: half the cores, at most 8 (each holds a CUDA context)."""
    return max(1, min(8, (os.cpu_count() or 2) // 2))


def compile_blocks(cases: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """``cases`` (worker requests) in blocks that probably share compiled kernels, largest first, each in the
    suite's order; ties keep the order of first appearance."""
    blocks: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for c in cases:
        blocks.setdefault(_share_key(c), []).append(c)
    return sorted(blocks.values(), key=len, reverse=True)


def _share_key(case: dict[str, Any]) -> tuple[str, ...]:
    lookup = case.get("lookup") or {}
    extra = (case.get("overrides"), case.get("library"), lookup.get("family"), lookup.get("key"))
    return str(case.get("kernel")), str(case.get("dtype")), json.dumps(extra, sort_keys=True, default=str)


def _take(todo: queue.Queue[list[dict[str, Any]]]) -> list[dict[str, Any]] | None:
    """The next block, or None when another worker took the last (a blocking get would wait for ever)."""
    try:
        return todo.get_nowait()
    except queue.Empty:
        return None


def precompile(
    spec: EnvSpec,
    timing: str,
    cases: list[dict[str, Any]],
    log_dir: Path,
    jobs: int,
    timeout_s: float,
    gpus: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    """Compile every case's kernels in ``jobs`` worker processes at once (Triton compiles on the CPU, one kernel
    at a time per process), filling the env's TRITON_CACHE_DIR so the measuring worker then loads them from cache.
    ``gpus``: the environments (CUDA_VISIBLE_DEVICES) the workers take in turn, to spread their contexts over a
    node. Nothing measured here is kept: a case that fails to compile fails again, and is reported, in phase 1."""
    blocks = compile_blocks(cases)
    todo: queue.Queue[list[dict[str, Any]]] = queue.Queue()
    for b in blocks:
        todo.put(b)

    def one(k: int) -> tuple[int, float]:
        """One compile worker's share: blocks from ``todo`` until none is left → (cases done, its compile s)."""
        done, seconds, w = 0, 0.0, None
        extra = gpus[k % len(gpus)] if gpus else None
        for block in iter(lambda: _take(todo), None):
            for case in block:
                try:
                    if w is None or w.proc.poll() is not None:
                        w = WorkerProc(spec, timing, log_dir, mem_budget=0.0, extra_env=extra)
                        w.request({"op": "hello"}, timeout=300)
                    req = {"op": "prepare", "case": case, "check": False, "compile_only": True}
                    seconds += float(w.request(req, timeout=timeout_s).get("compile_s") or 0.0)
                    done += 1
                except (WorkerDied, WorkerTimeout):
                    if w is not None:
                        w.kill()
                    w = None  # a crashing kernel: a fresh worker for the rest
        if w is not None:
            w.close()
        return done, seconds

    t0 = time.perf_counter()
    jobs = max(1, min(jobs, len(blocks)))
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        shares = list(pool.map(one, range(jobs)))
    return {
        "jobs": jobs,
        "cases": sum(n for n, _ in shares),
        "blocks": len(blocks),
        "compile_s": round(sum(t for _, t in shares), 2),  # the workers' own compile seconds, summed: the CPU work
        "wall_s": round(time.perf_counter() - t0, 2),
    }

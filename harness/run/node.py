"""One suite over every GPU of a node (``harness run --gpus all|0,1,2,3``): the single-GPU cases split into
balanced parts (harness/run/shards.py), one part per GPU measured by its own workers (every env of the run on
that GPU, reps interleaved: a case's golden and TOT share a physical GPU), the multi-GPU cases after them on
the GPUs they need, whole; then each env's parts merged into its one results file (harness/run/merge.py).

Parts live beside each output, ``OUT.parts/gpu<i>.csv`` (and ``ranks<n>.csv`` for n-GPU cases), and are kept:
a killed run is resumed part by part with ``--resume``, and the merge only ever adds up what the parts hold.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.envs.spec import EnvSpec
from harness.errors import HarnessError, counted
from harness.inputs.suite import Case
from harness.run.cases import worker_case
from harness.run.group import inherited_gpus, visible
from harness.run.interleave import run_interleaved
from harness.run.merge import merge_results
from harness.run.options import RunOptions
from harness.run.precompile import precompile
from harness.run.runner import log_dir, run_suite
from harness.run.shards import partition
from harness.run.sidecar import update_sidecar
from harness.worker.backends import times_gpu

Runs = list[tuple[EnvSpec, Path]]
Bars = Callable[[str], Callable[[int, str, int, int], None]]


def parse_gpus(text: str) -> list[int]:
    """``all`` or ``0,1,2,3``: GPUs numbered as this process sees them, so under CUDA_VISIBLE_DEVICES=2,3 (a
    Slurm allocation) ``all`` is GPUs 2 and 3 of the machine, and no other job's."""
    given = inherited_gpus()
    if text.strip() == "all":
        found = _count_gpus() if given is None else len(given)
        if not found:
            raise HarnessError("--gpus all: no GPU found (nvidia-smi -L / rocm-smi list none, or CUDA_VISIBLE_DEVICES "
                               "is empty); give --gpus 0,1,...")  # fmt: skip
        return list(range(found))
    try:
        gpus = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        gpus = []
    if not gpus or len(set(gpus)) != len(gpus) or min(gpus) < 0:
        raise HarnessError(f"--gpus {text!r}: expected 'all' or distinct GPU indices such as 0,1,2,3")
    if given is not None and max(gpus) >= len(given):
        raise HarnessError(f"--gpus {text!r}: this process was given {len(given)} GPUs (CUDA_VISIBLE_DEVICES="
                           f"{','.join(given)}), numbered 0 to {len(given) - 1}")  # fmt: skip
    found = _count_gpus() if given is None else 0  # 0: no GPU tool answered (a CPU run): nothing to check against
    if found and max(gpus) >= found:
        raise HarnessError(f"--gpus {text!r}: this machine has {found} GPUs, numbered 0 to {found - 1}")
    return gpus


def _count_gpus() -> int:
    for cmd in (["nvidia-smi", "-L"], ["rocm-smi", "--showid"]):
        if shutil.which(cmd[0]):
            try:
                out = subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout
            except (OSError, subprocess.TimeoutExpired):
                continue
            n = sum(1 for line in out.splitlines() if line.startswith("GPU") or "Device Name" in line)
            if n:
                return n
    return 0


def part_path(out: Path, name: str) -> Path:
    return out.parent / f"{out.name}.parts" / f"{name}.csv"


def plan(
    cases: list[Case], gpus: list[int], previous: Mapping[str, float] | None
) -> list[tuple[str, list[int], list[Case]]]:
    """(part name, the GPUs it runs on, its cases): one part per GPU for the single-GPU cases, then one per world
    size for the multi-GPU cases, on the first GPUs."""
    singles = [c for c in cases if c.spec.world_size_of(c.params) == 1]
    steps = [(f"gpu{g}", [g], part) for g, part in zip(gpus, partition(singles, len(gpus), previous)) if part]
    worlds = sorted({c.spec.world_size_of(c.params) for c in cases} - {1})
    too_big = {w: sum(c.spec.world_size_of(c.params) == w for c in cases) for w in worlds if w > len(gpus)}
    if too_big:
        need = ", ".join(f"{n} {'needs' if n == 1 else 'need'} {w}" for w, n in too_big.items())
        n = sum(too_big.values())
        raise HarnessError(
            f"--gpus: {counted(n, 'case')} {'needs' if n == 1 else 'need'} more GPUs than the {len(gpus)} given ({need})"
        )
    for w in worlds:
        group = [c for c in cases if c.spec.world_size_of(c.params) == w]
        steps.append((f"ranks{w}", gpus[:w], group))
    return steps


def run_on_gpus(
    runs: Runs, cases: list[Case], opts: RunOptions, gpus: list[int], suite: str, bars: Bars,
    previous: Mapping[str, float] | None = None, warn: Callable[[str], None] | None = None,
) -> list[dict[str, int]]:  # fmt: skip
    """Measure ``cases`` under every env of ``runs`` spread over ``gpus``; returns each env's counts."""
    steps = plan(cases, gpus, previous)
    earlier = [part_path(out, n) for _, out in runs for n, _, _ in steps if part_path(out, n).exists()]
    if earlier and not opts.resume:
        raise HarnessError(
            f"{earlier[0]}: a part of an earlier run exists: pass --resume, or remove {earlier[0].parent}"
        )
    singles = [s for s in steps if s[0].startswith("gpu")]
    jobs = len(singles) or 1
    t0 = time.monotonic()
    compiled = _precompile_node(runs, opts, [c for _, _, part in singles for c in part], gpus)
    if compiled:  # the parts find every single-GPU case's kernels in the cache
        opts = replace(opts, compile_jobs=1)
    # the parts of one GPU share it with nothing else: each keeps its own memory budget
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        walls = list(pool.map(lambda s: _run_part(runs, opts, suite, bars, warn, *s), singles))
    for step in steps[len(singles) :]:  # multi-GPU cases hold several GPUs: one world size at a time
        walls.append(_run_part(runs, opts, suite, bars, warn, *step))
    names = [name for name, _, _ in steps]
    counts = [merge_results([part_path(out, n) for n in names if part_path(out, n).exists()], out) for _, out in runs]
    # where the node's time went: a part that ends long before the others was given too little
    parts = [{"part": n, "gpus": g, "cases": len(c), "wall_s": w} for (n, g, c), w in zip(steps, walls)]
    node = {"wall_s": round(time.monotonic() - t0, 2), "parts": parts, **({"precompile": compiled} if compiled else {})}
    for _, out in runs:
        update_sidecar(out, node=node)
    return counts


def _precompile_node(runs: Runs, opts: RunOptions, cases: list[Case], gpus: list[int]) -> list[dict[str, Any]]:
    """Every env's single-GPU cases compiled once for the whole node before the parts start, ``--compile-jobs``
    workers per GPU (at most one per core): compiled per part instead, the kernels two parts share would be
    compiled twice, and a part whose compiling ends first would wait on the other's. The envs compile at once
    (their workers' start-up, seconds each, overlaps), except envs of one compile cache: one after the other, the
    later finding the earlier's kernels. [] when not compiling."""
    timings = {opts.timing or spec.timing for spec, _ in runs}
    if opts.compile_jobs <= 1 or not all(times_gpu(t) for t in timings) or len(cases) < 2:
        return []
    jobs = min(opts.compile_jobs * len(gpus), os.cpu_count() or 1)
    requests = [worker_case(c) for c in cases]
    where = [visible([g]) for g in gpus]

    def one(k: int) -> dict[str, Any]:
        spec, out = runs[k]
        figures = precompile(spec, opts.timing or spec.timing, requests, log_dir(out, opts), jobs, opts.timeout_s,
                             gpus=where)  # fmt: skip
        return {"env": spec.name, **figures}

    def chain(ks: list[int]) -> list[tuple[int, dict[str, Any]]]:
        return [(k, one(k)) for k in ks]

    by_cache: dict[str, list[int]] = {}
    for k, (spec, _) in enumerate(runs):
        by_cache.setdefault(str(spec.triton_cache()), []).append(k)
    with ThreadPoolExecutor(max_workers=len(by_cache)) as pool:
        done = dict(pair for got in pool.map(chain, by_cache.values()) for pair in got)
    return [done[k] for k in range(len(runs))]


def _run_part(
    runs: Runs, opts: RunOptions, suite: str, bars: Bars, warn: Callable[[str], None] | None,
    name: str, gpus: list[int], cases: list[Case],
) -> float:  # fmt: skip
    t0 = time.monotonic()
    part_runs = [(spec, part_path(out, name)) for spec, out in runs]
    for _, p in part_runs:
        p.parent.mkdir(parents=True, exist_ok=True)
    o = replace(opts, visible_gpus=tuple(gpus))
    progress = bars(name)
    if len(part_runs) == 1:
        spec, out = part_runs[0]
        run_suite(spec, cases, out, o, lambda label, i, n: progress(0, label, i, n), suite)
    else:
        run_interleaved(part_runs, cases, o, progress, suite, warn)
    return round(time.monotonic() - t0, 2)

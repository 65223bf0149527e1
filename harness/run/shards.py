"""Splitting a suite's cases into balanced parts: over the GPUs of a node (``harness run --gpus``) or over machines
(``--shard i/n``, one CI job or Slurm array task each). Pure and deterministic: the same cases and costs give the
same parts on every machine, so n jobs that each take their part cover the suite exactly once.

A case costs its expected time: a previous run's (``--times PREV.csv``) where it has one, else an estimate from
its work (FLOPs at a nominal 400 TFLOPS, bytes at a nominal 3 TB/s: the larger). A multi-GPU case costs its time
on every GPU it holds. Parts are filled longest first, each case to the part that is least loaded so far.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Mapping

from harness.errors import HarnessError
from harness.inputs.suite import Case

NOMINAL_FLOPS = 400e12
NOMINAL_BYTES = 3e12
#: the fixed cost of a case (compile, check, worker round trips) in µs, so that tiny cases still count
OVERHEAD_US = 2_000.0


def parse_shard(text: str) -> tuple[int, int]:
    """``3/8`` → (3, 8): part 3 of 8, numbered from 1 as CI matrices and Slurm arrays count."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise HarnessError(f"--shard {text!r}: expected I/N with 1 <= I <= N, e.g. 2/4")
    return int(m.group(1)), int(m.group(2))


def expected_us(case: Case, previous: Mapping[str, float] | None = None) -> float:
    """The case's expected time (µs) on one GPU, times the GPUs it holds."""
    world = case.spec.world_size_of(case.params)
    if previous and case.key in previous:
        return float(previous[case.key]) * world + OVERHEAD_US
    p = case.params
    work = max(case.spec.flops_of(p) / NOMINAL_FLOPS, case.spec.bytes_of(p) / NOMINAL_BYTES) * 1e6
    return work * world + OVERHEAD_US


def partition(cases: list[Case], n: int, previous: Mapping[str, float] | None = None) -> list[list[Case]]:
    """``n`` parts of about equal expected time, each in the suite's order."""
    if n < 1:
        raise ValueError(f"cannot split into {n} parts")
    order = sorted(range(len(cases)), key=lambda i: (-expected_us(cases[i], previous), cases[i].key))
    heap = [(0.0, k) for k in range(n)]
    owner: dict[int, int] = {}
    for i in order:
        load, k = heapq.heappop(heap)
        owner[i] = k
        heapq.heappush(heap, (load + expected_us(cases[i], previous), k))
    return [[c for i, c in enumerate(cases) if owner[i] == k] for k in range(n)]


def shard(cases: list[Case], text: str, previous: Mapping[str, float] | None = None) -> list[Case]:
    """The cases of ``--shard I/N``."""
    i, n = parse_shard(text)
    return partition(cases, n, previous)[i - 1]

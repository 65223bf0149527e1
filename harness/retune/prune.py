"""Configs that cannot work, refused before anything is compiled. Pure.

Only rules that are certain are here: a config they refuse would fail to compile or launch (or be the same
program as another config), never merely be slow. What the rules cannot know, a compile tells: a config that
runs out of a resource (shared memory, registers) teaches :class:`Learned` to refuse every config with the same
tile that asks for as much or more (as many or more pipeline stages), without compiling them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.kernel_api.configs import config_value_problem

#: keys that are tile sizes: ``tl.arange`` needs a power of two
TILE_KEY = re.compile(r"^BLOCK(_SIZE)?_[A-Z0-9]+$")
#: shared memory a CTA may use, bytes (Triton's limit per arch: H100 227 KiB, A100 163 KiB, MI300 64 KiB)
SHARED_MEMORY = {
    "sm90": 232448,
    "sm100": 232448,
    "sm80": 166912,
    "sm86": 101376,
    "sm89": 101376,
    "gfx942": 65536,
    "gfx950": 163840,
}
#: threads a CTA may have, and the threads of one warp (a wavefront of 64 on AMD)
MAX_THREADS = 1024
WARP = {"cuda": 32, "hip": 64, "interp": 32}
#: bytes of one operand element by the roof a kernel declares: the smaller operand where they differ (a lower
#: bound: a16wfp4's bf16 side is counted as fp4), so the shared-memory rule never refuses a config that fits
OPERAND_BYTES = {"fp4": 0.5, "fp8": 1, "int8": 1, "bf16": 2, "fp16": 2, "tf32": 4, "fp32": 4, "fp64": 8}
RESOURCE_ERROR = re.compile(r"out of resource|OutOfResources", re.IGNORECASE)


def tile_of(config: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """The config's tile: its tile-size keys and values."""
    return tuple(sorted((k, v) for k, v in config.items() if TILE_KEY.match(k)))


def shared_memory_floor(config: Mapping[str, Any], operand_bytes: float) -> float | None:
    """The least shared memory a GEMM tile of this config takes: one A and one B tile per pipeline buffer, and at
    least one buffer (Triton's pipeliner keeps ``num_stages - 1`` or more in flight). None for a config that is not
    a GEMM tile (no BLOCK_SIZE_M/N/K)."""
    try:
        bm, bn, bk = (int(config[k]) for k in ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K"))
    except (KeyError, TypeError, ValueError):
        return None
    buffers = max(1, int(config.get("num_stages", 1) or 1) - 1)
    return buffers * (bm + bn) * bk * operand_bytes


def static_problem(
    config: Mapping[str, Any], params: Mapping[str, Any], arch: str, backend: str, peak: str
) -> str | None:
    """Why ``config`` cannot run case ``params`` on ``arch``, or None."""
    for key, value in config.items():
        why = config_value_problem(key, value)
        if why:
            return f"{key}: {why}"
        if TILE_KEY.match(key) and isinstance(value, int) and value & (value - 1):
            return f"{key}={value} is not a power of two"
    warps = config.get("num_warps")
    if isinstance(warps, int) and (warps & (warps - 1) or warps * WARP.get(backend, 32) > MAX_THREADS):
        return f"num_warps={warps}: not a power of two of at most {MAX_THREADS // WARP.get(backend, 32)} warps"
    floor = shared_memory_floor(config, OPERAND_BYTES.get(peak, 0))
    limit = SHARED_MEMORY.get(arch)
    if floor and limit and floor > limit:
        return f"needs at least {floor / 1024:g} KiB of shared memory, {arch} has {limit / 1024:g} KiB"
    splits, bk, k = config.get("NUM_KSPLIT"), config.get("BLOCK_SIZE_K"), params.get("K")
    if isinstance(splits, int) and splits > 1 and isinstance(bk, int) and isinstance(k, int):
        blocks = math.ceil(k / bk)
        if splits > blocks:
            return f"NUM_KSPLIT={splits} splits K={k} finer than its {blocks} blocks of {bk}"
    return None


@dataclass
class Learned:
    """Resource failures seen so far, per kernel: (tile, stages) pairs that ran out."""

    failed: dict[str, list[tuple[tuple, int]]] = field(default_factory=dict)

    def note(self, kernel: str, config: Mapping[str, Any], error: str) -> bool:
        """Record a failure if ``error`` says a resource ran out; whether it did."""
        if not RESOURCE_ERROR.search(error or "") or not tile_of(config):
            return False
        entry = (tile_of(config), int(config.get("num_stages", 0) or 0))
        if entry not in self.failed.setdefault(kernel, []):
            self.failed[kernel].append(entry)
        return True

    def problem(self, kernel: str, config: Mapping[str, Any]) -> str | None:
        tile, stages = tile_of(config), int(config.get("num_stages", 0) or 0)
        for t, s in self.failed.get(kernel, []):
            if t == tile and stages >= s:
                shown = " ".join(f"{k}={v}" for k, v in t)
                return f"the tile {shown} ran out of resources at num_stages={s}"
        return None

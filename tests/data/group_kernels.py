"""Multi-rank test kernels (`tests/data/group_kernels.py:NAME`), no Triton: torch.distributed over gloo on the CPU, so
the worker group (harness/run/group.py) is exercised for real here. Each rank owns ``N`` values; the op gathers
every rank's values into every rank's ``y``."""

import os
import time
from dataclasses import replace

import torch
import torch.distributed as dist

from harness import KernelSpec, dim

GATHER = KernelSpec(
    name="allgather_rows",
    params=(dim("N"), dim("W", 1)),
    flops=lambda p: 0.0,
    bytes=lambda p: 4.0 * p["N"] * p["W"] * 2,
    peak="memory",
    dtype="fp32",
    tolerance=0.0,
    world_size="W",
    default_config={},
)


def _rank() -> tuple[int, int]:
    return (dist.get_rank(), dist.get_world_size()) if dist.is_initialized() else (0, 1)


def _values(rank: int, n: int, seed: int) -> torch.Tensor:
    return torch.randn(n, generator=torch.Generator().manual_seed(seed * 1000 + rank)) + rank


class allgather_rows:
    SPEC = GATHER

    @staticmethod
    def make_inputs(params, seed):
        rank, world = _rank()
        assert world == params["W"], f"world size {world} is not W={params['W']}"
        return {"x": _values(rank, params["N"], seed), "y": torch.empty(params["N"] * world), "seed": seed}

    @staticmethod
    def launch(inputs, config):
        x, y = inputs["x"], inputs["y"]
        if dist.is_initialized():
            dist.all_gather_into_tensor(y, x)
        else:
            y.copy_(x)
        return y

    @staticmethod
    def reference(inputs):
        _, world = _rank()
        n = inputs["x"].numel()
        return torch.cat([_values(r, n, inputs["seed"]) for r in range(world)]).double()


class slow_rank(allgather_rows):
    """Rank 1 is slower by a fixed 20 ms a launch: the case's time is the slowest rank's, and the skew shows it."""

    SPEC = replace(GATHER, name="slow_rank")

    @staticmethod
    def launch(inputs, config):
        if _rank()[0] == 1:
            time.sleep(0.02)
        return allgather_rows.launch(inputs, config)


class crash_rank(allgather_rows):
    """Rank 1 dies at its first launch: the case fails, the group is killed, the next case gets a fresh one."""

    SPEC = replace(GATHER, name="crash_rank")

    @staticmethod
    def launch(inputs, config):
        if _rank()[0] == 1:
            os.abort()
        return allgather_rows.launch(inputs, config)

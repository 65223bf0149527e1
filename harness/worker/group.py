"""A worker that is one rank of a multi-GPU case (WORLD_SIZE > 1 in its environment): torch.distributed set up
before any case, a host-side barrier before every timed launch, and NVLink multicast off — checked, not assumed.

NVLink multicast (NVLS) must stay off on shared multi-GPU hosts: a program that uses it can take the host's GPUs
out of service for a day or more. So a rank refuses to start unless its environment turns it off for NCCL, torch's
symmetric memory and NVSHMEM, and nothing in harness or the kernels uses multimem operations or multicast objects
(tests/kernels/test_gemm_all_scatter.py greps for them).
"""

from __future__ import annotations

import os
from typing import Any

#: what every rank's environment must hold (the driver sets it: harness/run/group.py)
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1") or 1)


def multicast_problem() -> str:
    """Why this rank must not start ('' when its environment turns multicast off everywhere)."""
    wrong = [f"{k}={v}" for k, v in NO_MULTICAST.items() if os.environ.get(k) != v]
    if not wrong:
        return ""
    return "refusing to start a multi-GPU rank without " + " ".join(wrong) + " (NVLink multicast must stay off)"


class Ranks:
    """This process's place in the group and the host-side barrier every rank passes before a timed launch."""

    def __init__(self, torch: Any):
        import torch.distributed as dist

        problem = multicast_problem()
        if problem:
            raise RuntimeError(problem)
        self.dist = dist
        self.rank, self.world = int(os.environ["RANK"]), world_size()
        cuda = torch.cuda.is_available() and "TRITON_INTERPRET" not in os.environ
        if cuda:
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", self.rank)))
        dist.init_process_group("nccl" if cuda else "gloo", init_method="env://")
        # a host barrier through gloo: an NCCL barrier is a GPU kernel, which CUPTI would count in the op's time
        self.host = dist.new_group(backend="gloo") if cuda else dist.group.WORLD
        self.torch = torch

    def barrier(self) -> None:
        self.dist.barrier(group=self.host)

    def max_over_ranks(self, value: float) -> float:
        """The largest ``value`` of all ranks (every rank then decides the same: launch counts, idle gaps)."""
        t = self.torch.tensor([value], dtype=self.torch.float64)
        self.dist.all_reduce(t, op=self.dist.ReduceOp.MAX, group=self.host)
        return float(t.item())

"""The vendor baseline of kernels/gemm_all_scatter.py's whole job: cuBLAS GEMM of each rank's slice, then NCCL's
all-gather of the slices into every rank's C. Same parameters, inputs and world size as the fused kernel.

``all_gather_into_tensor`` concatenates along dim 0, and C's slices are column blocks; their transposes are row
blocks of Cᵀ. So each rank computes C_rᵀ = B_r · Aᵀ (``torch.mm(b, a.T)``: cuBLAS, the same GEMM transposed)
straight into its block of Cᵀ (N, M), and the all-gather runs in place on Cᵀ (a rank's input is its own block of
the output: NCCL's in-place form, no staging copy). ``y`` is Cᵀ viewed as (M, N): C itself, with no transpose copy.
At W = 1 it needs no torch.distributed (the GEMM alone); at W > 1 every rank must run with NVLink multicast off
(NCCL_NVLS_ENABLE=0: NCCL's NVLS algorithms use multicast), which make_inputs checks.
flops: all ranks, 2·M·N·K; bytes: one rank's HBM as the fused kernel counts them, e·(M·K + (N/W)·K + M·N).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch

from kernels import gemm_all_scatter as gas

SPEC = replace(
    gas.SPEC,
    name="torch_gemm_all_gather",
    description="cuBLAS torch.mm of each rank's slice of A B^T, then NCCL all_gather_into_tensor into every C",
    config=None,
    config_keys=(),
    default_config={},
    hooks=(),
)


def make_inputs(params: dict[str, Any], seed: int) -> dict[str, Any]:
    rank, world = gas.check_world(params)
    if world > 1:
        gas.require_multicast_off()
    a, b = gas.operands(params, seed, rank)
    yt = torch.empty((int(params["N"]), a.shape[0]), dtype=a.dtype, device=a.device)
    return {"a": a, "b": b, "y": yt.T, "rank": rank, "world": world, "params": dict(params), "seed": seed}


def launch(inputs: dict[str, Any], config: dict[str, Any]) -> torch.Tensor:
    a, b, y = inputs["a"], inputs["b"], inputs["y"]
    yt, n, rank = y.T, b.shape[0], inputs["rank"]  # yt: (N, M), contiguous
    mine = yt[rank * n : (rank + 1) * n]
    torch.mm(b, a.T, out=mine)
    if inputs["world"] > 1:
        import torch.distributed as dist

        # all_gather_single: all_gather_into_tensor's newer name (torch 2.13 deprecates the old; older torch has only it)
        gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
        gather(yt, mine)
    return y


def reference(inputs: dict[str, Any]) -> torch.Tensor:
    return gas.full_product(inputs["a"], inputs["params"], inputs["seed"])

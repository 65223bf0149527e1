"""The GEMM-only vendor baseline of kernels/gemm_all_scatter.py: each rank multiplies A by its slice of B with cuBLAS
(``torch.mm``), no communication. Same parameters, inputs and world size as the fused kernel, so the report can set
one against the other (strong and weak scaling, the comm share of a fused case: fused time over GEMM-only time).

Output: this rank's (M, N/W) block of C = A · Bᵀ, i.e. A · B_rᵀ (``torch.mm(a, b.T, out=y)``: cuBLAS's TN GEMM).
flops: all ranks, 2·M·N·K (as the fused kernel counts); bytes: one rank's HBM, e·(M·K + (N/W)·K + M·N/W).
At W = 1 it needs no torch.distributed; at W > 1 each rank works alone (nothing crosses a link).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch

from kernels import gemm_all_scatter as gas

SPEC = replace(
    gas.SPEC,
    name="torch_gemm",
    description="cuBLAS torch.mm of each rank's (M, N/W) block of A B^T, no communication (GEMM-only baseline)",
    bytes=lambda p: gas.ELEMENT_BYTES[p["dtype"]] * (p["M"] * p["K"] + p["N"] // p["W"] * (p["K"] + p["M"])),
    link_bytes=None,
    config=None,
    config_keys=(),
    default_config={},
    hooks=(),
)


def make_inputs(params: dict[str, Any], seed: int) -> dict[str, Any]:
    rank, _ = gas.check_world(params)
    a, b = gas.operands(params, seed, rank)
    return {"a": a, "b": b, "y": torch.empty((a.shape[0], b.shape[0]), dtype=a.dtype, device=a.device)}


def launch(inputs: dict[str, Any], config: dict[str, Any]) -> torch.Tensor:
    return torch.mm(inputs["a"], inputs["b"].T, out=inputs["y"])


def reference(inputs: dict[str, Any]) -> torch.Tensor:
    return inputs["a"].double() @ inputs["b"].double().T

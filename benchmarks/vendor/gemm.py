"""Vendor baselines of the plain GEMMs (kernels/gemm.py, kernels/gemm_fp8.py): the best torch paths for the same
math on the same inputs, timed against the Triton kernel on the GPU by the lead's script.

Each ``CASES`` entry names its kernel under ``"kernel"`` (this family has two); the rest are that kernel's params.
``vendor_ops(params, inputs)`` takes the inputs the kernel's ``make_inputs`` built and returns named zero-argument
callables (the call signatures hold for torch 2.11 and 2.13: ``torch._scaled_mm(self, mat2, scale_a, scale_b,
bias=None, scale_result=None, out_dtype=None, use_fast_accum=False)`` in both):

gemm (bf16 / fp16, Y = X Wᵀ):
  "torch.mm (cuBLAS)"    ``torch.mm(x, w.t(), out=y)``: cuBLAS GEMM with W as the transposed operand, into y.
  "F.linear (cuBLAS)"    ``torch.nn.functional.linear(x, w)``: nn.Linear's own call (no bias), cuBLAS; it
                         allocates its output.
gemm_fp8 (fp8 e4m3 X (M, K) row-major, W (N, K) passed as the column-major ``w.t()``, fp32 scales, bf16 out):
  "torch._scaled_mm tensorwise (cuBLASLt)"   scaling=tensor: one-element scale_a / scale_b; cuBLASLt's fp8 GEMM
                         (its fp32 accumulation promoted out of the tensor cores, like the Triton kernel's).
  "torch._scaled_mm rowwise"   scaling=row: scale_a (M, 1), scale_b (1, N) fp32; on sm90 PyTorch runs cuBLASLt's
                         outer-vector scaling where its cuBLAS is >= 12.9, else its own CUTLASS row-wise kernel
                         (the profiler's kernel names tell which).
  "... fast accum"       the same with ``use_fast_accum=True``: the tensor cores' own fp8 accumulation, no
                         promotion (faster, less precise than the Triton kernel's math).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

#: the largest shapes of each kernel (M = 8192 prefill at the widest and deepest projections) and a few more:
#: decode (M = 1, 16) and mid-size M, where split-K and the vendor's small-M kernels matter
CASES: list[dict[str, Any]] = [
    {"kernel": "gemm", "M": 8192, "N": 28672, "K": 4096},
    {"kernel": "gemm", "M": 8192, "N": 10240, "K": 8192},
    {"kernel": "gemm", "M": 8192, "N": 4096, "K": 14336},
    {"kernel": "gemm", "M": 8192, "N": 24576, "K": 1536},
    {"kernel": "gemm", "M": 1024, "N": 6144, "K": 4096},
    {"kernel": "gemm", "M": 128, "N": 2112, "K": 7168},
    {"kernel": "gemm", "M": 16, "N": 4096, "K": 14336},
    {"kernel": "gemm", "M": 1, "N": 6144, "K": 4096},
    {"kernel": "gemm_fp8", "M": 8192, "N": 4096, "K": 14336, "scaling": "tensor"},
    {"kernel": "gemm_fp8", "M": 8192, "N": 4096, "K": 14336, "scaling": "row"},
    {"kernel": "gemm_fp8", "M": 8192, "N": 6144, "K": 4096, "scaling": "row"},
    {"kernel": "gemm_fp8", "M": 1024, "N": 2112, "K": 7168, "scaling": "row"},
    {"kernel": "gemm_fp8", "M": 128, "N": 6144, "K": 4096, "scaling": "tensor"},
    {"kernel": "gemm_fp8", "M": 1, "N": 4096, "K": 14336, "scaling": "row"},
]


def _bf16_ops(inputs: dict[str, Any]) -> dict[str, Callable[[], Any]]:
    x, w, y = inputs["x"], inputs["w"], inputs["y"]
    return {
        "torch.mm (cuBLAS)": lambda: torch.mm(x, w.t(), out=y),
        "F.linear (cuBLAS)": lambda: F.linear(x, w),
    }


def _fp8_ops(inputs: dict[str, Any]) -> dict[str, Callable[[], Any]]:
    x, wt, xs, ws = inputs["x"], inputs["w"].t(), inputs["x_scale"], inputs["w_scale"]
    name = "torch._scaled_mm tensorwise (cuBLASLt)" if inputs["scaling"] == "tensor" else "torch._scaled_mm rowwise"

    def op(fast: bool) -> Callable[[], Any]:
        return lambda: torch._scaled_mm(x, wt, scale_a=xs, scale_b=ws, out_dtype=torch.bfloat16, use_fast_accum=fast)

    return {name: op(False), f"{name} fast accum": op(True)}


def vendor_ops(params: dict[str, Any], inputs: dict[str, Any]) -> dict[str, Callable[[], Any]]:
    """The torch paths for ``params``' kernel on ``inputs`` (from that kernel's make_inputs), by name."""
    return _fp8_ops(inputs) if "x_scale" in inputs else _bf16_ops(inputs)

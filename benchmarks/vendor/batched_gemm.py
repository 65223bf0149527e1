"""The best torch paths for AITER's batched GEMMs (kernels/batched_gemm_*.py), on the kernel's own inputs.

Largest shape of each suite family: B=128 M=2048 (N,K)=(512,128) and (128,512); B=16 M=2048 N=K=8192.
Torch paths: bf16 `torch.bmm` (cuBLAS); int8 `torch._int_mm` per batch + the per-token / per-channel scaling;
fp8 three rows: `torch._scaled_mm` per batch with row-wise scales on X quantized beforehand (less work and coarser
math than our kernel, which quantizes bf16 X per 128-wide K group), and the same math in torch: X quantized per
(row, 128-group) by torch ops, then `torch._scaled_mm` per batch with DeepSeek-style 1x128 (X) × 128x128 (W, the
per-tensor scale in every block) scales — cuBLAS on sm90, CUDA >= 12.9; checked against our reference first and
left out, with the reason printed, where torch refuses it (also with X quantized beforehand); fp4 a bf16
`torch.bmm` on the dequantized inputs (Hopper has no fp4 MMA: Triton emulates `tl.dot_scaled` through bf16 there).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import torch

from kernels import batched_gemm_a8w8_prequant as prequant
from kernels import common as C
from kernels.batched_gemm_a8w8_prequant import torch_group_quant

KERNELS = (
    "batched_gemm_bf16",
    "batched_gemm_a8w8",
    "batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant",
    "batched_gemm_a16wfp4",
    "batched_gemm_afp4wfp4",
)
SHAPES = [(128, 2048, 512, 128), (128, 2048, 128, 512), (16, 2048, 8192, 8192)]
CASES: list[dict[str, Any]] = [{"kernel": k, "B": B, "M": M, "N": N, "K": K} for k in KERNELS for B, M, N, K in SHAPES]


def blockwise_op(x: torch.Tensor, w: torch.Tensor, w_scale: torch.Tensor, quantize_in_op: bool = True):
    """X group-quantized by torch (inside the timed op, or once beforehand), then torch._scaled_mm with 1x128 ×
    128x128 scales per batch. Scale layouts as cuBLASLt requires them (M-major A scales, K-blocks of B rounded up
    to a multiple of 4)."""
    B, M, K = x.shape
    N, L = w.shape[1], K // 128
    L4 = -(-L // 4) * 4
    sb = w_scale.reshape(1, 1).expand(N // 128, L4).contiguous().t()  # (L4, N/128), stride (1, L4)

    def quant():  # the kernels' quantization in torch ops (K is a multiple of 128 at these shapes)
        xq, s = torch_group_quant(x, w.dtype)
        # scales (B, L, M): each batch's (M, L) view has stride (1, M)
        return xq.reshape(B, M, K), s.reshape(B, M, L).transpose(1, 2).contiguous()

    pre = None if quantize_in_op else quant()

    def op():
        xq, st = quant() if pre is None else pre
        return [
            torch._scaled_mm(xq[b], w[b].t(), scale_a=st[b].t(), scale_b=sb, out_dtype=torch.bfloat16) for b in range(B)
        ]

    return op


def vendor_ops(params: dict[str, Any], inputs: dict[str, Any]) -> dict[str, Callable[[], Any]]:
    """The torch paths for ``params``' kernel on ``inputs`` (from that kernel's make_inputs), by name."""
    name, x, w = params["kernel"], inputs["x"], inputs["w"]
    if name == "batched_gemm_bf16":
        return {"torch.bmm": lambda: torch.bmm(x, w.transpose(1, 2))}
    if name == "batched_gemm_a8w8":
        xs, ws = inputs["x_scale"], inputs["w_scale"]

        def op() -> None:
            for b in range(x.shape[0]):
                (torch._int_mm(x[b], w[b].t()).float() * xs[b] * ws[b]).to(torch.bfloat16)

        return {"torch._int_mm x B + scale": op}
    if name.startswith("batched_gemm_a8w8_a_per"):
        return _fp8_ops(inputs)
    xd = (C.mxfp4_dequantize(x, inputs["x_scale"]) if name == "batched_gemm_afp4wfp4" else x.float()).to(torch.bfloat16)
    wd = C.mxfp4_dequantize(w, inputs["w_scale"]).to(torch.bfloat16)
    return {"torch.bmm on dequantized bf16": lambda: torch.bmm(xd, wd.transpose(1, 2))}


def _fp8_ops(inputs: dict[str, Any]) -> dict[str, Callable[[], Any]]:
    x, w = inputs["x"], inputs["w"]
    fmax = torch.finfo(C.fp8_dtype()).max
    s = x.float().abs().amax(-1, keepdim=True).clamp_min(1e-10) / fmax
    xq = (x.float() / s).clamp(-fmax, fmax).to(C.fp8_dtype())
    ws = inputs["w_scale"].expand(1, w.shape[1]).contiguous()

    def rowwise() -> None:
        for b in range(x.shape[0]):
            torch._scaled_mm(xq[b], w[b].t(), scale_a=s[b], scale_b=ws, out_dtype=torch.bfloat16)

    ops: dict[str, Callable[[], Any]] = {"torch._scaled_mm (row-wise, X quantized beforehand; less work) x B": rowwise}
    for label, in_op in (
        ("torch group-quant + torch._scaled_mm (1x128 × 128x128) x B (same math)", True),
        ("torch._scaled_mm (1x128 × 128x128, X quantized beforehand) x B", False),
    ):
        try:
            op = blockwise_op(x, w, inputs["w_scale"], in_op)
            err = C.rel_frobenius(torch.stack(op()), prequant.reference(inputs))
            if err > 1e-2:
                raise RuntimeError(f"wrong result: relative error {err:.3g}")
            ops[label] = op
        except (RuntimeError, ValueError) as e:  # torch or cuBLAS refusing the recipe
            print(f"left out {label}: {str(e).splitlines()[0]}", file=sys.stderr)
    return ops

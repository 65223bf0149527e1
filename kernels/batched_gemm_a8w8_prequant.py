"""Y[b] = Σ_g (fp8(X[b,:,g]) · W[b,:,g]ᵀ) · s[b,:,g] · w_scale (+ bias[b]): bf16/fp16 X (B,M,K) quantized per row
in 128-wide K groups *inside the K loop* (s = max|x| / FP8_MAX), fp8 e4m3 W (B,N,K) with one per-tensor scale.

AITER's ``batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant``: BLOCK_SIZE_K is forced
to the group size (the config files have no BLOCK_SIZE_K). W is e4m3fn on NVIDIA and gfx950, e4m3fnuz on gfx942.
"""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl

from kernels import _common as C
from kernels._config import split_config

NAME = "batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant"
INPUT_DTYPE = "bf16"  # the dtype column of results, unless the case names one
CONFIG_NAME = "BATCHED_GEMM-A8W8-A_PER_TOKEN_GROUP_PREQUANT_W_PER_BATCHED_TENSOR_QUANT"
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
GROUP_SIZE = 128


@triton.jit
def _batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant_kernel(
    x_ptr, w_ptr, w_scale_ptr, bias_ptr, y_ptr, M, N, K,
    stride_xb, stride_xm, stride_xk, stride_wb, stride_wn, stride_wk, stride_bias_b,
    stride_yb, stride_ym, stride_yn, stride_yk,
    HAS_BIAS: tl.constexpr, FP8_MAX: tl.constexpr, ROUND_BEFORE_CAST: tl.constexpr, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
    BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr, NUM_KSPLIT: tl.constexpr,
    SPLITK_BLOCK_SIZE: tl.constexpr, EVEN_K: tl.constexpr,
):  # fmt: skip
    pid_b = tl.program_id(1).to(tl.int64)  # batch is the slow grid axis: concurrent CTAs share X/W in L2
    pid_m, pid_n, pid_k = C._tile_ids(tl.program_id(0), M, N, BLOCK_SIZE_M, BLOCK_SIZE_N, GROUP_SIZE_M, NUM_KSPLIT)
    offs_m = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_n = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    offs_am = offs_m % M
    offs_bn = offs_n % N
    offs_k = pid_k * SPLITK_BLOCK_SIZE + tl.arange(0, BLOCK_SIZE_K)
    x_ptrs = x_ptr + pid_b * stride_xb + offs_am[:, None] * stride_xm + offs_k[None, :] * stride_xk
    w_ptrs = w_ptr + pid_b * stride_wb + offs_bn[None, :] * stride_wn + offs_k[:, None] * stride_wk
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for i in range(0, SPLITK_BLOCK_SIZE // BLOCK_SIZE_K):
        if EVEN_K:
            x = tl.load(x_ptrs)
            w = tl.load(w_ptrs)
        else:
            kk = offs_k + i * BLOCK_SIZE_K
            x = tl.load(x_ptrs, mask=kk[None, :] < K, other=0.0)
            w = tl.load(w_ptrs, mask=kk[:, None] < K, other=0.0)
        x = x.to(tl.float32)
        s = tl.maximum(tl.max(tl.abs(x), axis=1), 1e-10) / FP8_MAX  # one scale per row and K group
        xv = tl.clamp(x / s[:, None], -FP8_MAX, FP8_MAX)
        if ROUND_BEFORE_CAST:
            # Round to 3 mantissa bits (nearest-even) in fp32 first, so the cast below is exact. Only under
            # TRITON_INTERPRET: the interpreter's fp32->e4m3 cast drops the carry of a round-up (126.8 -> 64).
            b = xv.to(tl.int32, bitcast=True)
            b = (b + 0x7FFFF + ((b >> 20) & 1)) & -0x100000
            xv = b.to(tl.float32, bitcast=True)
        xq = xv.to(w_ptr.dtype.element_ty)
        acc += tl.dot(xq, w) * s[:, None]
        x_ptrs += BLOCK_SIZE_K * stride_xk
        w_ptrs += BLOCK_SIZE_K * stride_wk
    acc *= tl.load(w_scale_ptr)
    if HAS_BIAS:
        if pid_k == 0:
            acc += tl.load(bias_ptr + pid_b * stride_bias_b + offs_bn).to(tl.float32)[None, :]
    y_ptrs = y_ptr + pid_b * stride_yb + pid_k * stride_yk + offs_m[:, None] * stride_ym + offs_n[None, :] * stride_yn
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def make_inputs(case: dict[str, Any], seed: int) -> dict[str, Any]:
    B, M, N, K = (int(case[k]) for k in "BMNK")
    dt = DTYPES[case.get("dtype", "bf16")]
    dev = C.device()
    g = C.generator(seed, dev)
    x = C.rand((B, M, K), dt, g, dev)
    wf = C.rand((B, N, K), torch.float32, g, dev, scale=K**-0.5)
    fp8 = C.fp8_dtype()
    w_scale = (wf.abs().amax() / torch.finfo(fp8).max).reshape(1).float()
    w = (wf / w_scale).clamp(-torch.finfo(fp8).max, torch.finfo(fp8).max).to(fp8)
    bias = C.rand((B, 1, N), dt, g, dev) if case.get("bias") else None
    return {"x": x, "w": w, "w_scale": w_scale, "bias": bias, "y": torch.empty((B, M, N), dtype=dt, device=dev)}


def launch(inputs: dict[str, Any], config: dict[str, Any]) -> torch.Tensor:
    x, w, wsc, bias, y = (inputs[k] for k in ("x", "w", "w_scale", "bias", "y"))
    B, M, K = x.shape
    N = w.shape[1]
    meta, opts = split_config(config, C.backend())
    meta["BLOCK_SIZE_K"] = GROUP_SIZE  # the quantization group: forced, as in AITER
    ks, split = C.splitk_plan(K, meta, GROUP_SIZE)
    out, ys = C.splitk_target(y, ks)
    _batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant_kernel[C.grid(B, M, N, meta, ks)](
        x, w, wsc, bias if bias is not None else x, out, M, N, K, *x.stride(), *w.stride(),
        bias.stride(0) if bias is not None else 0, *ys,
        HAS_BIAS=bias is not None, FP8_MAX=float(torch.finfo(w.dtype).max),
        ROUND_BEFORE_CAST=C.INTERPRET, NUM_KSPLIT=ks, SPLITK_BLOCK_SIZE=split,
        EVEN_K=K % split == 0, **C.tile_meta(meta), **opts,
    )  # fmt: skip
    return C.splitk_finish(out, y)


def reference(inputs: dict[str, Any]) -> torch.Tensor:
    """The same per-(row, 128-group) quantization in float32, then a float64 product of the dequantized values."""
    x, w = inputs["x"].float(), inputs["w"]
    B, M, K = x.shape
    fmax = torch.finfo(w.dtype).max
    pad = (-K) % GROUP_SIZE
    xp = torch.nn.functional.pad(x, (0, pad)).reshape(B, M, -1, GROUP_SIZE)
    s = xp.abs().amax(dim=-1, keepdim=True).clamp_min(1e-10) / fmax
    xq = (xp / s).clamp(-fmax, fmax).to(w.dtype).float()
    xd = (xq.double() * s.double()).reshape(B, M, -1)[..., :K]
    ref = torch.bmm(xd, w.double().transpose(1, 2)) * inputs["w_scale"].double()
    if inputs["bias"] is not None:
        ref += inputs["bias"].double()
    return ref


def tolerance(case: dict[str, Any]) -> float:
    return 1e-2 if case.get("dtype", "bf16") == "bf16" else 3e-3


flops = C.gemm_flops


def bytes_moved(case: dict[str, Any]) -> float:
    B, M, N, K = (int(case[k]) for k in "BMNK")
    return B * (2 * M * K + N * K + 2 * M * N + (2 * N if case.get("bias") else 0)) + 4

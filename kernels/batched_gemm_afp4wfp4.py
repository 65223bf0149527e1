"""Y[b] = X[b] · W[b]ᵀ with both operands MXFP4: packed e2m1 X (B,M,K/2) and W (B,N,K/2), e8m0 scales
(B,M,K/32) and (B,N,K/32), group size 32; fp32 accumulation through ``tl.dot_scaled``; bf16 output."""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl

from harness import ConfigLookup, KernelSpec, Param, Plot, dim, split_config
from kernels import common as C

SPEC = KernelSpec(
    name="batched_gemm_afp4wfp4",
    description="Y[b] = X[b] W[b]^T, both MXFP4 (packed e2m1, e8m0 scales per 32), fp32 accumulation",
    params=(dim("B"), dim("M"), dim("N"), dim("K"), Param("out_dtype", "str", "bf16", choices=("bf16", "fp16"))),
    flops=lambda p: 2.0 * p["B"] * p["M"] * p["N"] * p["K"],
    bytes=lambda p: p["B"] * ((p["M"] + p["N"]) * p["K"] / 2 + (p["M"] + p["N"]) * p["K"] / 32 + 2 * p["M"] * p["N"]),
    peak="fp4",
    dtype="mxfp4",
    tolerance=lambda p: 1e-2 if p["out_dtype"] == "bf16" else 2e-3,
    config=ConfigLookup("BATCHED_GEMM-AFP4WFP4"),
    config_keys=("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "NUM_KSPLIT", "cache_modifier"),
    hooks=("supported",),
    plot=Plot(x="M", series=("N", "K")),
)
OUT_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


@triton.jit
def _batched_gemm_afp4_wfp4_kernel(
    x_ptr, w_ptr, xs_ptr, ws_ptr, y_ptr, M, N, K,
    stride_xb, stride_xm, stride_xk, stride_wb, stride_wn, stride_wk,
    stride_xsb, stride_xsm, stride_xsk, stride_wsb, stride_wsn, stride_wsk,
    stride_yb, stride_ym, stride_yn, stride_yk,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
    NUM_KSPLIT: tl.constexpr, SPLITK_BLOCK_SIZE: tl.constexpr, EVEN_K: tl.constexpr, CACHE_MODIFIER: tl.constexpr,
):  # fmt: skip
    pid_b = tl.program_id(1).to(tl.int64)  # batch is the slow grid axis: concurrent CTAs share X/W in L2
    pid_m, pid_n, pid_k = C._tile_ids(tl.program_id(0), M, N, BLOCK_SIZE_M, BLOCK_SIZE_N, GROUP_SIZE_M, NUM_KSPLIT)
    offs_m = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_n = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    offs_am = offs_m % M
    offs_bn = offs_n % N
    k0 = pid_k * SPLITK_BLOCK_SIZE
    offs_kp = k0 // 2 + tl.arange(0, BLOCK_SIZE_K // 2)
    offs_ks = k0 // 32 + tl.arange(0, BLOCK_SIZE_K // 32)
    x_ptrs = x_ptr + pid_b * stride_xb + offs_am[:, None] * stride_xm + offs_kp[None, :] * stride_xk
    w_ptrs = w_ptr + pid_b * stride_wb + offs_bn[None, :] * stride_wn + offs_kp[:, None] * stride_wk
    xs_ptrs = xs_ptr + pid_b * stride_xsb + offs_am[:, None] * stride_xsm + offs_ks[None, :] * stride_xsk
    ws_ptrs = ws_ptr + pid_b * stride_wsb + offs_bn[:, None] * stride_wsn + offs_ks[None, :] * stride_wsk
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for i in range(0, SPLITK_BLOCK_SIZE // BLOCK_SIZE_K):
        if EVEN_K:
            x = tl.load(x_ptrs)
            w = tl.load(w_ptrs, cache_modifier=CACHE_MODIFIER)
            xs = tl.load(xs_ptrs)
            ws = tl.load(ws_ptrs)
        else:
            kp = offs_kp + i * (BLOCK_SIZE_K // 2)
            ksc = offs_ks + i * (BLOCK_SIZE_K // 32)
            x = tl.load(x_ptrs, mask=kp[None, :] < K // 2, other=0)
            w = tl.load(w_ptrs, mask=kp[:, None] < K // 2, other=0, cache_modifier=CACHE_MODIFIER)
            xs = tl.load(xs_ptrs, mask=ksc[None, :] < K // 32, other=0)
            ws = tl.load(ws_ptrs, mask=ksc[None, :] < K // 32, other=0)
        acc = tl.dot_scaled(x, xs, "e2m1", w, ws, "e2m1", acc)
        x_ptrs += (BLOCK_SIZE_K // 2) * stride_xk
        w_ptrs += (BLOCK_SIZE_K // 2) * stride_wk
        xs_ptrs += (BLOCK_SIZE_K // 32) * stride_xsk
        ws_ptrs += (BLOCK_SIZE_K // 32) * stride_wsk
    y_ptrs = y_ptr + pid_b * stride_yb + pid_k * stride_yk + offs_m[:, None] * stride_ym + offs_n[None, :] * stride_yn
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def make_inputs(case: dict[str, Any], seed: int) -> dict[str, Any]:
    B, M, N, K = (int(case[k]) for k in "BMNK")
    if K % C.MXFP4_GROUP:
        raise ValueError(f"K={K} must be a multiple of {C.MXFP4_GROUP} for MXFP4")
    dev = C.device()
    g = C.generator(seed, dev)
    x, xs = C.mxfp4_quantize(C.rand((B, M, K), torch.float32, g, dev))
    w, ws = C.mxfp4_quantize(C.rand((B, N, K), torch.float32, g, dev, scale=K**-0.5))
    out = OUT_DTYPES[case["out_dtype"]]
    return {"x": x, "w": w, "x_scale": xs, "w_scale": ws, "y": torch.empty((B, M, N), dtype=out, device=dev)}


def launch(inputs: dict[str, Any], config: dict[str, Any]) -> torch.Tensor:
    x, w, xs, ws, y = (inputs[k] for k in ("x", "w", "x_scale", "w_scale", "y"))
    B, M, Kp = x.shape
    K, N = 2 * Kp, w.shape[1]
    meta, opts = split_config(config, C.backend())
    meta["BLOCK_SIZE_K"] = min(int(meta["BLOCK_SIZE_K"]), triton.next_power_of_2(K))
    ks, split = C.splitk_plan(K, meta, C.MXFP4_GROUP)
    out, ys = C.splitk_target(y, ks)
    _batched_gemm_afp4_wfp4_kernel[C.grid(B, M, N, meta, ks)](
        x, w, xs, ws, out, M, N, K, *x.stride(), *w.stride(), *xs.stride(), *ws.stride(), *ys,
        NUM_KSPLIT=ks, SPLITK_BLOCK_SIZE=split, EVEN_K=K % split == 0, CACHE_MODIFIER=meta.get("cache_modifier") or "",
        **C.tile_meta(meta), **opts,
    )  # fmt: skip
    return C.splitk_finish(out, y)


def reference(inputs: dict[str, Any]) -> torch.Tensor:
    x = C.mxfp4_dequantize(inputs["x"], inputs["x_scale"]).double()
    w = C.mxfp4_dequantize(inputs["w"], inputs["w_scale"]).double()
    return torch.bmm(x, w.transpose(1, 2))


def supported(case: dict[str, Any]) -> str | None:
    """None, or why this case cannot run on this stack (the case is then reported as ``skipped``)."""
    return C.dot_scaled_unsupported()

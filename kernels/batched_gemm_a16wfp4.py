"""Y[b] = mxfp4(X[b]) · W[b]ᵀ for bf16/fp16 X (B,M,K) quantized to MXFP4 inside the kernel, W packed e2m1.

W is (B,N,K/2) uint8 (two e2m1 per byte, low nibble = even k) with e8m0 scales (B,N,K/32). Each X tile is
quantized in registers (groups of 32 along K, e8m0 scale = the smallest power of two that brings the group's
max magnitude to <= 6), then multiplied with ``tl.dot_scaled(..., "e2m1", ..., "e2m1")``: native scaled MFMA
on gfx950, a bf16 emulation on Hopper. K counts logical (unpacked) elements, as in AITER's config lookup.
"""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl

from harness import ConfigLookup, KernelSpec, Plot, dim, dtype, split_config
from kernels import common as C

SPEC = KernelSpec(
    name="batched_gemm_a16wfp4",
    description="Y[b] = mxfp4(X[b]) W[b]^T, X bf16/fp16 quantized to MXFP4 in the kernel, W packed e2m1",
    params=(dim("B"), dim("M"), dim("N"), dim("K"), dtype(("bf16", "fp16"), "bf16")),
    flops=lambda p: 2.0 * p["B"] * p["M"] * p["N"] * p["K"],
    bytes=lambda p: p["B"] * (2 * p["M"] * p["K"] + p["N"] * p["K"] / 2 + p["N"] * p["K"] / 32 + 2 * p["M"] * p["N"]),
    peak="fp4",
    dtype="{dtype}",
    tolerance={"bf16": 1e-2, "fp16": 2e-3},
    config=ConfigLookup("BATCHED_GEMM-A16WFP4"),
    config_keys=("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "NUM_KSPLIT", "cache_modifier"),
    hooks=("supported",),
    plot=Plot(x="M", series=("N", "K")),
)
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


@triton.jit
def _batched_gemm_a16wfp4_kernel(
    x_ptr, w_ptr, ws_ptr, y_ptr, M, N, K,
    stride_xb, stride_xm, stride_xk, stride_wb, stride_wn, stride_wk, stride_wsb, stride_wsn, stride_wsk,
    stride_yb, stride_ym, stride_yn, stride_yk,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
    NUM_KSPLIT: tl.constexpr, SPLITK_BLOCK_SIZE: tl.constexpr, EVEN_K: tl.constexpr,
    CACHE_MODIFIER: tl.constexpr,
):  # fmt: skip
    pid_b = tl.program_id(1).to(tl.int64)  # batch is the slow grid axis: concurrent CTAs share X/W in L2
    pid_m, pid_n, pid_k = C._tile_ids(tl.program_id(0), M, N, BLOCK_SIZE_M, BLOCK_SIZE_N, GROUP_SIZE_M, NUM_KSPLIT)
    offs_m = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_n = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    offs_am = offs_m % M
    offs_bn = offs_n % N
    k0 = pid_k * SPLITK_BLOCK_SIZE
    offs_k = k0 + tl.arange(0, BLOCK_SIZE_K)
    offs_kp = k0 // 2 + tl.arange(0, BLOCK_SIZE_K // 2)
    offs_ks = k0 // 32 + tl.arange(0, BLOCK_SIZE_K // 32)
    x_ptrs = x_ptr + pid_b * stride_xb + offs_am[:, None] * stride_xm + offs_k[None, :] * stride_xk
    w_ptrs = w_ptr + pid_b * stride_wb + offs_bn[None, :] * stride_wn + offs_kp[:, None] * stride_wk
    ws_ptrs = ws_ptr + pid_b * stride_wsb + offs_bn[:, None] * stride_wsn + offs_ks[None, :] * stride_wsk
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for i in range(0, SPLITK_BLOCK_SIZE // BLOCK_SIZE_K):
        if EVEN_K:
            x = tl.load(x_ptrs)
            w = tl.load(w_ptrs, cache_modifier=CACHE_MODIFIER)
            ws = tl.load(ws_ptrs)
        else:
            kk = offs_k + i * BLOCK_SIZE_K
            x = tl.load(x_ptrs, mask=kk[None, :] < K, other=0.0)
            w = tl.load(
                w_ptrs,
                mask=(offs_kp + i * (BLOCK_SIZE_K // 2))[:, None] < K // 2,
                other=0,
                cache_modifier=CACHE_MODIFIER,
            )
            ws = tl.load(ws_ptrs, mask=(offs_ks + i * (BLOCK_SIZE_K // 32))[None, :] < K // 32, other=0)
        xq, xs = C._mxfp4_quant_tile(x.to(tl.float32), BLOCK_SIZE_M, BLOCK_SIZE_K)
        acc = tl.dot_scaled(xq, xs, "e2m1", w, ws, "e2m1", acc)
        x_ptrs += BLOCK_SIZE_K * stride_xk
        w_ptrs += (BLOCK_SIZE_K // 2) * stride_wk
        ws_ptrs += (BLOCK_SIZE_K // 32) * stride_wsk
    y_ptrs = y_ptr + pid_b * stride_yb + pid_k * stride_yk + offs_m[:, None] * stride_ym + offs_n[None, :] * stride_yn
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def make_inputs(case: dict[str, Any], seed: int) -> dict[str, Any]:
    B, M, N, K = (int(case[k]) for k in "BMNK")
    if K % C.MXFP4_GROUP:
        raise ValueError(f"K={K} must be a multiple of {C.MXFP4_GROUP} for MXFP4")
    dt = DTYPES[case["dtype"]]
    dev = C.device()
    g = C.generator(seed, dev)
    x = C.rand((B, M, K), dt, g, dev)
    w, ws = C.mxfp4_quantize(C.rand((B, N, K), torch.float32, g, dev, scale=K**-0.5))
    return {"x": x, "w": w, "w_scale": ws, "y": torch.empty((B, M, N), dtype=dt, device=dev)}


def launch(inputs: dict[str, Any], config: dict[str, Any]) -> torch.Tensor:
    x, w, ws, y = inputs["x"], inputs["w"], inputs["w_scale"], inputs["y"]
    B, M, K = x.shape
    N = w.shape[1]
    meta, opts = split_config(config, C.backend())
    meta["BLOCK_SIZE_K"] = min(int(meta["BLOCK_SIZE_K"]), triton.next_power_of_2(K))
    ks, split = C.splitk_plan(K, meta, C.MXFP4_GROUP)
    out, ys = C.splitk_target(y, ks)
    cm = meta.get("cache_modifier") or ""
    _batched_gemm_a16wfp4_kernel[C.grid(B, M, N, meta, ks)](
        x, w, ws, out, M, N, K, *x.stride(), *w.stride(), *ws.stride(), *ys,
        NUM_KSPLIT=ks, SPLITK_BLOCK_SIZE=split, EVEN_K=K % split == 0, CACHE_MODIFIER=cm,
        **C.tile_meta(meta), **opts,
    )  # fmt: skip
    return C.splitk_finish(out, y)


def reference(inputs: dict[str, Any]) -> torch.Tensor:
    xq, xs = C.mxfp4_quantize(inputs["x"].float())
    x = C.mxfp4_dequantize(xq, xs).double()
    w = C.mxfp4_dequantize(inputs["w"], inputs["w_scale"]).double()
    return torch.bmm(x, w.transpose(1, 2))


def supported(case: dict[str, Any]) -> str | None:
    """None, or why this case cannot run on this stack (the case is then reported as ``skipped``)."""
    return C.dot_scaled_unsupported()

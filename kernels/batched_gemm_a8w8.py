"""Y[b] = (X[b] · W[b]ᵀ) · x_scale[b] · w_scale[b] (+ bias[b]) for int8 X (B,M,K) and W (B,N,K).

x_scale (B,M,1) per token, w_scale (B,1,N) per output channel, both fp32; int32 accumulation, scales and
bias applied after the K loop; bf16 (or fp16) output.

Two variants of the same tiles, as batched_gemm_bf16: a program per output tile with pointer loads (any backend,
split-K), and with ``PERSISTENT: n`` n programs per SM looping over the tiles with TMA loads and stores (Hopper+,
``EPILOGUE_SUBTILE``). Since Triton 3.7.1 the pointer kernel pays a proxy fence (``fence.proxy.async``, SASS
``MEMBAR.ALL.CTA`` + ``FENCE.VIEW.ASYNC.S``) before each K step's MMA, because cp.async fills shared memory
through the generic proxy and wgmma reads it through the async one; TMA loads write through the async proxy and
need none (reports/h200x2-retune/).
"""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl

from harness import ConfigLookup, KernelSpec, Param, Plot, dim, split_config
from kernels import common as C

OUT_BYTES = {"bf16": 2, "fp16": 2}
SPEC = KernelSpec(
    name="batched_gemm_a8w8",
    description="Y[b] = (X[b] W[b]^T) x_scale w_scale (+ bias[b]), int8 in, per-token and per-channel fp32 scales",
    params=(
        dim("B"),
        dim("M"),
        dim("N"),
        dim("K"),
        Param("bias", "bool", False),
        Param("out_dtype", "str", "bf16", choices=("bf16", "fp16")),
    ),
    flops=lambda p: 2.0 * p["B"] * p["M"] * p["N"] * p["K"],
    bytes=lambda p: (
        p["B"]
        * (
            p["M"] * p["K"]
            + p["N"] * p["K"]
            + 4 * (p["M"] + p["N"])
            + OUT_BYTES[p["out_dtype"]] * (p["M"] * p["N"] + p["N"] * p["bias"])
        )
    ),
    peak="int8",
    dtype="int8",
    tolerance=lambda p: 1e-2 if p["out_dtype"] == "bf16" else 2e-3,
    config=ConfigLookup("BATCHED_GEMM-A8W8"),
    config_keys=(
        "BLOCK_SIZE_M",
        "BLOCK_SIZE_N",
        "BLOCK_SIZE_K",
        "GROUP_SIZE_M",
        "NUM_KSPLIT",
        "PERSISTENT",
        "EPILOGUE_SUBTILE",
    ),
    plot=Plot(x="M", series=("N", "K")),
)
OUT_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


@triton.jit
def _batched_gemm_a8w8_kernel(
    x_ptr, w_ptr, xs_ptr, ws_ptr, bias_ptr, y_ptr, M, N, K,
    stride_xb, stride_xm, stride_xk, stride_wb, stride_wn, stride_wk,
    stride_xsb, stride_xsm, stride_wsb, stride_wsn, stride_bias_b,
    stride_yb, stride_ym, stride_yn, stride_yk,
    HAS_BIAS: tl.constexpr, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr, NUM_KSPLIT: tl.constexpr, SPLITK_BLOCK_SIZE: tl.constexpr, EVEN_K: tl.constexpr,
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
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.int32)
    for i in range(0, SPLITK_BLOCK_SIZE // BLOCK_SIZE_K):
        if EVEN_K:
            a = tl.load(x_ptrs)
            b = tl.load(w_ptrs)
        else:
            kk = offs_k + i * BLOCK_SIZE_K
            a = tl.load(x_ptrs, mask=kk[None, :] < K, other=0)
            b = tl.load(w_ptrs, mask=kk[:, None] < K, other=0)
        acc = tl.dot(a, b, acc, out_dtype=tl.int32)
        x_ptrs += BLOCK_SIZE_K * stride_xk
        w_ptrs += BLOCK_SIZE_K * stride_wk
    xs = tl.load(xs_ptr + pid_b * stride_xsb + offs_am * stride_xsm)
    ws = tl.load(ws_ptr + pid_b * stride_wsb + offs_bn * stride_wsn)
    out = acc.to(tl.float32) * xs[:, None] * ws[None, :]
    if HAS_BIAS:
        if pid_k == 0:
            out += tl.load(bias_ptr + pid_b * stride_bias_b + offs_bn).to(tl.float32)[None, :]
    y_ptrs = y_ptr + pid_b * stride_yb + pid_k * stride_yk + offs_m[:, None] * stride_ym + offs_n[None, :] * stride_yn
    tl.store(y_ptrs, out.to(y_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def _batched_gemm_a8w8_persistent_kernel(
    x_desc, w_desc, y_desc, xs_ptr, ws_ptr, bias_ptr, M, N, K, stride_xsb, stride_xsm, stride_wsb, stride_wsn,
    stride_bias_b, NUM_PROGRAMS, NUM_TILES,
    HAS_BIAS: tl.constexpr, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr,
):  # fmt: skip
    pid = tl.program_id(0)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    for i in tl.range(0, tl.cdiv(NUM_TILES, NUM_PROGRAMS), flatten=True):
        b, off_m, off_n, live = C._persistent_tile(
            i, pid, M, N, NUM_PROGRAMS, NUM_TILES, BLOCK_SIZE_M, BLOCK_SIZE_N, GROUP_SIZE_M
        )
        acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.int32)
        for kk in range(k_tiles):  # past K, TMA reads zeros: no mask
            a = x_desc.load([b, off_m, kk * BLOCK_SIZE_K]).reshape(BLOCK_SIZE_M, BLOCK_SIZE_K)
            w = w_desc.load([b, off_n, kk * BLOCK_SIZE_K]).reshape(BLOCK_SIZE_N, BLOCK_SIZE_K)
            acc = tl.dot(a, w.T, acc, out_dtype=tl.int32)
        offs_m = off_m + tl.arange(0, BLOCK_SIZE_M)
        offs_n = off_n + tl.arange(0, BLOCK_SIZE_N)
        b64 = b.to(tl.int64)
        # scales past the last tile (b out of range) or past M/N are masked: pointer loads, unlike TMA's
        xs = tl.load(xs_ptr + b64 * stride_xsb + offs_m * stride_xsm, mask=offs_m < tl.where(live, M, 0), other=0.0)
        ws = tl.load(ws_ptr + b64 * stride_wsb + offs_n * stride_wsn, mask=offs_n < tl.where(live, N, 0), other=0.0)
        out = acc.to(tl.float32) * xs[:, None] * ws[None, :]
        if HAS_BIAS:
            out += C._bias_row(bias_ptr, b, stride_bias_b, off_n, N, live, BLOCK_SIZE_N)
        C._store_tile(y_desc, out, b, off_m, off_n, BLOCK_SIZE_M, BLOCK_SIZE_N, EPILOGUE_SUBTILE)


def make_inputs(case: dict[str, Any], seed: int) -> dict[str, Any]:
    B, M, N, K = (int(case[k]) for k in "BMNK")
    out_dt = OUT_DTYPES[case["out_dtype"]]
    dev = C.device()
    g = C.generator(seed, dev)
    x = torch.randint(-127, 128, (B, M, K), generator=g, device=dev, dtype=torch.int8)
    w = torch.randint(-127, 128, (B, N, K), generator=g, device=dev, dtype=torch.int8)
    xs = torch.rand((B, M, 1), generator=g, device=dev) * 0.01 + 1e-3
    ws = torch.rand((B, 1, N), generator=g, device=dev) * 0.01 / K**0.5 + 1e-4
    bias = C.rand((B, 1, N), out_dt, g, dev) if case["bias"] else None
    return {
        "x": x,
        "w": w,
        "x_scale": xs,
        "w_scale": ws,
        "bias": bias,
        "y": torch.empty((B, M, N), dtype=out_dt, device=dev),
    }


def launch(inputs: dict[str, Any], config: dict[str, Any]) -> torch.Tensor:
    x, w, xs, ws, bias, y = (inputs[k] for k in ("x", "w", "x_scale", "w_scale", "bias", "y"))
    B, M, K = x.shape
    N = w.shape[1]
    meta, opts = split_config(config, C.backend())
    ks, split = C.splitk_plan(K, meta, 1)
    if C.use_persistent(meta, ks, x, w, y):
        bm, bn, bk = meta["BLOCK_SIZE_M"], meta["BLOCK_SIZE_N"], meta["BLOCK_SIZE_K"]
        sub = int(meta.get("EPILOGUE_SUBTILE", 0))
        progs = C.persistent_programs(B, M, N, meta)
        _batched_gemm_a8w8_persistent_kernel[(progs,)](
            C.descriptor(x, [1, bm, bk]), C.descriptor(w, [1, bn, bk]), C.descriptor(y, [1, bm, bn >> sub]),
            xs, ws, bias if bias is not None else xs, M, N, K, xs.stride(0), xs.stride(1), ws.stride(0),
            ws.stride(2), bias.stride(0) if bias is not None else 0, progs, C.num_tiles(B, M, N, meta),
            HAS_BIAS=bias is not None, EPILOGUE_SUBTILE=sub, **C.tile_meta(meta), **opts,
        )  # fmt: skip
        return y
    out, ys = C.splitk_target(y, ks)
    _batched_gemm_a8w8_kernel[C.grid(B, M, N, meta, ks)](
        x, w, xs, ws, bias if bias is not None else xs, out, M, N, K, *x.stride(), *w.stride(),
        xs.stride(0), xs.stride(1), ws.stride(0), ws.stride(2), bias.stride(0) if bias is not None else 0, *ys,
        HAS_BIAS=bias is not None, NUM_KSPLIT=ks, SPLITK_BLOCK_SIZE=split, EVEN_K=K % split == 0, **C.tile_meta(meta), **opts,
    )  # fmt: skip
    return C.splitk_finish(out, y)


def reference(inputs: dict[str, Any]) -> torch.Tensor:
    acc = torch.bmm(inputs["x"].double(), inputs["w"].double().transpose(1, 2))
    ref = acc * inputs["x_scale"].double() * inputs["w_scale"].double()
    if inputs["bias"] is not None:
        ref += inputs["bias"].double()
    return ref

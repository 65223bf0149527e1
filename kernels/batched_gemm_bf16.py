"""Y[b] = X[b] · W[b]ᵀ (+ bias[b]) for bf16/fp16 X (B,M,K) and W (B,N,K); fp32 accumulation.

Two variants of the same tiles: a program per output tile with pointer loads (any backend, split-K), and, when a
config says ``PERSISTENT: n``, n programs per SM looping over the tiles with TMA loads and stores (Hopper+): the
next tile's loads overlap this tile's store, which is what the write-bound small-K shapes (K=128) need.
``EPILOGUE_SUBTILE: 1`` stores the tile in two halves (less shared memory for the epilogue).
"""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl

from harness import ConfigLookup, KernelSpec, Param, Plot, dim, dtype, split_config
from kernels import common as C

SPEC = KernelSpec(
    name="batched_gemm_bf16",
    description="Y[b] = X[b] W[b]^T (+ bias[b]), bf16 or fp16, fp32 accumulation",
    params=(dim("B"), dim("M"), dim("N"), dim("K"), dtype(("bf16", "fp16"), "bf16"), Param("bias", "bool", False)),
    flops=lambda p: 2.0 * p["B"] * p["M"] * p["N"] * p["K"],
    bytes=lambda p: 2.0 * p["B"] * (p["M"] * p["K"] + p["N"] * p["K"] + p["M"] * p["N"] + p["N"] * p["bias"]),
    peak="bf16",
    dtype="{dtype}",
    tolerance={"bf16": 1e-2, "fp16": 2e-3},
    config=ConfigLookup("BATCHED_GEMM-A16W16"),
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
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


@triton.jit
def _batched_gemm_bf16_kernel(
    x_ptr, w_ptr, bias_ptr, y_ptr, M, N, K,
    stride_xb, stride_xm, stride_xk, stride_wb, stride_wn, stride_wk, stride_bias_b,
    stride_yb, stride_ym, stride_yn, stride_yk,
    HAS_BIAS: tl.constexpr, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr, NUM_KSPLIT: tl.constexpr, SPLITK_BLOCK_SIZE: tl.constexpr, EVEN_K: tl.constexpr,
):  # fmt: skip
    pid_b = tl.program_id(1).to(tl.int64)  # batch is the slow grid axis: concurrent CTAs share X/W in L2
    pid_m, pid_n, pid_k = C._tile_ids(tl.program_id(0), M, N, BLOCK_SIZE_M, BLOCK_SIZE_N, GROUP_SIZE_M, NUM_KSPLIT)
    offs_m = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_n = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    offs_am = offs_m % M  # wrap instead of masking the loads; those rows are never stored
    offs_bn = offs_n % N
    k0 = pid_k * SPLITK_BLOCK_SIZE
    offs_k = k0 + tl.arange(0, BLOCK_SIZE_K)
    x_ptrs = x_ptr + pid_b * stride_xb + offs_am[:, None] * stride_xm + offs_k[None, :] * stride_xk
    w_ptrs = w_ptr + pid_b * stride_wb + offs_bn[None, :] * stride_wn + offs_k[:, None] * stride_wk
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for i in range(0, SPLITK_BLOCK_SIZE // BLOCK_SIZE_K):
        if EVEN_K:
            a = tl.load(x_ptrs)
            b = tl.load(w_ptrs)
        else:
            kk = offs_k + i * BLOCK_SIZE_K
            a = tl.load(x_ptrs, mask=kk[None, :] < K, other=0.0)
            b = tl.load(w_ptrs, mask=kk[:, None] < K, other=0.0)
        acc = tl.dot(a, b, acc)
        x_ptrs += BLOCK_SIZE_K * stride_xk
        w_ptrs += BLOCK_SIZE_K * stride_wk
    if HAS_BIAS:
        if pid_k == 0:
            acc += tl.load(bias_ptr + pid_b * stride_bias_b + offs_bn).to(tl.float32)[None, :]
    y_ptrs = y_ptr + pid_b * stride_yb + pid_k * stride_yk + offs_m[:, None] * stride_ym + offs_n[None, :] * stride_yn
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def _batched_gemm_bf16_persistent_kernel(
    x_desc, w_desc, y_desc, bias_ptr, M, N, K, stride_bias_b, NUM_PROGRAMS, NUM_TILES,
    HAS_BIAS: tl.constexpr, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr,
):  # fmt: skip
    pid = tl.program_id(0)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    for i in tl.range(0, tl.cdiv(NUM_TILES, NUM_PROGRAMS), flatten=True):
        b, off_m, off_n, live = C._persistent_tile(
            i, pid, M, N, NUM_PROGRAMS, NUM_TILES, BLOCK_SIZE_M, BLOCK_SIZE_N, GROUP_SIZE_M
        )
        acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for kk in range(k_tiles):
            a = x_desc.load([b, off_m, kk * BLOCK_SIZE_K]).reshape(BLOCK_SIZE_M, BLOCK_SIZE_K)
            w = w_desc.load([b, off_n, kk * BLOCK_SIZE_K]).reshape(BLOCK_SIZE_N, BLOCK_SIZE_K)
            acc = tl.dot(a, w.T, acc)
        if HAS_BIAS:
            acc += C._bias_row(bias_ptr, b, stride_bias_b, off_n, N, live, BLOCK_SIZE_N)
        C._store_tile(y_desc, acc, b, off_m, off_n, BLOCK_SIZE_M, BLOCK_SIZE_N, EPILOGUE_SUBTILE)


def make_inputs(case: dict[str, Any], seed: int) -> dict[str, Any]:
    B, M, N, K = (int(case[k]) for k in "BMNK")
    dt = DTYPES[case["dtype"]]
    dev = C.device()
    g = C.generator(seed, dev)
    x = C.rand((B, M, K), dt, g, dev)
    w = C.rand((B, N, K), dt, g, dev, scale=K**-0.5)
    bias = C.rand((B, 1, N), dt, g, dev) if case["bias"] else None
    return {"x": x, "w": w, "bias": bias, "y": torch.empty((B, M, N), dtype=dt, device=dev)}


def launch(inputs: dict[str, Any], config: dict[str, Any]) -> torch.Tensor:
    x, w, bias, y = inputs["x"], inputs["w"], inputs["bias"], inputs["y"]
    B, M, K = x.shape
    N = w.shape[1]
    meta, opts = split_config(config, C.backend())
    ks, split = C.splitk_plan(K, meta, 1)
    if C.use_persistent(meta, ks, x, w, y):
        bm, bn, bk = meta["BLOCK_SIZE_M"], meta["BLOCK_SIZE_N"], meta["BLOCK_SIZE_K"]
        sub = int(meta.get("EPILOGUE_SUBTILE", 0))
        progs = C.persistent_programs(B, M, N, meta)
        _batched_gemm_bf16_persistent_kernel[(progs,)](
            C.descriptor(x, [1, bm, bk]), C.descriptor(w, [1, bn, bk]), C.descriptor(y, [1, bm, bn >> sub]),
            bias if bias is not None else x, M, N, K, bias.stride(0) if bias is not None else 0, progs,
            C.num_tiles(B, M, N, meta), HAS_BIAS=bias is not None, EPILOGUE_SUBTILE=sub,
            **C.tile_meta(meta), **opts,
        )  # fmt: skip
        return y
    out, ys = C.splitk_target(y, ks)
    _batched_gemm_bf16_kernel[C.grid(B, M, N, meta, ks)](
        x, w, bias if bias is not None else x, out, M, N, K, *x.stride(), *w.stride(),
        bias.stride(0) if bias is not None else 0, *ys,
        HAS_BIAS=bias is not None, NUM_KSPLIT=ks, SPLITK_BLOCK_SIZE=split, EVEN_K=K % split == 0, **C.tile_meta(meta), **opts,
    )  # fmt: skip
    return C.splitk_finish(out, y)


def reference(inputs: dict[str, Any]) -> torch.Tensor:
    ref = torch.bmm(inputs["x"].double(), inputs["w"].double().transpose(1, 2))
    if inputs["bias"] is not None:
        ref += inputs["bias"].double()
    return ref

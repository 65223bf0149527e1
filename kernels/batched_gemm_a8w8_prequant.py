"""Y[b] = Σ_g (fp8(X[b,:,g]) · W[b,:,g]ᵀ) · s[b,:,g] · w_scale (+ bias[b]): bf16/fp16 X (B,M,K) quantized per row
in 128-wide K groups *inside the K loop* (s = max|x| / FP8_MAX), fp8 e4m3 W (B,N,K) with one per-tensor scale.

AITER's ``batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant``: BLOCK_SIZE_K is forced
to the group size (the config files have no BLOCK_SIZE_K). W is e4m3fn on NVIDIA and gfx950, e4m3fnuz on gfx942.

In the fused kernel every program quantizes its X rows again for each BLOCK_SIZE_N columns of Y: N/BLOCK_SIZE_N
times in all, which dominates at N=8192 (the quantization costs more instructions per element than the fp8 MMA
it feeds). A config with ``QUANT_PASS: 1`` quantizes X once in a first kernel (fp8 X + one fp32 scale per row
and group, the very same arithmetic, so the results are bit-identical) and the GEMM kernel then reads fp8 X
and the scales; ``PERSISTENT: n`` (with QUANT_PASS) runs that GEMM as n programs per SM with TMA loads/stores,
and ``K_GROUPS: 2`` there issues two K groups' MMAs before scaling either.
"""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl

from harness import ConfigLookup, KernelSpec, Param, Plot, dim, dtype, split_config
from kernels import common as C

SPEC = KernelSpec(
    name="batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant",
    description="Y[b] = sum over 128-wide K groups of fp8(X) W^T s w_scale (+ bias), X quantized per token group",
    params=(dim("B"), dim("M"), dim("N"), dim("K"), dtype(("bf16", "fp16"), "bf16"), Param("bias", "bool", False)),
    flops=lambda p: 2.0 * p["B"] * p["M"] * p["N"] * p["K"],
    bytes=lambda p: p["B"] * (2 * p["M"] * p["K"] + p["N"] * p["K"] + 2 * p["M"] * p["N"] + 2 * p["N"] * p["bias"]) + 4,
    peak="fp8",
    dtype="{dtype}",
    tolerance={"bf16": 1e-2, "fp16": 3e-3},
    config=ConfigLookup("BATCHED_GEMM-A8W8-A_PER_TOKEN_GROUP_PREQUANT_W_PER_BATCHED_TENSOR_QUANT"),
    #: not BLOCK_SIZE_K: forced to the quantization group
    config_keys=(
        "BLOCK_SIZE_M",
        "BLOCK_SIZE_N",
        "GROUP_SIZE_M",
        "NUM_KSPLIT",
        "QUANT_PASS",
        "PERSISTENT",
        "EPILOGUE_SUBTILE",
        "K_GROUPS",
    ),
    plot=Plot(x="M", series=("N", "K")),
)
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
GROUP_SIZE = 128


@triton.jit
def _group_quant(x, FP8_MAX: tl.constexpr, ROUND_BEFORE_CAST: tl.constexpr):
    """fp32 (rows, GROUP) → (one scale per row, the values to cast to fp8): s = max|x| / FP8_MAX, x / s."""
    s = tl.maximum(tl.max(tl.abs(x), axis=1), 1e-10) / FP8_MAX
    xv = tl.clamp(x / s[:, None], -FP8_MAX, FP8_MAX)
    if ROUND_BEFORE_CAST:
        # Round to 3 mantissa bits (nearest-even) in fp32 first, so the cast is exact. Only under
        # TRITON_INTERPRET: the interpreter's fp32->e4m3 cast drops the carry of a round-up (126.8 -> 64).
        b = xv.to(tl.int32, bitcast=True)
        b = (b + 0x7FFFF + ((b >> 20) & 1)) & -0x100000
        xv = b.to(tl.float32, bitcast=True)
    return s, xv


@triton.jit
def _quant_x_kernel(
    x_ptr, xq_ptr, s_ptr, M, K, stride_xb, stride_xm, stride_xk, stride_qb, stride_qm, stride_qk,
    stride_sb, stride_sg, stride_sm,
    FP8_MAX: tl.constexpr, ROUND_BEFORE_CAST: tl.constexpr, BLOCK_M: tl.constexpr, GROUP: tl.constexpr,
):  # fmt: skip
    """X (B,M,K) → fp8 X (B,M,K) and scales (B, K/GROUP, M); one program per (BLOCK_M rows, group, batch)."""
    pid_b = tl.program_id(2).to(tl.int64)
    g = tl.program_id(1)
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_k = g * GROUP + tl.arange(0, GROUP)
    mask = (offs_m[:, None] < M) & (offs_k[None, :] < K)
    x = tl.load(
        x_ptr + pid_b * stride_xb + offs_m[:, None] * stride_xm + offs_k[None, :] * stride_xk, mask=mask, other=0.0
    )
    s, xv = _group_quant(x.to(tl.float32), FP8_MAX, ROUND_BEFORE_CAST)
    q_ptrs = xq_ptr + pid_b * stride_qb + offs_m[:, None] * stride_qm + offs_k[None, :] * stride_qk
    tl.store(q_ptrs, xv.to(xq_ptr.dtype.element_ty), mask=mask)
    tl.store(s_ptr + pid_b * stride_sb + g * stride_sg + offs_m * stride_sm, s, mask=offs_m < M)


@triton.jit
def _batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant_kernel(
    x_ptr, w_ptr, w_scale_ptr, bias_ptr, y_ptr, s_ptr, M, N, K,
    stride_xb, stride_xm, stride_xk, stride_wb, stride_wn, stride_wk, stride_bias_b,
    stride_yb, stride_ym, stride_yn, stride_yk, stride_sb, stride_sg, stride_sm,
    HAS_BIAS: tl.constexpr, FP8_MAX: tl.constexpr, ROUND_BEFORE_CAST: tl.constexpr, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
    BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr, NUM_KSPLIT: tl.constexpr,
    SPLITK_BLOCK_SIZE: tl.constexpr, EVEN_K: tl.constexpr, PREQUANTIZED: tl.constexpr,
):  # fmt: skip
    """PREQUANTIZED: x_ptr is fp8 X from :func:`_quant_x_kernel` and s_ptr its scales; else X is quantized here."""
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
        if PREQUANTIZED:
            g = pid_k * (SPLITK_BLOCK_SIZE // BLOCK_SIZE_K) + i
            s = tl.load(s_ptr + pid_b * stride_sb + g * stride_sg + offs_am * stride_sm)
            xq = x
        else:
            s, xv = _group_quant(x.to(tl.float32), FP8_MAX, ROUND_BEFORE_CAST)  # one scale per row and K group
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


@triton.jit
def _prequantized_persistent_kernel(
    x_desc, w_desc, y_desc, s_ptr, w_scale_ptr, bias_ptr, M, N, K, stride_sb, stride_sg, stride_sm, stride_bias_b,
    NUM_PROGRAMS, NUM_TILES,
    HAS_BIAS: tl.constexpr, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr, K_GROUPS: tl.constexpr,
):  # fmt: skip
    """The GEMM after :func:`_quant_x_kernel`, persistent, TMA loads of fp8 X and W, TMA store of Y.

    K_GROUPS=2 issues the MMAs of two K groups before either partial product is scaled into the accumulator
    (a partial product must be complete before its scaling, so one group at a time leaves the tensor cores idle
    while the FMAs run); the accumulation order stays the same, so the result is bit-identical."""
    pid = tl.program_id(0)
    n_groups = tl.cdiv(K, BLOCK_SIZE_K)
    w_scale = tl.load(w_scale_ptr)
    for i in tl.range(0, tl.cdiv(NUM_TILES, NUM_PROGRAMS), flatten=True):
        b, off_m, off_n, live = C._persistent_tile(
            i, pid, M, N, NUM_PROGRAMS, NUM_TILES, BLOCK_SIZE_M, BLOCK_SIZE_N, GROUP_SIZE_M
        )
        offs_m = off_m + tl.arange(0, BLOCK_SIZE_M)
        s_ptrs = s_ptr + b.to(tl.int64) * stride_sb + offs_m * stride_sm
        m_end = tl.where(live, M, 0)  # no scale is read for a tile past the last one
        acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for kk in range(tl.cdiv(n_groups, K_GROUPS)):
            g = kk * K_GROUPS
            a = x_desc.load([b, off_m, g * BLOCK_SIZE_K]).reshape(BLOCK_SIZE_M, BLOCK_SIZE_K)
            w = w_desc.load([b, off_n, g * BLOCK_SIZE_K]).reshape(BLOCK_SIZE_N, BLOCK_SIZE_K)
            s = tl.load(s_ptrs + g * stride_sg, mask=offs_m < m_end, other=0.0)
            if K_GROUPS == 2:  # past the last group TMA reads zeros and the scale is masked to 0
                a2 = x_desc.load([b, off_m, (g + 1) * BLOCK_SIZE_K]).reshape(BLOCK_SIZE_M, BLOCK_SIZE_K)
                w2 = w_desc.load([b, off_n, (g + 1) * BLOCK_SIZE_K]).reshape(BLOCK_SIZE_N, BLOCK_SIZE_K)
                s2 = tl.load(
                    s_ptrs + (g + 1) * stride_sg, mask=offs_m < tl.where(g + 1 < n_groups, m_end, 0), other=0.0
                )
                p = tl.dot(a, w.T)
                p2 = tl.dot(a2, w2.T)
                acc += p * s[:, None]
                acc += p2 * s2[:, None]
            else:
                acc += tl.dot(a, w.T) * s[:, None]
        acc *= w_scale
        if HAS_BIAS:
            acc += C._bias_row(bias_ptr, b, stride_bias_b, off_n, N, live, BLOCK_SIZE_N)
        C._store_tile(y_desc, acc, b, off_m, off_n, BLOCK_SIZE_M, BLOCK_SIZE_N, EPILOGUE_SUBTILE)


def make_inputs(case: dict[str, Any], seed: int) -> dict[str, Any]:
    B, M, N, K = (int(case[k]) for k in "BMNK")
    dt = DTYPES[case["dtype"]]
    dev = C.device()
    g = C.generator(seed, dev)
    x = C.rand((B, M, K), dt, g, dev)
    wf = C.rand((B, N, K), torch.float32, g, dev, scale=K**-0.5)
    fp8 = C.fp8_dtype()
    w_scale = (wf.abs().amax() / torch.finfo(fp8).max).reshape(1).float()
    w = (wf / w_scale).clamp(-torch.finfo(fp8).max, torch.finfo(fp8).max).to(fp8)
    bias = C.rand((B, 1, N), dt, g, dev) if case["bias"] else None
    return {"x": x, "w": w, "w_scale": w_scale, "bias": bias, "y": torch.empty((B, M, N), dtype=dt, device=dev)}


def quantize_x(x: torch.Tensor, fp8: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """The first kernel of QUANT_PASS: fp8 X (B,M,K) and fp32 scales (B, ceil(K/128), M)."""
    B, M, K = x.shape
    xq = torch.empty((B, M, K), dtype=fp8, device=x.device)
    s = torch.empty((B, triton.cdiv(K, GROUP_SIZE), M), dtype=torch.float32, device=x.device)
    bm = 32
    _quant_x_kernel[(triton.cdiv(M, bm), triton.cdiv(K, GROUP_SIZE), B)](
        x, xq, s, M, K, *x.stride(), *xq.stride(), *s.stride(), FP8_MAX=float(torch.finfo(fp8).max),
        ROUND_BEFORE_CAST=C.INTERPRET, BLOCK_M=bm, GROUP=GROUP_SIZE, num_warps=4,
    )  # fmt: skip
    return xq, s


def launch(inputs: dict[str, Any], config: dict[str, Any]) -> torch.Tensor:
    x, w, wsc, bias, y = (inputs[k] for k in ("x", "w", "w_scale", "bias", "y"))
    B, M, K = x.shape
    N = w.shape[1]
    meta, opts = split_config(config, C.backend())
    meta["BLOCK_SIZE_K"] = GROUP_SIZE  # the quantization group: forced, as in AITER
    ks, split = C.splitk_plan(K, meta, GROUP_SIZE)
    bias_arg, bias_stride = (bias, bias.stride(0)) if bias is not None else (x, 0)
    prequantized = bool(meta.get("QUANT_PASS"))
    if prequantized:
        x, s = quantize_x(x, w.dtype)
    else:
        s = x  # not read
    s_strides = s.stride() if prequantized else (0, 0, 0)
    if prequantized and C.use_persistent(meta, ks, x, w, y):
        bm, bn = meta["BLOCK_SIZE_M"], meta["BLOCK_SIZE_N"]
        sub = int(meta.get("EPILOGUE_SUBTILE", 0))
        progs = C.persistent_programs(B, M, N, meta)
        _prequantized_persistent_kernel[(progs,)](
            C.descriptor(x, [1, bm, GROUP_SIZE]), C.descriptor(w, [1, bn, GROUP_SIZE]),
            C.descriptor(y, [1, bm, bn >> sub]), s, wsc, bias_arg, M, N, K, *s_strides, bias_stride, progs,
            C.num_tiles(B, M, N, meta), HAS_BIAS=bias is not None, EPILOGUE_SUBTILE=sub,
            K_GROUPS=int(meta.get("K_GROUPS", 1)), **C.tile_meta(meta), **opts,
        )  # fmt: skip
        return y
    out, ys = C.splitk_target(y, ks)
    _batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant_kernel[C.grid(B, M, N, meta, ks)](
        x, w, wsc, bias_arg, out, s, M, N, K, *x.stride(), *w.stride(), bias_stride, *ys, *s_strides,
        HAS_BIAS=bias is not None, FP8_MAX=float(torch.finfo(w.dtype).max),
        ROUND_BEFORE_CAST=C.INTERPRET, NUM_KSPLIT=ks, SPLITK_BLOCK_SIZE=split,
        EVEN_K=K % split == 0, PREQUANTIZED=prequantized, **C.tile_meta(meta), **opts,
    )  # fmt: skip
    return C.splitk_finish(out, y)


def torch_group_quant(x: torch.Tensor, fp8: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """The kernels' quantization in torch ops: X (B,M,K) → fp8 groups (B, M, ceil(K/128), 128), K zero-padded,
    and their scales (B, M, ceil(K/128), 1) = max|x| / FP8_MAX."""
    B, M, K = x.shape
    fmax = torch.finfo(fp8).max
    xp = torch.nn.functional.pad(x.float(), (0, (-K) % GROUP_SIZE)).reshape(B, M, -1, GROUP_SIZE)
    s = xp.abs().amax(dim=-1, keepdim=True).clamp_min(1e-10) / fmax
    return (xp / s).clamp(-fmax, fmax).to(fp8), s


def reference(inputs: dict[str, Any]) -> torch.Tensor:
    """The same per-(row, 128-group) quantization in float32, then a float64 product of the dequantized values."""
    x, w = inputs["x"], inputs["w"]
    B, M, K = x.shape
    xq, s = torch_group_quant(x, w.dtype)
    xd = (xq.double() * s.double()).reshape(B, M, -1)[..., :K]
    ref = torch.bmm(xd, w.double().transpose(1, 2)) * inputs["w_scale"].double()
    if inputs["bias"] is not None:
        ref += inputs["bias"].double()
    return ref

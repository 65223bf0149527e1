"""Y = mxfp4(X) · Wᵀ: the IREE seed's scaled MXFP4 matmul as one op of two dispatches.

X is bf16 activations (M, K); W is pre-quantized MXFP4: packed e2m1 (N, K/2) uint8 (two codes per byte, low
nibble = even k) with e8m0 scales (N, K/32) uint8 (a weight is quantized once, offline: an input, not a dispatch).
K counts logical (unpacked) elements, a multiple of the MXFP4 group (32); the seed benchmarks
M×N×K×KB = 10000×16384×512×32, i.e. K = 16384 in 512 groups of KB = 32.

The op, as the seed times it (end to end = both dispatches; the harness sums an op's dispatches and keeps each
dispatch's median, so the per-dispatch table shows each one's share):

1. ``_scaled_mxfp4_quant_kernel`` ("encode"): X → packed e2m1 (M, K/2) + e8m0 scales (M, K/32), groups of 32 along
   K, with ``common._mxfp4_quant_tile``: bit for bit the rounding of the torch reference ``mxfp4_quantize``.
   Memory-bound; its block is ``QUANT_BLOCK_M`` × ``QUANT_BLOCK_K`` with ``QUANT_NUM_WARPS`` warps.
2. ``_scaled_mxfp4_gemm_kernel``: ``tl.dot_scaled(x, x_scale, "e2m1", w, w_scale, "e2m1")``, fp32 accumulation,
   bf16 (or fp16) out. Native scaled MFMA on gfx950 (CDNA4); on Hopper (sm90) and gfx942 Triton emulates it by
   upcasting both operands to bf16 and running the bf16 MMA (the report's fp4 ceiling falls back to bf16 there).

A config with ``FUSE_QUANT: 1`` runs the op as one dispatch instead (``_scaled_mxfp4_fused_gemm_kernel``): each
program quantizes its bf16 X tile in registers inside the K loop, as batched_gemm_a16wfp4 does. Same arithmetic,
so the result is bit-identical to the two-dispatch form; but X is re-quantized N/BLOCK_SIZE_N times and read as
bf16 (~3.8× the bytes of packed e2m1 + scales) by every column of tiles. The two-dispatch form is the seed's and
the default.

No split-K: the suite's smallest case still has hundreds of output tiles at K = 8192.

Config files (kernels/configs/{arch}-SCALED-MXFP4-GEMM.json, buckets on M, per-(N, K) files allowed):
- ``interp``: tiny tiles for the CPU interpreter.
- ``sm90``: starting points compiled ahead of time for sm_90 under Triton 3.6.0 and 3.9.0 (no spills). The
  emulated dot_scaled upcasts both operands in registers before the wgmma, so registers, not shared memory, bound
  the tile: 128x256x128, 128x128x256 and 256x128x128 with 8 warps spill under both Tritons.
- ``gfx942`` (MI300, CDNA3): no fp4 MFMA either; Triton decomposes dot_scaled into an upcast and bf16 MFMA as on
  Hopper. AITER-style starting points (waves_per_eu, matrix_instr_nonkdim), not compiled here.
- ``gfx950`` (MI350/MI355, CDNA4): native scaled MFMA (``v_mfma_scale_f32_*_f8f6f4``), so BLOCK_SIZE_K = 256
  (128 packed bytes per row) and large tiles as AITER's fp4 GEMMs use; AITER also pre-shuffles the scales for
  gfx950, which this kernel does not (plain (rows, K/32) scales on every arch). Not compiled here either.
"""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl

from harness import ConfigLookup, KernelSpec, Plot, dim, dtype, split_config
from kernels import common as C

GROUP = 32  # the MXFP4 group along K (kernels.common.MXFP4_GROUP; a literal here so SPEC needs no import)


def _bytes(p: dict[str, Any]) -> float:
    """The op's fewest bytes: X read (bf16), W read (packed e2m1 + e8m0 scales), Y written (bf16/fp16).

    Not counted: the quantized X (M·K/2 + M·K/32 bytes) that dispatch 1 writes and dispatch 2 reads back. It is
    scratch between the dispatches, neither an input nor an output of the op; the fused variant never moves it,
    and both variants share one byte count (it is a function of the case, not the config) so their GB/s compare
    on the same work. The two-dispatch form's DRAM traffic is higher than this count by 2·M·K·(1/2 + 1/32)
    bytes (+22 % at the seed's 10000×16384×16384); its per-dispatch times show what that costs.
    """
    M, N, K = p["M"], p["N"], p["K"]
    return 2.0 * M * K + N * K / 2 + N * K / GROUP + 2.0 * M * N


SPEC = KernelSpec(
    name="scaled_mxfp4_gemm",
    description="Y = mxfp4(X) W^T: X bf16 quantized to MXFP4 by a first dispatch, W pre-quantized MXFP4 "
    "(packed e2m1 + e8m0 per 32), tl.dot_scaled with fp32 accumulation",
    params=(
        dim("M"),
        dim("N"),
        dim("K", help="logical K, a multiple of 32"),
        dtype(("bf16", "fp16"), "bf16", "out_dtype"),
    ),
    # the MMA work only: the quantize dispatch's few tens of ALU ops per X element (~30·M·K, against 2·M·N·K)
    # are not counted: they are not matrix-unit work, the roof this kernel is judged against
    flops=lambda p: 2.0 * p["M"] * p["N"] * p["K"],
    bytes=_bytes,
    peak="fp4",
    dtype="mxfp4",
    # the operands are exact (e2m1 × 2^e); what remains is fp32 accumulation and the output rounding
    tolerance=lambda p: 1e-2 if p["out_dtype"] == "bf16" else 2e-3,
    config=ConfigLookup("SCALED-MXFP4-GEMM", bucket="M", specialize=("N", "K")),
    config_keys=(
        "BLOCK_SIZE_M",
        "BLOCK_SIZE_N",
        "BLOCK_SIZE_K",
        "GROUP_SIZE_M",
        "QUANT_BLOCK_M",
        "QUANT_BLOCK_K",
        "QUANT_NUM_WARPS",
        "FUSE_QUANT",
    ),
    hooks=("supported",),
    plot=Plot(x="M", series=("N", "K")),
)
OUT_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
#: the quantize dispatch's block when a config (e.g. a suite override) leaves it out
QUANT_DEFAULTS = {"QUANT_BLOCK_M": 32, "QUANT_BLOCK_K": 128, "QUANT_NUM_WARPS": 4}
QUANT_KEYS = tuple(QUANT_DEFAULTS)


# --------------------------------------------------------------------------------------- dispatch 1: encode
@triton.jit
def _scaled_mxfp4_quant_kernel(
    x_ptr, xq_ptr, xs_ptr, M, K,
    stride_xm, stride_xk, stride_qm, stride_qk, stride_sm, stride_sk,
    QUANT_BLOCK_M: tl.constexpr, QUANT_BLOCK_K: tl.constexpr,
):  # fmt: skip
    """One program per (QUANT_BLOCK_M rows, QUANT_BLOCK_K columns) of X: no loop, so the Triton 3.6 interpreter
    runs it too. K is a multiple of 32, so a group is either wholly inside K or wholly masked (and not stored)."""
    pid_m = tl.program_id(0)
    pid_k = tl.program_id(1)
    row0 = pid_m.to(tl.int64) * QUANT_BLOCK_M  # 64-bit row base: M·K may pass 2^31 elements
    offs_m = tl.arange(0, QUANT_BLOCK_M)
    offs_k = pid_k * QUANT_BLOCK_K + tl.arange(0, QUANT_BLOCK_K)
    rows = (row0 + offs_m) < M
    x = tl.load(
        x_ptr + row0 * stride_xm + offs_m[:, None] * stride_xm + offs_k[None, :] * stride_xk,
        mask=rows[:, None] & (offs_k[None, :] < K),
        other=0.0,
    )
    q, s = C._mxfp4_quant_tile(x.to(tl.float32), QUANT_BLOCK_M, QUANT_BLOCK_K)
    offs_kp = pid_k * (QUANT_BLOCK_K // 2) + tl.arange(0, QUANT_BLOCK_K // 2)
    offs_ks = pid_k * (QUANT_BLOCK_K // 32) + tl.arange(0, QUANT_BLOCK_K // 32)
    tl.store(
        xq_ptr + row0 * stride_qm + offs_m[:, None] * stride_qm + offs_kp[None, :] * stride_qk,
        q,
        mask=rows[:, None] & (offs_kp[None, :] < K // 2),
    )
    tl.store(
        xs_ptr + row0 * stride_sm + offs_m[:, None] * stride_sm + offs_ks[None, :] * stride_sk,
        s,
        mask=rows[:, None] & (offs_ks[None, :] < K // 32),
    )


# --------------------------------------------------------------------------------------- dispatch 2: GEMM
@triton.jit
def _gemm_body(
    x_ptr, xs_ptr, w_ptr, ws_ptr, y_ptr, M, N, K,
    stride_xm, stride_xk, stride_xsm, stride_xsk, stride_wn, stride_wk, stride_wsn, stride_wsk, stride_ym, stride_yn,
    FUSE_QUANT: tl.constexpr, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr, NUM_K_TILES: tl.constexpr, EVEN_K: tl.constexpr,
):  # fmt: skip
    """One (BLOCK_SIZE_M, BLOCK_SIZE_N) tile of Y. X is packed e2m1 + scales (FUSE_QUANT=0) or bf16 quantized
    here, tile by tile (FUSE_QUANT=1). The K loop's bound is a constexpr (NUM_K_TILES; one compilation per K), as
    the Triton 3.6 interpreter cannot run a loop with a runtime bound under numpy 2."""
    pid_m, pid_n, _ = C._tile_ids(tl.program_id(0), M, N, BLOCK_SIZE_M, BLOCK_SIZE_N, GROUP_SIZE_M, 1)
    offs_m = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_n = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    offs_am = offs_m % M  # wrap instead of masking the loads; those rows and columns are never stored
    offs_bn = offs_n % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    offs_kp = tl.arange(0, BLOCK_SIZE_K // 2)
    offs_ks = tl.arange(0, BLOCK_SIZE_K // 32)
    if FUSE_QUANT:
        x_ptrs = x_ptr + offs_am[:, None] * stride_xm + offs_k[None, :] * stride_xk
    else:
        x_ptrs = x_ptr + offs_am[:, None] * stride_xm + offs_kp[None, :] * stride_xk
    xs_ptrs = xs_ptr + offs_am[:, None] * stride_xsm + offs_ks[None, :] * stride_xsk
    w_ptrs = w_ptr + offs_bn[None, :] * stride_wn + offs_kp[:, None] * stride_wk  # (BLOCK_K/2, BLOCK_N): W^T
    ws_ptrs = ws_ptr + offs_bn[:, None] * stride_wsn + offs_ks[None, :] * stride_wsk
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for i in range(0, NUM_K_TILES):
        # masked groups (K not a multiple of BLOCK_SIZE_K) read code 0 with scale 2^0: they add exact zeros
        kp_live = (offs_kp + i * (BLOCK_SIZE_K // 2)) < K // 2
        ks_live = (offs_ks + i * (BLOCK_SIZE_K // 32)) < K // 32
        if EVEN_K:
            w = tl.load(w_ptrs)
            ws = tl.load(ws_ptrs)
        else:
            w = tl.load(w_ptrs, mask=kp_live[:, None], other=0)
            ws = tl.load(ws_ptrs, mask=ks_live[None, :], other=127)
        if FUSE_QUANT:
            if EVEN_K:  # noqa: SIM108 - the constexpr if/else of the loads around it
                x = tl.load(x_ptrs)
            else:
                x = tl.load(x_ptrs, mask=(offs_k + i * BLOCK_SIZE_K)[None, :] < K, other=0.0)
            xq, xs = C._mxfp4_quant_tile(x.to(tl.float32), BLOCK_SIZE_M, BLOCK_SIZE_K)
            x_ptrs += BLOCK_SIZE_K * stride_xk
        else:
            if EVEN_K:
                xq = tl.load(x_ptrs)
                xs = tl.load(xs_ptrs)
            else:
                xq = tl.load(x_ptrs, mask=kp_live[None, :], other=0)
                xs = tl.load(xs_ptrs, mask=ks_live[None, :], other=127)
            x_ptrs += (BLOCK_SIZE_K // 2) * stride_xk
            xs_ptrs += (BLOCK_SIZE_K // 32) * stride_xsk
        acc = tl.dot_scaled(xq, xs, "e2m1", w, ws, "e2m1", acc)
        w_ptrs += (BLOCK_SIZE_K // 2) * stride_wk
        ws_ptrs += (BLOCK_SIZE_K // 32) * stride_wsk
    y_ptrs = y_ptr + offs_m[:, None].to(tl.int64) * stride_ym + offs_n[None, :] * stride_yn
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def _scaled_mxfp4_gemm_kernel(
    xq_ptr, xs_ptr, w_ptr, ws_ptr, y_ptr, M, N, K,
    stride_xm, stride_xk, stride_xsm, stride_xsk, stride_wn, stride_wk, stride_wsn, stride_wsk, stride_ym, stride_yn,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
    NUM_K_TILES: tl.constexpr, EVEN_K: tl.constexpr,
):  # fmt: skip
    """Dispatch 2 of the op: X already MXFP4 (dispatch 1's output)."""
    _gemm_body(
        xq_ptr, xs_ptr, w_ptr, ws_ptr, y_ptr, M, N, K,
        stride_xm, stride_xk, stride_xsm, stride_xsk, stride_wn, stride_wk, stride_wsn, stride_wsk,
        stride_ym, stride_yn, False, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, GROUP_SIZE_M, NUM_K_TILES, EVEN_K,
    )  # fmt: skip


@triton.jit
def _scaled_mxfp4_fused_gemm_kernel(
    x_ptr, w_ptr, ws_ptr, y_ptr, M, N, K,
    stride_xm, stride_xk, stride_wn, stride_wk, stride_wsn, stride_wsk, stride_ym, stride_yn,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
    NUM_K_TILES: tl.constexpr, EVEN_K: tl.constexpr,
):  # fmt: skip
    """The FUSE_QUANT variant, the whole op in one dispatch: bf16 X quantized in registers per K tile."""
    _gemm_body(
        x_ptr, x_ptr, w_ptr, ws_ptr, y_ptr, M, N, K,
        stride_xm, stride_xk, 0, 0, stride_wn, stride_wk, stride_wsn, stride_wsk, stride_ym, stride_yn,
        True, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, GROUP_SIZE_M, NUM_K_TILES, EVEN_K,
    )  # fmt: skip


# ------------------------------------------------------------------------------------------------ host side
def make_inputs(case: dict[str, Any], seed: int) -> dict[str, Any]:
    """X bf16 ~ N(0, 1); W ~ N(0, 1/K) quantized once by the torch helper (offline, as a weight is); the scratch
    for dispatch 1's output (packed X and its scales) allocated here, outside the timed op."""
    M, N, K = (int(case[k]) for k in "MNK")
    if K % GROUP:
        raise ValueError(f"K={K} must be a multiple of {GROUP} (the MXFP4 group)")
    dev = C.device()
    g = C.generator(seed, dev)
    x = C.rand((M, K), torch.bfloat16, g, dev)
    w, ws = C.mxfp4_quantize(C.rand((N, K), torch.float32, g, dev, scale=K**-0.5))
    return {
        "x": x,
        "w": w,
        "w_scale": ws,
        "x_q": torch.empty((M, K // 2), dtype=torch.uint8, device=dev),
        "x_scale": torch.empty((M, K // GROUP), dtype=torch.uint8, device=dev),
        "y": torch.empty((M, N), dtype=OUT_DTYPES[case["out_dtype"]], device=dev),
    }


def quant_meta(meta: dict[str, Any], K: int) -> tuple[dict[str, Any], int]:
    """(the quantize kernel's block, its num_warps), taken out of ``meta``; QUANT_BLOCK_K is clamped to K's
    next power of two (no all-masked programs at tiny K)."""
    q = {k: int(meta.pop(k, v)) for k, v in QUANT_DEFAULTS.items()}
    bk = min(q["QUANT_BLOCK_K"], max(GROUP, triton.next_power_of_2(K)))
    if bk % GROUP or bk & (bk - 1) or q["QUANT_BLOCK_M"] & (q["QUANT_BLOCK_M"] - 1):
        raise ValueError(f"QUANT_BLOCK_K={bk} must be a power of two >= 32 and QUANT_BLOCK_M a power of two")
    return {"QUANT_BLOCK_M": q["QUANT_BLOCK_M"], "QUANT_BLOCK_K": bk}, q["QUANT_NUM_WARPS"]


def quantize_x(x: torch.Tensor, xq: torch.Tensor, xs: torch.Tensor, meta: dict[str, Any]) -> None:
    """Dispatch 1: X (M, K) → ``xq`` (M, K/2) packed e2m1 and ``xs`` (M, K/32) e8m0, written in place.
    ``meta`` holds QUANT_BLOCK_M / QUANT_BLOCK_K / QUANT_NUM_WARPS (missing ones take QUANT_DEFAULTS)."""
    M, K = x.shape
    block, warps = quant_meta(dict(meta), K)
    grid = (triton.cdiv(M, block["QUANT_BLOCK_M"]), triton.cdiv(K, block["QUANT_BLOCK_K"]))
    _scaled_mxfp4_quant_kernel[grid](x, xq, xs, M, K, *x.stride(), *xq.stride(), *xs.stride(), **block, num_warps=warps)


def gemm_meta(meta: dict[str, Any], K: int) -> dict[str, Any]:
    """The GEMM's constexprs: the tiles (BLOCK_SIZE_K clamped to K's next power of two, at least one group), the
    K-tile count and whether K needs no mask."""
    bk = min(int(meta["BLOCK_SIZE_K"]), max(GROUP, triton.next_power_of_2(K)))
    if bk % GROUP:
        raise ValueError(f"BLOCK_SIZE_K={bk} must be a multiple of {GROUP}")
    out = {k: int(meta[k]) for k in C.TILE_KEYS}
    out.update(BLOCK_SIZE_K=bk, NUM_K_TILES=triton.cdiv(K, bk), EVEN_K=K % bk == 0)
    return out


def size_problem(M: int, N: int, K: int) -> str | None:
    """Why the GEMM's 32-bit in-tile offsets would overflow (the largest operand, bf16 X when fused, is
    max(M, N) × K elements); None when they cannot. Row bases of the quantize kernel and Y are 64-bit."""
    if max(M, N) * K >= 2**31:
        return f"max(M, N) x K = {max(M, N) * K} elements needs 64-bit offsets in the GEMM's loads"
    return None


def launch(inputs: dict[str, Any], config: dict[str, Any]) -> torch.Tensor:
    x, w, ws, y = inputs["x"], inputs["w"], inputs["w_scale"], inputs["y"]
    M, K = x.shape
    N = w.shape[0]
    why = size_problem(M, N, K)
    if why:
        raise ValueError(why)
    meta, opts = split_config(config, C.backend())
    fuse = bool(meta.pop("FUSE_QUANT", 0))
    tiles = gemm_meta(meta, K)
    grid = (triton.cdiv(M, tiles["BLOCK_SIZE_M"]) * triton.cdiv(N, tiles["BLOCK_SIZE_N"]),)
    if fuse:
        _scaled_mxfp4_fused_gemm_kernel[grid](
            x, w, ws, y, M, N, K, *x.stride(), *w.stride(), *ws.stride(), *y.stride(), **tiles, **opts
        )
        return y
    xq, xs = inputs["x_q"], inputs["x_scale"]
    quantize_x(x, xq, xs, {k: meta[k] for k in QUANT_KEYS if k in meta})
    _scaled_mxfp4_gemm_kernel[grid](
        xq, xs, w, ws, y, M, N, K, *xq.stride(), *xs.stride(), *w.stride(), *ws.stride(), *y.stride(), **tiles, **opts
    )
    return y


def reference(inputs: dict[str, Any]) -> torch.Tensor:
    """X quantized by the torch helper (the rounding dispatch 1 must match bit for bit), both operands
    dequantized, the product in float64."""
    xq, xs = C.mxfp4_quantize(inputs["x"].float())
    x = C.mxfp4_dequantize(xq, xs).double()
    w = C.mxfp4_dequantize(inputs["w"], inputs["w_scale"]).double()
    return x @ w.T


def supported(case: dict[str, Any]) -> str | None:
    """None, or why this case cannot run on this stack: tl.dot_scaled (both variants' GEMM) needs the Triton >= 3.9
    interpreter on the CPU; on GPUs both stacks compile it (emulated through bf16 MMA on sm90 and gfx942)."""
    return C.dot_scaled_unsupported()

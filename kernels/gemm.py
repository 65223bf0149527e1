"""Y = X · Wᵀ for bf16/fp16 X (M, K) and W (N, K) (nn.Linear's layout): fp32 accumulation, Y in the input dtype.

The two Triton kernels here serve kernels/gemm_fp8.py too: a constexpr ``SCALES`` multiplies the fp32 tile by
one scale each for X and W (1) or by one per row of X and one per row of W (2) before the store, so the bf16 and
fp8 GEMMs share one tiling, one split-K path and one persistent path (:func:`run_gemm`).

Variants, chosen by config keys with the meanings kernels/batched_gemm_bf16.py gives them:

- the pointer kernel: a program per output tile (and K split). ``GROUP_SIZE_M`` > 1 walks the tiles in groups of
  that many tile rows (``common._tile_ids``), so programs resident together share W's columns in L2.
- ``NUM_KSPLIT: s``: K cut in s slices written as fp32 partials and summed by ``common.splitk_reduce``. Decode
  shapes (M <= 16) have only N / BLOCK_SIZE_N tiles (64 at N = 4096, BLOCK_SIZE_N = 64), fewer programs than an
  H100 has SMs (132), while all such a GEMM does is stream W.
- ``PERSISTENT: n``: n programs per SM loop over the tiles with TMA loads and stores (Hopper+); the next tile's
  loads overlap this tile's epilogue. Falls back to the pointer kernel with the same tiles under split-K, on AMD,
  before sm90, under Triton 3.6's interpreter (a runtime loop bound) and for tensors TMA cannot address.
  ``EPILOGUE_SUBTILE: 1`` stores the tile in two halves (half the epilogue's shared memory).

The K loops add each ``tl.dot`` into the fp32 accumulator (``acc += tl.dot(a, b)``) rather than passing it in.
For bf16/fp16 Triton folds that back into ``tl.dot(a, b, acc)`` (the same machine code); for fp8 on sm90 it does
not (its fp8 dots carry ``maxNumImpreciseAcc``), so each BLOCK_SIZE_K-deep chain of fp8 MMAs starts from zero
and is promoted into fp32 with ordinary adds. Hopper's fp8 MMAs keep fewer accumulator bits than fp32
(DeepSeek-V3's report: about 14); accumulating all of K in them, as ``tl.dot(a, b, acc)`` would, makes an error
that grows with K (a truncating 14-bit model of it gives ~1e-2 relative at K = 14336, the tolerance). The cost
is a second accumulator tile in registers for the fp8 kernels.

The ``common`` helpers address batched (B, M, N) tensors; here every tensor is viewed as a batch of one
(``unsqueeze(0)``), which is also what lets the persistent loop's tiles past the last one fall outside the
descriptors (batch index 1), as ``common._persistent_tile`` intends.
"""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl

from harness import ConfigLookup, KernelSpec, Plot, dim, dtype, split_config
from kernels import common as C

#: config keys of both GEMM kernels besides the launch options
GEMM_CONFIG_KEYS = (
    "BLOCK_SIZE_M",
    "BLOCK_SIZE_N",
    "BLOCK_SIZE_K",
    "GROUP_SIZE_M",
    "NUM_KSPLIT",
    "PERSISTENT",
    "EPILOGUE_SUBTILE",
)
SPEC = KernelSpec(
    name="gemm",
    description="Y = X W^T (nn.Linear layout), bf16 or fp16, fp32 accumulation",
    params=(dim("M"), dim("N"), dim("K"), dtype(("bf16", "fp16"), "bf16")),
    flops=lambda p: 2.0 * p["M"] * p["N"] * p["K"],
    bytes=lambda p: 2.0 * (p["M"] * p["K"] + p["N"] * p["K"] + p["M"] * p["N"]),
    peak="bf16",
    dtype="{dtype}",
    tolerance={"bf16": 1e-2, "fp16": 2e-3},
    config=ConfigLookup("GEMM-A16W16", bucket="M", specialize=("N", "K")),
    config_keys=GEMM_CONFIG_KEYS,
    plot=Plot(x="M", series=("N", "K")),
)
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
#: SCALES of the kernels: none (bf16/fp16), one scale each for X and W, one per row of X and per row of W
NO_SCALES, TENSOR_SCALES, ROW_SCALES = 0, 1, 2


@triton.jit
def _scale_tile(acc, xs_ptr, ws_ptr, offs_m, offs_n, m_end, n_end, SCALES: tl.constexpr):
    """The fp32 tile times its scales: X's row scales along dim 0 (``offs_m``), W's along dim 1 (``offs_n``),
    loads masked to ``offs < end`` (a persistent program past its last tile passes ends of 0)."""
    if SCALES == 1:
        acc = acc * (tl.load(xs_ptr) * tl.load(ws_ptr))
    elif SCALES == 2:
        xs = tl.load(xs_ptr + offs_m, mask=offs_m < m_end, other=0.0)
        ws = tl.load(ws_ptr + offs_n, mask=offs_n < n_end, other=0.0)
        acc = acc * xs[:, None] * ws[None, :]
    return acc


@triton.jit
def _gemm_kernel(
    x_ptr, w_ptr, xs_ptr, ws_ptr, y_ptr, M, N, K,
    stride_xm, stride_xk, stride_wn, stride_wk, stride_ym, stride_yn, stride_yk,
    SCALES: tl.constexpr, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr, NUM_KSPLIT: tl.constexpr, SPLITK_BLOCK_SIZE: tl.constexpr, EVEN_K: tl.constexpr,
):  # fmt: skip
    """One (BLOCK_SIZE_M, BLOCK_SIZE_N) tile of Y, or with NUM_KSPLIT > 1 its fp32 partial over one K slice
    (``stride_yk`` apart). The K loop's trip count is a constexpr: Triton 3.6's interpreter cannot run a loop
    with a runtime bound under numpy 2."""
    pid_m, pid_n, pid_k = C._tile_ids(tl.program_id(0), M, N, BLOCK_SIZE_M, BLOCK_SIZE_N, GROUP_SIZE_M, NUM_KSPLIT)
    offs_m = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_n = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    # wrap instead of masking the loads (those rows are never stored); int64 rows: M*K, N*K may pass 2**31
    offs_am = (offs_m % M).to(tl.int64)
    offs_bn = (offs_n % N).to(tl.int64)
    offs_k = pid_k * SPLITK_BLOCK_SIZE + tl.arange(0, BLOCK_SIZE_K)
    x_ptrs = x_ptr + offs_am[:, None] * stride_xm + offs_k[None, :] * stride_xk
    w_ptrs = w_ptr + offs_bn[None, :] * stride_wn + offs_k[:, None] * stride_wk
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for i in range(0, SPLITK_BLOCK_SIZE // BLOCK_SIZE_K):
        if EVEN_K:
            a = tl.load(x_ptrs)
            b = tl.load(w_ptrs)
        else:
            kk = offs_k + i * BLOCK_SIZE_K
            a = tl.load(x_ptrs, mask=kk[None, :] < K, other=0.0)
            b = tl.load(w_ptrs, mask=kk[:, None] < K, other=0.0)
        acc += tl.dot(a, b)  # not tl.dot(a, b, acc): fp8 partial sums promoted (module docstring)
        x_ptrs += BLOCK_SIZE_K * stride_xk
        w_ptrs += BLOCK_SIZE_K * stride_wk
    acc = _scale_tile(acc, xs_ptr, ws_ptr, offs_am, offs_bn, M, N, SCALES)  # a partial scaled: the sum is too
    y_ptrs = y_ptr + pid_k.to(tl.int64) * stride_yk + offs_m.to(tl.int64)[:, None] * stride_ym
    y_ptrs += offs_n[None, :] * stride_yn
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def _gemm_persistent_kernel(
    x_desc, w_desc, y_desc, xs_ptr, ws_ptr, M, N, K, NUM_PROGRAMS, NUM_TILES,
    SCALES: tl.constexpr, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr,
):  # fmt: skip
    """NUM_PROGRAMS programs, each taking every NUM_PROGRAMS-th tile; X, W, Y are (1, rows, cols) descriptors.
    ``flatten=True`` lets the pipeliner issue the next tile's first loads during this tile's epilogue."""
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
            acc += tl.dot(a, w.T)
        offs_m = off_m + tl.arange(0, BLOCK_SIZE_M)
        offs_n = off_n + tl.arange(0, BLOCK_SIZE_N)
        acc = _scale_tile(acc, xs_ptr, ws_ptr, offs_m, offs_n, tl.where(live, M, 0), tl.where(live, N, 0), SCALES)
        C._store_tile(y_desc, acc, b, off_m, off_n, BLOCK_SIZE_M, BLOCK_SIZE_N, EPILOGUE_SUBTILE)


def _launch_persistent(
    x3: torch.Tensor, w3: torch.Tensor, y3: torch.Tensor, xs: torch.Tensor, ws: torch.Tensor, scales: int,
    meta: dict[str, Any], opts: dict[str, Any],
) -> None:  # fmt: skip
    _, M, K = x3.shape
    N = w3.shape[1]
    bm, bn, bk = meta["BLOCK_SIZE_M"], meta["BLOCK_SIZE_N"], meta["BLOCK_SIZE_K"]
    sub = int(meta.get("EPILOGUE_SUBTILE", 0))
    progs = C.persistent_programs(1, M, N, meta)
    _gemm_persistent_kernel[(progs,)](
        C.descriptor(x3, [1, bm, bk]), C.descriptor(w3, [1, bn, bk]), C.descriptor(y3, [1, bm, bn >> sub]),
        xs, ws, M, N, K, progs, C.num_tiles(1, M, N, meta),
        SCALES=scales, EPILOGUE_SUBTILE=sub, **C.tile_meta(meta), **opts,
    )  # fmt: skip


def run_gemm(
    x: torch.Tensor,
    w: torch.Tensor,
    y: torch.Tensor,
    config: dict[str, Any],
    x_scale: torch.Tensor | None = None,
    w_scale: torch.Tensor | None = None,
    scales: int = NO_SCALES,
) -> torch.Tensor:
    """y = (x · wᵀ) times the scales (``scales``: NO_SCALES, TENSOR_SCALES or ROW_SCALES, whose x_scale / w_scale
    hold 1 or M / 1 or N contiguous fp32 values) with the variant ``config`` asks for; returns y."""
    M, K = x.shape
    N = w.shape[0]
    meta, opts = split_config(config, C.backend())
    ks, split = C.splitk_plan(K, meta, 1)
    xs = x if x_scale is None else x_scale.reshape(-1)  # a dummy pointer when SCALES is 0: never read
    ws = x if w_scale is None else w_scale.reshape(-1)
    x3, w3, y3 = x.unsqueeze(0), w.unsqueeze(0), y.unsqueeze(0)
    if C.use_persistent(meta, ks, x3, w3, y3):
        _launch_persistent(x3, w3, y3, xs, ws, scales, meta, opts)
        return y
    out, (_, stride_om, stride_on, stride_ok) = C.splitk_target(y3, ks)
    _gemm_kernel[C.grid(1, M, N, meta, ks)](
        x, w, xs, ws, out, M, N, K, *x.stride(), *w.stride(), stride_om, stride_on, stride_ok,
        SCALES=scales, NUM_KSPLIT=ks, SPLITK_BLOCK_SIZE=split, EVEN_K=K % split == 0, **C.tile_meta(meta), **opts,
    )  # fmt: skip
    C.splitk_finish(out, y3)
    return y


def make_inputs(case: dict[str, Any], seed: int) -> dict[str, Any]:
    M, N, K = (int(case[k]) for k in "MNK")
    dt = DTYPES[case["dtype"]]
    dev = C.device()
    g = C.generator(seed, dev)
    x = C.rand((M, K), dt, g, dev)
    w = C.rand((N, K), dt, g, dev, scale=K**-0.5)  # unit-variance outputs at every K
    return {"x": x, "w": w, "y": torch.empty((M, N), dtype=dt, device=dev)}


def launch(inputs: dict[str, Any], config: dict[str, Any]) -> torch.Tensor:
    return run_gemm(inputs["x"], inputs["w"], inputs["y"], config)


def reference(inputs: dict[str, Any]) -> torch.Tensor:
    return inputs["x"].double() @ inputs["w"].double().T

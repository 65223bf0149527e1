"""LayerNorm forward: y = (x − mean) / sqrt(var + eps) · w + b over the last dim of x (M, N), biased variance,
fp32 statistics, y in x's dtype; w and b are (N,).

The same design as kernels/rmsnorm.py (read its docstring: bandwidth first, ROWS_PER_PROGRAM rows a program, the
row in registers when BLOCK_N >= N, constexpr chunk loops otherwise, the optional persistent grid), whose host-side
``plan`` this file shares. The statistics:

- one pass (the row in registers): the exact two-pass formula on the registers, mean first, then the mean of the
  squared deviations; HBM sees x once.
- chunked (N > BLOCK_N): the first pass accumulates, per lane, the sum and the sum of squares of x − s, with s the
  row's first element (the "shifted data" variance: var = E[(x−s)²] − E[x−s]², which cancels little when s is
  within a few standard deviations of the mean, as any element of the row is); the second pass normalizes. x is
  read twice, as in RMSNorm's chunked path, instead of three times for an exact two-pass variance.

Config family LAYERNORM-FWD, buckets on N, no specialization (the reasons are rmsnorm.py's).
"""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl

from harness import ConfigLookup, KernelSpec, Param, Plot, dim, dtype, split_config
from kernels import common as C
from kernels.rmsnorm import plan

ELEM_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}
#: flops counted per element: the sum (1), x − mean (1), its square and sum (2), ·rstd, ·w, +b (3); per-row
#: divisions and the rsqrt are left out
FLOPS_PER_ELEMENT = 7


def norm_bytes(p: dict[str, Any], vectors: int) -> float:
    """x read once, y written once, ``vectors`` N-long parameter vectors (w, b) read once, all in x's dtype."""
    return float(ELEM_BYTES[p["dtype"]] * (2 * p["M"] * p["N"] + vectors * p["N"]))


SPEC = KernelSpec(
    name="layernorm",
    description="y = (x - mean) / sqrt(var + eps) * w + b, biased variance, fp32 statistics, y in x's dtype",
    params=(
        dim("M", help="rows"),
        dim("N", help="hidden size (the normalized dim)"),
        dtype(("bf16", "fp16", "fp32"), "bf16"),
        Param("eps", "float", 1e-5, min=0.0),
    ),
    flops=lambda p: float(FLOPS_PER_ELEMENT * p["M"] * p["N"]),
    bytes=lambda p: norm_bytes(p, 2),
    peak="memory",
    dtype="{dtype}",
    tolerance={"bf16": 1e-2, "fp16": 2e-3, "fp32": 1e-5},
    config=ConfigLookup("LAYERNORM-FWD", bucket="N", specialize=()),
    config_keys=("BLOCK_N", "ROWS_PER_PROGRAM", "PERSISTENT"),
    plot=Plot(x="N", series=("M",), y="gbps"),
)
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


@triton.jit
def _layernorm_rows(x_ptr, w_ptr, b_ptr, y_ptr, blk, M, N, stride_xm, stride_ym, eps,
                    BLOCK_N: tl.constexpr, NUM_CHUNKS: tl.constexpr, ROWS: tl.constexpr):  # fmt: skip
    """Normalize rows [blk·ROWS, blk·ROWS + ROWS) (those >= M masked off)."""
    rows = blk * ROWS + tl.arange(0, ROWS)
    row_ok = rows < M
    x_rows = x_ptr + rows.to(tl.int64)[:, None] * stride_xm
    y_rows = y_ptr + rows.to(tl.int64)[:, None] * stride_ym
    cols = tl.arange(0, BLOCK_N)
    if NUM_CHUNKS == 1:  # the whole row in registers: exact two-pass statistics, one read of x
        mask = row_ok[:, None] & (cols[None, :] < N)
        x = tl.load(x_rows + cols[None, :], mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
        mean = tl.sum(x, axis=1) / N
        d = tl.where(mask, x - mean[:, None], 0.0)
        rstd = tl.rsqrt(tl.sum(d * d, axis=1) / N + eps)
        w = tl.load(w_ptr + cols, mask=cols < N, other=0.0, eviction_policy="evict_last").to(tl.float32)
        b = tl.load(b_ptr + cols, mask=cols < N, other=0.0, eviction_policy="evict_last").to(tl.float32)
        y = d * rstd[:, None] * w[None, :] + b[None, :]
        tl.store(y_rows + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)
    else:
        shift = tl.load(x_rows + 0, mask=row_ok[:, None], other=0.0).to(tl.float32)  # (ROWS, 1): x[row, 0]
        s1 = tl.zeros((ROWS, BLOCK_N), dtype=tl.float32)
        s2 = tl.zeros((ROWS, BLOCK_N), dtype=tl.float32)
        for c in range(NUM_CHUNKS):
            offs = c * BLOCK_N + cols
            mask = row_ok[:, None] & (offs[None, :] < N)
            x = tl.load(x_rows + offs[None, :], mask=mask, other=0.0).to(tl.float32)
            d = tl.where(mask, x - shift, 0.0)
            s1 += d
            s2 += d * d
        m1 = tl.sum(s1, axis=1) / N  # E[x − s]
        var = tl.maximum(tl.sum(s2, axis=1) / N - m1 * m1, 0.0)
        rstd = tl.rsqrt(var + eps)
        mean = shift + m1[:, None]
        for c in range(NUM_CHUNKS):
            offs = (NUM_CHUNKS - 1 - c) * BLOCK_N + cols  # last-read chunk first: it is the likeliest in cache
            mask = row_ok[:, None] & (offs[None, :] < N)
            x = tl.load(x_rows + offs[None, :], mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
            w = tl.load(w_ptr + offs, mask=offs < N, other=0.0, eviction_policy="evict_last").to(tl.float32)
            b = tl.load(b_ptr + offs, mask=offs < N, other=0.0, eviction_policy="evict_last").to(tl.float32)
            y = (x - mean) * rstd[:, None] * w[None, :] + b[None, :]
            tl.store(y_rows + offs[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _layernorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, M, N, stride_xm, stride_ym, eps, BLOCK_N: tl.constexpr,
                      NUM_CHUNKS: tl.constexpr, ROWS: tl.constexpr, ITERS: tl.constexpr):  # fmt: skip
    """Row block ``program_id`` (ITERS = 1), or a grid-stride loop over the row blocks (persistent grid)."""
    for i in range(ITERS):
        blk = tl.program_id(0) + i * tl.num_programs(0)
        _layernorm_rows(x_ptr, w_ptr, b_ptr, y_ptr, blk, M, N, stride_xm, stride_ym, eps, BLOCK_N, NUM_CHUNKS, ROWS)


def make_inputs(case: dict[str, Any], seed: int) -> dict[str, Any]:
    M, N = int(case["M"]), int(case["N"])
    dt = DTYPES[case.get("dtype", "bf16")]
    dev = C.device()
    g = C.generator(seed, dev)
    x = (C.rand((M, N), torch.float32, g, dev) + 0.5).to(dt)  # a non-zero mean: the centering is exercised
    w = (1.0 + C.rand((N,), torch.float32, g, dev, scale=0.1)).to(dt)
    b = C.rand((N,), dt, g, dev, scale=0.1)
    eps = float(case.get("eps", SPEC.param("eps").default))
    return {"x": x, "w": w, "b": b, "eps": eps, "y": torch.empty((M, N), dtype=dt, device=dev)}


def launch(inputs: dict[str, Any], config: dict[str, Any]) -> torch.Tensor:
    x, w, b, y = inputs["x"], inputs["w"], inputs["b"], inputs["y"]
    M, N = x.shape
    if x.stride(1) != 1 or y.stride(1) != 1:
        raise ValueError("layernorm needs rows with a unit last stride")
    meta, opts = split_config(config, C.backend())
    p = plan(M, N, meta)
    _layernorm_kernel[(p.programs,)](
        x, w, b, y, M, N, x.stride(0), y.stride(0), inputs["eps"], **p.meta(), **opts
    )  # fmt: skip
    return y


def reference(inputs: dict[str, Any]) -> torch.Tensor:
    x = inputs["x"].double()
    mean = x.mean(dim=-1, keepdim=True)
    var = (x - mean).square().mean(dim=-1, keepdim=True)
    return (x - mean) * torch.rsqrt(var + inputs["eps"]) * inputs["w"].double() + inputs["b"].double()

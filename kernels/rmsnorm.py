"""RMSNorm forward: y = x / sqrt(mean(x², last dim) + eps) · w for x (M, N), w (N); fp32 statistics, y in x's dtype.

A memory-bound kernel: x is read once, y written once (w is N elements, shared by every row and kept in L2), so
the design is about bandwidth, not arithmetic:

- A program normalizes ``ROWS_PER_PROGRAM`` rows (a power of two; several rows for small N so a program moves
  enough bytes to amortize its launch and its reduction). When ``BLOCK_N >= N`` the tile (ROWS, BLOCK_N) is loaded
  once into registers, reduced and scaled from there (one pass over HBM). Otherwise the row is walked in
  ``NUM_CHUNKS`` chunks of BLOCK_N twice: once for the sum of squares (accumulated per lane, reduced once at the
  end), once to scale and store, in reverse order so the chunks read last (likeliest still in L1/L2) come first.
- Rows are contiguous (unit last stride): Triton specializes N and the row strides on divisibility by 16, so a row
  of a 16-element multiple is read and written as 16-byte vectors; a ragged N still works, element by element.
- Every loop bound is a constexpr computed on the host (chunks, persistent iterations): Triton 3.6's interpreter
  cannot run a loop whose bound is a runtime value under numpy 2, and the CPU suite runs under it.
- ``PERSISTENT: k`` (optional, 0 = off) launches k programs per SM that walk the row blocks in a grid-stride loop
  (its trip count a constexpr, so one compile per M); without it the grid is one program per row block.

The config is looked up by N alone (family RMSNORM-FWD, buckets ``N_LEQ_x``) and specializes on nothing: the tile
and the warps follow the row length; M only sets the grid size, and the suites' M (>= 1024 rows) fill an H100 at
every bucket, so per-(M, N) files would add tuning data without a different choice in them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import triton
import triton.language as tl

from harness import ConfigLookup, KernelSpec, Param, Plot, dim, dtype, split_config
from kernels import common as C

ELEM_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}
#: flops counted per element: x·x and its sum (2), ·rstd and ·w (2); the per-row mean and rsqrt are left out
FLOPS_PER_ELEMENT = 4


def norm_bytes(p: dict[str, Any], vectors: int) -> float:
    """x read once, y written once, ``vectors`` N-long parameter vectors (w, b) read once, all in x's dtype."""
    return float(ELEM_BYTES[p["dtype"]] * (2 * p["M"] * p["N"] + vectors * p["N"]))


SPEC = KernelSpec(
    name="rmsnorm",
    description="y = x / sqrt(mean(x^2, last dim) + eps) * w, fp32 statistics, y in x's dtype",
    params=(
        dim("M", help="rows"),
        dim("N", help="hidden size (the normalized dim)"),
        dtype(("bf16", "fp16", "fp32"), "bf16"),
        Param("eps", "float", 1e-6, min=0.0),
    ),
    flops=lambda p: float(FLOPS_PER_ELEMENT * p["M"] * p["N"]),
    bytes=lambda p: norm_bytes(p, 1),
    peak="memory",
    dtype="{dtype}",
    # the output's rounding dominates: bf16 has 2^-8 relative spacing (about 2e-3 RMS), fp16 2^-11
    tolerance={"bf16": 1e-2, "fp16": 2e-3, "fp32": 1e-5},
    config=ConfigLookup("RMSNORM-FWD", bucket="N", specialize=()),
    config_keys=("BLOCK_N", "ROWS_PER_PROGRAM", "PERSISTENT"),
    plot=Plot(x="N", series=("M",), y="gbps"),
)
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


@triton.jit
def _rmsnorm_rows(x_ptr, w_ptr, y_ptr, blk, M, N, stride_xm, stride_ym, eps,
                  BLOCK_N: tl.constexpr, NUM_CHUNKS: tl.constexpr, ROWS: tl.constexpr):  # fmt: skip
    """Normalize rows [blk·ROWS, blk·ROWS + ROWS) (those >= M masked off)."""
    rows = blk * ROWS + tl.arange(0, ROWS)
    row_ok = rows < M
    x_rows = x_ptr + rows.to(tl.int64)[:, None] * stride_xm
    y_rows = y_ptr + rows.to(tl.int64)[:, None] * stride_ym
    cols = tl.arange(0, BLOCK_N)
    if NUM_CHUNKS == 1:  # the whole row in registers: one read of x
        mask = row_ok[:, None] & (cols[None, :] < N)
        x = tl.load(x_rows + cols[None, :], mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
        rstd = tl.rsqrt(tl.sum(x * x, axis=1) / N + eps)
        w = tl.load(w_ptr + cols, mask=cols < N, other=0.0, eviction_policy="evict_last").to(tl.float32)
        tl.store(y_rows + cols[None, :], (x * rstd[:, None] * w[None, :]).to(y_ptr.dtype.element_ty), mask=mask)
    else:
        acc = tl.zeros((ROWS, BLOCK_N), dtype=tl.float32)  # per-lane partial sums: one reduction, after the loop
        for c in range(NUM_CHUNKS):
            offs = c * BLOCK_N + cols
            mask = row_ok[:, None] & (offs[None, :] < N)
            x = tl.load(x_rows + offs[None, :], mask=mask, other=0.0).to(tl.float32)
            acc += x * x
        rstd = tl.rsqrt(tl.sum(acc, axis=1) / N + eps)
        for c in range(NUM_CHUNKS):
            offs = (NUM_CHUNKS - 1 - c) * BLOCK_N + cols  # last-read chunk first: it is the likeliest in cache
            mask = row_ok[:, None] & (offs[None, :] < N)
            x = tl.load(x_rows + offs[None, :], mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
            w = tl.load(w_ptr + offs, mask=offs < N, other=0.0, eviction_policy="evict_last").to(tl.float32)
            tl.store(y_rows + offs[None, :], (x * rstd[:, None] * w[None, :]).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _rmsnorm_kernel(x_ptr, w_ptr, y_ptr, M, N, stride_xm, stride_ym, eps, BLOCK_N: tl.constexpr,
                    NUM_CHUNKS: tl.constexpr, ROWS: tl.constexpr, ITERS: tl.constexpr):  # fmt: skip
    """Row block ``program_id`` (ITERS = 1), or a grid-stride loop over the row blocks (persistent grid)."""
    for i in range(ITERS):
        blk = tl.program_id(0) + i * tl.num_programs(0)
        _rmsnorm_rows(x_ptr, w_ptr, y_ptr, blk, M, N, stride_xm, stride_ym, eps, BLOCK_N, NUM_CHUNKS, ROWS)


@dataclass(frozen=True)
class Plan:
    """A norm launch's geometry, all of it constexpr or grid size."""

    BLOCK_N: int
    NUM_CHUNKS: int
    ROWS: int
    ITERS: int
    programs: int

    def meta(self) -> dict[str, int]:
        return {"BLOCK_N": self.BLOCK_N, "NUM_CHUNKS": self.NUM_CHUNKS, "ROWS": self.ROWS, "ITERS": self.ITERS}


def _power_of_two(meta: dict[str, Any], key: str, default: int) -> int:
    v = int(meta.get(key, default) or default)
    if v < 1 or v & (v - 1):
        raise ValueError(f"{key} must be a power of two (a tl.arange extent), got {v}")
    return v


def plan(M: int, N: int, meta: dict[str, Any], sms: int | None = None) -> Plan:
    """The launch for an (M, N) input under a config: BLOCK_N capped at N's next power of two (a wider block is
    only masked lanes), chunks to cover N, row blocks of ROWS_PER_PROGRAM, and a grid of one program per row
    block, or ``PERSISTENT`` programs per SM (``sms``: this device's count by default; never more programs than
    row blocks) looping ITERS times."""
    bn = min(_power_of_two(meta, "BLOCK_N", 1024), triton.next_power_of_2(N))
    rows = _power_of_two(meta, "ROWS_PER_PROGRAM", 1)
    blocks = triton.cdiv(M, rows)
    per_sm = int(meta.get("PERSISTENT", 0) or 0)
    programs = min(blocks, (sms or C.num_sms()) * per_sm) if per_sm > 0 else blocks
    return Plan(bn, triton.cdiv(N, bn), rows, triton.cdiv(blocks, programs), programs)


def make_inputs(case: dict[str, Any], seed: int) -> dict[str, Any]:
    M, N = int(case["M"]), int(case["N"])
    dt = DTYPES[case.get("dtype", "bf16")]
    dev = C.device()
    g = C.generator(seed, dev)
    x = C.rand((M, N), dt, g, dev)
    w = (1.0 + C.rand((N,), torch.float32, g, dev, scale=0.1)).to(dt)  # a trained gain: near 1, never 0
    eps = float(case.get("eps", SPEC.param("eps").default))
    return {"x": x, "w": w, "eps": eps, "y": torch.empty((M, N), dtype=dt, device=dev)}


def launch(inputs: dict[str, Any], config: dict[str, Any]) -> torch.Tensor:
    x, w, y = inputs["x"], inputs["w"], inputs["y"]
    M, N = x.shape
    if x.stride(1) != 1 or y.stride(1) != 1:
        raise ValueError("rmsnorm needs rows with a unit last stride")
    meta, opts = split_config(config, C.backend())
    p = plan(M, N, meta)
    _rmsnorm_kernel[(p.programs,)](
        x, w, y, M, N, x.stride(0), y.stride(0), inputs["eps"], **p.meta(), **opts
    )  # fmt: skip
    return y


def reference(inputs: dict[str, Any]) -> torch.Tensor:
    x = inputs["x"].double()
    rstd = torch.rsqrt(x.square().mean(dim=-1, keepdim=True) + inputs["eps"])
    return x * rstd * inputs["w"].double()

"""A stand-in library whose op picks its own config, as FlagGems' and AITER's entries do: ``scale(x)`` looks up
its block size in its own table by the row length, launches its Triton kernel and remembers what it picked."""

import torch
import triton
import triton.language as tl

#: its own tuning table: row length up to → block and warps
TABLE = ((64, {"BLOCK": 64, "num_warps": 1}), (10**9, {"BLOCK": 128, "num_warps": 2}))
LAST: dict = {}


@triton.jit
def _scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2.0, mask=offs < n)


def scale(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    cfg = next(c for up_to, c in TABLE if x.shape[-1] <= up_to)
    y = torch.empty_like(x) if out is None else out
    n = x.numel()
    _scale[(triton.cdiv(n, cfg["BLOCK"]),)](x, y, n, BLOCK=cfg["BLOCK"], num_warps=cfg["num_warps"])
    LAST.clear()
    LAST.update(cfg, row=x.shape[-1])
    return y


@triton.jit
def _silu_and_mul(a_ptr, b_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs, mask=offs < n).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=offs < n).to(tl.float32)
    tl.store(y_ptr + offs, (a / (1.0 + tl.exp(-a)) * b).to(y_ptr.dtype.element_ty), mask=offs < n)


def silu_and_mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """silu(a) * b, FlagGems' signature; its block from the element count (a heuristic of its own)."""
    y = torch.empty_like(a)
    n = a.numel()
    block = 256 if n >= 1024 else 64
    _silu_and_mul[(triton.cdiv(n, block),)](a, b, y, n, BLOCK=block, num_warps=4)
    return y


_COMPILED: dict = {}


def cached_scale(x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """As FlagGems' LibEntry: the first call for a row length goes through Triton's JIT (and its choice); later
    calls run what it cached without it (here torch stands in for the compiled kernel launched directly)."""
    row = x.shape[-1]
    if row in _COMPILED:
        return torch.mul(x, 2.0, out=out)
    _COMPILED[row] = True
    return scale(x, out=out)

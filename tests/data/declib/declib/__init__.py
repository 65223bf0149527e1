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

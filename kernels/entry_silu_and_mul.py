"""A library's fused SwiGLU activation, called through its public entry: ``ENTRY(a, b) = silu(a) * b`` for a, b
(M, N) (FlagGems' ``flag_gems.silu_and_mul``). The library picks its config; the results record what it
launched."""

from __future__ import annotations

from typing import Any

import torch

from harness import REQUIRED, KernelSpec, Param, Plot, dim, dtype
from kernels import common as C
from kernels._entry import DTYPES, ENTRY_ID, SIZES, TOLERANCE, entry

SPEC = KernelSpec(
    name="entry_silu_and_mul",
    description="a library's silu(a) * b through its public entry (entry: module.function)",
    params=(dim("M"), dim("N"), dtype(("bf16", "fp16", "fp32"), "fp16"), Param("entry", "str", REQUIRED, id=ENTRY_ID)),
    flops=lambda p: 5.0 * p["M"] * p["N"],
    bytes=lambda p: float(SIZES[p["dtype"]] * 3 * p["M"] * p["N"]),
    peak="memory",
    dtype="{dtype}",
    tolerance=TOLERANCE,
    hooks=("chosen_config",),
    plot=Plot(x="N", series=("M",), y="gbps"),
)


def make_inputs(params: dict[str, Any], seed: int) -> dict[str, Any]:
    dev, dt = C.device(), DTYPES[params["dtype"]]
    g = C.generator(seed, dev)
    a = C.rand((params["M"], params["N"]), dt, g, dev)
    b = C.rand((params["M"], params["N"]), dt, g, dev)
    return {"a": a, "b": b, "entry": params["entry"], "y": torch.empty_like(a)}


def launch(inputs: dict[str, Any], config: dict[str, Any]) -> torch.Tensor:
    out = entry(inputs["entry"])(inputs["a"], inputs["b"])
    inputs["y"] = out
    return out


def reference(inputs: dict[str, Any]) -> torch.Tensor:
    a = inputs["a"].double()
    return a * torch.sigmoid(a) * inputs["b"].double()

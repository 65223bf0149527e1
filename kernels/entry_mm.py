"""A library's matrix multiply, called through its public entry: ``C = ENTRY(A, B)`` with A (M, K) and B (K, N)
in one dtype (FlagGems' ``flag_gems.mm``, ``torch.mm`` as the baseline). The library picks its config (a table,
an autotuner); the results record what it launched."""

from __future__ import annotations

from typing import Any

import torch

from harness import REQUIRED, KernelSpec, Param, Plot, dim, dtype
from kernels import common as C
from kernels._entry import DTYPES, ENTRY_ID, SIZES, entry

SPEC = KernelSpec(
    name="entry_mm",
    description="a library's C = A @ B through its public entry (entry: module.function)",
    params=(
        dim("M"),
        dim("N"),
        dim("K"),
        dtype(("bf16", "fp16", "fp32"), "fp16"),
        Param("entry", "str", REQUIRED, id=ENTRY_ID),
    ),  # fmt: skip
    flops=lambda p: 2.0 * p["M"] * p["N"] * p["K"],
    bytes=lambda p: float(SIZES[p["dtype"]] * (p["M"] * p["K"] + p["K"] * p["N"] + p["M"] * p["N"])),
    peak=lambda p: "tf32" if p["dtype"] == "fp32" else p["dtype"],
    dtype="{dtype}",
    tolerance={"bf16": 1e-2, "fp16": 2e-3, "fp32": 1e-4},
    hooks=("chosen_config",),
    plot=Plot(x="M", series=("N", "K")),
)


def make_inputs(params: dict[str, Any], seed: int) -> dict[str, Any]:
    dev, dt = C.device(), DTYPES[params["dtype"]]
    g = C.generator(seed, dev)
    a = C.rand((params["M"], params["K"]), dt, g, dev)
    b = C.rand((params["K"], params["N"]), dt, g, dev)
    return {
        "a": a,
        "b": b,
        "entry": params["entry"],
        "y": torch.empty((params["M"], params["N"]), dtype=dt, device=dev),
    }


def launch(inputs: dict[str, Any], config: dict[str, Any]) -> torch.Tensor:
    out = entry(inputs["entry"])(inputs["a"], inputs["b"])
    inputs["y"] = out
    return out


def reference(inputs: dict[str, Any]) -> torch.Tensor:
    return inputs["a"].double() @ inputs["b"].double()

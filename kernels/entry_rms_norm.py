"""A library's RMSNorm, called through its public entry as ``torch.nn.functional.rms_norm`` is called:
``ENTRY(x, (N,), w, eps)`` for x (M, N), w (N) (FlagGems' ``flag_gems.rms_norm``). The library picks its config;
the results record what it launched."""

from __future__ import annotations

from typing import Any

import torch

from harness import REQUIRED, KernelSpec, Param, Plot, dim, dtype
from kernels import common as C
from kernels._entry import DTYPES, ENTRY_ID, SIZES, TOLERANCE, entry

EPS = 1e-6

SPEC = KernelSpec(
    name="entry_rms_norm",
    description="a library's y = x / sqrt(mean(x^2) + eps) * w through its public entry (entry: module.function)",
    params=(dim("M"), dim("N"), dtype(("bf16", "fp16", "fp32"), "fp16"), Param("entry", "str", REQUIRED, id=ENTRY_ID)),
    flops=lambda p: 4.0 * p["M"] * p["N"],
    bytes=lambda p: float(SIZES[p["dtype"]] * (2 * p["M"] * p["N"] + p["N"])),
    peak="memory",
    dtype="{dtype}",
    tolerance=TOLERANCE,
    hooks=("chosen_config",),
    plot=Plot(x="N", series=("M",), y="gbps"),
)


def make_inputs(params: dict[str, Any], seed: int) -> dict[str, Any]:
    dev, dt = C.device(), DTYPES[params["dtype"]]
    g = C.generator(seed, dev)
    x = C.rand((params["M"], params["N"]), dt, g, dev)
    w = (1.0 + C.rand((params["N"],), torch.float32, g, dev, scale=0.1)).to(dt)
    return {"x": x, "w": w, "entry": params["entry"], "y": torch.empty_like(x)}


def launch(inputs: dict[str, Any], config: dict[str, Any]) -> torch.Tensor:
    x = inputs["x"]
    out = entry(inputs["entry"])(x, (x.shape[-1],), inputs["w"], EPS)
    inputs["y"] = out
    return out


def reference(inputs: dict[str, Any]) -> torch.Tensor:
    x = inputs["x"].double()
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * inputs["w"].double()

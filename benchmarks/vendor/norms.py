"""The best torch paths for the norm family (kernels/rmsnorm.py, kernels/layernorm.py), on the kernel's own inputs.

``CASES``: the params of the cases to compare (the largest shapes of suites/norms.yaml and a few more); each is a
case of both kernels (rmsnorm and layernorm take the same params; eps at each kernel's default).
``vendor_ops(params, inputs)``: named callables computing the same y from the same ``inputs`` (what the kernel's
``make_inputs`` returned: LayerNorm's hold a bias ``b``, RMSNorm's do not), to time beside ``launch``:

- ``F.rms_norm (eager)`` / ``F.layer_norm (eager)``: ATen's CUDA kernels (one fused kernel each; fp32 statistics
  for bf16/fp16 inputs, output in the input dtype), the path a model gets without compilation.
- ``... (torch.compile)``: the same call through TorchInductor, which generates a fused Triton kernel for it (the
  Triton of the environment it runs in, so its time moves with the stack as ours does); compiled on its first call,
  so time it after a warm-up. ``dynamic=False``: one specialized kernel per shape, as ours are; the recompile limit
  is raised so that a sweep of shapes never falls back to eager silently.

Both allocate their output (torch has no ``out=`` for these); a kernel-only timer (CUPTI) does not see that.
The lead's script measures device-to-device copy bandwidth separately to report each as % of achievable HBM
bandwidth; the bytes to divide by are the kernel SPEC's (x read, y written, w and b read once).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

#: the largest shapes of the family (2 GB of bf16 x + y at M=32768 N=16384) and a few more across N
SHAPES = [(32768, 16384), (32768, 8192), (32768, 4096), (32768, 1024), (16384, 2048), (4096, 8192), (1024, 16384)]
CASES: list[dict[str, Any]] = [{"M": M, "N": N, "dtype": "bf16"} for M, N in SHAPES]

torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 64)


def _rms_norm(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    return F.rms_norm(x, x.shape[-1:], w, eps)


def _layer_norm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, eps: float) -> torch.Tensor:
    return F.layer_norm(x, x.shape[-1:], w, b, eps)


_COMPILED: dict[str, Callable[..., torch.Tensor]] = {}


def _compiled(name: str) -> Callable[..., torch.Tensor]:
    """One torch.compile wrapper per function for the process (its compiled kernels cached per shape)."""
    if name not in _COMPILED:
        fn = {"rmsnorm": _rms_norm, "layernorm": _layer_norm}[name]
        _COMPILED[name] = torch.compile(fn, dynamic=False)
    return _COMPILED[name]


def vendor_ops(params: dict[str, Any], inputs: dict[str, Any]) -> dict[str, Callable[[], Any]]:
    """Named torch paths for one case: LayerNorm's when the inputs hold a bias ``b`` (or ``params['kernel']`` says
    so), else RMSNorm's. Each returns y (M, N) in x's dtype."""
    x, w, eps = inputs["x"], inputs["w"], float(inputs["eps"])
    kernel = params.get("kernel") or ("layernorm" if "b" in inputs else "rmsnorm")
    if kernel == "rmsnorm":
        rms = _compiled("rmsnorm")
        return {
            "F.rms_norm (eager)": lambda: _rms_norm(x, w, eps),
            "F.rms_norm (torch.compile)": lambda: rms(x, w, eps),
        }
    b = inputs["b"]
    ln = _compiled("layernorm")
    return {
        "F.layer_norm (eager)": lambda: _layer_norm(x, w, b, eps),
        "F.layer_norm (torch.compile)": lambda: ln(x, w, b, eps),
    }

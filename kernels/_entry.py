"""What the entry kernels share (entry_mm, entry_rms_norm, entry_silu_and_mul): a library's public function named
by the suite (``entry: flag_gems.mm``), imported in the worker where the suite's ``library:`` checkout is on the
path, and called as the library's users call it, so the library picks its own config; the worker records what it
launched (worker/launches.py). A library plugged in this way needs no wrapper file."""

from __future__ import annotations

import importlib
from functools import cache
from typing import Any

import torch

#: the entry parameter every entry kernel declares: ``module.function`` (``flag_gems.mm``, ``torch.mm``)
ENTRY_ID = "{value}"
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
SIZES = {"bf16": 2, "fp16": 2, "fp32": 4}
#: an elementwise or norm op's output against torch's float64 reference
TOLERANCE = {"bf16": 1e-2, "fp16": 2e-3, "fp32": 1e-5}


@cache
def entry(name: str) -> Any:
    """The function ``module.function`` names (``flag_gems.ops.rms_norm``: the deepest module that imports)."""
    module, _, attr = name.rpartition(".")
    if not module:
        raise ValueError(f"entry {name!r}: expected module.function, e.g. flag_gems.mm")
    owner: Any = importlib.import_module(module)
    return getattr(owner, attr)

"""harness: regression tracking for GPU kernels across Triton compiler stacks.

The kernel contract is public here (harness/kernel_api/, docs/writing-kernels.md): a kernel file declares itself
with ``from harness import KernelSpec, Param, ConfigLookup, Plot, dim, dtype``, and splits a resolved config with
``split_config`` (``for_backend``, ``is_note`` and ``resolve`` are the rest of the config rule). Importing harness
loads only that contract (standard library only): the worker, run in every environment's Python, imports it too."""

from harness.kernel_api import (
    REQUIRED,
    ConfigError,
    ConfigLookup,
    KernelSpec,
    Param,
    Plot,
    SpecError,
    dim,
    dtype,
    for_backend,
    is_note,
    resolve,
    split_config,
)

__version__ = "0.1.0"
__all__ = [
    "REQUIRED",
    "ConfigError",
    "ConfigLookup",
    "KernelSpec",
    "Param",
    "Plot",
    "SpecError",
    "dim",
    "dtype",
    "for_backend",
    "is_note",
    "resolve",
    "split_config",
]

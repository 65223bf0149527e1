"""The kernel contract, public: what a kernel file declares (spec.py: ``KernelSpec``, ``Param``, ``ConfigLookup``,
``Plot``, ``dim``, ``dtype``) and the one rule by which a case gets its config (configs.py: bucket lookup,
``split_config`` / ``for_backend``, notes; layout.py: harness's and AITER's file layouts).

Standard library only, and no other harness package: the worker imports it in every environment's Python beside
the kernels (tests/worker/test_imports.py holds both to that), and the driver reads SPECs with it on any machine.
``from harness import KernelSpec`` is the same object (harness/__init__.py re-exports these names)."""

from harness.kernel_api.configs import (
    ConfigError,
    Resolved,
    for_backend,
    is_note,
    pick_bucket,
    resolve,
    resolve_in,
    split_config,
)
from harness.kernel_api.layout import AITER_BOUNDS, LAYOUTS, places
from harness.kernel_api.library import returned
from harness.kernel_api.spec import REQUIRED, ConfigLookup, KernelSpec, Param, Plot, SpecError, config_label, dim, dtype

__all__ = [
    "AITER_BOUNDS",
    "LAYOUTS",
    "REQUIRED",
    "ConfigError",
    "ConfigLookup",
    "KernelSpec",
    "Param",
    "Plot",
    "Resolved",
    "SpecError",
    "config_label",
    "dim",
    "dtype",
    "for_backend",
    "is_note",
    "pick_bucket",
    "places",
    "resolve",
    "resolve_in",
    "returned",
    "split_config",
]

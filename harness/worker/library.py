"""A kernel library's checkout made importable in the worker, as a suite's ``library:`` names it
(harness/inputs/library.py). Standard library only."""

from __future__ import annotations

import importlib.machinery
import os
import sys
import types
from typing import Any


class LibraryClash(ImportError):
    """The package is already imported from another folder in this worker."""


def attach(library: dict[str, Any] | None) -> str:
    """Put ``library['path']`` first on sys.path; with ``init`` false, register the package as a bare package of
    its folder so that ``import aiter.ops...`` runs its subpackages but not ``aiter/__init__.py`` (AITER's imports
    its JIT-built C++ ops, which a Triton kernel does not need). Returns the checkout's folder ('' without one)."""
    if not library:
        return ""
    path, package = os.path.realpath(library["path"]), library["package"]
    folder = os.path.join(path, package)
    have = sys.modules.get(package)
    if have is not None:
        where = [os.path.realpath(p) for p in getattr(have, "__path__", [])]
        if where and folder not in where:
            raise LibraryClash(f"package {package!r} is imported from {where[0]}, not from {folder}", name=package)
        return path
    if path not in sys.path:
        sys.path.insert(0, path)
    if not library.get("init", True) and os.path.isdir(folder):
        mod = types.ModuleType(package)
        mod.__path__ = [folder]
        mod.__spec__ = importlib.machinery.ModuleSpec(package, None, is_package=True)
        mod.__spec__.submodule_search_locations = [folder]
        sys.modules[package] = mod
    return path


def library_roots(case: dict[str, Any]) -> tuple[str, ...]:
    """The checkout folders whose frames an error names first (harness/worker/errors.py)."""
    lib = case.get("library")
    return (lib["path"],) if lib else ()

"""Deprecated: the kernel contract is public in harness (``from harness import KernelSpec, Param, ConfigLookup,
Plot, dim, dtype``; harness/kernel_api/spec.py). Kept for one release, so that kernel files outside this
repository, written as docs/writing-kernels.md showed until now (``from kernels.spec import ...``), still load."""

from harness.kernel_api.spec import *  # noqa: F403 - every public name, the same objects

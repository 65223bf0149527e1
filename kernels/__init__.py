"""The shipped kernels: one module per kernel, each declaring ``SPEC = KernelSpec(...)`` (what a kernel is:
harness/kernel_api/, ``from harness import KernelSpec``; docs/writing-kernels.md), their shared torch and Triton
helpers (common.py) and their config files (configs/). The driver finds them by their SPECs, without importing
them (harness/inputs/kernel.py); the worker imports them in each environment's Python."""

"""The stand-in's arch query, as AITER's behaves: the GPU driver's target when the module is imported; without a
driver (Triton's CPU interpreter) it falls back to jax, which is not installed."""

import triton

try:
    _ARCH = triton.runtime.driver.active.get_current_target().arch
except RuntimeError:
    from jax._src.lib import gpu_triton  # noqa: F401 - fails: the adapter answers this question on the CPU

    _ARCH = "unknown"


def get_arch():
    return _ARCH


def is_fp4_avail():
    return get_arch() in ("gfx950", "gfx1250")

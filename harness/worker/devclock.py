"""Device-side time for the harness's own GPU kernels (NVIDIA only: PTX's ``%globaltimer``, in ns): ``now()`` reads
it, ``spin(ns)`` waits that long. Triton functions for other ``@triton.jit`` kernels to call (inlined), built at
first use, so Triton is imported only by a worker timing GPUs. The rank barrier, the gate and the idle wait of
group.py and calibrate's injected delay (delay.py) all read the clock this way."""

from __future__ import annotations

from typing import Any

_HELPERS: tuple[Any, Any] | None = None


def helpers() -> tuple[Any, Any]:
    """(now, spin): the global timer in ns, and a spin of ``ns`` on it."""
    global _HELPERS
    if _HELPERS is None:
        _HELPERS = _define()
    return _HELPERS


def _define() -> tuple[Any, Any]:
    import triton
    import triton.language as tl

    @triton.jit
    def now():
        return tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)

    @triton.jit
    def spin(ns):
        start = now()
        t = start
        while t - start < ns:
            t = now()

    return now, spin

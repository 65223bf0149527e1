"""A known slowdown inside the op's timed window, for `harness calibrate`: after every launch of the op, an extra
wait of D µs that every timing method counts as the op's own. Only the standard library, torch and triton.

* On an NVIDIA GPU: a one-thread Triton kernel spinning on ``%globaltimer`` for D µs (devclock.spin, as
  group.py's idle wait does), queued right after the op's kernels on the same stream. Its name does not start with ``_harness_``, so
  CUPTI timing sums it into the op's dispatches, and CUDA events bracket it with the op.
* Under Triton's CPU interpreter (wallclock timing, the host's clock around each launch): a busy wait on
  ``time.perf_counter`` of D µs after the launch returns, inside the timed interval.
* Elsewhere (ROCm has no ``%globaltimer``): refused, so no calibration claims a slowdown it did not inject.

The delay comes from the env (a calibrate run's slowed env sets it): ``HARNESS_DELAY_US`` (µs for every case) or
``HARNESS_DELAY_FILE`` (a JSON object: ``kernel/case_id`` → µs, for slowdowns in % of each case's time).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import Any

_KERNEL: Any = None


def delay_of(case: dict[str, Any]) -> float:
    """The µs this worker adds to ``case``'s every launch (0: none)."""
    path = os.environ.get("HARNESS_DELAY_FILE")
    if path:
        with open(path) as fh:
            table = json.load(fh)
        return float(table.get(f"{case['kernel']}/{case['case_id']}", 0.0))
    return float(os.environ.get("HARNESS_DELAY_US") or 0.0)


def delayed(op: Callable[[], Any], delay_us: float, backend: str) -> Callable[[], Any]:
    """``op`` followed by a wait of ``delay_us`` in the same timed window (module docstring)."""
    if delay_us <= 0:
        return op
    if backend == "interp":

        def host_delayed() -> Any:
            out = op()
            end = time.perf_counter() + delay_us / 1e6
            while time.perf_counter() < end:  # a busy wait: sleep() may overshoot by a scheduler tick
                pass
            return out

        return host_delayed
    if backend != "cuda":
        raise RuntimeError(f"an injected delay needs an NVIDIA GPU or the CPU interpreter, not {backend}")
    kernel, ns = _spin_kernel(), int(delay_us * 1e3)

    def gpu_delayed() -> Any:
        out = op()
        kernel[(1,)](ns, num_warps=1)
        return out

    return gpu_delayed


def _spin_kernel() -> Any:
    global _KERNEL
    if _KERNEL is None:
        import triton

        from harness.worker.devclock import helpers

        spin = helpers()[1]

        @triton.jit(do_not_specialize=["ns"])
        def calibrate_delay(ns):
            spin(ns)

        _KERNEL = calibrate_delay
    return _KERNEL

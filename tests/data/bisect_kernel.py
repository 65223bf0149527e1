"""A user kernel whose wall-clock time depends on ``triton.__version__`` in a known way, for `harness bisect`'s
tests: a Triton copy kernel (run by each stack's own interpreter), then a sleep of MS[history][version].

Golden (3.6.0) sleeps 40 ms; a release sleeps 25 ms where the case is good under it (clearly faster than golden:
the interpreters' own speeds differ by a few ms) and 60 ms where it is bad. ``alt``: the sleep alternates between
25 and 60 ms launch by launch, so that the reps alternate (a rep is the median of three launches after two
warm-ups: an odd count) and their range straddles the rule's limit: noisy, every time. ``first``: alternating
in the first worker process that imports this file under that Triton (a marker file in
$HARNESS_TEST_BISECT_DIR, set by the test), 60 ms in every later one: noisy once, then bad.
"""

import os
import time
from pathlib import Path

import torch
import triton
import triton.language as tl

from harness import KernelSpec, Param, dim

GOOD, GOLDEN, BAD = 25.0, 40.0, 60.0
#: history -> {Triton version: ms, "alt" or "first"}; versions not listed sleep GOLDEN
MS = {
    "step371": {"3.7.1": BAD, "3.8.0": BAD, "3.9.0": BAD},
    "step380": {"3.7.1": GOOD, "3.8.0": BAD, "3.9.0": BAD},
    "step390": {"3.7.1": GOOD, "3.8.0": GOOD, "3.9.0": BAD},
    "bgb": {"3.7.1": BAD, "3.8.0": GOOD, "3.9.0": BAD},
    "transient": {"3.7.1": GOOD, "3.8.0": BAD, "3.9.0": GOOD},
    "noisy": {"3.7.1": GOOD, "3.8.0": "alt", "3.9.0": BAD},
    "settles": {"3.7.1": GOOD, "3.8.0": "first", "3.9.0": BAD},
}
SPEC = KernelSpec(
    name="versioned",
    params=(Param("history", "str", choices=tuple(MS), id="{value}"), dim("N", 64)),
    flops=lambda p: 0.0,
    bytes=lambda p: 8.0 * p["N"],
    peak="memory",
    dtype="fp32",
    tolerance=0.0,
)
VERSION = triton.__version__.split("+")[0]
MARKERS = os.environ.get("HARNESS_TEST_BISECT_DIR", "")
_marker = Path(MARKERS) / f"imported-under-{VERSION}" if MARKERS else None
FIRST_PROCESS = _marker is not None and not _marker.exists()
if _marker is not None:
    _marker.touch()
_calls: dict[str, int] = {}


@triton.jit
def _copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def sleep_ms(history: str) -> float:
    ms = MS[history].get(VERSION, GOLDEN)
    if ms == "first":
        ms = "alt" if FIRST_PROCESS else BAD
    if ms == "alt":
        _calls[history] = _calls.get(history, 0) + 1
        return BAD if _calls[history] % 2 else GOOD
    return float(ms)


def make_inputs(params, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(params["N"], generator=g)
    return {"x": x, "y": torch.empty_like(x), "history": params["history"]}


def launch(inputs, config):
    x, y = inputs["x"], inputs["y"]
    _copy[(triton.cdiv(x.numel(), 64),)](x, y, x.numel(), BLOCK=64)
    time.sleep(sleep_ms(inputs["history"]) / 1e3)
    return y


def reference(inputs):
    return inputs["x"].double()

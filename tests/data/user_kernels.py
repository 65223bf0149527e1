"""User kernel files loaded by path (`tests/data/user_kernels.py:NAME`), for fault injection: each object has the
kernel interface; all but `good` break in one way."""

import os
import sys
import time
from dataclasses import replace

import torch
import triton
import triton.language as tl

from harness import KernelSpec
from kernels import batched_gemm_bf16 as base

#: the shipped bf16 kernel's declaration without its config files (the suite's config is the config); each class
#: below renames it, so that one suite can hold them all
GOOD = replace(base.SPEC, name="good", config=None)


@triton.jit
def _scale_kernel(x_ptr, y_ptr, n, FACTOR: tl.constexpr, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK % 3 == 0, "BLOCK must be a multiple of 3")  # fails at compile time for BLOCK=64
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * FACTOR, mask=offs < n)


class good:
    SPEC = GOOD
    make_inputs = staticmethod(base.make_inputs)
    launch = staticmethod(base.launch)
    reference = staticmethod(base.reference)


class compile_fail(good):
    SPEC = replace(GOOD, name="compile_fail")

    @staticmethod
    def launch(inputs, config):
        y = inputs["y"]
        _scale_kernel[(1,)](inputs["x"], y, y.numel(), FACTOR=2.0, BLOCK=64)
        return y


class crash(good):
    SPEC = replace(GOOD, name="crash")

    @staticmethod
    def launch(inputs, config):
        os.abort()  # what an illegal memory access looks like from the driver: the process dies


class lose_context(good):
    """What an illegal address really does on a GPU: the launch fails with an exception and every later CUDA call
    in the process fails too (sticky). Simulated by making this worker's context probe report the loss."""

    SPEC = replace(GOOD, name="lose_context")

    @staticmethod
    def launch(inputs, config):
        sys.modules["harness.worker.session"].Session.context_lost = lambda self: "GPU context lost (simulated)"
        os.environ["HARNESS_TEST_CONTEXT_LOST"] = "1"
        raise RuntimeError("CUDA error: an illegal memory access was encountered (simulated)")


class after_lost(good):
    """Fails if it runs in the process whose context ``lose_context`` broke."""

    SPEC = replace(GOOD, name="after_lost")

    @staticmethod
    def launch(inputs, config):
        if os.environ.get("HARNESS_TEST_CONTEXT_LOST"):
            raise RuntimeError("CUDA error: an illegal memory access was encountered (an earlier case's)")
        return base.launch(inputs, config)


class hang(good):
    SPEC = replace(GOOD, name="hang")

    @staticmethod
    def launch(inputs, config):
        time.sleep(3600)


class wrong(good):
    SPEC = replace(GOOD, name="wrong")

    @staticmethod
    def launch(inputs, config):
        y = base.launch(inputs, config)
        y[..., ::2] = 0  # half the columns wrong
        return y


class unwritten(good):
    SPEC = replace(GOOD, name="unwritten")

    @staticmethod
    def launch(inputs, config):
        return inputs["y"]  # never writes: the poisoned NaNs stay


class slow(good):
    """Correct but slow (0.15 s per launch): a run long enough to be killed in the middle (6 cases x 10 launches)."""

    SPEC = replace(GOOD, name="slow")

    @staticmethod
    def launch(inputs, config):
        time.sleep(0.15)
        return base.launch(inputs, config)


assert torch is not None and KernelSpec is not None

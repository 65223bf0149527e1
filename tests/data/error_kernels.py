"""User kernels whose failures must keep their cause and the user's line (tests/test_worker_errors.py). Loaded by
path (`tests/data/error_kernels.py:NAME`); each has the kernel interface and breaks in one way."""

from dataclasses import replace

import torch
import triton
import triton.language as tl

from harness import KernelSpec

CHAINED = KernelSpec(name="chained", params=(), flops=lambda p: 1.0, bytes=lambda p: 1.0, tolerance=1e-3)


def _pick_block(config):
    try:
        return config["BLOCK"]  # the root cause: no such key
    except KeyError as err:
        raise ValueError("config has no BLOCK size") from err  # ERROR_KERNELS_RAISE_LINE


@triton.jit
def _copy(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)  # ERROR_KERNELS_ARANGE_LINE: BLOCK=3 is not a power of two
    tl.store(y_ptr + offs, tl.load(x_ptr + offs))


class chained:
    SPEC = CHAINED

    @staticmethod
    def make_inputs(case, seed):
        return {"x": torch.ones(4), "y": torch.empty(4)}

    @staticmethod
    def launch(inputs, config):
        block = _pick_block(config)
        return inputs["x"][:block]

    @staticmethod
    def reference(inputs):
        return inputs["x"]


class in_triton(chained):
    """The exception comes out of Triton; the failing line is the user's."""

    SPEC = replace(CHAINED, name="in_triton")

    @staticmethod
    def launch(inputs, config):
        _copy[(1,)](inputs["x"], inputs["y"], BLOCK=3)
        return inputs["y"]


class no_y(chained):
    SPEC = replace(CHAINED, name="no_y")

    @staticmethod
    def make_inputs(case, seed):
        return {"x": torch.ones(4), "out": torch.empty(4)}


class not_a_dict(chained):
    SPEC = replace(CHAINED, name="not_a_dict")

    @staticmethod
    def make_inputs(case, seed):
        return [torch.ones(4)]

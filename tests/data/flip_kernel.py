"""A user kernel whose speed an environment knob sets, for the tests of `harness flip`: every launch sleeps for
the units :func:`cost` gives. Under golden (``FLIP_TOY_STACK=golden``) every case costs 3 units; under TOT 6,
except that ``FLIP_TOY_FIX=1`` brings N=16 back to 3 (a knob that flips it) and leaves N=32 at 6 (nothing flips
it); ``FLIP_TOY_OTHER`` changes nothing. What it computes (y = 2x, a torch op) is the same everywhere."""

import os
import time

import torch

from harness import KernelSpec, dim

#: seconds per unit of cost
UNIT = 0.01
SPEC = KernelSpec(name="flip_toy", params=(dim("N"),), flops=lambda p: p["N"], bytes=lambda p: 8.0 * p["N"],
                  peak="memory", dtype="fp32", tolerance=1e-6)  # fmt: skip


def cost(n: int) -> float:
    if os.environ.get("FLIP_TOY_STACK") != "tot":
        return 3.0
    return 3.0 if n == 16 and os.environ.get("FLIP_TOY_FIX") == "1" else 6.0


def make_inputs(params, seed):
    x = torch.randn(params["N"], generator=torch.Generator().manual_seed(seed))
    return {"x": x, "y": torch.empty_like(x)}


def launch(inputs, config):
    x, y = inputs["x"], inputs["y"]
    time.sleep(UNIT * cost(x.shape[0]))
    return torch.mul(x, 2.0, out=y)


def reference(inputs):
    return inputs["x"].double() * 2

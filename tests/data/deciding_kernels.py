"""A library op run as its users call it (tests/data/declib): the library picks the config, harness records it
(``chosen_config``); ``Previewed`` also reads the library's files as harness's preview, checked against it."""

from dataclasses import replace

import torch

from harness import ConfigLookup, KernelSpec, dim

SPEC = KernelSpec(
    name="declib_scale",
    params=(dim("M"), dim("N")),
    flops=lambda p: 1.0 * p["M"] * p["N"],
    bytes=lambda p: 8.0 * p["M"] * p["N"],
    peak="memory",
    dtype="fp32",
    tolerance=1e-6,
    hooks=("chosen_config",),
)


def make_inputs(params, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(params["M"], params["N"], generator=g)
    return {"x": x, "y": torch.empty_like(x)}


def launch(inputs, config):  # no config passed: the library decides, as for its users
    import declib

    return declib.scale(inputs["x"], out=inputs["y"])


def reference(inputs):
    return inputs["x"].double() * 2.0


def chosen_config(params, inputs):
    import declib

    return {k: v for k, v in declib.LAST.items() if k != "row"}, f"declib.TABLE (row {declib.LAST['row']})"


class Previewed:
    SPEC = replace(SPEC, name="declib_scale_previewed", config=ConfigLookup("SCALE", bucket="N", specialize=(),
                   folders=("declib_configs",)), config_keys=("BLOCK",))  # fmt: skip
    make_inputs = staticmethod(make_inputs)
    launch = staticmethod(launch)
    reference = staticmethod(reference)
    chosen_config = staticmethod(chosen_config)


class Recorded:
    """The same op with no chosen_config written: the worker records what the entry launched."""

    SPEC = replace(SPEC, name="declib_scale_recorded")
    make_inputs = staticmethod(make_inputs)
    launch = staticmethod(launch)
    reference = staticmethod(reference)


def _cached_launch(inputs, config):
    import declib

    return declib.cached_scale(inputs["x"], out=inputs["y"])


class Cached:
    """A library that launches through Triton's JIT on its first call only (FlagGems' LibEntry)."""

    SPEC = replace(SPEC, name="declib_scale_cached")
    make_inputs = staticmethod(make_inputs)
    launch = staticmethod(_cached_launch)
    reference = staticmethod(reference)

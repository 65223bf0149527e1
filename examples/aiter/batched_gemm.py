"""AITER's five batched GEMM ops, run from a checkout of ROCm/aiter through harness: one class per op
(``batched_gemm.py:Bf16`` ... in a suite). Inputs and references are harness's own kernels' (kernels/batched_gemm_*,
written to AITER's conventions); the launch calls AITER's public op with the config harness looked up in AITER's
own config files (``layout="aiter"``: nested before flat, ``-B=..-N=..-K=..`` before ``-N=..-K=..``, AITER's
bounds); ``finalize_config`` applies AITER's own post-processing, so the results record the config that ran.
AITER is imported inside each function: a checkout lacking one op fails that op's cases (``import_error``), not
the others'. See README.md beside this file and docs/kernels-from-another-repository.md.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from dataclasses import replace
from typing import Any

from harness import ConfigLookup
from harness.kernel_api import returned
from kernels import batched_gemm_a8w8 as a8w8
from kernels import batched_gemm_a8w8_prequant as prequant
from kernels import batched_gemm_a16wfp4 as a16wfp4
from kernels import batched_gemm_afp4wfp4 as afp4wfp4
from kernels import batched_gemm_bf16 as bf16

OPS = "aiter.ops.triton.gemm.batched"
KERNELS = "_triton_kernels.gemm.batched"  # under aiter.ops.triton: the Triton kernels the ops launch
#: what AITER's config files hold besides the launch options, per op: the keys its kernel takes as arguments, and
#: ``waves_per_eu``, which harness then hands on for every backend. AITER's wrappers pass the whole config to the
#: launch (``**config``): on AMD ``waves_per_eu`` is a launch option; elsewhere it may go only to a kernel that takes
#: it as an argument (NVIDIA's launcher refuses any other keyword: "Keyword argument waves_per_eu was specified but
#: unrecognised"), and which kernels do depends on the checkout (bf16's since July 2026, a8w8's never).
#: :func:`fit_to_kernel` decides it from the checkout's own kernel.
TILES = ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "waves_per_eu")
SPLITK = ("NUM_KSPLIT", "SPLITK_BLOCK_SIZE", "cache_modifier")
#: the gluon kernel's own keys (AITER's bf16 op takes it on gfx1250, reading gemm/gluon/ with backend="gluon")
GLUON = ("NUM_BUFFERS", "kernel_type")
KEYS = {"bf16": (*TILES, *SPLITK, *GLUON), "a8w8": TILES, "fp4": (*TILES, *SPLITK),
        "prequant": (*TILES, "cache_modifier")}  # fmt: skip
#: the backend each op names to AITER's lookup on an arch (its _GLUON_SUPPORTED_ARCHS): part of the preview
BF16_BACKENDS = (("gfx1250", "gluon"),)
#: launch options of AMD's backend only that AITER's config files hold and harness hands on (declared above)
AMD_ONLY = ("waves_per_eu",)
#: afp4wfp4's caller passes its own bounds: 320 added, 1 left out (AITER's _get_config)
AFP4WFP4_BOUNDS = (4, 8, 16, 32, 64, 128, 256, 320, 512, 1024, 2048, 4096, 8192)


def _aiter(spec: Any, name: str, family: str, keys: str, hooks: tuple[str, ...] = (), **lookup: Any) -> Any:
    return replace(
        spec,
        name=f"aiter_{name}",
        description=f"AITER's {name} from a checkout (examples/aiter)",
        config=ConfigLookup(family, layout="aiter", **lookup),
        config_keys=KEYS[keys],
        hooks=("finalize_config", *hooks),
    )


def aiter(module: str) -> Any:
    """``aiter.ops.triton.<module>``, imported after :func:`_arch_for_the_interpreter`."""
    _arch_for_the_interpreter()
    return importlib.import_module(f"aiter.ops.triton.{module}")


def _arch_for_the_interpreter() -> None:
    """AITER asks the GPU driver for its arch when its utils are first imported, and without one (Triton's CPU
    interpreter has none) falls back to jax. Under TRITON_INTERPRET=1 the adapter answers that one question with
    $AITER_ARCH (default gfx950, the arch whose configs the example suite takes), so AITER's code runs on the CPU."""
    name = "aiter.ops.triton.utils._triton.arch_info"
    if os.environ.get("TRITON_INTERPRET") != "1" or name in sys.modules:
        return
    import triton
    from triton.backends.compiler import GPUTarget

    target = GPUTarget("hip", os.environ.get("AITER_ARCH", "gfx950"), 64)

    class _Driver:
        @staticmethod
        def get_current_target() -> Any:
            return target

    driver = triton.runtime.driver
    before = driver._active  # noqa: SLF001 - put back as it was: reset_active() would look for a GPU driver
    driver.set_active(_Driver())
    try:
        importlib.import_module(name)
    finally:
        driver._active = before  # noqa: SLF001


def fit_to_kernel(config: dict[str, Any], op: str, kernel: str) -> dict[str, Any]:
    """``config`` as the op ``op`` may launch it on this backend: on AMD as it is; elsewhere without the AMD-only
    launch options that the checkout's kernel ``kernel`` (in ``aiter.ops.triton._triton_kernels.gemm.batched.<op>``)
    does not take as an argument. Read from the kernel's own signature, so one adapter fits AITER's commits before
    and after a kernel gained the argument; the results' config column then holds what was passed."""
    from kernels import common

    if common.backend() == "hip":
        return config
    aiter(f"gemm.batched.{op}")  # the op first: a checkout that lacks it is told by the op's module, not the kernel's
    fn = getattr(aiter(f"{KERNELS}.{op}"), kernel)
    while hasattr(fn, "fn"):  # Triton's heuristics / JIT / interpreter wrappers, down to the Python function
        fn = fn.fn
    args = inspect.signature(fn).parameters
    return {k: v for k, v in config.items() if k not in AMD_ONLY or k in args}


def own_lookup(op: str, arch: str, *args: Any) -> tuple[dict[str, Any], str]:
    """AITER's own lookup of ``op``: its ``_get_config(*args)`` (the op's files, AITER's rule, AITER's
    post-processing), with AITER's arch question answered ``arch`` while it looks (the suite's config arch: AITER
    ships no sm90 files). What a team that prefers the library's lookup to harness's reading of its files runs
    (``Bf16OwnLookup``, ``A8W8OwnLookup``); AITER does not say which file and bucket, only whether it was tuned."""
    arch_info = aiter("utils._triton.arch_info")
    utils = aiter("utils.gemm_config_utils")
    get_config = aiter(f"{KERNELS}.{op}")._get_config
    clear = getattr(getattr(utils, "_get_gemm_config_cached", None), "cache_clear", None)
    real = arch_info.get_arch
    arch_info.get_arch = lambda: arch
    try:
        if clear is not None:
            clear()  # its cache is keyed by shape, not arch
        config, tuned = get_config(*args)
    finally:
        arch_info.get_arch = real
    return dict(config), f"AITER's {op}._get_config" + (" (tuned)" if tuned else "")


def _fp4_supported(params: dict[str, Any]) -> str | None:
    """AITER's fp4 wrappers assert MXFP4 hardware (gfx950, gfx1250): elsewhere the case is skipped, not failed."""
    try:
        arch_info = aiter("utils._triton.arch_info")
    except ImportError:
        return None  # the launch then reports the missing module as an import_error
    return None if arch_info.is_fp4_avail() else f"AITER's MXFP4 ops need gfx950 or gfx1250, not {arch_info.get_arch()}"


class Bf16:
    SPEC = _aiter(bf16.SPEC, "batched_gemm_bf16", "BATCHED_GEMM-A16W16", "bf16", batch="B", backends=BF16_BACKENDS)
    make_inputs = staticmethod(bf16.make_inputs)
    reference = staticmethod(bf16.reference)

    @staticmethod
    def finalize_config(params: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
        utils = aiter("utils.gemm_config_utils")
        config = utils.compute_splitk_params(config, params["K"])  # what AITER's _get_config does after the lookup
        return fit_to_kernel(config, "batched_gemm_bf16", "_batched_gemm_bf16_kernel")

    @staticmethod
    def launch(inputs: dict[str, Any], config: dict[str, Any]) -> Any:
        op = aiter("gemm.batched.batched_gemm_bf16").batched_gemm_bf16
        x = inputs["x"]
        return op(x, inputs["w"], inputs["bias"], x.dtype, YQ=inputs["y"], config=dict(config))


class A8W8:
    SPEC = _aiter(a8w8.SPEC, "batched_gemm_a8w8", "BATCHED_GEMM-A8W8", "a8w8")
    make_inputs = staticmethod(a8w8.make_inputs)
    reference = staticmethod(a8w8.reference)

    @staticmethod
    def finalize_config(params: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
        # AITER's a8w8 runs the bucket as written
        return fit_to_kernel(config, "batched_gemm_a8w8", "_batched_gemm_a8w8_kernel")

    @staticmethod
    def launch(inputs: dict[str, Any], config: dict[str, Any]) -> Any:
        op = aiter("gemm.batched.batched_gemm_a8w8").batched_gemm_a8w8
        i = inputs
        y = i["y"]
        return op(i["x"], i["w"], i["x_scale"], i["w_scale"], i["bias"], y.dtype, YQ=y, config=dict(config))


def _fp4_splitk(config: dict[str, Any], k: int) -> dict[str, Any]:
    """AITER's fp4 wrappers' post-processing, ``k`` the logical K (twice the packed one): split-K by AITER's own
    ``get_splitk`` when NUM_KSPLIT > 1, else one split of the whole K; BLOCK_SIZE_K clamped to next_pow2(k)."""
    import triton

    if config.get("NUM_KSPLIT", 1) > 1:
        get_splitk = aiter("gemm.basic.gemm_a16wfp4").get_splitk
        split, bk, ks = get_splitk(k // 2, config["BLOCK_SIZE_K"], config["NUM_KSPLIT"])
        config.update(SPLITK_BLOCK_SIZE=split, BLOCK_SIZE_K=bk, NUM_KSPLIT=ks)
    else:
        config["SPLITK_BLOCK_SIZE"] = k
    if config["BLOCK_SIZE_K"] >= k:
        config.update(BLOCK_SIZE_K=triton.next_power_of_2(k), SPLITK_BLOCK_SIZE=k)
    return config


class A16WFP4:
    SPEC = _aiter(a16wfp4.SPEC, "batched_gemm_a16wfp4", "BATCHED_GEMM-A16WFP4", "fp4", hooks=("supported",))
    make_inputs = staticmethod(a16wfp4.make_inputs)
    reference = staticmethod(a16wfp4.reference)
    supported = staticmethod(_fp4_supported)

    @staticmethod
    def finalize_config(params: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
        config = _fp4_splitk(config, params["K"])
        return fit_to_kernel(config, "batched_gemm_a16wfp4", "_batched_gemm_a16wfp4_kernel")

    @staticmethod
    def launch(inputs: dict[str, Any], config: dict[str, Any]) -> Any:
        op = aiter("gemm.batched.batched_gemm_a16wfp4").batched_gemm_a16wfp4
        y = inputs["y"]
        # the wrapper repeats the split-K step on the config it is given; given the finished one it changes nothing
        return op(inputs["x"], inputs["w"], inputs["w_scale"], y.dtype, y, dict(config))


class AFP4WFP4:
    SPEC = _aiter(
        afp4wfp4.SPEC,
        "batched_gemm_afp4wfp4",
        "BATCHED_GEMM-AFP4WFP4",
        "fp4",
        hooks=("supported",),
        bounds=AFP4WFP4_BOUNDS,
    )
    make_inputs = staticmethod(afp4wfp4.make_inputs)
    reference = staticmethod(afp4wfp4.reference)
    supported = staticmethod(_fp4_supported)

    @staticmethod
    def finalize_config(params: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
        config = _fp4_splitk(config, params["K"])  # AITER's _get_config for afp4wfp4, after its lookup
        return fit_to_kernel(config, "batched_gemm_afp4wfp4", "_batched_gemm_afp4_wfp4_kernel")

    @staticmethod
    def launch(inputs: dict[str, Any], config: dict[str, Any]) -> Any:
        op = aiter("gemm.batched.batched_gemm_afp4wfp4").batched_gemm_afp4wfp4
        i = inputs
        y = i["y"]
        op(i["x"], i["w"], i["x_scale"], i["w_scale"], y.dtype, y, config=dict(config))
        return y  # AITER's afp4wfp4 writes y and returns nothing


class A8W8Prequant:
    SPEC = _aiter(
        prequant.SPEC,
        "batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant",
        "BATCHED_GEMM-A8W8-A_PER_TOKEN_GROUP_PREQUANT_W_PER_BATCHED_TENSOR_QUANT",
        "prequant",
    )
    make_inputs = staticmethod(prequant.make_inputs)
    reference = staticmethod(prequant.reference)

    @staticmethod
    def finalize_config(params: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
        config = {**config, "BLOCK_SIZE_K": 128}  # the wrapper sets BLOCK_SIZE_K to its group_size (128)
        name = "batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant"
        return fit_to_kernel(config, name, f"_{name}_kernel")

    @staticmethod
    def launch(inputs: dict[str, Any], config: dict[str, Any]) -> Any:
        name = "batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant"
        op = getattr(aiter(f"gemm.batched.{name}"), name)
        i = inputs
        y = i["y"]
        return op(i["x"], i["w"], i["w_scale"], 128, i["bias"], y.dtype, YQ=y, config=dict(config))


class Bf16OwnLookup(Bf16):
    """Bf16 with AITER's own lookup, called in the worker, instead of harness's reading of AITER's files."""

    SPEC = replace(Bf16.SPEC, config=None, hooks=("lookup_config", "finalize_config"))

    @staticmethod
    def lookup_config(params: dict[str, Any], arch: str) -> tuple[dict[str, Any], str]:
        return own_lookup("batched_gemm_bf16", arch, params["M"], params["N"], params["K"], params["B"])

    @staticmethod
    def finalize_config(params: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
        # AITER's _get_config did the split-K step already
        return fit_to_kernel(config, "batched_gemm_bf16", "_batched_gemm_bf16_kernel")


class Bf16Decides(Bf16):
    """AITER's bf16 op as AITER's users call it: no config passed, so AITER's own lookup picks it (its files, its
    rule, its post-processing, on the GPU at hand; the suite's config arch where AITER has no files for it), and
    the results record what it returned; harness's reading of the same files stays as the preview, checked
    against it."""

    SPEC = replace(Bf16.SPEC, name="aiter_batched_gemm_bf16_decides", hooks=("finalize_config", "chosen_config"))
    picked: dict[str, Any] = {}

    @staticmethod
    def launch(inputs: dict[str, Any], config: dict[str, Any]) -> Any:
        mod = aiter("gemm.batched.batched_gemm_bf16")
        x = inputs["x"]
        # the op's two lookups: its Triton path's _get_config, its gluon path's get_gemm_config(backend="gluon")
        with (
            _as_arch(os.environ.get("AITER_CONFIG_ARCH", "gfx950")),
            returned(mod, "_get_config") as triton_path,
            returned(mod, "get_gemm_config", optional=True) as gluon_path,  # checkouts before gluon lack it
        ):
            y = mod.batched_gemm_bf16(x, inputs["w"], inputs["bias"], x.dtype, YQ=inputs["y"], config=None)
        if triton_path or gluon_path:
            backend = "triton" if triton_path else "gluon"
            Bf16Decides.picked = {"config": dict((triton_path or gluon_path)[-1][0]), "backend": backend}
        return y

    @staticmethod
    def chosen_config(params: dict[str, Any], inputs: dict[str, Any]) -> tuple[dict[str, Any], str] | None:
        got = Bf16Decides.picked
        if not got:
            return None
        return dict(got["config"]), f"AITER's batched_gemm_bf16 op, its {got['backend']} backend's lookup"


class _as_arch:
    """AITER's arch question answered ``arch`` while its op looks its config up, on a GPU it ships no files for
    (NVIDIA, the CPU); on AMD the op asks its own GPU."""

    def __init__(self, arch: str) -> None:
        self.arch, self.real = arch, None

    def __enter__(self) -> None:
        from kernels import common

        if common.backend() == "hip":
            return
        self.info = aiter("utils._triton.arch_info")
        self.real, self.info.get_arch = self.info.get_arch, lambda: self.arch
        utils = aiter("utils.gemm_config_utils")
        clear = getattr(getattr(utils, "_get_gemm_config_cached", None), "cache_clear", None)
        if clear is not None:
            clear()  # keyed by shape, not arch

    def __exit__(self, *exc: object) -> None:
        if self.real is not None:
            self.info.get_arch = self.real


class A8W8OwnLookup(A8W8):
    """A8W8 with AITER's own lookup, called in the worker, instead of harness's reading of AITER's files."""

    SPEC = replace(A8W8.SPEC, config=None, hooks=("lookup_config", "finalize_config"))

    @staticmethod
    def lookup_config(params: dict[str, Any], arch: str) -> tuple[dict[str, Any], str]:
        # AITER's a8w8 _get_config returns get_gemm_config's (config, is_tuned) as it is
        return own_lookup("batched_gemm_a8w8", arch, params["M"], params["N"], params["K"])

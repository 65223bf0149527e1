"""The kernel suite. Each kernel is a plain module with one small interface:

    NAME, CONFIG_NAME              registered name; config family for kernels/configs/{arch}-{CONFIG_NAME}*.json
    make_inputs(case, seed)        fresh random inputs (never zeros) and an output buffer ``y``
    launch(inputs, config) -> y    run the kernel(s) with a resolved config, write and return ``y``
    reference(inputs)              high-precision torch result
    tolerance(case)                relative Frobenius error allowed against the reference
    flops(case), bytes_moved(case)
    PARAMS, CONFIG_KEYS            optional: what it reads from a case ({name: "int"|"bool"|"str"|"float"}) and from
                                   a config besides the launch options; plain literals: the driver reads them (and
                                   checks suites and config files against them) without importing the kernel

A suite entry names its kernel by registered name or by ``path/to/file.py[:name]`` for a user's own kernel
(``:name`` picks an object in that file that has the interface; without it the module itself is the kernel).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

REGISTRY = {
    "batched_gemm_bf16": "kernels.batched_gemm_bf16",
    "batched_gemm_a8w8": "kernels.batched_gemm_a8w8",
    "batched_gemm_a16wfp4": "kernels.batched_gemm_a16wfp4",
    "batched_gemm_afp4wfp4": "kernels.batched_gemm_afp4wfp4",
    "batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant": "kernels.batched_gemm_a8w8_prequant",
}
INTERFACE = ("make_inputs", "launch", "reference", "tolerance", "flops", "bytes_moved")


class KernelLoadError(Exception):
    pass


def is_path_spec(spec: str) -> bool:
    return ".py" in spec or "/" in spec


def split_spec(spec: str) -> tuple[str, str]:
    """``file.py:name`` -> (``file.py``, ``name``); ``file.py`` -> (``file.py``, ``''``)."""
    return (spec.partition(":")[0], spec.partition(":")[2]) if ".py:" in spec else (spec, "")


def load(spec: str, base: Path | None = None) -> Any:
    """A registered kernel name, or ``file.py`` / ``file.py:name`` (relative to ``base``)."""
    if spec in REGISTRY:
        return importlib.import_module(REGISTRY[spec])
    if not is_path_spec(spec):
        raise KernelLoadError(
            f"unknown kernel {spec!r} (registered: {', '.join(REGISTRY)}; or give path/to/file.py[:name])"
        )
    file, attr = split_spec(spec)
    path = Path(file)
    if not path.is_absolute() and base is not None:
        path = base / path
    if not path.is_file():
        raise KernelLoadError(f"kernel file {path} not found")
    name = f"harness_user_kernel_{abs(hash(str(path.resolve())))}"
    mod = sys.modules.get(name)
    if mod is None:
        s = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(s)
        sys.modules[name] = mod
        s.loader.exec_module(mod)  # errors propagate: the worker reports them as this case's failure
    obj: ModuleType | Any = getattr(mod, attr) if attr else mod
    missing = [f for f in INTERFACE if not hasattr(obj, f)]
    if missing:
        raise KernelLoadError(f"{spec}: missing {', '.join(missing)} (see kernels/__init__.py for the interface)")
    return obj

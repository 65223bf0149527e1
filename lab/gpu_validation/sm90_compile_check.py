"""Compile every case of a suite for an H100 (sm90) on a machine without a GPU, before a device call is spent on it.

    python3 lab/gpu_validation/sm90_compile_check.py SUITE [--kernel K ...] [--filter RE]
    PYTHONPATH=/path/to/triton-3.6.0 python3 lab/gpu_validation/sm90_compile_check.py ...   # under another Triton

Each case goes the worker's way as far as the launch: its config resolved as on sm90 (or the suite's config_arch),
stripped of the launch options NVIDIA refuses, the kernel's ``finalize_config``, its inputs (on the CPU), then
its ``launch``, under a stand-in CUDA driver that answers ``sm90``: Triton binds the arguments, checks the launch
keywords (a key of ``**config`` that is neither a kernel argument nor a CUDA option is its KeyError), compiles
through ptxas (shipped in the Triton wheel) and stops where it would load the binary, checking the shared memory
against the H100's 227 KiB as Triton's loader does. So a case that passes here got as far as a GPU would take it
before running; what it computes, and how fast, only the GPU says. Nothing is timed or checked for correctness.

One line a case (``ok`` with each compiled kernel's shared memory, ``skipped`` with the kernel's reason, or the
error), then the counts; exit 1 when a case failed. Standard library plus what the kernels import (torch, Triton).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
#: an H100's (and H200's) shared memory a block may opt into: 227 KiB
SM90_MAX_SHARED = 232448


class _Compiled(list):
    """The kernels compiled by the current case's launch."""


def stand_in_driver(compiled: _Compiled, max_shared: int) -> None:
    """Make Triton compile for sm90 without a GPU: the active driver answers sm90, and a compiled kernel's handles
    are never loaded (its launch does nothing) after the shared-memory check that loading makes."""
    import torch
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import CompiledKernel
    from triton.runtime.errors import OutOfResources

    target = GPUTarget("cuda", 90, 32)

    class Driver:
        def get_current_target(self) -> Any:
            return target

        def get_current_device(self) -> int:
            return 0

        def get_current_stream(self, device: Any = None) -> int:
            return 0

        def set_current_device(self, device: Any) -> None:
            pass

        def get_device_interface(self) -> Any:
            return torch.cuda

        def get_active_torch_device(self) -> Any:
            return torch.device("cpu")

        def is_active(self) -> bool:
            return True

    def _init_handles(self: Any) -> None:
        if self._run is not None:
            return
        compiled.append((self.name, int(self.metadata.shared)))
        if self.metadata.shared > max_shared:
            raise OutOfResources(self.metadata.shared, max_shared, "shared memory")
        self._run = lambda *args, **kwargs: None

    triton.runtime.driver.set_active(Driver())
    CompiledKernel._init_handles = _init_handles  # noqa: SLF001 - the one step that needs the GPU


def _zeros_for_random() -> None:
    """Inputs of zeros instead of random values: nothing runs, so their values do not matter, and filling an
    8192 x 8192 x 16 operand with random numbers on the CPU takes longer than compiling its kernel."""
    import torch

    def randn(*size: Any, generator: Any = None, **kw: Any) -> Any:
        return torch.zeros(*size, **kw)

    def randint(*args: Any, size: Any = None, generator: Any = None, **kw: Any) -> Any:
        shape = size if size is not None else args[-1]
        return torch.zeros(shape, **{"dtype": torch.int64, **kw})

    torch.randn, torch.rand, torch.randint = randn, randn, randint


def check(suite: Path, kernels: list[str], pattern: str | None, config_arch: str | None) -> list[tuple[str, str, str]]:
    os.environ.pop("TRITON_INTERPRET", None)
    sys.path.insert(0, str(ROOT))
    import kernels.common as common

    common.INTERPRET = False
    common.device = lambda: "cpu"  # the kernels' inputs on the CPU: the launch never reaches a GPU
    common.backend = lambda: "cuda"
    common.arch = lambda: "sm90"
    _zeros_for_random()
    from harness.inputs.suite import as_config_arch, load_suite, select
    from harness.kernel_api import configs
    from harness.run.cases import worker_case
    from harness.worker.cases import load_kernel, resolve_config
    from harness.worker.errors import error_text
    from harness.worker.library import attach, library_roots

    compiled = _Compiled()
    stand_in_driver(compiled, SM90_MAX_SHARED)
    cases = as_config_arch(select(load_suite(suite), kernels or None, pattern), config_arch)
    out = []
    for case in cases:
        req = worker_case(case)
        name = f"{case.name}/{case.case_id}"
        path = req["source"].partition(".py:")[0]
        compiled.clear()
        t0 = time.monotonic()
        try:
            attach(req.get("library"))
            kernel = load_kernel(req["source"], str(ROOT))
            why = kernel.supported(req["params"]) if "supported" in req.get("hooks", ()) else None
            if why:
                out.append((name, "skipped", str(why)))
                continue
            if "lookup_config" in req.get("hooks", ()):  # the library's own lookup, as the worker calls it
                got = kernel.lookup_config(req["params"], req.get("config_arch") or "sm90")
                if got is None:
                    out.append((name, "skipped", "the kernel's lookup_config found no config"))
                    continue
                cfg, where = got if isinstance(got, tuple) else (got, "")
                cfg, source = {**cfg, **(req.get("overrides") or {})}, f"lookup_config: {where}"
            else:
                cfg, source, _ = resolve_config(req, "sm90", configs)
            cfg = configs.for_backend(cfg, "cuda", tuple(req.get("config_keys") or ()))
            if "finalize_config" in req.get("hooks", ()):
                cfg = dict(kernel.finalize_config(req["params"], dict(cfg)))
            kernel.launch(kernel.make_inputs(req["params"], int(req["params"].get("seed", 0))), cfg)
        except Exception as exc:  # noqa: BLE001 - every case's failure is reported, one line each
            text = error_text(exc, (path,), str(ROOT), library_roots(req)).splitlines()[0]
            out.append((name, "error", text))
            if os.environ.get("SM90_CHECK_TRACE"):
                traceback.print_exc()
            continue
        kernels_ = ", ".join(f"{k} ({s / 1024:.0f} KiB shared)" for k, s in dict(compiled).items())
        out.append(
            (name, "ok", f"{source}: {kernels_ or 'compiled earlier in this check'} [{time.monotonic() - t0:.1f} s]")
        )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("suite", type=Path)
    ap.add_argument("--kernel", action="append", default=[])
    ap.add_argument("--filter")
    ap.add_argument("--config-arch")
    a = ap.parse_args(argv)
    os.environ.pop("TRITON_INTERPRET", None)  # before Triton is imported: its kernels compile, never interpret
    import triton

    results = check(a.suite, a.kernel, a.filter, a.config_arch)
    for name, status, text in results:
        print(f"{status:7s} {name}: {text}")
    counts: dict[str, int] = {}
    for _, status, _ in results:
        counts[status] = counts.get(status, 0) + 1
    print(
        f"sm90 compile check, Triton {triton.__version__} ({Path(triton.__file__).parent}): {len(results)} cases, "
        + ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    )
    return 1 if counts.get("error") else 0


if __name__ == "__main__":
    raise SystemExit(main())

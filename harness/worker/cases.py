"""One case inside the worker: its kernel's code, its config, and the first launch checked against the reference.

A case arrives as the driver resolved it from the kernel's SPEC (harness/run/requests.py): ``source`` (where the
code is), ``params``, the config ``lookup`` (or a ``default_config``), the suite's ``overrides``, ``tolerance``,
``dtype`` and the ``hooks`` the kernel declares. Nothing here guesses at a kernel's interface.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from harness.worker.artifacts import capture_compiled, dump_compiled
from harness.worker.errors import error_text, import_failure, is_compile_error, output_problem
from harness.worker.library import library_roots


@dataclass
class Prepared:
    """A case ready to time: its kernel, inputs and config, and one estimate of its launch time."""

    kernel: Any
    inputs: dict[str, Any]
    config: dict[str, Any]
    est_us: float | None = None
    info: dict[str, Any] = field(default_factory=dict)


class CaseFailed(Exception):
    """A case that cannot go on, with the status and error the driver records."""

    def __init__(self, status: str, error: str):
        super().__init__(error)
        self.status, self.error = status, error


def source_file(source: str) -> tuple[str, str]:
    """``/a/b.py:name`` -> (``/a/b.py``, ``name``); ``/a/b.py`` -> (``/a/b.py``, ``''``)."""
    if ".py:" in source:
        head, _, attr = source.partition(".py:")
        return head + ".py", attr
    return source, ""


def load_kernel(source: str, repo: str) -> Any:
    """The kernel object at ``source``: a module of the repo's kernels/ by import (its imports of kernels.common
    and friends then resolve as usual), any other file by path; ``file.py:name`` is the object ``name`` in it."""
    path, attr = source_file(source)
    package = os.path.join(os.path.realpath(repo), "kernels")
    if os.path.dirname(os.path.realpath(path)) == package:
        mod = importlib.import_module("kernels." + os.path.basename(path)[:-3])
    else:
        mod = _import_path(os.path.realpath(path))
    return getattr(mod, attr) if attr else mod


def _import_path(path: str) -> Any:
    name = f"harness_user_kernel_{abs(hash(path))}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        del sys.modules[name]  # a fixed file is loaded afresh by the next case
        raise
    return mod


def resolve_config(case: dict[str, Any], arch: str, configs: Any) -> tuple[dict[str, Any], str, bool]:
    """(config, where it came from, tuned): the lookup's file and bucket under the suite's overrides, or the
    kernel's default config under them. The folders come with the case (the suite's, the library's, the SPEC's),
    harness's own last where the case allows it; a case's config arch, when set, replaces the worker's."""
    overrides = dict(case.get("overrides") or {})
    lookup = case.get("lookup")
    if not lookup:
        return {**(case.get("default_config") or {}), **overrides}, "suite" if overrides else "spec", False
    own = [configs.config_dir()] if lookup.get("harness_configs", True) else []
    bounds = lookup.get("bounds")
    looked_up_as = lookup.get("arch") or arch
    r = configs.resolve_in(
        [*lookup.get("folders", ()), *own],
        lookup["family"],
        looked_up_as,
        int(lookup["value"]),
        tuple(lookup.get("keys") or (lookup["key"],)),
        lookup["bucket"],
        lookup.get("layout", "harness"),
        tuple(bounds) if bounds else None,
        overrides or None,
        dict(map(tuple, lookup.get("backends") or ())).get(looked_up_as, ""),  # the op's backend on that arch
    )
    as_arch = f" (configs of {lookup['arch']})" if lookup.get("arch") and lookup["arch"] != arch else ""
    return r.config, r.source + as_arch, r.tuned


class CaseRun:
    """The steps of preparing one case, each raising CaseFailed with the status the driver records. Errors name
    the kernel's own file and line (``files``), also when the exception came out of Triton."""

    def __init__(self, case: dict[str, Any], kernel: Any, repo: str, torch: Any, common: Any):
        self.case, self.kernel, self.repo, self.torch, self.common = case, kernel, repo, torch, common
        self.files = (source_file(case["source"])[0],)
        self.roots = library_roots(case)

    def _error(self, exc: BaseException) -> str:
        return error_text(exc, self.files, self.repo, self.roots)

    def build(self) -> dict[str, Any]:
        """The case's inputs from ``make_inputs``, checked to hold an output tensor ``y``."""
        params = self.case["params"]
        try:
            inputs = self.kernel.make_inputs(params, int(params.get("seed", 0)))
        except Exception as exc:  # noqa: BLE001 - the kernel's own failure is this case's result
            raise CaseFailed("runtime_error", "make_inputs: " + self._error(exc)) from None
        bad = output_problem(inputs, self.torch)
        if bad:
            raise CaseFailed("runtime_error", f"make_inputs must return a dict with an output tensor 'y' ({bad})")
        return inputs

    def first_launch(self, inputs: dict[str, Any], config: dict[str, Any], artifacts: str, sync: Any) -> tuple:
        """Launch once on a poisoned output (this compiles): (the result, what to record: compile_s, artifacts)."""
        self.common.poison_(inputs["y"])
        out: dict[str, Any] = {}
        t0 = time.perf_counter()
        try:
            if artifacts:
                result, compiled = capture_compiled(lambda: self.kernel.launch(inputs, config))
            else:
                result, compiled = self.kernel.launch(inputs, config), []
            sync()
        except ImportError as exc:  # a library op imported at launch (the AITER adapter does) is missing
            raise CaseFailed("import_error", import_failure(exc, self._error(exc))) from None
        except Exception as exc:  # noqa: BLE001
            status = "compile_error" if is_compile_error(exc) else "runtime_error"
            raise CaseFailed(status, self._error(exc)) from None
        out["compile_s"] = time.perf_counter() - t0
        if artifacts:
            try:
                out["artifacts"] = [dump_compiled(c, artifacts, launch) for c, launch in compiled]
            except Exception as exc:  # noqa: BLE001 - never lose the measurement over a failed dump
                out["artifacts"], out["artifacts_error"] = [], error_text(exc)
        return result, out

    def check(self, inputs: dict[str, Any], result: Any) -> float:
        """The relative Frobenius error of ``result`` against the kernel's reference; CaseFailed when over the
        case's tolerance (NaN never is within it: an output element never written stays NaN)."""
        tol = float(self.case["tolerance"])
        try:
            err = self.common.rel_frobenius(result, self.kernel.reference(inputs))
        except Exception as exc:  # noqa: BLE001
            raise CaseFailed("runtime_error", "reference: " + self._error(exc)) from None
        if not err <= tol:
            unwritten = int(self.torch.isnan(result.float()).sum().item())
            extra = f"; {unwritten} output elements never written" if unwritten else ""
            raise CaseFailed("incorrect", f"relative Frobenius error {err:.3g} > tolerance {tol:g}{extra}")
        return err

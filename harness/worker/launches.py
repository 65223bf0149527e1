"""What a library's entry launched: every Triton kernel launch while it ran, with the constexpr arguments and launch
options it was given (its config, as the library chose it: a table, a heuristic, an autotuner's pick). Lets a kernel
whose ``launch`` calls a library's public function name ``chosen_config`` in its hooks without writing one: the
worker records the launches of the first call, where an autotuner benchmarks its configs and then runs its choice
last, and where a library that caches its compiled kernels (FlagGems' LibEntry, which later calls the compiled
kernel directly) still goes through Triton's JIT. Standard library and triton only."""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator
from typing import Any

#: launch options a config may carry beside the kernel's constexpr arguments
LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "waves_per_eu", "matrix_instr_nonkdim", "kpack")


@contextlib.contextmanager
def recorded(triton: Any) -> Iterator[list[tuple[str, dict[str, Any]]]]:
    """While inside, every launch of a ``@triton.jit`` function (compiled or interpreted) appends (its name, its
    config) to the yielded list, and runs as it would."""
    classes = [triton.runtime.jit.JITFunction]
    with contextlib.suppress(ImportError, AttributeError):
        from triton.runtime.interpreter import InterpretedFunction

        classes.append(InterpretedFunction)
    seen: list[tuple[str, dict[str, Any]]] = []
    real = {c: c.__dict__["run"] for c in classes if "run" in c.__dict__}

    def spy(original: Any) -> Any:
        def run(self: Any, *args: Any, grid: Any, warmup: Any, **kwargs: Any) -> Any:
            if not warmup:
                seen.append(launch_config(self, args, kwargs))
            return original(self, *args, grid=grid, warmup=warmup, **kwargs)

        return run

    for c, original in real.items():
        c.run = spy(original)
    try:
        yield seen
    finally:
        for c, original in real.items():
            c.run = original


def launch_config(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(the kernel's name, its constexpr arguments with plain values and its launch options) of one launch."""
    names = list(getattr(fn, "arg_names", ()))
    bound = {**dict(zip(names, args, strict=False)), **{k: v for k, v in kwargs.items() if k in names}}
    const = _constexpr_names(fn)
    cfg = {k: v for k, v in bound.items() if k in const and _plain(v)}
    cfg.update({k: kwargs[k] for k in LAUNCH_OPTIONS if k in kwargs and _plain(kwargs[k])})
    inner = getattr(fn, "fn", fn)
    return str(getattr(inner, "__name__", "kernel")), cfg


def _constexpr_names(fn: Any) -> set[str]:
    params = getattr(fn, "params", None)
    if params is not None:  # a compiled JITFunction knows its own
        return {p.name for p in params if getattr(p, "is_constexpr", False)}
    try:  # the interpreter's: by annotation
        sig = inspect.signature(getattr(fn, "fn", fn))
    except (TypeError, ValueError):
        return set()
    return {n for n, p in sig.parameters.items() if "constexpr" in str(p.annotation)}


def _plain(v: Any) -> bool:
    return v is None or isinstance(v, (bool, int, float, str))


def as_config(launches: list[tuple[str, dict[str, Any]]]) -> tuple[dict[str, Any], str] | None:
    """The config the launches ran, for the results: one kernel's as it is; several kernels' (a split-K GEMM and
    its reduction) keyed by kernel; and where it came from. None when nothing was launched."""
    if not launches:
        return None
    kernels = list(dict.fromkeys(name for name, _ in launches))
    last = {name: cfg for name, cfg in launches}  # each kernel's last launch: what the steady state runs
    if len(kernels) == 1:
        return dict(last[kernels[0]]), f"Triton launch of {kernels[0]}"
    return {k: last[k] for k in kernels}, f"Triton launches of {', '.join(kernels)}"

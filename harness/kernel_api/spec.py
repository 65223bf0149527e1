"""What a kernel is: the one declaration every kernel file makes, ``SPEC = KernelSpec(...)``.

Standard library only. The driver reads a kernel's SPEC without importing the kernel (harness/inputs/kernel.py
evaluates the assignment with no torch or triton in sight), so suites are checked on any machine; the worker gets
the same answers from the same object. A kernel file is then three functions beside its SPEC::

    make_inputs(params, seed) -> dict        fresh random inputs (never zeros) and the output buffer "y"
    launch(inputs, config) -> tensor         run the kernel(s) with a resolved config; write and return y
    reference(inputs) -> tensor              the same math in high precision (float64 or float32 torch)

and, when ``hooks`` names it, ``supported(params) -> str | None``: why this case cannot run on this stack
(e.g. ``tl.dot_scaled`` before Triton 3.9); the case is then ``skipped`` there, not failed;
``finalize_config(params, config) -> dict``: a library's post-processing of the config looked up; and
``lookup_config(params, arch) -> dict | (dict, str) | None``: the library's own lookup instead of a ConfigLookup
(called in the worker, where the library imports; ``arch`` the suite's config arch or the worker's own); and
``chosen_config(params, inputs) -> dict | (dict, str) | None``: what the library itself picked for this case,
asked after the first launch of a kernel whose ``launch`` lets the library decide (its users' entry, no config
passed); the results record it, and a ConfigLookup beside it becomes harness's preview, checked against it.
docs/writing-kernels.md walks through a complete kernel.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.kernel_api.layout import AITER_BOUNDS, LAYOUTS


class SpecError(ValueError):
    """A declaration or a case value that cannot be right; the message names what and where."""


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: a parameter without a default: every case must give it
REQUIRED: Any = _Required()
TYPES: dict[str, type] = {"int": int, "float": float, "str": str, "bool": bool}
#: the roof a kernel's speed is judged against: a matrix-unit rate per input type, or HBM bandwidth
PEAKS = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4", "memory")
#: optional functions a kernel file may define; the worker calls only those its SPEC names
HOOKS = ("supported", "finalize_config", "lookup_config", "chosen_config")
#: hooks a SPEC may name without defining: the worker has its own (chosen_config: the Triton launches it records)
OPTIONAL_HOOKS = ("chosen_config",)

#: every case has a seed for its random inputs (default 0); kernels need not declare it
SEED = "seed"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a YAML bool"
    names = {int: "an integer", float: "a number", str: "a string", type(None): "null"}
    return names.get(type(value), f"a {type(value).__name__}")


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass(frozen=True)
class Param:
    """One case parameter. ``id``: how the case id shows it (``{name}``, ``{value}``); a parameter at its default
    is left out of the id, so giving a kernel a new defaulted parameter keeps every existing case id."""

    name: str
    type: str = "int"
    default: Any = REQUIRED
    choices: tuple[Any, ...] = ()
    #: smallest allowed value (int and float parameters), e.g. 1 for a dimension
    min: float | None = None
    id: str = ""
    help: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _IDENT.match(self.name):
            raise SpecError(f"Param name {self.name!r}: expected an identifier")
        if self.type not in TYPES:
            raise SpecError(f"Param {self.name}: type {self.type!r} is not one of {', '.join(TYPES)}")
        if self.default is not REQUIRED:
            self.check(self.default, f"Param {self.name}: default")
        for c in self.choices:
            self.check(c, f"Param {self.name}: choices", choices=False)

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def check(self, value: Any, where: str, choices: bool = True) -> Any:
        """``value`` as this parameter's type: a bool is not an int, 16.0 is 16 but 16.7 is refused, "16" is a
        string; below ``min`` or outside ``choices`` is refused."""
        value = _typed(value, self.type, where)
        if self.min is not None and value < self.min:
            raise SpecError(f"{where}: must be >= {self.min:g}, got {value}")
        if choices and self.choices and value not in self.choices:
            allowed = ", ".join(str(c) for c in self.choices)
            raise SpecError(f"{where}: {_show(value)} is not one of {allowed}")
        return value

    def id_part(self, value: Any) -> str:
        """This parameter in a case id; '' where it adds nothing (at its default, a false bool, None)."""
        if value is None or value is False or (not self.required and value == self.default):
            return ""
        fmt = self.id or ("{name}" if self.type == "bool" else "{name}{value}")
        return fmt.format(name=self.name, value=value)


def _typed(value: Any, typ: str, where: str) -> Any:
    if typ == "int":
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise SpecError(f"{where}: expected an integer, got {_kind(value)}: {_show(value)}")
    elif typ == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise SpecError(f"{where}: expected a finite number, got {_kind(value)}: {_show(value)}")
    elif typ == "bool" and not isinstance(value, bool):
        raise SpecError(f"{where}: expected true or false, got {_kind(value)}: {_show(value)}")
    elif typ == "str" and not isinstance(value, str):
        raise SpecError(f"{where}: expected a string, got {_kind(value)}: {_show(value)}")
    return value


def dim(name: str, default: Any = REQUIRED, help: str = "") -> Param:
    """A size: a positive integer."""
    return Param(name, "int", default, min=1, help=help)


def dtype(choices: tuple[str, ...], default: Any = REQUIRED, name: str = "dtype") -> Param:
    """An element type named by its value in case ids (``..._fp16``)."""
    return Param(name, "str", default, choices=choices, id="{value}")


@dataclass(frozen=True)
class ConfigLookup:
    """How a case finds its config, AITER's rule: ``{arch}-{family}.json`` holds buckets ``{bucket}_LEQ_x`` (the
    first with value <= x, x ascending), ``{bucket}_GEQ_x`` (the first with value >= x, x descending) and ``any``;
    ``{arch}-{family}-N=512-K=128.json`` (the ``specialize`` parameters' values) replaces the default file for
    those values, never merged with it.

    ``layout="aiter"`` reads a library's folders as AITER's ``get_gemm_config`` does (harness/kernel_api/layout.py: the
    nested ``{arch}/triton/gemm/{family_lower}/DEFAULT.json`` before the flat ``gemm/{arch}-{family}.json``, keys
    that are not buckets skipped); ``batch`` names the parameter of AITER's batch-specialized files
    (``-B=4-N=..-K=..``, tried before ``-N=..-K=..``); ``bounds`` are the only bounds searched (the caller's list,
    as AITER's lookup takes it; empty: the file's own bounds, or AITER's standard list under its layout);
    ``folders`` are config folders relative to the kernel file, searched after the suite's; ``backends``: the
    backend the library's op names to its lookup on an arch (``(("gfx1250", "gluon"),)``: AITER's batched bf16
    op takes its gluon kernel there and asks for ``backend="gluon"``), none elsewhere."""

    family: str
    bucket: str = "M"
    specialize: tuple[str, ...] = ("N", "K")
    layout: str = "harness"
    batch: str = ""
    bounds: tuple[int, ...] = ()
    folders: tuple[str, ...] = ()
    backends: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if any(
            not (isinstance(b, tuple) and len(b) == 2 and all(isinstance(x, str) for x in b)) for b in self.backends
        ):
            raise SpecError(f"ConfigLookup backends {self.backends!r}: expected ((arch, backend), ...) pairs")
        if not isinstance(self.family, str) or not _NAME.match(self.family):
            raise SpecError(f"ConfigLookup family {self.family!r}: expected letters, digits, '_', '-' or '.'")
        if self.layout not in LAYOUTS:
            raise SpecError(f"ConfigLookup layout {self.layout!r}: expected one of {', '.join(LAYOUTS)}")
        b = self.bounds
        if any(isinstance(x, bool) or not isinstance(x, int) or x < 1 for x in b) or list(b) != sorted(set(b)):
            raise SpecError(f"ConfigLookup bounds {b!r}: expected strictly increasing positive integers")

    def backend_names(self) -> tuple[str, ...]:
        """Every backend the library's op names on some arch."""
        return tuple(sorted({b for _, b in self.backends}))

    def backend_on(self, arch: str) -> str:
        """The backend the library's op names on ``arch`` ('' where it names none)."""
        return dict(self.backends).get(arch, "")

    def file_key(self, params: Mapping[str, Any]) -> str:
        """``N=512-K=128``: the suffix of the per-shape file for these parameters ('' without specialize)."""
        return "-".join(f"{p}={params[p]}" for p in self.specialize)

    def file_keys(self, params: Mapping[str, Any]) -> tuple[str, ...]:
        """The per-shape suffixes tried in order: ``B=4-N=512-K=128`` (with ``batch``), then ``N=512-K=128``."""
        key = self.file_key(params)
        if not key:
            return ()
        return (f"{self.batch}={params[self.batch]}-{key}", key) if self.batch else (key,)

    def search_bounds(self) -> tuple[int, ...] | None:
        """The bounds the lookup searches; None: those the file uses."""
        if self.bounds:
            return self.bounds
        return AITER_BOUNDS if self.layout == "aiter" else None


@dataclass(frozen=True)
class Plot:
    """How the report draws this family: ``y`` against parameter ``x``, one line per value of ``series``."""

    x: str
    series: tuple[str, ...] = ()
    #: tflops, gbps or time_us; default: gbps for a memory-bound kernel, else tflops
    y: str = ""


Number = float
ParamsFn = Callable[[Mapping[str, Any]], Any]


@dataclass(frozen=True)
class KernelSpec:
    """Everything the harness knows about a kernel without running it.

    ``flops`` and ``bytes`` are functions of the case's parameters (the fewest bytes: each input read once, each
    output written once); ``peak`` (a PEAKS entry, or a function of the parameters) is the roof the report
    measures it against; ``dtype`` is the results' dtype column, a format over the parameters (``"{dtype}"``) or a
    fixed label (``"int8"``); ``tolerance`` is the relative Frobenius error allowed against ``reference``: a number,
    a mapping from the dtype label, or a function of the parameters. ``world_size`` is the number of GPUs a case
    needs: a number or the name of an int parameter.
    """

    name: str
    params: tuple[Param, ...]
    flops: ParamsFn
    bytes: ParamsFn
    peak: str | ParamsFn = "bf16"
    dtype: str = ""
    tolerance: float | Mapping[str, float] | ParamsFn = 1e-2
    config: ConfigLookup | None = None
    #: config keys the kernel reads besides the backends' launch options (num_warps, num_stages, ...)
    config_keys: tuple[str, ...] = ()
    #: the config of a kernel without config files, under the suite's overrides
    default_config: Mapping[str, Any] = field(default_factory=dict)
    world_size: int | str = 1
    #: why a combination of parameters cannot be a case (e.g. H not a multiple of GQA), or None: checked when a
    #: suite loads, so a bad combination is refused before anything runs
    check: ParamsFn | None = None
    hooks: tuple[str, ...] = ()
    plot: Plot | None = None
    description: str = ""
    link_bytes: ParamsFn | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise SpecError(f"KernelSpec name {self.name!r}: expected letters, digits, '_', '-' or '.'")
        names = [p.name for p in self.params]
        if any(not isinstance(p, Param) for p in self.params):
            raise SpecError(f"{self.name}: params must be Param(...) entries")
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup or SEED in names:
            raise SpecError(f"{self.name}: parameter {(dup or [SEED])[0]!r} declared twice (seed is implicit)")
        for fn in ("flops", "bytes"):
            if not callable(getattr(self, fn)):
                raise SpecError(f"{self.name}: {fn} must be a function of the parameters")
        for fn in ("check", "link_bytes"):
            if getattr(self, fn) is not None and not callable(getattr(self, fn)):
                raise SpecError(f"{self.name}: {fn} must be a function of the parameters")
        if isinstance(self.peak, str) and self.peak not in PEAKS:
            raise SpecError(f"{self.name}: peak {self.peak!r} is not one of {', '.join(PEAKS)}")
        for h in self.hooks:
            if h not in HOOKS:
                raise SpecError(f"{self.name}: unknown hook {h!r} (known: {', '.join(HOOKS)})")
        if "lookup_config" in self.hooks and self.config is not None:
            raise SpecError(f"{self.name}: config=ConfigLookup(...) and the hook lookup_config: name one lookup")
        self._check_references(names)

    def _check_references(self, names: list[str]) -> None:
        used = list(self.config.specialize) + [self.config.bucket] if self.config else []
        if self.config and self.config.batch:
            used.append(self.config.batch)
        if isinstance(self.world_size, str):
            used.append(self.world_size)
        elif isinstance(self.world_size, bool) or not isinstance(self.world_size, int) or self.world_size < 1:
            raise SpecError(f"{self.name}: world_size must be a positive integer or a parameter name")
        if self.plot:
            used += [self.plot.x, *self.plot.series]
        for n in used:
            if n not in names:
                raise SpecError(f"{self.name}: refers to parameter {n!r}, which it does not declare")

    # ------------------------------------------------------------------------------------------- cases
    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)

    def case_params(self, given: Mapping[str, Any], where: str) -> dict[str, Any]:
        """The full, checked parameters of a case: ``given`` typed and range-checked, defaults filled in, ``seed``
        added. Unknown or missing names are refused (SpecError naming ``where``)."""
        out: dict[str, Any] = {}
        for key in given:
            if key != SEED and self.param(key) is None:
                raise SpecError(f"{where}: {self.name} has no parameter {key!r}")
        for p in self.params:
            if p.name in given:
                out[p.name] = p.check(given[p.name], f"{where}: {p.name}")
            elif p.required:
                raise SpecError(f"{where}: missing {p.name!r} (a required parameter of {self.name})")
            else:
                out[p.name] = p.default
        seed = Param(SEED, "int", 0, min=0)
        out[SEED] = seed.check(given.get(SEED, 0), f"{where}: {SEED}")
        why = self.check(out) if self.check is not None else None
        if why:
            raise SpecError(f"{where}: {why}")
        return out

    def case_id(self, params: Mapping[str, Any], config: Mapping[str, Any] | None = None) -> str:
        """``B128_M16_N512_K128_fp16_seed3_cfg-BM64-w4``: the declared parameters in order (those at their
        default left out), the seed unless 0, then the suite's config overrides (config_label)."""
        parts = [p.id_part(params[p.name]) for p in self.params if p.name in params]
        if params.get(SEED):
            parts.append(f"{SEED}{params[SEED]}")
        if config:
            parts.append("cfg-" + config_label(config, "-"))
        return re.sub(r"[^A-Za-z0-9_.=+-]", "", "_".join(p for p in parts if p))

    def flops_of(self, params: Mapping[str, Any]) -> float:
        return _number(self.flops(params), self.name, "flops")

    def bytes_of(self, params: Mapping[str, Any]) -> float:
        return _number(self.bytes(params), self.name, "bytes")

    def link_bytes_of(self, params: Mapping[str, Any]) -> float | None:
        """What one rank sends over the GPU links; None for a kernel that does not say."""
        return None if self.link_bytes is None else _number(self.link_bytes(params), self.name, "link_bytes")

    def peak_of(self, params: Mapping[str, Any]) -> str:
        peak = self.peak(params) if callable(self.peak) else self.peak
        if peak not in PEAKS:
            raise SpecError(f"{self.name}: peak {peak!r} is not one of {', '.join(PEAKS)}")
        return peak

    def dtype_of(self, params: Mapping[str, Any]) -> str:
        return self.dtype.format(**params)

    def tolerance_of(self, params: Mapping[str, Any]) -> float:
        tol = self.tolerance
        if callable(tol):
            tol = tol(params)
        elif isinstance(tol, Mapping):
            label = self.dtype_of(params)
            if label not in tol:
                raise SpecError(f"{self.name}: tolerance has no entry for dtype {label!r}")
            tol = tol[label]
        return _number(tol, self.name, "tolerance")

    def world_size_of(self, params: Mapping[str, Any]) -> int:
        return int(params[self.world_size]) if isinstance(self.world_size, str) else int(self.world_size)

    def summary(self) -> dict[str, Any]:
        """What results files record about this kernel (its sidecar's ``kernels`` entry): enough for every later
        stage to show and plot its cases without the kernel file."""
        return {
            "params": [{"name": p.name, "type": p.type} for p in self.params],
            "peak": self.peak if isinstance(self.peak, str) else "by case",
            "dtype": self.dtype,
            "config_family": self.config.family if self.config else None,
            "world_size": self.world_size,
            "plot": {"x": self.plot.x, "series": list(self.plot.series), "y": self.plot.y} if self.plot else None,
            "description": self.description,
        }


def _number(value: Any, name: str, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise SpecError(f"{name}: {what} must be a finite number >= 0, got {_show(value)}")
    return float(value)


#: short names of common config keys, for case ids and plot legends (one copy: suite, report, terminal)
CONFIG_ABBREVIATIONS = {
    "BLOCK_SIZE_M": "BM",
    "BLOCK_SIZE_N": "BN",
    "BLOCK_SIZE_K": "BK",
    "GROUP_SIZE_M": "GM",
    "NUM_KSPLIT": "KS",
    "num_warps": "w",
    "num_stages": "s",
    "waves_per_eu": "wpe",
    "matrix_instr_nonkdim": "nk",
}


def config_label(config: Mapping[str, Any], sep: str = " ") -> str:
    """``BM64 BN128 w4``: a config in short form, keys sorted."""
    return sep.join(f"{CONFIG_ABBREVIATIONS.get(k, k)}{v}" for k, v in sorted(config.items()))

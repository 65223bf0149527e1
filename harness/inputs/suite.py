"""Suites as data: a YAML file of entries that expand into cases, checked against what each kernel declares.

    name: ci
    defaults: {dtype: fp16}
    entries:
      - kernel: [batched_gemm_bf16, path/to/my_kernel.py]   # registered names or user files (or one of them)
        B: 2
        zip:                          # points whose fields vary together: here two (N, K) shapes
          - {N: 32, K: 64}
          - {N: 48, K: 96}
        M: [16, 40]                   # a list expands: the product over every listed field and the zip points
        # zip: shapes.csv             # or the points from a CSV (header: parameter names) or JSON file
        config: {BLOCK_SIZE_M: [32, 64], num_warps: [4, 8]}   # overrides of the config files; lists sweep

Every field is a parameter the kernel declares (harness/kernel_api/spec.py), typed and range-checked, its default
filled in when the suite gives none; anything unknown, missing or mistyped is one line naming the file, the entry and the
key, before anything runs (docs/suites-and-kernels.md).
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from harness.errors import HarnessError, did_you_mean, unknown_key
from harness.inputs.kernel import KERNELS_DIR, Kernel, load_kernel
from harness.inputs.library import Library, Settings, settings
from harness.inputs.shapes import zip_file
from harness.kernel_api import spec as S
from harness.kernel_api.configs import (
    LAUNCH_OPTION_KEYS,
    ConfigError,
    bad_config_values,
    config_dir,
    config_value_problem,
    unknown_config_keys,
)
from harness.kernel_api.layout import file_arch, is_family_file

TOP_KEYS = ("name", "include", "defaults", "entries", "configs", "config_arch", "library")
#: entry keys that are not parameters
RESERVED = ("kernel", "zip", "config")


@dataclass(frozen=True)
class Case:
    """One case: a kernel, its full parameters, the suite's config overrides, and what follows from its SPEC."""

    kernel: Kernel
    params: dict[str, Any]
    overrides: dict[str, Any] = field(default_factory=dict)
    #: config folders of this case, in the order searched: its suite's (``configs:``, then its library's), then
    #: its SPEC's (``ConfigLookup.folders``, relative to the kernel file); harness's own folder after them only
    #: for harness's shipped kernels or a kernel that names none (``harness_configs``)
    folders: tuple[str, ...] = ()
    #: resolve configs as on this arch ('' : the worker's own); the suite's ``config_arch`` or --config-arch
    config_arch: str = ""
    library: Library | None = None

    @property
    def name(self) -> str:
        return self.kernel.name

    @property
    def harness_configs(self) -> bool:
        """Whether harness's own kernels/configs/ is searched (last): for its shipped kernels, and for a user's
        kernel that names no folder, but never for one that does (its family names may be harness's too)."""
        return self.kernel.file.parent == KERNELS_DIR or not self.folders

    @property
    def spec(self) -> S.KernelSpec:
        return self.kernel.spec

    @property
    def case_id(self) -> str:
        return self.spec.case_id(self.params, self.overrides)

    @property
    def key(self) -> str:
        """``kernel/case_id``: what --filter matches and what identifies the case in a run."""
        return f"{self.name}/{self.case_id}"

    def params_json(self) -> str:
        """The parameters as the results' ``params`` column holds them (compact, keys sorted)."""
        return json.dumps(self.params, sort_keys=True, separators=(",", ":"))


def _values(v: Any, where: str) -> list[Any]:
    """A field's values: a list expands into cases; an empty one would silently make none."""
    vals = list(v) if isinstance(v, (list, tuple)) else [v]
    if not vals:
        raise HarnessError(f"{where}: an empty list makes no cases")
    return vals


def _mapping(v: Any, where: str, what: str) -> dict[str, Any]:
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise HarnessError(f"{where}: expected a mapping of {what}, got {type(v).__name__}")
    for key in v:
        if not isinstance(key, str):
            raise HarnessError(f"{where}: {key!r}: a name must be a string")
    return v


def _plain(value: Any, where: str) -> Any:
    if not isinstance(value, (bool, int, float, str, type(None))):
        raise HarnessError(f"{where}: expected a plain value, got a {type(value).__name__}: {str(value)[:60]}")
    return value


def _param_names(k: Kernel) -> tuple[str, ...]:
    return (*(p.name for p in k.spec.params), S.SEED)


def _config_keys(k: Kernel) -> tuple[str, ...]:
    return (*k.spec.config_keys, *LAUNCH_OPTION_KEYS)


def _read_by_all(key: str, kernels: list[Kernel], known: Callable[[Kernel], tuple[str, ...]], where: str, what: str):
    """Refuse ``key`` unless every kernel of the entry reads it: a key one kernel ignores would run its default
    while the results show the key as applied."""
    lacking = [k for k in kernels if key not in known(k)]
    if not lacking:
        return
    if len(lacking) == len(kernels):
        raise unknown_key(where, key, {n for k in kernels for n in known(k)}, what)
    k = lacking[0]
    raise HarnessError(f"{where}: {k.name} does not read {what} {key!r} (it reads: {', '.join(known(k))})")


def _read_columns(points: list[Any], kernels: list[Kernel], where: str) -> list[Any]:
    """A shapes file's points without the columns no kernel of the entry reads (a model's name, a layer, a
    count: the file stays as the team keeps it). A column that looks like a parameter's misspelling is refused,
    as any unknown key: dropping it would run the parameter's default."""
    import difflib

    if not points or not all(isinstance(p, dict) for p in points):
        return points  # _zip_points names what is wrong
    read = {n for k in kernels for n in _param_names(k)}
    extra = [c for c in points[0] if c not in read]
    for c in extra:
        if c.lower() in {n.lower() for n in read} or difflib.get_close_matches(c, sorted(read), n=1, cutoff=0.8):
            raise unknown_key(where, c, read, "parameter")
    return [{k: v for k, v in p.items() if k not in extra} for p in points]


def _kernels(value: Any, where: str, base: Path, cache: dict[str, Kernel]) -> list[Kernel]:
    out = []
    for text in _values(value, f"{where}: kernel"):
        if not isinstance(text, str) or not text:
            raise HarnessError(f"{where}: kernel: expected a kernel name or path/to/file.py[:name], got {text!r}")
        if text not in cache:
            try:
                cache[text] = load_kernel(text, base)
            except HarnessError as err:
                raise HarnessError(f"{where}: {err}") from None
        out.append(cache[text])
    return out


def _zip_points(value: Any, where: str) -> list[dict[str, Any]]:
    """The points of a ``zip:`` group: mappings with the same fields, each a set of values that go together."""
    if not isinstance(value, list) or not value:
        raise HarnessError(f"{where}: zip: expected a list of points such as {{N: 512, K: 128}}")
    points = [_mapping(p, f"{where}: zip[{i}]", "fields to values") for i, p in enumerate(value)]
    for i, p in enumerate(points):
        if not p:
            raise HarnessError(f"{where}: zip[{i}]: an empty point")
        if set(p) != set(points[0]):
            raise HarnessError(f"{where}: zip[{i}]: fields {sorted(p)} differ from zip[0]'s {sorted(points[0])}")
        for k, v in p.items():
            if isinstance(v, (list, dict)):
                raise HarnessError(f"{where}: zip[{i}]: {k}: a point holds one value, got {v!r}")
    return points


def _config_grid(cfg: Any, kernels: list[Kernel], where: str) -> list[dict[str, Any]]:
    cfg = _mapping(cfg, where, "config keys to values")
    for key in cfg:
        _read_by_all(key, kernels, _config_keys, where, "config key")
    keys = sorted(cfg)
    vals = [[_config_value(f"{where}: {k}", k, v) for v in _values(cfg[k], f"{where}: {k}")] for k in keys]
    return [dict(zip(keys, combo)) for combo in itertools.product(*vals)]


def _config_value(where: str, key: str, value: Any) -> Any:
    value = _plain(value, where)
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # as for parameters: 16.0 is 16
    why = config_value_problem(key, value)
    if why:
        raise HarnessError(f"{where}: {why}")
    return value


@dataclass
class _Entry:
    """An entry with the defaults under it: where each field came from, for messages."""

    fields: dict[str, Any]
    origin: dict[str, str]
    points: list[dict[str, Any]]


def _merge(entry: dict[str, Any], defaults: dict[str, Any], where: str, kernels: list[Kernel]) -> _Entry:
    """The entry's fields over the defaults (those of its kernels' parameters only); a zip field overrides both."""
    points = _zip_points(entry["zip"], where) if "zip" in entry else [{}]
    zipped = set(points[0])
    for key in zipped & set(entry):
        raise HarnessError(f"{where}: {key!r} is given both in zip and as a field")
    names = {n for k in kernels for n in _param_names(k)}
    fields, origin = {}, {}
    for key, value in defaults.items():
        if key not in RESERVED and key in names and key not in zipped:
            fields[key], origin[key] = value, f"{where} (from defaults)"
    for key, value in entry.items():
        if key not in RESERVED:
            fields[key], origin[key] = value, where
    if "config" in entry or "config" in defaults:
        fields["config"] = entry.get("config", defaults.get("config"))
        origin["config"] = where if "config" in entry else f"{where} (from defaults)"
    return _Entry(fields, origin, points)


def expand_entry(entry: Any, defaults: dict[str, Any], where: str, base: Path, cache: dict[str, Kernel]) -> list[Case]:
    """The cases of one entry, every field and config key checked against what its kernels declare."""
    if not isinstance(entry, dict):
        raise HarnessError(f"{where}: expected a mapping with a kernel and its parameters")
    entry = _mapping(entry, where, "fields")
    if "NK" in entry or "NK" in defaults:
        raise HarnessError(f"{where}: NK was replaced by zip: write zip: [{{N: 512, K: 128}}, ...]")
    if "kernel" not in entry and "kernel" not in defaults:
        raise HarnessError(f"{where}: missing 'kernel'")
    kernels = _kernels(entry.get("kernel", defaults.get("kernel")), where, base, cache)
    if isinstance(entry.get("zip"), str):  # zip: shapes.csv
        entry = {**entry, "zip": _read_columns(zip_file(entry["zip"], where, base), kernels, f"{where}: zip")}
    for key in entry:
        if key not in RESERVED:
            _read_by_all(key, kernels, _param_names, where, "parameter")
    first = entry["zip"][0] if isinstance(entry.get("zip"), list) and entry["zip"] else None
    for key in first if isinstance(first, dict) else ():  # a point that is no mapping: _zip_points names it
        _read_by_all(key, kernels, _param_names, f"{where}: zip", "parameter")
    e = _merge(entry, defaults, where, kernels)
    cfg_grid = _config_grid(e.fields.pop("config", None), kernels, f"{e.origin.get('config', where)}: config")
    cases = []
    for k in kernels:
        cases += _kernel_cases(k, e, cfg_grid, where)
    return cases


def _kernel_cases(k: Kernel, e: _Entry, cfg_grid: list[dict[str, Any]], where: str) -> list[Case]:
    names = _param_names(k)
    mine = {f: v for f, v in e.fields.items() if f in names}
    keys = sorted(mine)
    lists = [[_typed(k, f, v, f"{e.origin[f]}: {f}") for v in _values(mine[f], f"{e.origin[f]}: {f}")] for f in keys]
    points = [{f: _typed(k, f, v, f"{where}: zip[{i}]: {f}") for f, v in p.items()} for i, p in enumerate(e.points)]
    cases = []
    for point, combo, cfg in itertools.product(points, itertools.product(*lists), cfg_grid):
        given = {**dict(zip(keys, combo)), **point}
        try:
            case = Case(k, k.spec.case_params(given, f"{where} ({k.name})"), cfg)
            _evaluate(case)
        except S.SpecError as err:
            raise HarnessError(str(err)) from None
        cases.append(case)
    return cases


def _typed(k: Kernel, name: str, value: Any, where: str) -> Any:
    """One value of parameter ``name`` as kernel ``k`` declares it, or a one-line error naming ``where``."""
    param = k.spec.param(name) or S.Param(S.SEED, "int", 0, min=0)
    try:
        return param.check(_plain(value, where), where)
    except S.SpecError as err:
        raise HarnessError(str(err)) from None


def _evaluate(case: Case) -> None:
    """Everything the SPEC derives from a case, computed once here so that a broken formula is a load error."""
    s, p = case.spec, case.params
    try:
        s.flops_of(p), s.bytes_of(p), s.peak_of(p), s.dtype_of(p), s.tolerance_of(p), s.world_size_of(p)
    except (S.SpecError, HarnessError):
        raise
    except Exception as err:  # noqa: BLE001 - a user's formula failing on these parameters
        raise S.SpecError(f"{case.name} {case.case_id}: its SPEC fails on these parameters: {err!r}") from None


def check_config_files(cases: list[Case], directory: Path | None = None) -> None:
    """Refuse a config file of a suite's kernel with a key the kernel never reads or a value it cannot mean, in
    every folder the kernel's cases search: every arch's (a typo in the gfx950 file is a typo on an sm90 machine
    too), or only the pinned ``config_arch``'s where the cases are resolved as one arch (a library's files for
    another arch may hold keys of another backend of its own: AITER's gfx1250 files, its gluon kernel's)."""
    seen: set[tuple[str, tuple[str, ...], str]] = set()
    for c in cases:
        lookup = c.spec.config
        folders = search_folders(c, directory)
        if lookup is None or (c.kernel.source, folders, c.config_arch) in seen:
            continue
        seen.add((c.kernel.source, folders, c.config_arch))
        for d in folders:
            for f in config_files(lookup.family, Path(d), lookup.layout, lookup.backend_names()):
                if c.config_arch and file_arch(lookup.layout, f.relative_to(d).parts) != c.config_arch:
                    continue
                _check_file(f, c.kernel, lookup.layout)


def _check_file(f: Path, k: Kernel, layout: str) -> None:
    try:
        bad = unknown_config_keys(f, k.spec.config_keys, layout)
        values = bad_config_values(f, layout)
    except ConfigError as err:
        raise HarnessError(str(err)) from None
    if values:
        raise HarnessError(f"{f}: {values[0][0]}: {values[0][1]}: {values[0][2]}")
    if bad:
        bucket, key = bad[0]
        raise unknown_key(f"{f}: {bucket}", key, _config_keys(k), f"config key (of {k.name})")


def search_folders(case: Case, directory: Path | None = None) -> tuple[str, ...]:
    """The config folders a case searches, in order, harness's own last where it applies (as the driver sees it:
    ``directory``, else $HARNESS_CONFIG_DIR, else kernels/configs/)."""
    return (*case.folders, *((str(config_dir(directory)),) if case.harness_configs else ()))


def config_files(family: str, directory: Path, layout: str = "harness", backends: tuple[str, ...] = ()) -> list[Path]:
    """Every arch's config files of one family in a folder, as ``layout`` names them (harness/kernel_api/layout.py;
    ``backends``: the legacy per-backend folders the op's lookup can reach)."""
    found = directory.glob("*.json") if layout == "harness" else directory.rglob("*.json")
    return sorted(f for f in found if is_family_file(layout, family, f.relative_to(directory).parts, backends))


def _read_yaml(p: Path) -> Any:
    if not p.is_file():
        raise HarnessError(f"{p}: no such suite file")
    try:
        return yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f"line {mark.line + 1}: " if mark else ""
        problem = " ".join(str(getattr(err, "problem", None) or err).split())
        raise HarnessError(f"{p}: {line}not valid YAML: {problem}") from None
    except (OSError, UnicodeDecodeError) as err:
        raise HarnessError(f"{p}: cannot read suite: {err}") from None


def _check_top(data: Any, p: Path) -> dict[str, Any]:
    has_include = isinstance(data, dict) and "include" in data
    if not isinstance(data, dict) or not isinstance(data.get("entries", [] if has_include else None), list):
        raise HarnessError(f"{p}: expected a mapping with an 'entries' list")
    for key in data:
        if key not in TOP_KEYS:
            raise unknown_key(str(p), key, TOP_KEYS)
    if not isinstance(data.get("name", ""), str):
        raise HarnessError(f"{p}: name: expected a string, got {data['name']!r}")
    if not data.get("entries") and not has_include:
        raise HarnessError(f"{p}: entries: empty (no cases)")
    return _mapping(data.get("defaults"), f"{p}: defaults", "fields to values")


def _included(data: dict[str, Any], p: Path, seen: tuple[Path, ...]) -> list[Case]:
    """The cases of the suites an ``include:`` list names (paths relative to this suite), in order."""
    names = data.get("include", [])
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
        raise HarnessError(f"{p}: include: expected a list of suite files")
    cases: list[Case] = []
    for name in names:
        q = (p.parent / name).resolve()
        if q in seen:
            raise HarnessError(f"{p}: include: {name} includes itself")
        cases += _load(q, (*seen, q))
    return cases


def _check_defaults(defaults: dict[str, Any], kernels: list[Kernel], where: str) -> None:
    """Defaults apply to every entry, so a default need only be read by some kernel of the suite."""
    names = {n for k in kernels for n in _param_names(k)}
    for key in defaults:
        if key not in RESERVED and key not in names:
            raise unknown_key(where, key, names, "parameter")
    cfg = defaults.get("config")
    for key in cfg if isinstance(cfg, dict) else ():
        if all(key not in _config_keys(k) for k in kernels):
            raise unknown_key(f"{where}: config", key, {n for k in kernels for n in _config_keys(k)}, "config key")


def load_suite(path: str | Path) -> list[Case]:
    """The cases of a suite file, after checking everything in it (and its kernels' config files) against what
    the kernels declare: anything wrong is a HarnessError naming the file, entry and key, before anything runs."""
    p = Path(path)
    cases = _load(p, (p.resolve(),))
    kernels = list({c.kernel.source: c.kernel for c in cases}.values())
    check_config_files(cases)
    _check_unique(cases, kernels, p)
    _check_libraries(cases, p)
    return cases


def _check_libraries(cases: list[Case], p: Path) -> None:
    """One checkout per package in a run: a worker imports a package once."""
    paths: dict[str, str] = {}
    for c in cases:
        if c.library is not None and paths.setdefault(c.library.package, c.library.path) != c.library.path:
            other = paths[c.library.package]
            raise HarnessError(f"{p}: library {c.library.package!r} from two checkouts: {other} and {c.library.path}")


def _load(p: Path, seen: tuple[Path, ...]) -> list[Case]:
    data = _read_yaml(p)
    defaults = _check_top(data, p)
    cases = _included(data, p, seen) if "include" in data else []
    base = p.resolve().parent
    cache: dict[str, Kernel] = {}
    if "kernel" in defaults:
        _kernels(defaults["kernel"], f"{p}: defaults", base, cache)
    own: list[Case] = []
    for i, entry in enumerate(data.get("entries") or []):
        own += expand_entry(entry, defaults, f"{p}: entries[{i}]", base, cache)
    _check_defaults(defaults, list({k.source: k for k in cache.values()}.values()), f"{p}: defaults")
    st = settings(data, p)
    return cases + [_settled(c, st) for c in own]


def _settled(case: Case, st: Settings) -> Case:
    """A case of this suite file with its settings: the suite's config folders, then the SPEC's (relative to
    the kernel file), the config arch, the library."""
    lookup = case.spec.config
    spec_folders = tuple(str((case.kernel.file.parent / f).resolve()) for f in (lookup.folders if lookup else ()))
    return replace(case, folders=(*st.folders, *spec_folders), config_arch=st.config_arch, library=st.library)


def _check_unique(cases: list[Case], kernels: list[Kernel], p: Path) -> None:
    """One kernel per name, one case per (kernel, case id)."""
    by_name: dict[str, Kernel] = {}
    for k in kernels:
        other = by_name.setdefault(k.name, k)
        if other.source != k.source:
            raise HarnessError(f"{p}: two kernels are named {k.name!r}: {other.source} and {k.source}")
    seen: set[str] = set()
    for c in cases:
        if c.key in seen:
            raise HarnessError(f"{p}: case {c.name} {c.case_id} appears twice")
        seen.add(c.key)


def as_config_arch(cases: list[Case], arch: str | None) -> list[Case]:
    """The cases with their configs resolved as on ``arch`` (--config-arch; None: as the suite says)."""
    if arch is None:
        return cases
    if not re.match(r"^[A-Za-z0-9_]+$", arch):
        raise HarnessError(f"--config-arch: expected an arch name such as gfx950 or sm90, got {arch!r}")
    return [replace(c, config_arch=arch) for c in cases]


def select(cases: list[Case], kernels: list[str] | None = None, pattern: str | None = None) -> list[Case]:
    """``--kernel`` (exact names) and ``--filter`` (a regex over 'kernel/case_id')."""
    out = cases
    if kernels:
        names = list(dict.fromkeys(c.name for c in cases))
        for k in kernels:
            if k not in names:
                hint = did_you_mean(k, names) or f" (the suite's kernels: {', '.join(names)})"
                raise HarnessError(f"--kernel {k!r}: no such kernel in the suite{hint}")
        out = [c for c in out if c.name in kernels]
    if pattern:
        try:
            rx = re.compile(pattern)
        except re.error as err:
            raise HarnessError(f"--filter: not a valid regular expression: {err}") from None
        out = [c for c in out if rx.search(c.key)]
    return out

"""Suites as data: a YAML file of entries that expand into cases (the Cartesian product of list-valued fields).

    name: ci
    defaults: {dtype: fp16, bias: false}
    entries:
      - kernel: [batched_gemm_bf16, path/to/my_kernel.py:kernel]   # registered name or a user file
        B: 2
        NK: [[32, 64], [48, 96]]        # (N, K) pairs; or N: [...] and K: [...] for their product
        M: [16, 40]
        config: {BLOCK_SIZE_M: [32, 64], num_warps: [4, 8]}   # optional overrides; lists make a config sweep

A case is a plain dict: kernel, case_id, B, M, N, K, dtype, plus any other field (bias, out_dtype, seed, ...).
Everything is checked when the suite loads, against what each kernel declares (harness/kernelspec.py): unknown
keys, fields and config keys (also in the kernels' config files), types, kernel names and files
(docs/suites-and-kernels.md).
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from harness.errors import HarnessError, did_you_mean, unknown_key
from harness.kernelspec import KernelSpec, check_value, load_kernel_spec
from kernels import is_path_spec
from kernels._config import (
    CONFIG_DIR,
    LAUNCH_OPTION_KEYS,
    ConfigError,
    bad_config_values,
    config_value_problem,
    unknown_config_keys,
)

SHAPE = ("B", "M", "N", "K")
TOP_KEYS = ("name", "defaults", "entries")
#: entry keys that are not case fields; everything else in an entry is a field some kernel of it must read
RESERVED = ("kernel", "NK", "config")


def _as_list(v: Any) -> list[Any]:
    return list(v) if isinstance(v, (list, tuple)) else [v]


def _short(k: str) -> str:
    return {
        "BLOCK_SIZE_M": "BM",
        "BLOCK_SIZE_N": "BN",
        "BLOCK_SIZE_K": "BK",
        "GROUP_SIZE_M": "GM",
        "num_warps": "w",
        "num_stages": "s",
        "NUM_KSPLIT": "KS",
        "waves_per_eu": "wpe",
        "matrix_instr_nonkdim": "nk",
    }.get(k, k)


def case_id(case: dict[str, Any]) -> str:
    parts = [f"B{case['B']}_M{case['M']}_N{case['N']}_K{case['K']}", str(case.get("dtype", ""))]
    for k in sorted(case):
        if k in SHAPE or k in ("kernel", "dtype", "config", "base", "case_id") or case[k] in (False, None):
            continue
        parts.append(k if case[k] is True else f"{k}{case[k]}")
    if case.get("config"):
        parts.append("cfg-" + "-".join(f"{_short(k)}{v}" for k, v in sorted(case["config"].items())))
    return re.sub(r"[^A-Za-z0-9_.=+-]", "", "_".join(p for p in parts if p))


def _values(v: Any, where: str) -> list[Any]:
    """A field's values: a list expands into cases; an empty one would silently make none."""
    vals = _as_list(v)
    if not vals:
        raise HarnessError(f"{where}: an empty list makes no cases")
    return vals


def _mapping(v: Any, where: str, what: str) -> dict[Any, Any]:
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise HarnessError(f"{where}: expected a mapping of {what}, got {type(v).__name__}")
    for key in v:
        if not isinstance(key, str):
            raise HarnessError(f"{where}: {key!r}: a name must be a string")
    return v


def _unread(key: Any, kernels: list[KernelSpec], known: Callable[[KernelSpec], Any], where: str, what: str) -> None:
    """Refuse ``key`` unless every kernel that declares what it reads reads it (a kernel declaring nothing takes
    anything): a key no kernel reads would run the default while the results show it as applied."""
    declared = [ks for ks in kernels if known(ks) is not None]
    lacking = [ks for ks in declared if key not in known(ks)]
    if not lacking:
        return
    if len(lacking) == len(kernels):
        every = sorted({str(k) for ks in kernels for k in known(ks)})
        raise unknown_key(where, key, every, what)
    ks = lacking[0]
    reads = ", ".join(k for k in known(ks) if k not in RESERVED)
    raise HarnessError(f"{where}: {ks.spec} does not read {what} {key!r} (it reads: {reads})")


def _fields(ks: KernelSpec) -> tuple[str, ...] | None:
    return None if ks.params is None else (*ks.fields(), *RESERVED)


def _config_keys(ks: KernelSpec) -> tuple[str, ...] | None:
    return None if ks.config_keys is None else (*ks.config_keys, *LAUNCH_OPTION_KEYS)


def _kernels(value: Any, where: str, base: Path, cache: dict[str, KernelSpec]) -> list[KernelSpec]:
    out = []
    for spec in _values(value, f"{where}: kernel"):
        if not isinstance(spec, str) or not spec:
            raise HarnessError(f"{where}: kernel: expected a kernel name or path/to/file.py[:name], got {spec!r}")
        if spec not in cache:
            try:
                cache[spec] = load_kernel_spec(spec, base)
            except HarnessError as err:
                raise HarnessError(f"{where}: {err}") from None
        out.append(cache[spec])
    return out


def _merge(entry: dict[Any, Any], defaults: dict[Any, Any], where: str) -> dict[Any, Any]:
    """The entry over the defaults; an entry's NK replaces the defaults' N and K and vice versa."""
    if "NK" in entry and ("N" in entry or "K" in entry):
        raise HarnessError(f"{where}: give NK pairs or N and K, not both")
    if "NK" in entry:
        defaults = {k: v for k, v in defaults.items() if k not in ("N", "K")}
    elif "N" in entry or "K" in entry:
        defaults = {k: v for k, v in defaults.items() if k != "NK"}
    return {**defaults, **entry}


def _nk_pairs(e: dict[Any, Any], where: str) -> list[tuple[int, int]]:
    if "NK" not in e:
        missing = [d for d in ("N", "K") if d not in e]
        if missing:
            raise HarnessError(f"{where}: missing '{missing[0]}' (or give NK pairs)")
        n = [check_value(f"{where}: N", v, "int", True) for v in _values(e["N"], f"{where}: N")]
        k = [check_value(f"{where}: K", v, "int", True) for v in _values(e["K"], f"{where}: K")]
        return list(itertools.product(n, k))
    if not isinstance(e["NK"], list):
        raise HarnessError(f"{where}: NK: expected a list of [N, K] pairs, got {e['NK']!r}")
    pairs = []
    for j, pair in enumerate(_values(e["NK"], f"{where}: NK")):
        if not isinstance(pair, list) or len(pair) != 2:
            raise HarnessError(f"{where}: NK[{j}]: expected an [N, K] pair, got {pair!r}")
        pairs.append(tuple(check_value(f"{where}: NK[{j}]", v, "int", True) for v in pair))
    return pairs


def _field_values(key: Any, value: Any, kernels: list[KernelSpec], where: str) -> list[Any]:
    """The checked values of one field: typed where a kernel (or the worker) declares the field."""
    types = {ks.fields()[key] for ks in kernels if key in ks.fields()} or {None}
    vals = _values(value, where)
    for typ in sorted(types, key=str):
        vals = [check_value(where, v, typ, key in SHAPE) for v in vals]
    return vals


def _config_grid(cfg: Any, kernels: list[KernelSpec], where: str) -> list[dict[str, Any]]:
    cfg = _mapping(cfg, where, "config keys to values")
    for key in cfg:
        _unread(key, kernels, _config_keys, where, "config key")
    keys = sorted(cfg, key=str)
    vals = [[_config_value(f"{where}: {k}", k, v) for v in _values(cfg[k], f"{where}: {k}")] for k in keys]
    return [dict(zip(keys, combo)) for combo in itertools.product(*vals)]


def _config_value(where: str, key: str, value: Any) -> Any:
    value = check_value(where, value, None)
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # as for case fields: 16.0 is 16
    why = config_value_problem(key, value)
    if why:
        raise HarnessError(f"{where}: {why}")
    return value


def expand_entry(
    entry: Any, defaults: dict[Any, Any], where: str, base: Path, cache: dict[str, KernelSpec]
) -> list[dict[str, Any]]:
    """The cases of one entry, every field and config key checked against what its kernels read."""
    if not isinstance(entry, dict):
        raise HarnessError(f"{where}: expected a mapping with kernel, B, M, N, K")
    e = _merge(_mapping(entry, where, "fields"), defaults, where)
    if "kernel" not in e:
        raise HarnessError(f"{where}: missing 'kernel'")
    kernels = _kernels(e["kernel"], where, base, cache)
    for key in entry:
        _unread(key, kernels, _fields, where, "field")
    for d in ("B", "M"):
        if d not in e:
            raise HarnessError(f"{where}: missing '{d}'")
    nk = _nk_pairs(e, where)
    origin = {k: where if k in entry else f"{where} (from defaults)" for k in e}
    other = {
        k: _field_values(k, v, kernels, f"{origin[k]}: {k}") for k, v in e.items() if k not in (*RESERVED, "N", "K")
    }
    cfg_grid = _config_grid(e.get("config"), kernels, f"{origin.get('config', where)}: config")
    keys = sorted(other)
    cases = []
    for ks in kernels:
        for (n, k), combo, c in itertools.product(nk, itertools.product(*(other[x] for x in keys)), cfg_grid):
            case = {"kernel": ks.spec, **dict(zip(keys, combo)), "N": n, "K": k}
            if c:
                case["config"] = c
            cases.append(case)
    return cases


def _check_defaults(defaults: dict[Any, Any], kernels: list[KernelSpec], where: str) -> None:
    """Defaults apply to every entry, so a default need only be read by some kernel of the suite."""
    for key in defaults:
        if key not in RESERVED and all(_fields(ks) is not None and key not in _fields(ks) for ks in kernels):
            raise unknown_key(where, key, {str(f) for ks in kernels for f in _fields(ks) or ()}, "field")
    cfg = defaults.get("config")
    for key in cfg if isinstance(cfg, dict) else ():
        if all(_config_keys(ks) is not None and key not in _config_keys(ks) for ks in kernels):
            known = {str(f) for ks in kernels for f in _config_keys(ks) or ()}
            raise unknown_key(f"{where}: config", key, known, "config key")


def config_files(config_name: str, config_dir: Path) -> list[Path]:
    """Every arch's config files of one family: ``{arch}-{NAME}.json`` and ``{arch}-{NAME}-N=n-K=k.json``."""
    rx = re.compile(rf"^[^-]+-{re.escape(config_name)}(-N=\d+-K=\d+)?\.json$")
    return sorted(f for f in config_dir.glob("*.json") if rx.match(f.name))


def check_config_files(kernels: list[KernelSpec], config_dir: Path | None = None) -> None:
    """Refuse a config file of a suite's kernel with a key the kernel never reads (every arch: a typo in the
    gfx950 file is a typo on an sm90 machine too)."""
    d = Path(config_dir or os.environ.get("HARNESS_CONFIG_DIR") or CONFIG_DIR)
    for ks in kernels:
        if ks.config_name is None or ks.config_keys is None:
            continue
        for f in config_files(ks.config_name, d):
            try:
                bad = unknown_config_keys(f, ks.config_keys)
                values = bad_config_values(f)
            except ConfigError as err:
                raise HarnessError(str(err)) from None
            if values:
                raise HarnessError(f"{f}: {values[0][0]}: {values[0][1]}: {values[0][2]}")
            if bad:
                bucket, key = bad[0]
                raise unknown_key(f"{f}: {bucket}", key, _config_keys(ks) or (), f"config key (of {ks.spec})")


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


def load_suite(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The cases of a suite file, after checking everything in it (and its kernels' config files) against what
    the kernels read: anything wrong is a HarnessError naming the file, entry and key, before anything runs."""
    p = Path(path)
    data = _read_yaml(p)
    if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
        raise HarnessError(f"{p}: expected a mapping with an 'entries' list")
    for key in data:
        if key not in TOP_KEYS:
            raise unknown_key(str(p), key, TOP_KEYS)
    if not isinstance(data.get("name", ""), str):
        raise HarnessError(f"{p}: name: expected a string, got {data['name']!r}")
    if not data["entries"]:
        raise HarnessError(f"{p}: entries: empty (no cases)")
    defaults = _mapping(data.get("defaults"), f"{p}: defaults", "fields to values")
    base = p.resolve().parent
    cache: dict[str, KernelSpec] = {}
    if "kernel" in defaults:
        _kernels(defaults["kernel"], f"{p}: defaults", base, cache)
    cases: list[dict[str, Any]] = []
    for i, entry in enumerate(data["entries"]):
        cases += expand_entry(entry, defaults, f"{p}: entries[{i}]", base, cache)
    _check_defaults(defaults, list(cache.values()), f"{p}: defaults")
    check_config_files(list(cache.values()))
    seen: set[tuple[str, str]] = set()
    for c in cases:
        if is_path_spec(c["kernel"]):
            c["base"] = str(base)
        c["case_id"] = case_id(c)
        key = (c["kernel"], c["case_id"])
        if key in seen:
            raise HarnessError(f"{p}: case {c['kernel']} {c['case_id']} appears twice")
        seen.add(key)
    return cases


def select(
    cases: list[dict[str, Any]], kernels: list[str] | None = None, pattern: str | None = None
) -> list[dict[str, Any]]:
    """``--kernel`` (exact names) and ``--filter`` (a regex over 'kernel/case_id')."""
    out = cases
    if kernels:
        names = list(dict.fromkeys(c["kernel"] for c in cases))
        for k in kernels:
            if k not in names:
                hint = did_you_mean(k, names) or f" (the suite's kernels: {', '.join(names)})"
                raise HarnessError(f"--kernel {k!r}: no such kernel in the suite{hint}")
        out = [c for c in out if c["kernel"] in kernels]
    if pattern:
        try:
            rx = re.compile(pattern)
        except re.error as err:
            raise HarnessError(f"--filter: not a valid regular expression: {err}") from None
        out = [c for c in out if rx.search(f"{c['kernel']}/{c['case_id']}")]
    return out


def case_json(case: dict[str, Any]) -> str:
    return json.dumps(case, sort_keys=True)

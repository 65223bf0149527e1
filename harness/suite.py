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
"""

from __future__ import annotations

import itertools
import json
import os
import re
from pathlib import Path
from typing import Any

import yaml

from harness.errors import HarnessError

SHAPE = ("B", "M", "N", "K")
RESERVED = {"kernel", "NK", "config", "skip"}


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


def expand_entry(entry: dict[str, Any], defaults: dict[str, Any], where: str) -> list[dict[str, Any]]:
    if not isinstance(entry, dict):
        raise HarnessError(f"{where}: expected a mapping with kernel, B, M, N, K")
    e = {**defaults, **entry}
    if "kernel" not in e:
        raise HarnessError(f"{where}: missing 'kernel'")
    if "NK" in e:
        try:
            nk = [(int(n), int(k)) for n, k in _as_list(e["NK"])]
        except (TypeError, ValueError):
            raise HarnessError(f"{where}: NK must be a list of [N, K] pairs") from None
    else:
        missing = [d for d in ("N", "K") if d not in e]
        if missing:
            raise HarnessError(f"{where}: missing '{missing[0]}' (or give NK pairs)")
        nk = list(itertools.product(_as_list(e["N"]), _as_list(e["K"])))
    for d in ("B", "M"):
        if d not in e:
            raise HarnessError(f"{where}: missing '{d}'")
    other = {k: _as_list(v) for k, v in e.items() if k not in RESERVED and k not in ("N", "K")}
    cfg = e.get("config") or {}
    if not isinstance(cfg, dict):
        raise HarnessError(f"{where}: config must be a mapping of config fields")
    cfg_keys = sorted(cfg)
    cfg_grid = [dict(zip(cfg_keys, combo)) for combo in itertools.product(*(_as_list(cfg[k]) for k in cfg_keys))]
    keys = sorted(other)
    cases = []
    for kernel in _as_list(e["kernel"]):
        for (n, k), combo, c in itertools.product(nk, itertools.product(*(other[x] for x in keys)), cfg_grid):
            case = {"kernel": str(kernel), **dict(zip(keys, combo)), "N": n, "K": k}
            for d in SHAPE:
                try:
                    case[d] = int(case[d])
                except (TypeError, ValueError):
                    raise HarnessError(f"{where}: {d} must be an integer, got {case[d]!r}") from None
                if case[d] <= 0:
                    raise HarnessError(f"{where}: {d} must be positive, got {case[d]}")
            if c:
                case["config"] = c
            cases.append(case)
    return cases


def load_suite(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    p = Path(path)
    if not p.is_file():
        raise HarnessError(f"{p}: no such suite file")
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f"line {mark.line + 1}: " if mark else ""
        raise HarnessError(f"{p}: {line}not valid YAML: {getattr(err, 'problem', err)}") from None
    if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
        raise HarnessError(f"{p}: expected a mapping with an 'entries' list")
    defaults = data.get("defaults") or {}
    cases: list[dict[str, Any]] = []
    for i, entry in enumerate(data["entries"]):
        cases += expand_entry(entry, defaults, f"{p}: entries[{i}]")
    seen: dict[tuple[str, str], int] = {}
    for c in cases:
        if ".py" in c["kernel"]:
            c["base"] = str(p.resolve().parent)
        c["case_id"] = case_id(c)
        key = (c["kernel"], c["case_id"])
        if key in seen:
            raise HarnessError(f"{p}: case {c['kernel']} {c['case_id']} appears twice")
        seen[key] = 1
    return cases


def select(
    cases: list[dict[str, Any]], kernels: list[str] | None = None, pattern: str | None = None
) -> list[dict[str, Any]]:
    """``--kernel`` (exact names) and ``--filter`` (a regex over 'kernel/case_id')."""
    out = cases
    if kernels:
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

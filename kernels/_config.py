"""AITER-style config files and the one lookup rule every kernel uses. Pure: standard library only.

Files live in ``kernels/configs/``: ``{arch}-{CONFIG_NAME}.json`` (the default, required) and optionally
``{arch}-{CONFIG_NAME}-N={N}-K={K}.json``, which *replaces* the default for that (N, K) (never merged).
Each file maps bucket keys to kwargs: ``M_LEQ_x`` (the first with M <= x, x ascending), then ``M_GEQ_x``
(the first with M >= x, x descending), then ``any``.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

CONFIG_DIR = Path(__file__).resolve().parent / "configs"
STANDARD_M_BOUNDS = (1, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)
_BUCKET = re.compile(r"^(M_LEQ|M_GEQ)_(\d+)$")

#: launch options each backend's compiler accepts; anything else in a config that is not a kernel
#: argument is dropped for that backend (AMD's waves_per_eu etc. never reach NVIDIA's compiler)
LAUNCH_OPTIONS = {
    "cuda": ("num_warps", "num_stages", "num_ctas", "maxnreg"),
    "hip": ("num_warps", "num_stages", "waves_per_eu", "matrix_instr_nonkdim", "kpack", "schedule_hint"),
    "interp": ("num_warps", "num_stages"),
}
#: every launch option of any backend: a config key a suite or config file may give for any kernel
LAUNCH_OPTION_KEYS = tuple(sorted({k for opts in LAUNCH_OPTIONS.values() for k in opts}))
BACKEND_ONLY = {"waves_per_eu", "matrix_instr_nonkdim", "kpack", "schedule_hint", "num_ctas", "maxnreg"}


class ConfigError(Exception):
    """A config file is missing, unreadable or has no bucket for M."""


@dataclass(frozen=True)
class Resolved:
    config: dict[str, Any]
    file: str
    bucket: str
    #: True only when the bucket came from an (N, K)-specific file and was not ``any`` (AITER's is_tuned)
    tuned: bool
    overrides: dict[str, Any] = field(default_factory=dict)

    @property
    def source(self) -> str:
        src = f"{self.file}:{self.bucket}" + (" (tuned)" if self.tuned else "")
        return src + (" +suite overrides" if self.overrides else "")


@lru_cache(maxsize=256)
def _read(path: str) -> dict[str, dict[str, Any]]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise ConfigError(f"{path}: cannot read config file: {err}") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise ConfigError(f"{path}: expected an object of bucket -> config objects")
    for key in data:
        if key != "any" and not _BUCKET.match(key):
            raise ConfigError(f"{path}: unknown bucket key {key!r} (expected M_LEQ_x, M_GEQ_x or any)")
    return data


def read_config_file(path: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """A config file's buckets (ConfigError when it is unreadable or not bucket -> config objects)."""
    return _read(str(path))


def unknown_config_keys(path: str | os.PathLike[str], known: tuple[str, ...]) -> list[tuple[str, str]]:
    """(bucket, key) of each key in a config file that is neither in ``known`` (the kernel's CONFIG_KEYS) nor a
    launch option: a kernel never reads it, so a typo there would silently run the default."""
    allowed = set(known) | set(LAUNCH_OPTION_KEYS)
    return [(b, k) for b, cfg in read_config_file(path).items() for k in cfg if k not in allowed]


#: config keys whose value is a positive whole number (tile sizes, splits, warps); a typo'd 16.5 or a YAML true
#: there would otherwise reach the compiler as something else or be rounded by a kernel's int()
POSITIVE_INT_KEYS = re.compile(r"^(BLOCK_SIZE_\w+|GROUP_SIZE_\w+|NUM_KSPLIT|num_warps|num_ctas)$")


def config_value_problem(key: str, value: Any) -> str | None:
    """Why a config value cannot be what its key means, or None. Config values are integers, strings,
    booleans or null (what Triton's constexprs and launch options take); never fractions."""
    if isinstance(value, float):
        return f"{value!r} is not a whole number"
    if POSITIVE_INT_KEYS.match(key) and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        return f"expected a positive integer, got {value!r}"
    if key == "num_stages" and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        return f"expected a non-negative integer, got {value!r}"
    return None


def bad_config_values(path: str | os.PathLike[str]) -> list[tuple[str, str, str]]:
    """(bucket, key, why) of each value in a config file that :func:`config_value_problem` refuses."""
    found = []
    for bucket, cfg in read_config_file(path).items():
        for key, value in cfg.items():
            why = config_value_problem(key, value)
            if why:
                found.append((bucket, key, why))
    return found


def pick_bucket(buckets: dict[str, Any], M: int) -> str | None:
    """AITER's rule: first M_LEQ_b with M <= b (b ascending), else first M_GEQ_b with M >= b (b descending),
    else ``any``. Bounds are whatever the file uses, so files with non-standard bounds work too."""
    leq = sorted(int(m.group(2)) for k in buckets if (m := _BUCKET.match(k)) and m.group(1) == "M_LEQ")
    for b in leq:
        if b >= M:
            return f"M_LEQ_{b}"
    geq = sorted((int(m.group(2)) for k in buckets if (m := _BUCKET.match(k)) and m.group(1) == "M_GEQ"), reverse=True)
    for b in geq:
        if b <= M:
            return f"M_GEQ_{b}"
    return "any" if "any" in buckets else None


def resolve(
    config_name: str,
    arch: str,
    M: int,
    N: int,
    K: int,
    config_dir: str | os.PathLike[str] | None = None,
    overrides: dict[str, Any] | None = None,
) -> Resolved:
    d = Path(config_dir or os.environ.get("HARNESS_CONFIG_DIR") or CONFIG_DIR)
    default = d / f"{arch}-{config_name}.json"
    specific = d / f"{arch}-{config_name}-N={N}-K={K}.json"
    if not default.is_file():
        raise ConfigError(f"no default config {default.name} in {d} (arch {arch})")
    path = specific if specific.is_file() else default
    buckets = _read(str(path))
    bucket = pick_bucket(buckets, M)
    if bucket is None:
        raise ConfigError(f"{path}: no bucket matches M={M} and there is no 'any'")
    cfg = dict(buckets[bucket])
    if overrides:
        cfg.update(overrides)
    return Resolved(
        config=cfg,
        file=path.name,
        bucket=bucket,
        tuned=path == specific and bucket != "any",
        overrides=dict(overrides or {}),
    )


def split_config(config: dict[str, Any], backend: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(kernel meta-parameters, launch options for ``backend``). Options the backend does not accept are
    dropped, never passed: Triton's CUDA compiler rejects ``waves_per_eu`` and friends."""
    accepted = LAUNCH_OPTIONS[backend]
    meta, opts = {}, {}
    for k, v in config.items():
        if k in accepted:
            opts[k] = v
        elif k in BACKEND_ONLY or k in ("num_warps", "num_stages"):
            continue
        else:
            meta[k] = v
    return meta, opts

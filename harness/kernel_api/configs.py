"""AITER-style config files and the one lookup rule every kernel uses. Pure: standard library only.

Files live in ``kernels/configs/``: ``{arch}-{family}.json`` (the default, required) and optionally
``{arch}-{family}-{key}.json`` (``key`` such as ``N=512-K=128``: the values of the parameters a kernel's
ConfigLookup specializes on), which *replaces* the default for those values (never merged). Each file maps bucket
keys to kwargs: ``{P}_LEQ_x`` (the first with P <= x, x ascending), then ``{P}_GEQ_x`` (the first with P >= x,
x descending), then ``any``, where P is the lookup's bucket parameter (``M`` for the GEMMs). A file may also hold
notes (keys starting with ``_``), which the lookup skips: ``"_tuned_for"`` records the Triton and GPU each bucket
was last tuned for (``harness retune`` writes it); AITER's files hold ``"_note"``.

:func:`resolve_in` searches several folders in order (a suite's, a library checkout's, a kernel's own, then
harness's) by a layout of layout.py: harness's, or AITER's (nested before flat, batch-specialized files
first, only the caller's bounds, keys that are not buckets skipped). :func:`resolve` is one folder of harness's.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from harness.kernel_api.layout import pick as pick_in_bounds
from harness.kernel_api.layout import places, split_buckets

#: the shipped kernels' config files (the repository's kernels/configs/)
CONFIG_DIR = Path(__file__).resolve().parents[2] / "kernels" / "configs"
STANDARD_M_BOUNDS = (1, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)
#: keys of a config file that are notes, not buckets: skipped by the lookup and by the suite's config checks.
#: ``_tuned_for`` is harness retune's; any key starting with ``_`` is a note, as AITER's lookup skips them (its
#: gfx1250-BATCHED_GEMM-A16WFP4.json holds a ``"_note"``)
NOTES = ("_tuned_for",)


def is_note(key: str) -> bool:
    return key.startswith("_")


_BUCKET = re.compile(r"^(?P<param>[A-Za-z][A-Za-z0-9_]*?)_(?P<op>LEQ|GEQ)_(?P<bound>\d+)$")

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
    #: the folder the file is in (``file`` is relative to it)
    folder: str = ""
    #: keys of the file the lookup skipped (AITER's layout: anything that is not a bucket)
    skipped: tuple[str, ...] = ()

    @property
    def source(self) -> str:
        src = f"{self.file}:{self.bucket}" + (" (tuned)" if self.tuned else "")
        src += f" (skipped keys: {', '.join(self.skipped)})" if self.skipped else ""
        return src + (" +suite overrides" if self.overrides else "")


def _read(path: str) -> dict[str, dict[str, Any]]:
    """A config file's buckets, read once per version of the file (a file rewritten since, e.g. by `harness
    retune`, is read again)."""
    return _read_version(path, _version(path))


@lru_cache(maxsize=256)
def _read_version(path: str, version: tuple[int, int]) -> dict[str, dict[str, Any]]:
    data = _json_version(path, version)
    data = {k: v for k, v in data.items() if not is_note(k)}
    if not all(isinstance(v, dict) for v in data.values()):
        raise ConfigError(f"{path}: expected an object of bucket -> config objects")
    params = {m.group("param") for k in data if (m := _BUCKET.match(k))}
    for key in data:
        if key != "any" and not _BUCKET.match(key):
            raise ConfigError(f"{path}: unknown bucket key {key!r} (expected P_LEQ_x, P_GEQ_x or any)")
    if len(params) > 1:
        raise ConfigError(f"{path}: buckets on more than one parameter ({', '.join(sorted(params))})")
    return data


@lru_cache(maxsize=256)
def _json_version(path: str, version: tuple[int, int]) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise ConfigError(f"{path}: cannot read config file: {err}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected an object of bucket -> config objects")
    return data


def _version(path: str) -> tuple[int, int]:
    try:
        st = os.stat(path)
        return (st.st_mtime_ns, st.st_size)
    except OSError:
        return (0, -1)


def read_buckets(path: str | os.PathLike[str], layout: str = "harness") -> tuple[dict[str, dict[str, Any]], list[str]]:
    """(a config file's buckets, the keys skipped) as ``layout``'s lookup reads it: harness's refuses a key that is
    neither a bucket nor a note; AITER's skips it (its gfx1250 A16WFP4 file holds ``"_note"``)."""
    if layout == "aiter":
        return split_buckets(_json_version(str(path), _version(str(path))))
    return _read(str(path)), []


def read_config_file(path: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """A config file's buckets, its notes left out (ConfigError when it is unreadable or not bucket -> config
    objects)."""
    return _read(str(path))


def unknown_config_keys(
    path: str | os.PathLike[str], known: tuple[str, ...], layout: str = "harness"
) -> list[tuple[str, str]]:
    """(bucket, key) of each key in a config file that is neither in ``known`` (the kernel's CONFIG_KEYS) nor a
    launch option: a kernel never reads it, so a typo there would silently run the default."""
    allowed = set(known) | set(LAUNCH_OPTION_KEYS)
    return [(b, k) for b, cfg in read_buckets(path, layout)[0].items() for k in cfg if k not in allowed]


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


def bad_config_values(path: str | os.PathLike[str], layout: str = "harness") -> list[tuple[str, str, str]]:
    """(bucket, key, why) of each value in a config file that :func:`config_value_problem` refuses."""
    found = []
    for bucket, cfg in read_buckets(path, layout)[0].items():
        for key, value in cfg.items():
            why = config_value_problem(key, value)
            if why:
                found.append((bucket, key, why))
    return found


def pick_bucket(buckets: dict[str, Any], value: int, param: str = "M") -> str | None:
    """AITER's rule over the bounds the file itself uses (harness/kernel_api/layout.py ``pick``), so files with
    non-standard bounds work too."""
    return pick_in_bounds(buckets, value, param, None)


def bucket_param(buckets: dict[str, Any]) -> str | None:
    """The parameter a file's buckets are on (``M``), None for a file of ``any`` only."""
    return next((m.group("param") for k in buckets if (m := _BUCKET.match(k))), None)


def config_dir(given: str | os.PathLike[str] | None = None) -> Path:
    """Where config files are read: ``given``, else $HARNESS_CONFIG_DIR, else kernels/configs/."""
    return Path(given or os.environ.get("HARNESS_CONFIG_DIR") or CONFIG_DIR)


def config_paths(family: str, arch: str, key: str, directory: Path) -> tuple[Path, Path | None]:
    """(the default file, the per-shape file for ``key`` or None without one)."""
    default = directory / f"{arch}-{family}.json"
    return default, (directory / f"{arch}-{family}-{key}.json" if key else None)


def resolve(
    family: str,
    arch: str,
    bucket_value: int,
    key: str = "",
    bucket: str = "M",
    directory: str | os.PathLike[str] | None = None,
    overrides: dict[str, Any] | None = None,
) -> Resolved:
    """The config of a case in one folder of harness's layout: its per-shape file (``key``, e.g. ``N=512-K=128``)
    if there is one, else the default file; in it the bucket for ``bucket_value`` of parameter ``bucket``; the
    suite's ``overrides`` on top."""
    return resolve_in([config_dir(directory)], family, arch, bucket_value, (key,), bucket, overrides=overrides)


def resolve_in(
    folders: list[str | os.PathLike[str]],
    family: str,
    arch: str,
    value: int,
    keys: tuple[str, ...] = (),
    bucket: str = "M",
    layout: str = "harness",
    bounds: tuple[int, ...] | None = None,
    overrides: dict[str, Any] | None = None,
    backend: str = "",
) -> Resolved:
    """The config of a case: the first place of the first folder (layout.py's order, for the ``backend`` the
    library's caller names on this arch) whose default file exists; in that place the first per-shape file of
    ``keys`` that exists, else the default (never merged); the bucket for ``value`` (over ``bounds`` when given);
    the suite's ``overrides`` on top."""
    tried = []
    for folder in folders:
        for place in places(layout, family, arch, keys, Path(folder), backend):
            if place.default.is_file():
                path = next((p for p in place.specific if p.is_file()), place.default)
                return _take(path, Path(folder), place.default, value, bucket, layout, bounds, overrides)
            tried.append(str(place.default))
    if len(tried) == 1:
        default = Path(tried[0])
        raise ConfigError(f"no default config {default.name} in {default.parent} (arch {arch})")
    raise ConfigError(f"no default config for {family} on arch {arch}: none of {', '.join(tried)}")


def _take(
    path: Path,
    folder: Path,
    default: Path,
    value: int,
    bucket: str,
    layout: str,
    bounds: tuple[int, ...] | None,
    overrides: dict[str, Any] | None,
) -> Resolved:
    buckets, skipped = read_buckets(path, layout)
    found = bucket_param(buckets)
    if layout == "harness" and found is not None and found != bucket:
        raise ConfigError(f"{path}: buckets are on {found}, but this kernel looks up by {bucket}")
    choice = pick_in_bounds(buckets, value, bucket, bounds)
    if choice is None:
        raise ConfigError(f"{path}: no bucket matches {bucket}={value} and there is no 'any'")
    cfg = {**buckets[choice], **(overrides or {})}
    return Resolved(
        config=cfg,
        file=os.path.relpath(path, folder),
        bucket=choice,
        tuned=path != default and choice != "any",
        overrides=dict(overrides or {}),
        folder=str(folder),
        skipped=tuple(skipped),
    )


def for_backend(config: dict[str, Any], backend: str, keep: tuple[str, ...] = ()) -> dict[str, Any]:
    """``config`` without the launch options ``backend`` does not accept (AMD's ``waves_per_eu``,
    ``matrix_instr_nonkdim``, ``kpack`` on NVIDIA and the CPU): the worker applies it to every kernel's config, so
    a user's kernel that passes ``**config`` to its launch need not know which backend it runs on. ``keep``: keys
    the kernel declares as its own (AITER's bf16 kernel takes ``waves_per_eu`` as a constexpr argument)."""
    accepted = (*LAUNCH_OPTIONS[backend], *keep)
    return {k: v for k, v in config.items() if k not in BACKEND_ONLY or k in accepted}


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

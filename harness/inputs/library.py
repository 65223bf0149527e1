"""A suite's own settings for the kernels of its entries: where their config files are (``configs:``), which arch's
configs they take (``config_arch:``) and the checkout of a library their code imports (``library:``)::

    library:
      path: ${AITER_CHECKOUT}     # the folder that holds the package (relative to the suite; ${VAR}, ~ expanded)
      package: aiter              # what the kernels import
      init: false                 # import aiter.ops... without running aiter/__init__.py (AITER's needs its C++)
      configs: [aiter/ops/triton/configs]   # config folders inside the checkout
    configs: [my_configs]         # config folders relative to the suite, searched before the library's
    config_arch: gfx950           # resolve configs as on gfx950 (AITER ships no sm90 or CPU files); ${VAR} too

These settings belong to the suite file that states them, for its own entries (an included suite keeps its own).
Everything wrong is one line naming the suite and the key.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.envs.schema import expand, variables
from harness.errors import HarnessError, unknown_key

LIBRARY_KEYS = ("path", "package", "init", "configs")
_PACKAGE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ARCH = re.compile(r"^[A-Za-z0-9_]+$")


@dataclass(frozen=True)
class Library:
    """A checkout of a kernel library: ``path`` holds ``package``; ``init`` False imports its subpackages without
    running the package's own ``__init__.py``."""

    path: str
    package: str
    init: bool = True

    def request(self) -> dict[str, Any]:
        """What the worker is sent (harness/worker/library.py)."""
        return {"path": self.path, "package": self.package, "init": self.init}


@dataclass(frozen=True)
class Settings:
    """A suite file's settings: config folders (absolute; the suite's, then the library's), the config arch, the
    library."""

    folders: tuple[str, ...] = ()
    config_arch: str = ""
    library: Library | None = None


def settings(data: dict[str, Any], suite: Path, environ: dict[str, str] | None = None) -> Settings:
    """The settings of the suite file ``suite`` (its parsed ``data``)."""
    env = dict(os.environ if environ is None else environ)
    base = suite.resolve().parent
    lib, lib_folders = _library(data.get("library"), f"{suite}: library", base, env)
    folders = _folders(data.get("configs"), f"{suite}: configs", base, env)
    arch = data.get("config_arch", "")
    arch = expand(arch, f"{suite}: config_arch", env) if isinstance(arch, str) else arch
    if not isinstance(arch, str) or (arch and not _ARCH.match(arch)):
        raise HarnessError(f"{suite}: config_arch: expected an arch name such as gfx950, got {arch!r}")
    return Settings((*folders, *lib_folders), arch, lib)


def _folders(value: Any, where: str, base: Path, env: dict[str, str]) -> tuple[str, ...]:
    if value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    if not items or not all(isinstance(v, str) and v for v in items):
        raise HarnessError(f"{where}: expected a folder or a list of folders")
    out = []
    for v in items:
        folder = base / os.path.expanduser(expand(v, where, env))
        if not folder.is_dir():
            raise HarnessError(f"{where}: {v}: no such folder ({folder})")
        out.append(str(folder.resolve()))
    return tuple(out)


def _library(value: Any, where: str, base: Path, env: dict[str, str]) -> tuple[Library | None, tuple[str, ...]]:
    if value is None:
        return None, ()
    if not isinstance(value, dict):
        raise HarnessError(f"{where}: expected a mapping with path and package")
    for key in value:
        if key not in LIBRARY_KEYS:
            raise unknown_key(where, key, LIBRARY_KEYS)
    for key in ("path", "package"):
        if not isinstance(value.get(key), str) or not value[key]:
            raise HarnessError(f"{where}: {key}: required, a string")
    package = value["package"]
    if not _PACKAGE.match(package):
        raise HarnessError(f"{where}: package: {package!r} is not a top-level module name")
    path = _checkout(value["path"], f"{where}: path", base, env)
    if not (path / package).is_dir() and not (path / f"{package}.py").is_file():
        raise HarnessError(f"{where}: no package {package!r} in {path} (path is the folder that holds it)")
    init = value.get("init", True)
    if not isinstance(init, bool):
        raise HarnessError(f"{where}: init: expected true or false, got {init!r}")
    folders = _folders(value.get("configs"), f"{where}: configs", path, env)
    return Library(str(path), package, init), folders


def _checkout(value: str, where: str, base: Path, env: dict[str, str]) -> Path:
    """The library's folder: ``value`` with its variables and a leading ``~`` expanded, relative to the suite's
    folder. Expanding to nothing is refused naming the variables (it would silently be the suite's own folder), as
    is a folder that does not exist."""
    expanded = expand(value, where, env).strip()
    if not expanded:
        names = [f"${{{v}}}" for v in variables(value)]
        empty = f" ({', '.join(names)} {'is' if len(names) == 1 else 'are'} empty)" if names else ""
        raise HarnessError(f"{where}: {value!r} expands to nothing{empty}")
    path = (base / os.path.expanduser(expanded)).resolve()
    if not path.exists():
        raise HarnessError(f"{where}: {path} does not exist" + (f" (from {value!r})" if expanded != value else ""))
    if not path.is_dir():
        raise HarnessError(f"{where}: {path} is not a folder (path is the folder that holds the package)")
    return path

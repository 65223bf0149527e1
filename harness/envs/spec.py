"""Environment specs (envs/*.yaml): which Python runs the worker, how to build it, and what it sees.

    name: tot
    python: python3                  # use this interpreter as is ...
    venv:                            # ... or create a venv (uv when present, else venv + pip)
      path: .venvs/tot
      system_site_packages: true     # reuse the base torch
      requirements: ["triton==3.9.0"]  # pins, wheel files, git refs: anything pip accepts
      index_url: null
      base_python: null              # the interpreter the venv is made from (default: the harness's)
    pythonpath: ["${TOT_TRITON}"]    # overlay ahead of site-packages (offline nodes: an unpacked wheel)
    env: {TRITON_DEFAULT_FP_FUSION: "1", TRITON_HIP_USE_ASYNC_COPY: "1"}
    timing: auto                     # auto | cupti | rocprofv3 | events | wallclock
    cache_dir: null                  # TRITON_CACHE_DIR; default .harness/cache/<name>, one per env

or name a Triton release and say how to get it (``harness env pack`` / ``unpack`` make the offline bundle):

    name: v380
    triton: 3.8.0                    # a release on the package index
    mode: venv                       # venv (default): .venvs/triton-3.8.0 (or venv: {path: ...}) with triton==3.8.0
                                     # overlay: the unpacked bundle ahead of site-packages (python: ... as above),
    overlay: null                    #   from here; default $HARNESS_TRITON_DIR/3.8.0, else .harness/triton/3.8.0

The schema (types, known keys) and variable expansion are in :mod:`harness.envs.schema`: ``${VAR}`` must be set,
``${VAR:-default}`` may not be; both are expanded when the spec is loaded, so one file serves several machines
and what ``harness env show`` prints is what runs. Making and checking the Python a spec names (a venv, an
overlay) is :mod:`harness.envs.venv`.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.envs.schema import MODES, OVERLAY_ROOT, TIMINGS, check_spec, release_version
from harness.errors import HarnessError
from harness.fsutil import write_text

__all__ = ["TIMINGS", "PINNED", "EnvSpec", "load_env_spec", "release_env"]

#: pinned for every env unless the spec says otherwise: Triton 3.9 warns that its FP-fusion default changes,
#: and a golden/TOT comparison must not measure that by accident
PINNED = {"TRITON_DEFAULT_FP_FUSION": "1"}


@dataclass
class EnvSpec:
    """A loaded spec; every value already checked and expanded (see :mod:`harness.envs.schema`)."""

    name: str
    path: Path  # the YAML file
    python: str | None = None
    venv: dict[str, Any] | None = None
    env: dict[str, str | None] = field(default_factory=dict)
    pythonpath: list[str] = field(default_factory=list)
    timing: str = "auto"
    cache_dir: str | None = None
    triton: str | None = None  # the release the spec names (``triton: 3.8.0``), if any
    mode: str | None = None  # how it gets it: venv | overlay
    overlay: str | None = None  # mode overlay: the unpacked bundle's folder (also first in ``pythonpath``)

    @property
    def root(self) -> Path:
        return self.path.parent.parent if self.path.parent.name == "envs" else self.path.parent

    def _abs(self, p: str) -> Path:
        q = Path(p)
        return q if q.is_absolute() else (self.root / q)

    def venv_dir(self) -> Path | None:
        return self._abs(self.venv["path"]) if self.venv else None

    def interpreter(self) -> str:
        vp = self.venv_dir()
        if vp is not None:
            return str(vp / ("Scripts/python.exe" if os.name == "nt" else "bin/python"))
        py = self.python or "python3"
        found = shutil.which(py) if not os.path.isabs(py) else py
        return found or py

    def overlay_dir(self) -> Path | None:
        return self._abs(self.overlay) if self.overlay else None

    def checked_pythonpath(self) -> list[str]:
        """The ``pythonpath`` entries as absolute paths; one that does not exist is refused (else the worker would
        silently import site-packages' Triton instead)."""
        out = []
        for raw in self.pythonpath:
            path = str(self._abs(raw))
            if not Path(path).exists():
                raise HarnessError(f"{self.path}: pythonpath entry {path} does not exist")
            out.append(path)
        return out

    def triton_cache(self) -> Path:
        return self._abs(self.cache_dir) if self.cache_dir else self.root / ".harness" / "cache" / self.name

    def environ(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """The worker's environment: the caller's, the pinned knobs, the spec's variables and overlay."""
        env = dict(os.environ if base is None else base)
        env.update(PINNED)
        env.update({k: v for k, v in self.env.items() if v is not None})
        overlay = self.checked_pythonpath()
        if overlay:
            env["PYTHONPATH"] = os.pathsep.join(overlay + [p for p in [env.get("PYTHONPATH", "")] if p])
        env["TRITON_CACHE_DIR"] = str(self.triton_cache())
        env["PYTHONUNBUFFERED"] = "1"
        env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
        return env

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "file": str(self.path),
            "python": self.interpreter(),
            "venv": self.venv,
            **({"triton": self.triton, "mode": self.mode} if self.triton else {}),
            "pythonpath": [str(self._abs(p)) for p in self.pythonpath],
            "env": {**PINNED, **{k: v for k, v in self.env.items() if v is not None}},
            "timing": self.timing,
            "triton_cache_dir": str(self.triton_cache()),
        }


def load_env_spec(path: str | os.PathLike[str], environ: Mapping[str, str] | None = None) -> EnvSpec:
    """Read, check and expand a spec (a file, or NAME for envs/NAME.yaml) against ``environ`` (default: ours)."""
    p = Path(path)
    if not p.is_file():
        alt = Path("envs") / f"{path}.yaml"
        if alt.is_file():
            p = alt
        else:
            raise HarnessError(f"{p}: no such env spec (give a file, or a name from envs/)")
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise HarnessError(
            f"{p}: not valid YAML: {str(getattr(err, 'problem', None) or err).splitlines()[0]}"
        ) from None
    except (OSError, UnicodeDecodeError) as err:
        raise HarnessError(f"{p}: cannot read: {err}") from None
    except RecursionError:
        raise HarnessError(f"{p}: not valid YAML: nested too deeply") from None
    fields = check_spec(data, str(p), p.stem, os.environ if environ is None else environ)
    return EnvSpec(path=p.resolve(), **fields)


def release_env(version: str, mode: str, like: EnvSpec, folder: Path, root: Path | None = None) -> EnvSpec:
    """An env spec for Triton ``version`` that differs from ``like`` (the golden env) in its Triton only: the
    same interpreter (overlay) or base interpreter (venv), knobs and timing. Written as a real spec file in
    ``folder`` (``triton-VERSION.yaml``: `harness env create` and `env show` take it as any other), with the venv,
    overlay and Triton cache under ``root`` (default: the current folder) as absolute paths."""
    version = release_version(version, "--versions")
    if mode not in MODES:
        raise HarnessError(f"--mode: expected one of {', '.join(MODES)}, got {mode!r}")
    root = (root or Path.cwd()).resolve()
    name = f"triton-{version}"
    doc: dict[str, Any] = {"name": name, "triton": version, "mode": mode}
    if mode == "venv":
        base = (like.venv or {}).get("base_python") or (like.interpreter() if not like.venv else sys.executable)
        doc["venv"] = {"path": str(root / ".venvs" / name), "system_site_packages": True, "base_python": base}
    else:
        top = os.path.expanduser(os.environ.get("HARNESS_TRITON_DIR") or str(root / OVERLAY_ROOT))
        doc.update(python=like.interpreter(), overlay=str(Path(top) / version))
    doc.update(
        env={k: v for k, v in like.env.items() if v is not None},
        timing=like.timing,
        cache_dir=str(root / ".harness" / "cache" / name),
    )
    text = f"# Triton {version} as the env {like.name} ({like.path}) has it otherwise; written by harness bisect\n"
    path = Path(folder) / f"{name}.yaml"
    write_text(path, text + yaml.safe_dump(doc, sort_keys=False))
    return load_env_spec(path)

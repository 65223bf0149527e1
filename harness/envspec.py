"""Environment specs (envs/*.yaml): which Python runs the worker, how to build it, and what it sees.

    name: tot
    python: python3                  # use this interpreter as is ...
    venv:                            # ... or create a venv (uv when present, else venv + pip)
      path: .venvs/tot
      system_site_packages: true     # reuse the base torch
      requirements: ["triton==3.9.0"]  # pins, wheel files, git refs: anything pip accepts
      index_url: null
    pythonpath: ["${TOT_TRITON}"]    # overlay ahead of site-packages (offline nodes: an unpacked wheel)
    env: {TRITON_DEFAULT_FP_FUSION: "1", TRITON_HIP_USE_ASYNC_COPY: "1"}
    timing: auto                     # auto | cupti | rocprofv3 | events | wallclock
    cache_dir: null                  # TRITON_CACHE_DIR; default .harness/cache/<name>, one per env

``${VAR}`` and ``~`` are expanded in paths and values, so one file serves several machines.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.errors import HarnessError

TIMINGS = ("auto", "cupti", "rocprofv3", "events", "wallclock")
#: pinned for every env unless the spec says otherwise: Triton 3.9 warns that its FP-fusion default changes,
#: and a golden/TOT comparison must not measure that by accident
PINNED = {"TRITON_DEFAULT_FP_FUSION": "1"}


def expand(value: str) -> str:
    """``${VAR}`` and ``~`` expanded; a variable that is not set expands to nothing (not to itself)."""
    import re

    v = os.path.expandvars(os.path.expanduser(value))
    return re.sub(r"\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*", "", v)


@dataclass
class EnvSpec:
    name: str
    path: Path  # the YAML file
    python: str | None = None
    venv: dict[str, Any] | None = None
    env: dict[str, str] = field(default_factory=dict)
    pythonpath: list[str] = field(default_factory=list)
    timing: str = "auto"
    cache_dir: str | None = None

    @property
    def root(self) -> Path:
        return self.path.parent.parent if self.path.parent.name == "envs" else self.path.parent

    def _abs(self, p: str) -> Path:
        q = Path(expand(p))
        return q if q.is_absolute() else (self.root / q)

    def interpreter(self) -> str:
        if self.venv:
            vp = self._abs(self.venv["path"])
            return str(vp / ("Scripts/python.exe" if os.name == "nt" else "bin/python"))
        py = expand(self.python or "") or "python3"
        found = shutil.which(py) if not os.path.isabs(py) else py
        return found or py

    def triton_cache(self) -> Path:
        return self._abs(self.cache_dir) if self.cache_dir else self.root / ".harness" / "cache" / self.name

    def environ(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """The worker's environment: the caller's, the pinned knobs, the spec's variables and overlay."""
        env = dict(os.environ if base is None else base)
        env.update(PINNED)
        env.update({k: expand(str(v)) for k, v in self.env.items()})
        overlay = []
        for raw in self.pythonpath:
            if not expand(raw).strip():
                continue
            path = str(self._abs(raw))
            if not Path(path).exists():  # else the worker silently imports site-packages' Triton instead
                raise HarnessError(f"{self.path}: pythonpath entry {path} ({raw}) does not exist")
            overlay.append(path)
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
            "pythonpath": self.pythonpath,
            "env": {**PINNED, **self.env},
            "timing": self.timing,
            "triton_cache_dir": str(self.triton_cache()),
        }


def load_env_spec(path: str | os.PathLike[str]) -> EnvSpec:
    p = Path(path)
    if not p.is_file():
        alt = Path("envs") / f"{path}.yaml"
        if alt.is_file():
            p = alt
        else:
            raise HarnessError(f"{p}: no such env spec (give a file, or a name from envs/)")
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as err:
        raise HarnessError(f"{p}: not valid YAML: {getattr(err, 'problem', err)}") from None
    if not isinstance(data, dict):
        raise HarnessError(f"{p}: expected a mapping")
    unknown = set(data) - {"name", "python", "venv", "env", "pythonpath", "timing", "cache_dir", "description"}
    if unknown:
        raise HarnessError(f"{p}: unknown key '{sorted(unknown)[0]}'")
    if data.get("python") and data.get("venv"):
        raise HarnessError(f"{p}: give either 'python' or 'venv', not both")
    venv = data.get("venv")
    if venv is not None and (not isinstance(venv, dict) or "path" not in venv):
        raise HarnessError(f"{p}: venv: expected a mapping with at least 'path'")
    timing = str(data.get("timing", "auto"))
    if timing not in TIMINGS:
        raise HarnessError(f"{p}: timing: expected one of {', '.join(TIMINGS)}, got {timing!r}")
    env = data.get("env") or {}
    if not isinstance(env, dict):
        raise HarnessError(f"{p}: env: expected a mapping of variable -> value")
    pp = data.get("pythonpath") or []
    return EnvSpec(
        name=str(data.get("name") or p.stem),
        path=p.resolve(),
        python=data.get("python"),
        venv=venv,
        env={str(k): str(v) for k, v in env.items() if v is not None},
        pythonpath=[str(x) for x in pp],
        timing=timing,
        cache_dir=data.get("cache_dir"),
    )


def create_env(spec: EnvSpec, log=print) -> str:
    """Create the spec's venv if it has one (idempotent); return the interpreter path."""
    if not spec.venv:
        py = spec.interpreter()
        if not shutil.which(py) and not Path(py).exists():
            raise HarnessError(f"{spec.path}: python {py!r} not found")
        return py
    vp = spec._abs(spec.venv["path"])
    py = spec.interpreter()
    reqs = [os.path.expandvars(r) for r in spec.venv.get("requirements", [])]
    site = bool(spec.venv.get("system_site_packages", True))
    uv = shutil.which("uv")
    if not Path(py).exists():
        log(f"creating {vp} ({'uv' if uv else 'venv'})")
        base = os.path.expandvars(spec.venv.get("base_python") or sys.executable)
        cmd = (
            [uv, "venv", "--python", base, str(vp)] + (["--system-site-packages"] if site else [])
            if uv
            else [base, "-m", "venv", str(vp)] + (["--system-site-packages"] if site else [])
        )
        _check(cmd, spec)
    if reqs:
        idx = spec.venv.get("index_url")
        if uv:
            cmd = [uv, "pip", "install", "--python", py, *reqs] + (["--index-url", idx] if idx else [])
        else:
            cmd = [py, "-m", "pip", "install", "-q", "--disable-pip-version-check", *reqs]
            cmd += ["--index-url", idx] if idx else []
        log(f"installing {' '.join(reqs)} into {vp}")
        _check(cmd, spec)
    return py


def _check(cmd: list[str], spec: EnvSpec) -> None:
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        last = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise HarnessError(f"{spec.path}: `{' '.join(cmd[:4])} ...` failed: {last[0]}")

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

The schema (types, known keys) and variable expansion are in :mod:`harness.inputs.envschema`: ``${VAR}`` must be set,
``${VAR:-default}`` may not be; both are expanded when the spec is loaded, so one file serves several machines
and what ``harness env show`` prints is what runs.

An overlay is used only when ``harness env unpack`` completed it: :data:`OVERLAY_MARKER` in its folder names the
release, checked against the spec's ``triton:`` (:func:`check_venv`). A venv is used only when its pins are installed: ``harness env create`` writes :data:`MARKER` into the venv after
a successful install, and :func:`check_venv` (run, env show) refuses a venv without it, made for other
requirements, or whose ``name==version`` pins are not the installed versions.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.errors import HarnessError
from harness.fsutil import write_text
from harness.inputs.envschema import TIMINGS, check_spec, pins, same_version

__all__ = [
    "TIMINGS",
    "PINNED",
    "MARKER",
    "OVERLAY_MARKER",
    "EnvSpec",
    "load_env_spec",
    "release_env",
    "create_env",
    "check_venv",
    "probe",
]

#: pinned for every env unless the spec says otherwise: Triton 3.9 warns that its FP-fusion default changes,
#: and a golden/TOT comparison must not measure that by accident
PINNED = {"TRITON_DEFAULT_FP_FUSION": "1"}
#: written into a venv by `harness env create` once its requirements are installed and its pins verified
MARKER = ".harness-env.json"
#: written into an overlay folder by `harness env unpack` once every part is verified and unpacked
OVERLAY_MARKER = ".harness-overlay.json"


@dataclass
class EnvSpec:
    """A loaded spec; every value already checked and expanded (see :mod:`harness.inputs.envschema`)."""

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

    def triton_cache(self) -> Path:
        return self._abs(self.cache_dir) if self.cache_dir else self.root / ".harness" / "cache" / self.name

    def environ(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """The worker's environment: the caller's, the pinned knobs, the spec's variables and overlay."""
        env = dict(os.environ if base is None else base)
        env.update(PINNED)
        env.update({k: v for k, v in self.env.items() if v is not None})
        overlay = []
        for raw in self.pythonpath:
            path = str(self._abs(raw))
            if not Path(path).exists():  # else the worker silently imports site-packages' Triton instead
                raise HarnessError(f"{self.path}: pythonpath entry {path} does not exist")
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


def _hint(spec: EnvSpec) -> str:
    return f"run `harness env create {spec.path}`"


def _read_marker(vp: Path) -> dict[str, Any] | None:
    return read_record(vp / MARKER)


def _installed(py: str, names: list[str], env: dict[str, str]) -> dict[str, str | None]:
    """{name: installed version or None}, asked of the venv's own Python (what its worker will import)."""
    script = (
        "import json, sys\nfrom importlib import metadata\nout = {}\nfor n in sys.argv[1:]:\n"
        "    try:\n        out[n] = metadata.version(n)\n    except metadata.PackageNotFoundError:\n"
        "        out[n] = None\nprint(json.dumps(out))\n"
    )
    try:
        r = subprocess.run([py, "-c", script, *names], capture_output=True, text=True, env=env, timeout=120)
        return json.loads(r.stdout.strip().splitlines()[-1])
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired) as err:
        raise HarnessError(f"{py}: cannot ask it for its installed versions: {err}") from None


def _check_pins(spec: EnvSpec, requirements: list[str]) -> None:
    want = pins(requirements)
    if not want:
        return
    got = _installed(spec.interpreter(), sorted(want), spec.environ())
    for name, version in sorted(want.items()):
        have = got.get(name)
        if have is None or not same_version(have, version):
            found = "is not installed" if have is None else f"is {have}"
            raise HarnessError(
                f"{spec.path}: venv {spec.venv_dir()}: {name} {found} but the spec pins {name}=={version}: "
                + _hint(spec)
            )


def _record(spec: EnvSpec) -> dict[str, Any]:
    assert spec.venv is not None
    return {"requirements": spec.venv["requirements"], "index_url": spec.venv["index_url"]}


def check_venv(spec: EnvSpec) -> None:
    """Refuse (one line) a venv that does not exist, was not completed by `harness env create`, was made for
    other requirements, or whose pins are not what is installed; and an overlay (``mode: overlay``) that
    `harness env unpack` did not complete, holds another release, or was packed for another Python. Specs
    without either pass."""
    if spec.mode == "overlay":
        check_overlay(spec)
        return
    vp = spec.venv_dir()
    if vp is None:
        return
    if not Path(spec.interpreter()).exists():
        raise HarnessError(f"{spec.path}: venv {vp} does not exist: " + _hint(spec))
    done = _read_marker(vp)
    if done is None:
        raise HarnessError(
            f"{spec.path}: venv {vp} has no record of a completed install ({MARKER}; its install failed, or it "
            "predates the record): " + _hint(spec)
        )
    if done != _record(spec):
        raise HarnessError(
            f"{spec.path}: venv {vp} was installed with {done.get('requirements')} (index {done.get('index_url')}) "
            f"but the spec asks for {spec.venv['requirements']} (index {spec.venv['index_url']}): " + _hint(spec)
        )
    _check_pins(spec, spec.venv["requirements"])


def _python_version(py: str, spec: EnvSpec) -> str:
    try:
        r = subprocess.run(
            [py, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise HarnessError(f"{spec.path}: python {py} cannot run: {err}") from None
    return r.stdout.strip()


def check_overlay(spec: EnvSpec) -> None:
    """The overlay of a ``mode: overlay`` release: unpacked completely (its record), the release the spec names,
    for the Python that will import it (a wheel's compiled part loads in one Python version only)."""
    od = spec.overlay_dir()
    assert od is not None and spec.triton is not None
    hint = f"`harness env unpack PARTS --dest {od}` (PARTS: what `harness env pack {spec.triton}` wrote)"
    if not od.is_dir():
        raise HarnessError(f"{spec.path}: overlay {od} does not exist: unpack the release there: {hint}")
    rec = read_record(od / OVERLAY_MARKER)
    if rec is None:
        raise HarnessError(
            f"{spec.path}: overlay {od} has no record of a completed unpack ({OVERLAY_MARKER}): unpack it with {hint}"
        )
    if not same_version(str(rec.get("version", "")), spec.triton):
        raise HarnessError(
            f"{spec.path}: overlay {od} holds triton {rec.get('version')} but the spec names triton {spec.triton}"
        )
    packed = str(rec.get("python") or "")
    py = spec.interpreter()
    if packed and (have := _python_version(py, spec)) and have != packed:
        raise HarnessError(
            f"{spec.path}: overlay {od} was packed for Python {packed} but {py} is Python {have}: "
            f"pack it again with `harness env pack {spec.triton} --python {have}`"
        )


def read_record(path: Path) -> dict[str, Any] | None:
    """A JSON object file harness wrote (a venv's or an overlay's record); None if absent or not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def release_env(version: str, mode: str, like: EnvSpec, folder: Path, root: Path | None = None) -> EnvSpec:
    """An env spec for Triton ``version`` that differs from ``like`` (the golden env) in its Triton only: the
    same interpreter (overlay) or base interpreter (venv), knobs and timing. Written as a real spec file in
    ``folder`` (``triton-VERSION.yaml``: `harness env create` and `env show` take it as any other), with the venv,
    overlay and Triton cache under ``root`` (default: the current folder) as absolute paths."""
    from harness.inputs.envschema import MODES, OVERLAY_ROOT, release_version

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


def create_env(spec: EnvSpec, log=print) -> str:
    """Create the spec's venv if it has none yet, install its requirements (again: an existing venv is verified,
    not rebuilt), check its pins and record the install in :data:`MARKER`; return the interpreter path."""
    if spec.mode == "overlay":
        check_overlay(spec)  # nothing to install: the overlay comes from `harness env unpack`
        return spec.interpreter()
    if not spec.venv:
        py = spec.interpreter()
        if not shutil.which(py) and not Path(py).exists():
            raise HarnessError(f"{spec.path}: python {py!r} not found")
        return py
    vp = spec.venv_dir()
    assert vp is not None
    py = spec.interpreter()
    reqs = spec.venv["requirements"]
    site = spec.venv["system_site_packages"]
    uv = shutil.which("uv")
    if not Path(py).exists():
        log(f"creating {vp} ({'uv' if uv else 'venv'})")
        base = spec.venv["base_python"] or sys.executable
        cmd = (
            [uv, "venv", "--python", base, str(vp)] + (["--system-site-packages"] if site else [])
            if uv
            else [base, "-m", "venv", str(vp)] + (["--system-site-packages"] if site else [])
        )
        _check(cmd, spec)
    # a record of these very requirements stays while they are verified (a run in another process keeps using the
    # venv meanwhile); any other record goes now, and a failed install or pin check below leaves no record standing
    if _read_marker(vp) != _record(spec):
        (vp / MARKER).unlink(missing_ok=True)
    try:
        if reqs:
            idx = spec.venv["index_url"]
            if uv:
                cmd = [uv, "pip", "install", "--python", py, *reqs] + (["--index-url", idx] if idx else [])
            else:
                cmd = [py, "-m", "pip", "install", "-q", "--disable-pip-version-check", *reqs]
                cmd += ["--index-url", idx] if idx else []
            log(f"installing {' '.join(reqs)} into {vp}")
            _check(cmd, spec)
        _check_pins(spec, reqs)
    except BaseException:
        (vp / MARKER).unlink(missing_ok=True)
        raise
    write_text(vp / MARKER, json.dumps(_record(spec), indent=2) + "\n")
    return py


def _check(cmd: list[str], spec: EnvSpec) -> None:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as err:
        raise HarnessError(f"{spec.path}: `{' '.join(cmd[:4])} ...` cannot run: {err}") from None
    if r.returncode:
        last = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise HarnessError(f"{spec.path}: `{' '.join(cmd[:4])} ...` failed: {last[0]}")


_PROBE = r"""
import json, os, sys
out = {"executable": sys.executable, "version": sys.version.split()[0]}
for mod in ("triton", "torch"):
    try:
        m = __import__(mod)
        out[mod] = {"version": getattr(m, "__version__", "?"), "path": os.path.dirname(m.__file__)}
    except Exception as err:
        out[mod] = {"error": f"{type(err).__name__}: {err}".splitlines()[0]}
print(json.dumps(out))
"""


def probe(spec: EnvSpec, timeout: float = 300) -> dict[str, Any]:
    """Run the spec's interpreter with its environment and overlay: {executable, version, triton: {version, path},
    torch: {...}}. An interpreter that does not run, or a Triton or torch it cannot import, is one HarnessError."""
    py = spec.interpreter()
    try:
        r = subprocess.run([py, "-c", _PROBE], capture_output=True, text=True, env=spec.environ(), timeout=timeout)
        info = json.loads(r.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired) as err:
        raise HarnessError(f"{spec.path}: python {py} cannot run: {err}") from None
    except (ValueError, IndexError):
        why = (r.stderr.strip().splitlines() or [f"exit code {r.returncode}"])[-1]
        raise HarnessError(f"{spec.path}: python {py} did not answer: {why}") from None
    for mod in ("triton", "torch"):
        if "error" in info.get(mod, {}):
            raise HarnessError(f"{spec.path}: {mod} is not importable in {py}: {info[mod]['error']}")
    return info

"""The Python an env spec names, made and checked: ``harness env create`` builds a venv (uv when present, else
venv + pip) and installs its requirements; :func:`check_venv` (run, env show, bisect, retune) refuses what would
run another Triton than the spec says; :func:`probe` asks the interpreter which Triton and torch it imports.

An overlay is used only when ``harness env unpack`` completed it: :data:`OVERLAY_MARKER` in its folder names the
release, checked against the spec's ``triton:`` (:func:`check_venv`). A venv is used only when its pins are
installed: ``harness env create`` writes :data:`MARKER` into the venv after a successful install, and
:func:`check_venv` refuses a venv without it, made for other requirements, or whose ``name==version`` pins are not
the installed versions.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from harness.envs.schema import pins, same_version
from harness.envs.spec import EnvSpec
from harness.errors import HarnessError
from harness.fsutil import write_text

__all__ = ["MARKER", "OVERLAY_MARKER", "create_env", "check_venv", "check_overlay", "read_record", "probe"]

#: written into a venv by `harness env create` once its requirements are installed and its pins verified
MARKER = ".harness-env.json"
#: written into an overlay folder by `harness env unpack` once every part is verified and unpacked
OVERLAY_MARKER = ".harness-overlay.json"


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
    """Refuse (one line) a ``pythonpath`` entry that does not exist (envs/tot.yaml's overlay); a venv that does not
    exist, was not completed by `harness env create`, was made for other requirements, or whose pins are not what
    is installed; and an overlay (``mode: overlay``) that `harness env unpack` did not complete, holds another
    release, or was packed for another Python. Other specs pass."""
    if spec.mode == "overlay":
        check_overlay(spec)
    else:
        _check_venv(spec)
    spec.checked_pythonpath()  # before any worker starts, not when the first one starts
    if spec.venv is None:
        _check_interpreter(spec)


def _check_interpreter(spec: EnvSpec) -> None:
    """The spec's ``python:`` is a file, or a name found on PATH (else every worker of the env would fail to start,
    after the other envs' workers started)."""
    py = spec.interpreter()
    if not Path(py).is_file():
        where = "no such file" if os.path.isabs(spec.python or "python3") else "not found on PATH"
        raise HarnessError(f"{spec.path}: python {py} cannot run: {where}")


def _check_venv(spec: EnvSpec) -> None:
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

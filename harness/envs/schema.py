"""The env-spec schema: which keys an env spec (envs/*.yaml) may have, their types, and variable expansion.

Pure: a parsed YAML document and an environment in, checked and expanded values out. Every mistake is one
:class:`HarnessError` naming the file, the key and what is wrong, so it is refused before anything runs.

Variables, in every value that names an interpreter, a path, a requirement or an environment variable's value:

- ``${VAR}`` / ``$VAR`` must be set. An unset one is an error, never an empty string: an overlay path that
  silently became nothing would run the same Triton under both "stacks".
- ``${VAR:-default}``: the default when VAR is unset or empty; ``${VAR-default}``: only when unset (shell
  rules; the default may itself use ``$OTHER``, but not braces).
- ``$$`` is a literal ``$``; ``~`` at the start of a path is the home folder.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from collections.abc import Mapping
from typing import Any

from harness.errors import HarnessError, did_you_mean, unknown_key
from harness.worker.backends import NAMES

#: the env's ``timing:`` values: ``auto`` and every backend of worker/backends.py
TIMINGS = NAMES
TOP_KEYS = (
    "name",
    "description",
    "python",
    "venv",
    "triton",
    "mode",
    "overlay",
    "pythonpath",
    "env",
    "timing",
    "cache_dir",
)
#: how an env spec that names a Triton release (``triton: 3.8.0``) gets it: a venv with ``triton==3.8.0``
#: installed (online), or the folder ``harness env unpack`` made of its bundle, ahead of site-packages (offline)
MODES = ("venv", "overlay")
#: where ``harness env unpack`` puts a release and where ``mode: overlay`` looks for it, unless told otherwise
OVERLAY_ROOT = ".harness/triton"
VENV_KEYS = ("path", "system_site_packages", "requirements", "index_url", "base_python")

_REF = re.compile(r"\$(?:(?P<dollar>\$)|\{(?P<braced>[^}]*)(?P<close>\}?)|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))")
_BRACED = re.compile(r"(?P<var>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?-)(?P<default>.*))?", re.S)
_VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SPEC_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
#: a release as the package index names it: 3.8.0, 3.7.1, 3.5.0rc1, 3.6.0.post1 (no local part: no wheel has one)
_RELEASE = re.compile(r"\d+(?:\.\d+){1,3}(?:(?:a|b|rc)\d+)?(?:\.post\d+)?(?:\.dev\d+)?")


def variables(value: str) -> list[str]:
    """The names of the variables ``value`` refers to, in order (``$NAME``, ``${NAME}``, ``${NAME:-default}``;
    ``$$`` is none)."""
    names = []
    for m in _REF.finditer(value):
        b = _BRACED.fullmatch(m["braced"]) if m["braced"] is not None else None
        if m["bare"] or b is not None:
            names.append(m["bare"] or b["var"])
    return names


def expand(value: str, where: str, environ: Mapping[str, str]) -> str:
    """``value`` with its variables substituted (see the module docstring); unset ones raise, naming ``where``."""

    def one(m: re.Match[str]) -> str:
        if m["dollar"]:
            return "$"
        if m["bare"]:
            var, op, default = m["bare"], None, ""
        else:
            b = _BRACED.fullmatch(m["braced"])
            if not m["close"] or b is None:
                raise HarnessError(
                    f"{where}: malformed variable reference '{m[0]}' (write ${{NAME}}, ${{NAME:-default}} or $$)"
                )
            var, op, default = b["var"], b["op"], b["default"] or ""
        val = environ.get(var)
        if (op == ":-" and not val) or (op == "-" and val is None):
            return expand(default, where, environ)
        if val is None:
            raise HarnessError(f"{where}: ${{{var}}} is not set (export it, or give a default: ${{{var}:-...}})")
        return val

    return _REF.sub(one, value)


def kind(value: Any) -> str:
    """How a YAML value reads to a user: 'a number', 'a list', ..."""
    if isinstance(value, bool):
        return "true/false"
    if value is None:
        return "nothing (null)"
    for types, name in ((str, "a string"), ((int, float), "a number"), (list, "a list"), (dict, "a mapping")):
        if isinstance(value, types):
            return name
    return f"a {type(value).__name__}"


def _one_line(text: str) -> bool:
    """No control characters (NUL, CR, ...) nor line breaks: nothing a path, a command or an error line can hold."""
    return not any(unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in text)


def _key(key: Any) -> str:
    return str(key) if isinstance(key, str) and _one_line(key) else repr(key).strip("'\"")


def _text(value: Any, where: str, *, path: bool, environ: Mapping[str, str], empty_ok: bool = False) -> str:
    if not isinstance(value, str):
        shown = repr(value) if isinstance(value, (bool, int, float)) else kind(value)
        raise HarnessError(f"{where}: expected a string, got {shown} ({kind(value)}); quote it if you meant the text")
    if not _one_line(value):
        raise HarnessError(f"{where}: contains a control character or line break: {value!r}")
    out = expand(value, where, environ)
    if path:
        out = os.path.expanduser(out)
    if not out.strip() and not empty_ok:
        raise HarnessError(f"{where}: is empty" + (f" (after expanding {value!r})" if value else ""))
    return out


def _text_list(value: Any, where: str, *, path: bool, environ: Mapping[str, str]) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        hint = f": write [{json.dumps(value)}]" if isinstance(value, str) else ""
        raise HarnessError(f"{where}: expected a list of strings, got {kind(value)}{hint}")
    return [_text(v, f"{where}[{i}]", path=path, environ=environ) for i, v in enumerate(value)]


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise HarnessError(f"{where}: expected true or false, got {kind(value)}")
    return value


def _mapping(value: Any, where: str, known: tuple[str, ...], what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise HarnessError(f"{where}: expected a mapping ({what}), got {kind(value)}")
    for k in value:
        if not isinstance(k, str) or k not in known:
            raise unknown_key(where, _key(k), known)
    return value


def _env_vars(value: Any, where: str, environ: Mapping[str, str]) -> dict[str, str | None]:
    """``env:``: variable -> scalar value (null: the spec does not set it). true/false is refused: Triton's knobs
    read "1"/"0", and YAML's ``true`` would arrive as the string "True"."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise HarnessError(f"{where}: expected a mapping of variable -> value, got {kind(value)}")
    out: dict[str, str | None] = {}
    for k, v in value.items():
        if not isinstance(k, str) or not _VAR_NAME.fullmatch(k):
            raise HarnessError(f"{where}: {k!r} is not a variable name (letters, digits, _)")
        at = f"{where}: {k}"
        if v is None:
            out[k] = None
        elif isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise HarnessError(f'{at}: expected a string or a number, got {kind(v)} (quote it: "1", "0")')
        else:
            out[k] = _text(str(v), at, path=False, environ=environ, empty_ok=True)
    return out


def _venv(value: Any, where: str, environ: Mapping[str, str]) -> dict[str, Any]:
    v = _mapping(value, where, VENV_KEYS, "path, requirements, ...")
    if "path" not in v:
        raise HarnessError(f"{where}: missing key 'path' (the venv's folder)")

    def opt(key: str, path: bool) -> str | None:
        return None if v.get(key) is None else _text(v[key], f"{where}: {key}", path=path, environ=environ)

    return {
        "path": _text(v["path"], f"{where}: path", path=True, environ=environ),
        "system_site_packages": _bool(v.get("system_site_packages", True), f"{where}: system_site_packages"),
        "requirements": _text_list(v.get("requirements"), f"{where}: requirements", path=False, environ=environ),
        "index_url": opt("index_url", False),
        "base_python": opt("base_python", True),
    }


def check_spec(data: Any, where: str, stem: str, environ: Mapping[str, str]) -> dict[str, Any]:
    """The spec document ``data`` (from the file ``where``) checked and expanded: the keys of
    :class:`harness.envspec.EnvSpec`. ``stem`` is the default name."""
    spec = _mapping({} if data is None else data, where, TOP_KEYS, "name, python, venv, ...")
    if spec.get("python") is not None and spec.get("venv") is not None:
        raise HarnessError(f"{where}: give either 'python' or 'venv', not both")
    name = spec.get("name")
    if name is None:
        name = stem
    elif not isinstance(name, str) or not _SPEC_NAME.fullmatch(name):
        raise HarnessError(
            f"{where}: name: expected a name of letters, digits, '.', '_', '-' (it names the Triton cache folder), "
            f"got {name!r}"
        )
    if spec.get("description") is not None and not isinstance(spec["description"], str):
        raise HarnessError(f"{where}: description: expected a string, got {kind(spec['description'])}")
    timing = spec.get("timing", "auto")
    if not isinstance(timing, str) or timing not in TIMINGS:
        hint = did_you_mean(timing, TIMINGS) if isinstance(timing, str) else ""
        raise HarnessError(f"{where}: timing: expected one of {', '.join(TIMINGS)}, got {timing!r}{hint}")

    def opt_path(key: str) -> str | None:
        return None if spec.get(key) is None else _text(spec[key], f"{where}: {key}", path=True, environ=environ)

    out = {
        "name": name,
        "python": opt_path("python"),
        # a release spec's venv is read with the release (its path may be left out)
        "venv": None
        if spec.get("venv") is None or "triton" in spec
        else _venv(spec["venv"], f"{where}: venv", environ),
        "env": _env_vars(spec.get("env"), f"{where}: env", environ),
        "pythonpath": _text_list(spec.get("pythonpath"), f"{where}: pythonpath", path=True, environ=environ),
        "timing": timing,
        "cache_dir": opt_path("cache_dir"),
        "triton": None,
        "mode": None,
        "overlay": None,
    }
    if spec.get("triton") is None:
        for key in ("mode", "overlay"):
            if spec.get(key) is not None:
                raise HarnessError(f"{where}: {key}: only with 'triton: VERSION' (the release it says how to get)")
        return out
    return _with_release(spec, out, where, environ)


def release_version(value: Any, where: str, environ: Mapping[str, str] | None = None) -> str:
    """A Triton release as the package index names it ('3.8.0'); YAML's ``3.8`` (a number) is refused."""
    if not isinstance(value, str):
        shown = repr(value) if isinstance(value, (bool, int, float)) else kind(value)
        raise HarnessError(f'{where}: expected a release such as "3.8.0", got {shown} ({kind(value)}): quote it')
    text = _text(value, where, path=False, environ=environ or {})
    if not _RELEASE.fullmatch(text):
        raise HarnessError(f"{where}: {text!r} is not a release version (such as 3.8.0 or 3.5.0rc1)")
    return text


_TRITON_REQ = re.compile(r"\s*triton\s*(?:[=<>!~@\[;(]|$)|(?:.*/)?triton-\d[^/]*\.whl\s*$", re.I)


def _with_release(spec: dict[str, Any], out: dict[str, Any], where: str, environ: Mapping[str, str]) -> dict[str, Any]:
    """``triton: VERSION`` with ``mode: venv`` (default): a venv at ``.venvs/triton-VERSION`` (or ``venv: path``)
    with ``triton==VERSION`` added to its requirements; ``mode: overlay``: the unpacked bundle (``harness env
    unpack``) ahead of site-packages, from ``overlay:`` or ``$HARNESS_TRITON_DIR/VERSION`` (default
    ``.harness/triton/VERSION``), over ``python:`` (default python3)."""
    version = release_version(spec["triton"], f"{where}: triton", environ)
    mode = spec.get("mode", "venv")
    if not isinstance(mode, str) or mode not in MODES:
        hint = did_you_mean(mode, MODES) if isinstance(mode, str) else ""
        raise HarnessError(f"{where}: mode: expected one of {', '.join(MODES)}, got {mode!r}{hint}")
    out.update(triton=version, mode=mode)
    if mode == "venv":
        if spec.get("python") is not None:
            raise HarnessError(
                f"{where}: python: a 'mode: venv' release makes its own venv (give venv: {{base_python: ...}}), "
                "or use 'mode: overlay' over this interpreter"
            )
        if spec.get("overlay") is not None:
            raise HarnessError(f"{where}: overlay: only with 'mode: overlay'")
        given = spec.get("venv")
        venv = dict(given) if isinstance(given, dict) else given
        if isinstance(venv, dict) and venv.get("path") is None:
            venv["path"] = f".venvs/triton-{version}"
        out["venv"] = _venv(
            venv if venv is not None else {"path": f".venvs/triton-{version}"}, f"{where}: venv", environ
        )
        reqs = out["venv"]["requirements"]
        for i, r in enumerate(reqs):
            if _TRITON_REQ.match(r) and pins([r]).get("triton") != version:
                raise HarnessError(
                    f"{where}: venv: requirements[{i}]: {r!r} names triton too; 'triton: {version}' installs "
                    f"triton=={version}: leave it out"
                )
        out["venv"]["requirements"] = [f"triton=={version}"] + [r for r in reqs if not _TRITON_REQ.match(r)]
        return out
    if spec.get("venv") is not None:
        raise HarnessError(f"{where}: venv: 'mode: overlay' puts the release over an interpreter; give python:")
    root = os.path.expanduser(environ.get("HARNESS_TRITON_DIR") or OVERLAY_ROOT)
    overlay = spec.get("overlay")
    overlay = (
        f"{root}/{version}" if overlay is None else _text(overlay, f"{where}: overlay", path=True, environ=environ)
    )
    out["overlay"] = overlay
    out["pythonpath"] = [overlay, *out["pythonpath"]]
    return out


_PIN = re.compile(r"\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*==\s*(?P<version>[A-Za-z0-9.+!_-]+)\s*")


def pins(requirements: list[str]) -> dict[str, str]:
    """{distribution: version} of the exact ``name==version`` pins (wheels, ranges, git refs: not checked)."""
    return {m["name"]: m["version"] for r in requirements if (m := _PIN.fullmatch(r))}


def same_version(a: str, b: str) -> bool:
    try:
        from packaging.version import InvalidVersion, Version
    except ImportError:  # packaging is not a dependency of ours: exact text then
        return a == b
    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return a == b

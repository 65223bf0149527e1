"""The offline bundle of a Triton release, as data: what a GPU node never loads, the manifest, the parts. Pure.

A bundle is the release's wheel, minus what an NVIDIA node never loads, as one ``tar.xz`` cut into parts of a
chosen size, each part in its own folder (``p0/``, ``p1/``, ...) with a copy of ``manifest.json``: the sha256
and size of every part and of the whole archive, the release, the Python it was packed for, what was dropped and
which files must be executable. ``harness env pack`` writes it (harness/envs/pack.py), ``harness env unpack``
checks every part against the manifest before it unpacks anything into the overlay folder.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from typing import Any

from harness.errors import HarnessError

FORMAT = "harness-triton-bundle"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
DEFAULT_PART_MB = 16.0  # a part rides in one upload beside a checkout of this repository (44 MiB with its reports)
#: manylinux tags of an x86-64 or aarch64 Linux node, newest first (what `pip download --platform` takes)
PLATFORMS = ("manylinux_2_28_{arch}", "manylinux_2_27_{arch}", "manylinux_2_17_{arch}", "manylinux2014_{arch}")
ARCHES = ("x86_64", "aarch64")

#: (pattern over the path inside the wheel, why an NVIDIA node never needs it); fnmatch, '*' crosses '/'
DROP = (
    ("triton/backends/amd/*", "AMD backend"),
    ("*_static.a", "static library (used only to link, never loaded)"),
    ("triton/instrumentation/libGPUInstrumentationTestLib.so", "LLVM pass plugin of Triton's own tests"),
)
#: never dropped, whatever DROP says: Triton 3.9 looks up ptxas-blackwell even on sm_90
KEEP = ("triton/backends/nvidia/bin/*",)
#: made executable after unpacking whatever the wheel recorded (a wheel unzipped by Python loses the exec bits)
EXECUTABLE = ("triton/backends/*/bin/*",)

_WHEEL = re.compile(
    r"(?P<name>[A-Za-z0-9_.]+)-(?P<version>[^-]+)(?:-(?P<build>\d[^-]*))?-(?P<python>[^-]+)-(?P<abi>[^-]+)-"
    r"(?P<platform>[^-]+)\.whl"
)


def drop_reason(name: str) -> str | None:
    """Why the wheel member ``name`` stays out of the bundle, or None when it goes in."""
    if any(fnmatch.fnmatchcase(name, k) for k in KEEP):
        return None
    return next((why for pattern, why in DROP if fnmatch.fnmatchcase(name, pattern)), None)


def executable(name: str) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in EXECUTABLE)


def safe_member(name: str) -> bool:
    """A relative path that stays inside the folder it is unpacked into (no '/x', '..', '\\', drive letters)."""
    if not name or name.startswith("/") or "\\" in name or re.match(r"[A-Za-z]:", name):
        return False
    return all(part not in ("..",) for part in name.split("/"))


def entry_points_without_dropped(text: str, dropped: Iterable[str]) -> str:
    """``entry_points.txt`` without the entry points whose module was dropped (``amd = triton.backends.amd``):
    Triton imports every backend it finds there."""
    gone = {d.rstrip("/").replace("/", ".") for d in dropped}
    out = []
    for line in text.splitlines(keepends=True):
        _, eq, target = line.partition("=")
        module = target.strip().split(":")[0].strip()
        if eq and any(module == g or module.startswith(g + ".") for g in gone):
            continue
        out.append(line)
    return "".join(out)


def record_without_dropped(text: str, dropped: set[str]) -> str:
    """The wheel's RECORD without the rows of files that were dropped."""
    return "".join(line for line in text.splitlines(keepends=True) if line.split(",", 1)[0] not in dropped)


#: shared objects whose DWARF debug sections `pack` strips (``strip --strip-debug``: the symbol table stays, so a
#: crash's backtrace still names functions). Triton 3.9's libtriton.so is 500 MB with them, 235 MB without.
STRIP_DEBUG = ("triton/*.so", "triton/*.so.*")
#: members smaller than this are left as they are (not worth a strip process each)
STRIP_MIN_BYTES = 1 << 20


def strippable(name: str, size: int) -> bool:
    """Whether ``pack`` strips the wheel member ``name`` of ``size`` bytes of its debug sections."""
    if size < STRIP_MIN_BYTES or any(fnmatch.fnmatchcase(name, p) for p in KEEP):
        return False
    return any(fnmatch.fnmatchcase(name, p) for p in STRIP_DEBUG)


def record_with(text: str, changed: Mapping[str, tuple[str, int]]) -> str:
    """The wheel's RECORD with new ``sha256=`` digests (urlsafe base64, no padding, as wheels write them) and sizes
    for the files in ``changed`` (name → (digest, bytes)), so the record still tells the truth about them."""
    out = []
    for line in text.splitlines(keepends=True):
        name = line.split(",", 1)[0]
        if name in changed:
            digest, size = changed[name]
            end = "\n" if line.endswith("\n") else ""
            line = f"{name},sha256={digest},{size}{end}"
        out.append(line)
    return "".join(out)


def dropped_packages() -> list[str]:
    """The package folders DROP removes whole (``triton/backends/amd``), for the entry points."""
    return sorted({p[: -len("/*")] for p, _ in DROP if p.endswith("/*") and "*" not in p[:-2]})


def wheel_info(filename: str) -> dict[str, str]:
    """name, version, python, abi, platform of a wheel's file name; a name that is not a wheel's is refused."""
    m = _WHEEL.fullmatch(filename)
    if not m:
        raise HarnessError(f"{filename}: not a wheel file name (NAME-VERSION-PYTHON-ABI-PLATFORM.whl)")
    return {k: v for k, v in m.groupdict().items() if v is not None}


def python_tag(python: str) -> str:
    """'3.12' -> 'cp312'; anything but MAJOR.MINOR is refused."""
    m = re.fullmatch(r"(\d)\.(\d{1,2})", python)
    if not m:
        raise HarnessError(f"--python {python!r}: expected MAJOR.MINOR, such as 3.12")
    return f"cp{m[1]}{m[2]}"


def pip_download_args(
    version: str,
    python: str,
    arch: str,
    dest: str,
    index_url: str | None = None,
    find_links: str | None = None,
) -> list[str]:
    """The arguments after ``python -m pip`` that fetch the release's wheel for a Linux node running ``python``."""
    if arch not in ARCHES:
        raise HarnessError(f"--arch {arch!r}: expected one of {', '.join(ARCHES)}")
    args = ["download", "-q", "--disable-pip-version-check", "--no-deps", "--only-binary=:all:"]
    args += ["--python-version", python, "--implementation", "cp", "--abi", python_tag(python), "--abi", "none"]
    for p in PLATFORMS:
        args += ["--platform", p.format(arch=arch)]
    args += ["--platform", "any"]
    if index_url:
        args += ["--index-url", index_url]
    if find_links:
        args += ["--no-index", "--find-links", find_links] if not index_url else ["--find-links", find_links]
    return [*args, "-d", dest, f"triton=={version}"]


def part_name(archive: str, i: int) -> str:
    return f"{archive}.part{i:02d}"


def part_count(size: int, part_bytes: int) -> int:
    return max(1, -(-size // part_bytes))


def part_bytes(part_mb: float) -> int:
    """--part-mb in bytes (MiB, as `split -b 45M`): at least 1 KiB."""
    if not part_mb * 2**20 >= 1024 or part_mb != part_mb or part_mb == float("inf"):
        raise HarnessError(f"--part-mb {part_mb:g}: expected a size of at least 0.001 (MiB)")
    return int(part_mb * 2**20)


# ------------------------------------------------------------------------------------------ the manifest


def manifest(
    version: str,
    python: str,
    wheel: Mapping[str, Any],
    archive: Mapping[str, Any],
    parts: list[Mapping[str, Any]],
    dropped: Mapping[str, Any],
    executables: list[str],
    created_at: str,
    stripped: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "package": "triton",
        "version": version,
        "python": python,
        "wheel": dict(wheel),
        "archive": dict(archive),
        "parts": [dict(p) for p in parts],
        "dropped": dict(dropped),
        "executables": list(executables),
        "stripped": dict(stripped or {"files": 0, "bytes": 0}),
        "created_at": created_at,
        "created_by": "harness env pack",
    }


_HEX64 = re.compile(r"[0-9a-f]{64}")


def check_manifest(data: Any, where: str) -> dict[str, Any]:
    """A manifest read back: every field `unpack` relies on present and of its type (one line naming ``where``)."""

    def bad(what: str) -> HarnessError:
        return HarnessError(f"{where}: {what}: not a bundle manifest written by `harness env pack`")

    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise bad("no 'format: harness-triton-bundle'")
    if data.get("format_version") != FORMAT_VERSION:
        raise HarnessError(f"{where}: format_version {data.get('format_version')!r}: this harness reads version 1")
    for key in ("version", "python"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise bad(f"'{key}' missing")
    arch, parts = data.get("archive"), data.get("parts")
    if not isinstance(arch, dict) or not isinstance(arch.get("name"), str) or not safe_member(arch["name"]):
        raise bad("'archive' missing")
    if not isinstance(parts, list) or not parts:
        raise bad("'parts' missing")
    for i, p in enumerate([arch, *parts]):
        what = "archive" if i == 0 else f"parts[{i - 1}]"
        if not isinstance(p, dict) or not isinstance(p.get("name"), str) or "/" in p["name"]:
            raise bad(f"{what}: no file name")
        if not isinstance(p.get("sha256"), str) or not _HEX64.fullmatch(p["sha256"]):
            raise bad(f"{what}: no sha256")
        if isinstance(p.get("bytes"), bool) or not isinstance(p.get("bytes"), int) or p["bytes"] < 0:
            raise bad(f"{what}: no size")
    if sum(p["bytes"] for p in parts) != arch["bytes"]:
        raise HarnessError(f"{where}: the parts' sizes do not add up to the archive's ({arch['bytes']} bytes)")
    if not all(isinstance(e, str) and safe_member(e) for e in data.get("executables", [])):
        raise bad("'executables' holds a path outside the bundle")
    return data


def plan_parts(man: Mapping[str, Any], found: Mapping[str, list[tuple[str, int]]], where: str) -> list[str]:
    """The file to read for each part, in order, from ``found`` (part name -> [(path, size)] seen under
    ``where``): a missing part, or a part whose size is not the manifest's, is one line naming it."""
    out = []
    n = len(man["parts"])
    for i, p in enumerate(man["parts"]):
        copies = found.get(p["name"], [])
        if not copies:
            raise HarnessError(
                f"{where}: part {i + 1} of {n} ({p['name']}) is not there: copy every p*/ folder of the bundle"
            )
        right = [path for path, size in copies if size == p["bytes"]]
        if not right:
            path, size = copies[0]
            raise HarnessError(f"{path}: {size} bytes, the manifest says {p['bytes']}: an incomplete copy?")
        out.append(right[0])
    return out

"""The files a suite is made of: the suite file, the suites it includes, the shapes files its entries read
(``zip: shapes.csv``) and its kernels' files, each with what it is, so that a run can refuse an output that would
overwrite one of them (``--out cpu.yaml``) before anything is measured."""

from __future__ import annotations

import contextlib
from pathlib import Path

import yaml

from harness.fsutil import same_file
from harness.inputs.suite import Case


def suite_sources(suite: Path, cases: list[Case]) -> dict[Path, str]:
    """Resolved path → what it is (``the suite``, ``a shapes file of the suite (zip: in s.yaml)``, ...), for a
    suite that :func:`harness.inputs.suite.load_suite` has already checked (so every file named here is read)."""
    found: dict[Path, str] = {}
    _walk(Path(suite).resolve(), "the suite", found)
    for c in cases:
        found.setdefault(c.kernel.file.resolve(), f"the kernel file of {c.name}")
    return found


def suite_content(suite: str | Path) -> str | None:
    """What a suite *is*, wherever it sits: the SHA-256 over the SHA-256s (sorted) of the suite file, the suites
    it includes and the shape files it reads; the same for every selection of it (a shard, a --filter), another
    for a suite of the same name with other entries. None where a file cannot be read."""
    import hashlib

    found: dict[Path, str] = {}
    _walk(Path(suite).resolve(), "the suite", found)
    try:
        digests = sorted(hashlib.sha256(p.read_bytes()).hexdigest() for p in found)
    except OSError:
        return None
    return hashlib.sha256("\n".join(digests).encode()).hexdigest()


def file_content(path: str | Path) -> str | None:
    """The SHA-256 of a file's bytes (a kernel's source: two runs of one kernel name on other code are two
    kernels); None where it cannot be read."""
    import hashlib

    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def _walk(p: Path, what: str, found: dict[Path, str]) -> None:
    if p in found:
        return
    found[p] = what
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return  # load_suite read it; nothing more to name
    if not isinstance(data, dict):
        return
    for name in data.get("include") or []:
        if isinstance(name, str):
            _walk((p.parent / name).resolve(), f"a suite that {p.name} includes", found)
    for entry in [data.get("defaults"), *(data.get("entries") or [])]:
        zipped = entry.get("zip") if isinstance(entry, dict) else None
        if isinstance(zipped, str):
            found.setdefault((p.parent / zipped).resolve(), f"a shapes file of the suite (zip: in {p.name})")


def what_it_is(out: Path, inputs: dict[Path, str]) -> str | None:
    """What ``out`` is among ``inputs`` (a resolved path → what), or None when it is none of them (or cannot be
    told: a path it may not look at)."""
    for p, what in inputs.items():
        with contextlib.suppress(OSError):
            if same_file(out, p):
                return what
    return None

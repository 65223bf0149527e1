"""Output files that are never half-written and never written over an input or a file harness did not write.

Every stage that writes a whole file (sidecars, compare CSV and metadata, markdown, reports) goes through
:func:`atomic_write`: the bytes land in a temporary file beside the target, are fsync'ed, and replace it in one
rename, so a reader (or a killed process) sees the old file or the new one, never a truncated mix.

Every command that writes files checks them first with :func:`guard_outputs`, the one guard of output files
(outdir.prepare_out_dir is its counterpart for output folders): no output is an input, no two outputs are one
file, an existing file is replaced only where the option itself wrote it, and every path can be written.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from harness.errors import HarnessError


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike[str], mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Open a temporary file beside ``path``; on a clean exit it replaces ``path``, on an error it is removed."""
    target = Path(path)
    ensure_parent(target)
    binary = "b" in mode
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as err:
        raise HarnessError(f"{target}: cannot write: {err.strerror}") from None
    try:
        with os.fdopen(fd, mode, **({} if binary else {"encoding": encoding, "newline": ""})) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; an output is as readable as any file written here
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text(path: str | os.PathLike[str], text: str) -> Path:
    with atomic_write(path) as fh:
        fh.write(text)
    return Path(path)


def write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    with atomic_write(path, "wb") as fh:
        fh.write(data)
    return Path(path)


def ensure_parent(path: Path) -> None:
    """Create ``path``'s folder; a folder that cannot be made or written into is one line naming it."""
    check_writable("", path)


def check_writable(option: str, path: str | os.PathLike[str]) -> None:
    """An output path that cannot be written is one line before any work (``option`` names it in the message):
    a folder in its place, a file where a folder should be, a folder that cannot be made or written into."""
    p = Path(path)
    what = f"{option} {p}".strip()
    if p.is_dir():
        raise HarnessError(f"{what}: is a directory, expected a file name")
    blocker = next((a for a in p.parents if a.exists()), None)
    if blocker is not None and not blocker.is_dir():
        raise HarnessError(f"{what}: {blocker} is a file, not a folder")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise HarnessError(f"{what}: cannot create folder {p.parent}: {err.strerror}") from None
    if not os.access(p.parent, os.W_OK):
        raise HarnessError(f"{what}: folder {p.parent} is not writable")
    if p.exists() and not os.access(p, os.W_OK):
        raise HarnessError(f"{what}: the file is not writable")
    if not p.exists():
        _probe(what, p.parent)


def _probe(what: str, folder: Path) -> None:
    """A file made and removed in ``folder``: what the permissions do not tell (root is let into every folder, but
    /proc or a read-only mount still refuse a new file)."""
    probe = folder / f".harness-probe-{os.getpid()}-{threading.get_ident()}"
    try:
        os.close(os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return  # another of this process's probes: the folder takes files
    except OSError as err:
        raise HarnessError(f"{what}: cannot write into {folder}: {err.strerror}") from None
    with contextlib.suppress(OSError):
        probe.unlink()


def same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether two paths name one file (symlinks, ``./x`` vs ``x``, hard links), existing or not."""
    pa, pb = Path(a), Path(b)
    if pa.exists() and pb.exists():
        return os.path.samefile(pa, pb)
    return pa.resolve() == pb.resolve()


@dataclass(frozen=True)
class Output:
    """One file a command will write: the option that names it, the path (None: not asked for), which existing
    file it may replace (``ours``; None: only an empty one) and what that is, for the refusal's line."""

    option: str
    path: str | os.PathLike[str] | None
    ours: Callable[[Path], bool] | None = None
    what: str = "a file this option wrote"


def guard_outputs(outputs: Sequence[Output], inputs: Iterable[str | os.PathLike[str] | None] = ()) -> None:
    """The one guard of a command's output files, before any work; one line and exit 2 for the first of:

    - an output that is one of ``inputs`` (``--out golden.csv``), links and ``./`` resolved;
    - two outputs that are one file (``--markdown`` where ``--out`` writes);
    - an existing, non-empty file the option did not write (``ours``): harness replaces its own outputs, never a
      user's file, a database or another command's output;
    - a path that cannot be written (a folder in its place, a folder that cannot be made).
    """
    wanted = [o for o in outputs if o.path is not None]
    refuse_overwrite({o.option: o.path for o in wanted}, [i for i in inputs if i is not None and str(i) != ""])
    for k, a in enumerate(wanted):
        for b in wanted[k + 1 :]:
            if same_file(a.path, b.path):  # type: ignore[arg-type]
                raise HarnessError(f"{b.option} {b.path} is where {a.option} writes: give each its own file")
    for o in wanted:
        refuse_foreign(o.option, o.path, o.ours or (lambda p: False), o.what)
        check_writable(o.option, o.path)  # type: ignore[arg-type]


def json_object(path: str | os.PathLike[str]) -> dict | None:
    """A file's JSON object, or None where it cannot be read as one: what an output's ``ours`` asks of a file
    that is already there (is it the one this option wrote?), never an error of its own."""
    import json

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) else None


def refuse_overwrite(outputs: dict[str, str | os.PathLike[str] | None], inputs: list[str | os.PathLike[str]]) -> None:
    """One line and exit 2 when an output option names one of the inputs (``--out golden.csv``)."""
    for option, out in outputs.items():
        if out is None:
            continue
        for src in inputs:
            if same_file(out, src):
                raise HarnessError(f"{option} {out} is the input {src}: refusing to overwrite it")


def refuse_foreign(option: str, path: str | os.PathLike[str] | None, ours: Callable[[Path], bool], what: str) -> None:
    """One line and exit 2 when ``path`` holds a file this option did not write (``ours`` says which it did; an
    empty file has nothing to lose). Harness replaces its own outputs, never a user's file."""
    if path is None:
        return
    p = Path(path)
    try:
        if not p.is_file() or p.stat().st_size == 0 or ours(p):
            return
    except OSError:
        return  # unreadable: check_writable says what is wrong with it
    raise HarnessError(f"{option} {path}: exists and is not {what}: refusing to overwrite it (move it, or choose "
                       "another path)")  # fmt: skip


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The SHA-256 of a file's bytes (what ``sha256sum`` prints): how a calibration or an A/A a comparison used is
    named in its records."""
    import hashlib

    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def read_text_file(path: str | os.PathLike[str], missing: str, unreadable: str) -> str:
    """A text file's content (UTF-8), or one line: ``missing`` where it is not there, ``unreadable`` + the reason
    where it cannot be read."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise HarnessError(missing) from None
    except (OSError, UnicodeDecodeError) as err:
        raise HarnessError(f"{unreadable}: {err}") from None


def temp_beside(option: str, path: Path, what: str) -> Path:
    """A new hidden folder beside ``path`` (``.NAME.WHAT-…``) for work that is renamed into place when whole; one
    line naming ``option`` where its folder cannot be written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f".{path.name}.{what}-", dir=path.parent))
    except OSError as err:
        raise HarnessError(f"{option} {path}: cannot write there: {err.strerror}") from None

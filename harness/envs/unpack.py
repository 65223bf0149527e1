"""`harness env unpack`: a bundle of `harness env pack` as an overlay. Every part is checked (size, sha256) before
anything is unpacked; the archive is unpacked into a temporary folder beside the destination, checked whole, and
renamed into place with a record (env.OVERLAY_MARKER) that ``mode: overlay`` env specs check. A half-unpacked
overlay is never left behind."""

from __future__ import annotations

import hashlib
import io
import json
import lzma
import os
import shutil
import tarfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from harness.envs import bundle as B
from harness.envs.pack import CHUNK, Progress, default_overlay, no_progress
from harness.envs.venv import OVERLAY_MARKER, read_record
from harness.errors import HarnessError
from harness.fsutil import temp_beside, write_text
from harness.outdir import refuse_overlap


def read_bundle(src: str | os.PathLike[str]) -> tuple[dict[str, Any], list[Path]]:
    """The manifest of the bundle under ``src`` (its p*/ folders, or any folder holding its parts) and the file
    of each part in order; parts of two bundles, a missing or short part: one line naming it."""
    src = Path(src)
    if not src.is_dir():
        raise HarnessError(f"{src}: no such folder (the bundle's p*/ folders, gathered in one)")
    found = sorted(src.rglob(B.MANIFEST))
    if not found:
        raise HarnessError(f"{src}: no {B.MANIFEST} under it: not a bundle written by `harness env pack`")
    mans = []
    for p in found:
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError) as err:
            raise HarnessError(f"{p}: not a readable manifest: {err}") from None
        mans.append((p, B.check_manifest(data, str(p))))
    shas = {m["archive"]["sha256"]: (p, m) for p, m in mans}
    if len(shas) > 1:
        (p1, m1), (p2, m2) = list(shas.values())[:2]
        raise HarnessError(
            f"{src}: holds two bundles (triton {m1['version']} in {p1.parent}, triton {m2['version']} in "
            f"{p2.parent}): unpack one folder per bundle"
        )
    man = mans[0][1]
    names = {p["name"] for p in man["parts"]}
    seen: dict[str, list[tuple[str, int]]] = {}
    for f in src.rglob("*"):
        if f.name in names and f.is_file():
            seen.setdefault(f.name, []).append((str(f), f.stat().st_size))
    return man, [Path(p) for p in B.plan_parts(man, seen, str(src))]


class _Parts(io.RawIOBase):
    """The parts read one after the other as one stream, hashed as they are read."""

    def __init__(self, paths: list[Path], tick: Callable[[int], None]):
        self.files = iter(paths)
        self.cur: IO[bytes] | None = None
        self.sha = hashlib.sha256()
        self.tick = tick
        self._next()

    def _next(self) -> None:
        if self.cur is not None:
            self.cur.close()
        path = next(self.files, None)
        self.cur = open(path, "rb") if path is not None else None  # noqa: SIM115 - closed by _next / close

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:  # noqa: ANN001 - a writable buffer
        while self.cur is not None:
            n = self.cur.readinto(buf)
            if n:
                self.sha.update(memoryview(buf)[:n])
                self.tick(n)
                return n
            self._next()
        return 0

    def close(self) -> None:
        if self.cur is not None:
            self.cur.close()
            self.cur = None
        super().close()


def unpack(
    src: str | os.PathLike[str],
    dest: str | os.PathLike[str] | None = None,
    *,
    force: bool = False,
    log: Callable[[str], None] = print,
    progress: Progress = no_progress,
) -> tuple[Path, dict[str, Any]]:
    """Check every part of the bundle under ``src`` and unpack it into ``dest`` (default: default_overlay);
    return the overlay folder and its record. The same bundle unpacked there already is left as it is."""
    man, paths = read_bundle(src)
    version = man["version"]
    dest = Path(dest) if dest is not None else default_overlay(version)
    record_path = dest / OVERLAY_MARKER
    refuse_overlap("--dest", dest, [src])
    if dest.exists():
        if not dest.is_dir():
            raise HarnessError(f"--dest {dest}: is a file, expected a folder")
        old = read_record(record_path)
        if old and old.get("archive_sha256") == man["archive"]["sha256"]:
            log(f"{dest}: triton {version} from this bundle is unpacked there already")
            return dest, old
        if not old and any(dest.iterdir()):  # --force replaces only what `harness env unpack` wrote
            raise HarnessError(
                f"--dest {dest}: exists and is not an overlay unpacked by harness (no {OVERLAY_MARKER}): "
                "choose a new or empty --dest"
                + (" (--force replaces only an overlay harness unpacked)" if force else "")
            )
        if old and not force:
            raise HarnessError(
                f"--dest {dest}: exists and holds triton {old.get('version')}: pass --force to replace it, or choose another --dest"
            )
    _verify_parts(man, paths, progress)
    tmp = temp_beside("--dest", dest, "unpack")
    try:
        files = _extract(man, paths, tmp, progress)
        record = {
            "version": version,
            "python": man["python"],
            "archive_sha256": man["archive"]["sha256"],
            "wheel": man["wheel"].get("name"),
            "files": files,
            "unpacked_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "source": str(Path(src).resolve()),
        }
        write_text(tmp / OVERLAY_MARKER, json.dumps(record, indent=2) + "\n")
        _swap(tmp, dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log(f"unpacked triton {version} (Python {man['python']}) into {dest}: {files} files")
    return dest, record


def _verify_parts(man: dict[str, Any], paths: list[Path], progress: Progress) -> None:
    total, done = man["archive"]["bytes"], 0
    for part, path in zip(man["parts"], paths):
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            while chunk := fh.read(CHUNK):
                h.update(chunk)
                done += len(chunk)
                progress("verify", done, total)
        if h.hexdigest() != part["sha256"]:
            raise HarnessError(f"{path}: its sha256 is not the manifest's: a damaged copy (copy it again)")


def _extract(man: dict[str, Any], paths: list[Path], tmp: Path, progress: Progress) -> int:
    done = [0]

    def tick(n: int) -> None:  # compressed bytes read: shown against the archive's size
        done[0] += n
        progress("unpack", done[0], man["archive"]["bytes"])

    files = 0
    data_filter = getattr(tarfile, "data_filter", None)
    with _Parts(paths, tick) as stream:
        try:
            with tarfile.open(fileobj=stream, mode="r|xz") as tar:
                for member in tar:
                    if not B.safe_member(member.name) or not (member.isfile() or member.isdir()):
                        raise HarnessError(f"{paths[0]}: member {member.name!r} is not a plain file in the bundle")
                    if data_filter is not None:
                        tar.extract(member, tmp, filter="data")
                    else:  # Python < 3.10.12: the names were checked above
                        tar.extract(member, tmp)
                    files += member.isfile()
        except (tarfile.TarError, lzma.LZMAError, EOFError) as err:
            raise HarnessError(f"{paths[0]}: the archive does not unpack: {err}") from None
        while stream.read(CHUNK):  # the archive's end padding: part of the checksum
            pass
        if stream.sha.hexdigest() != man["archive"]["sha256"]:
            raise HarnessError(f"{paths[0]}: the parts together do not make the archive the manifest names")
    for name in man.get("executables", []):
        p = tmp / name
        if not p.is_file():
            raise HarnessError(f"{paths[0]}: the bundle lacks {name}, which its manifest lists")
        p.chmod(p.stat().st_mode | 0o755)
    return files


def _swap(tmp: Path, dest: Path) -> None:
    """``tmp`` becomes ``dest``; what was at ``dest`` goes only once the new folder is in place."""
    old = None
    if dest.exists():
        old = dest.with_name(f".{dest.name}.old-{os.getpid()}")
        os.replace(dest, old)
    os.replace(tmp, dest)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)

"""`harness env pack`: a Triton release as an offline bundle (`harness env unpack` makes it an overlay).

pack: the release's wheel (``pip download``, or a wheel file at hand) is streamed member by member into one
``tar.xz`` without what an NVIDIA node never loads (bundle.DROP), with the exec bits of the bundled tools set
(a wheel unzipped by Python loses them), then cut into parts of ``--part-mb`` MiB, one folder each, each with the
manifest. Nothing is unpacked to disk on the way: the largest wheel member is ~0.5 GB.

unpack: envs/unpack.py.
"""

from __future__ import annotations

import base64
import calendar
import contextlib
import hashlib
import io
import json
import lzma
import os
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from harness.envs import bundle as B
from harness.envs.schema import OVERLAY_ROOT, release_version, same_version
from harness.errors import HarnessError
from harness.fsutil import temp_beside, write_text

Progress = Callable[[str, int, int], None]  # (what, done bytes, total bytes)
CHUNK = 1 << 20


def no_progress(*_: Any) -> None:
    return None


def default_overlay(version: str) -> Path:
    """Where `unpack` puts a release and `mode: overlay` looks for it: $HARNESS_TRITON_DIR/VERSION, else
    .harness/triton/VERSION in the current folder."""
    return Path(os.path.expanduser(os.environ.get("HARNESS_TRITON_DIR") or OVERLAY_ROOT)) / version


# ------------------------------------------------------------------------------------------------ pack


def check_out(out: str | Path) -> Path:
    """A bundle's folder: new or empty (a bundle is never written over another, nor over the user's files)."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise HarnessError(f"--out {out}: exists and is not empty: a bundle is never written over another")
    return out


def pack(
    version: str,
    out: str | os.PathLike[str],
    *,
    part_mb: float = B.DEFAULT_PART_MB,
    python: str | None = None,
    arch: str = "x86_64",
    wheel: str | os.PathLike[str] | None = None,
    index_url: str | None = None,
    find_links: str | None = None,
    level: int = 9,
    strip_debug: bool = True,
    log: Callable[[str], None] = print,
    progress: Progress = no_progress,
) -> dict[str, Any]:
    """Write the bundle of Triton ``version`` into the new folder ``out``; return its manifest. ``strip_debug``:
    the shared objects' debug sections left out (bundle.STRIP_DEBUG), when a ``strip`` program is at hand."""
    version = release_version(version, "VERSION")
    python = python or f"{sys.version_info[0]}.{sys.version_info[1]}"
    B.python_tag(python)
    size = B.part_bytes(part_mb)
    if not 0 <= level <= 9:
        raise HarnessError(f"--level {level}: expected an xz preset from 0 (fastest) to 9 (smallest)")
    out = check_out(out)
    work = temp_beside("--out", out, "pack")
    try:
        whl = Path(wheel) if wheel else _download(version, python, arch, work, index_url, find_links, log)
        info = _check_wheel(whl, version)
        name = f"triton-{version}.tar.xz"
        stripped = _strip_debug(whl, work / "stripped", log) if strip_debug else {}
        stats = _wheel_to_archive(whl, work / name, level, log, progress, stripped)
        bundle = work / "bundle"
        archive, parts = _split(work / name, bundle, size, progress)
        man = B.manifest(
            version=version,
            python=python,
            wheel={"name": whl.name, "sha256": _sha256(whl), "bytes": whl.stat().st_size, "python": info["python"]},
            archive={**archive, "files": stats["files"], "unpacked_bytes": stats["bytes"]},
            parts=parts,
            dropped={"files": stats["dropped_files"], "bytes": stats["dropped_bytes"], "why": stats["why"]},
            executables=stats["executables"],
            stripped=stats["stripped"],
            created_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        )
        for i in range(len(parts)):
            write_text(bundle / f"p{i}" / B.MANIFEST, json.dumps(man, indent=2) + "\n")
        if out.exists():
            out.rmdir()
        os.replace(bundle, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return man


def _download(
    version: str, python: str, arch: str, work: Path, index_url: str | None, find_links: str | None, log
) -> Path:
    dest = work / "wheel"
    args = B.pip_download_args(version, python, arch, str(dest), index_url, find_links)
    log(f"downloading triton=={version} for Python {python} (Linux {arch})")
    try:
        r = subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True)
    except OSError as err:
        raise HarnessError(f"pip download: cannot run: {err}") from None
    wheels = sorted(dest.glob("*.whl")) if dest.is_dir() else []
    if r.returncode or not wheels:
        why = ((r.stderr or r.stdout).strip().splitlines() or ["no wheel downloaded"])[-1]
        raise HarnessError(f"pip download triton=={version} (Python {python}, {arch}) failed: {why}")
    return wheels[0]


def _check_wheel(whl: Path, version: str) -> dict[str, str]:
    if not whl.is_file():
        raise HarnessError(f"--wheel {whl}: no such file")
    info = B.wheel_info(whl.name)
    if info["name"].lower() != "triton" or not same_version(info["version"], version):
        raise HarnessError(f"--wheel {whl.name}: is {info['name']} {info['version']}, not triton {version}")
    if not zipfile.is_zipfile(whl):
        raise HarnessError(f"--wheel {whl}: not a zip archive (a damaged download?)")
    return info


@contextlib.contextmanager
def _xz(path: Path, level: int) -> Iterator[IO[bytes]]:
    """A stream that lands in ``path`` xz-compressed: the xz program on every core when there is one, else lzma."""
    exe = shutil.which("xz")
    if exe is None:
        with lzma.open(path, "wb", preset=level) as fh:
            yield fh
        return
    with open(path, "wb") as sink:
        proc = subprocess.Popen([exe, f"-{level}", "-T0", "-c"], stdin=subprocess.PIPE, stdout=sink)
        assert proc.stdin is not None
        try:
            yield proc.stdin
        finally:
            proc.stdin.close()
            rc = proc.wait()
        if rc:
            raise HarnessError(f"{path}: xz exited with {rc}")


class _Counting(io.RawIOBase):
    """A member being read into the archive: reports the bytes read so far (every 8 MiB)."""

    def __init__(self, raw: IO[bytes], tick: Callable[[int], None]):
        self.raw, self.tick, self.pending = raw, tick, 0

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        data = self.raw.read(n)
        self.pending += len(data)
        if self.pending >= 8 * CHUNK or not data:
            self.tick(self.pending)
            self.pending = 0
        return data


def _strip_debug(whl: Path, work: Path, log: Callable[[str], None]) -> dict[str, Path]:
    """The wheel's shared objects (bundle.strippable) without their debug sections, each in a file under ``work``:
    member name → that file. Nothing when no ``strip`` is installed (said once), or for a member strip refuses."""
    exe = shutil.which("strip")
    with zipfile.ZipFile(whl) as zf:
        todo = [z for z in zf.infolist() if not z.is_dir() and B.strippable(z.filename, z.file_size)]
        if todo and exe is None:
            log("no strip program (binutils): the shared objects keep their debug sections")
            return {}
        work.mkdir(parents=True, exist_ok=True)
        done: dict[str, Path] = {}
        saved = 0
        for i, z in enumerate(todo):
            raw, thin = work / f"{i}.raw", work / f"{i}.so"
            with zf.open(z) as src, open(raw, "wb") as dst:
                shutil.copyfileobj(src, dst, CHUNK)
            r = subprocess.run([exe, "--strip-debug", "-o", str(thin), str(raw)], capture_output=True, text=True)
            raw.unlink()
            if r.returncode == 0 and thin.stat().st_size < z.file_size:
                done[z.filename] = thin
                saved += z.file_size - thin.stat().st_size
            else:
                thin.unlink(missing_ok=True)
    if done:
        log(f"stripped the debug sections of {len(done)} shared objects: {saved / 1e6:.0f} MB less to unpack")
    return done


def _record_digest(path: Path) -> tuple[str, int]:
    """A file's RECORD digest (urlsafe base64 of its sha256, unpadded) and size."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            h.update(chunk)
    return base64.urlsafe_b64encode(h.digest()).rstrip(b"=").decode(), path.stat().st_size


def _wheel_to_archive(
    whl: Path, archive: Path, level: int, log, progress: Progress, stripped: dict[str, Path] | None = None
) -> dict[str, Any]:
    stripped = stripped or {}
    with zipfile.ZipFile(whl) as zf:
        members = sorted((z for z in zf.infolist() if not z.is_dir()), key=lambda z: z.filename)
        for z in members:
            if not B.safe_member(z.filename):
                raise HarnessError(f"{whl.name}: member {z.filename!r} would land outside the bundle's folder")
        why = {z.filename: r for z in members if (r := B.drop_reason(z.filename))}
        kept = [z for z in members if z.filename not in why]
        size = {
            z.filename: stripped[z.filename].stat().st_size if z.filename in stripped else z.file_size for z in kept
        }
        total = sum(size.values())
        changed = {n: _record_digest(p) for n, p in stripped.items()}
        dropped_bytes = sum(z.file_size for z in members if z.filename in why)
        reasons = sorted(set(why.values()))
        log(
            f"packing {len(kept)} files ({total / 1e6:.0f} MB) of {whl.name}; leaving out {len(why)} "
            f"({dropped_bytes / 1e6:.0f} MB): {', '.join(reasons) or 'nothing'}"
        )
        done = [0]

        def tick(n: int) -> None:
            done[0] += n
            progress("pack", done[0], total)

        executables: list[str] = []
        with _xz(archive, level) as raw, tarfile.open(fileobj=raw, mode="w|", format=tarfile.PAX_FORMAT) as tar:
            made: set[str] = set()
            for z in kept:
                _add_parents(tar, z, made)
                data = _rewritten(zf, z, set(why), changed)
                ti = tarfile.TarInfo(z.filename)
                ti.size = len(data) if data is not None else size[z.filename]
                ti.mtime = calendar.timegm((*z.date_time, 0, 0, 0))
                ti.mode = ((z.external_attr >> 16) & 0o777) or 0o644
                if B.executable(z.filename):
                    ti.mode |= 0o755
                    executables.append(z.filename)
                if data is not None:
                    src: IO[bytes] = io.BytesIO(data)
                else:
                    src = open(stripped[z.filename], "rb") if z.filename in stripped else zf.open(z)  # noqa: SIM115
                with contextlib.closing(src):
                    tar.addfile(ti, _Counting(src, tick))
        progress("pack", total, total)
    return {
        "files": len(kept),
        "bytes": total,
        "dropped_files": len(why),
        "dropped_bytes": dropped_bytes,
        "why": reasons,
        "executables": executables,
        "stripped": {"files": len(stripped), "bytes": sum(z.file_size - size[z.filename] for z in kept)},
    }


def _add_parents(tar: tarfile.TarFile, z: zipfile.ZipInfo, made: set[str]) -> None:
    parts = z.filename.split("/")[:-1]
    for i in range(1, len(parts) + 1):
        d = "/".join(parts[:i])
        if d not in made:
            made.add(d)
            ti = tarfile.TarInfo(d)
            ti.type, ti.mode, ti.mtime = tarfile.DIRTYPE, 0o755, calendar.timegm((*z.date_time, 0, 0, 0))
            tar.addfile(ti)


def _rewritten(
    zf: zipfile.ZipFile, z: zipfile.ZipInfo, dropped: set[str], changed: dict[str, tuple[str, int]] | None = None
) -> bytes | None:
    """The new bytes of a member that names dropped or stripped files (entry points, RECORD), else None (copied as
    is)."""
    base = z.filename.rsplit("/", 1)[-1]
    if not z.filename.split("/")[0].endswith(".dist-info") or base not in ("entry_points.txt", "RECORD"):
        return None
    text = zf.read(z).decode("utf-8")
    if base == "RECORD":
        return B.record_with(B.record_without_dropped(text, dropped), changed or {}).encode()
    gone = [p for p in B.dropped_packages() if any(d.startswith(p + "/") for d in dropped)]
    return B.entry_points_without_dropped(text, gone).encode()


def _split(archive: Path, folder: Path, size: int, progress: Progress) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``archive`` cut into parts of ``size`` bytes, ``folder/p0/NAME.part00``, ...; the sha256 of each and of all."""
    total = archive.stat().st_size
    whole = hashlib.sha256()
    parts: list[dict[str, Any]] = []
    done = 0
    with open(archive, "rb") as src:
        for i in range(B.part_count(total, size)):
            name = B.part_name(archive.name, i)
            (folder / f"p{i}").mkdir(parents=True)
            h, n = hashlib.sha256(), 0
            with open(folder / f"p{i}" / name, "wb") as dst:
                while n < size and (chunk := src.read(min(CHUNK, size - n))):
                    dst.write(chunk)
                    h.update(chunk)
                    whole.update(chunk)
                    n += len(chunk)
                    done += len(chunk)
                    progress("split", done, total)
            parts.append({"name": name, "bytes": n, "sha256": h.hexdigest()})
    return {"name": archive.name, "bytes": total, "sha256": whole.hexdigest()}, parts


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()

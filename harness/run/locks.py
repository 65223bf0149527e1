"""A run's outputs are its own: one process at a time writes a results file, and ``--resume`` continues only
the measurement it started.

:func:`lock_output` holds an OS lock (``fcntl.flock``) on ``OUT.lock`` for the whole run. The kernel drops it when
the process ends however it ends (SIGKILL included), so a killed run never leaves a lock that blocks the next one;
the file's text only names the holder (PID and host) for the message a second run gets.

:func:`resume_conflict` compares the options a resumed run would measure with against those ``OUT`` was measured
with (recorded in the journal's first line and the sidecar): any difference is refused, since one file would
otherwise hold rows timed two ways under one set of metadata.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from harness.errors import HarnessError

#: measurement options a resumed run must share with the run it continues: key → how the user names it
RESUME_OPTIONS = {
    "env": "--env",
    "python": "the env's python",
    "triton": "the env's triton version",
    "triton_path": "the env's triton path",
    "knobs": "the env's knobs (TRITON_* variables)",
    "suite": "--suite",
    "config_arch": "--config-arch",
    "timing": "--timing",
    "launches": "--launches",
    "reps": "--reps",
    "launch_gap": "--launch-gap",
    "shuffle_placement": "--shuffle-placement",
    "move_inputs": "--move-inputs",
    "fresh_process_rounds": "--fresh-process-rounds",
    "processes": "--processes",
    "heat_s": "heat seconds",
    "gpu_uuid": "the GPU (UUID)",
    "host": "the host",
    "shard": "--shard",
}


def lock_path(out: str | os.PathLike[str]) -> Path:
    """``results.csv`` → ``results.csv.lock``."""
    p = Path(out)
    return p.with_name(p.name + ".lock")


@contextlib.contextmanager
def lock_output(out: str | os.PathLike[str]) -> Iterator[Path]:
    """Hold ``OUT.lock`` while the body runs; a second holder is refused in one line naming the first's PID."""
    path = lock_path(out)
    fd = _acquire(path, Path(out))
    try:
        yield path
    finally:
        with contextlib.suppress(OSError):
            path.unlink()  # before the unlock: a waiter that opened the old file sees it is gone (_acquire)
        os.close(fd)


def _acquire(path: Path, out: Path) -> int:
    for _ in range(10):  # the holder may remove the file between our open and our flock: open it again
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as err:
            raise HarnessError(f"{out}: cannot create the lock file {path}: {err.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = _read_holder(fd)
            os.close(fd)
            raise HarnessError(
                f"{out}: another harness run is writing it ({holder}, lock {path.name}); "
                f"wait for it to finish or choose another --out"
            ) from None
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            os.ftruncate(fd, 0)
            os.write(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode())
            return fd
        os.close(fd)
    raise HarnessError(f"{out}: could not take the lock {path}: it keeps changing")


def _read_holder(fd: int) -> str:
    try:
        text = os.pread(fd, 200, 0).decode(errors="replace").strip()
    except OSError:
        text = ""
    return text or "pid unknown"


def resume_conflict(recorded: Mapping[str, Any] | None, now: Mapping[str, Any], out: str | os.PathLike[str]) -> None:
    """Refuse a ``--resume`` whose measurement options differ from the ones ``out`` was measured with."""
    if recorded is None:
        raise HarnessError(
            f"{out}: --resume: the file does not record the options it was measured with (an older harness); "
            f"start a new --out"
        )
    for key, label in RESUME_OPTIONS.items():
        if key not in now:  # not known yet (before the worker reports the stack)
            continue
        was, new = recorded.get(key), now.get(key)
        if was != new:
            raise HarnessError(
                f"{out}: --resume with {label} {_show(new)} but the file was measured with {_show(was)}; "
                f"resume with the same options or start a new --out"
            )


def _show(v: Any) -> str:
    if v is None:
        return "(not set)"
    if isinstance(v, bool):
        return "on" if v else "off"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}={x}" for k, x in sorted(v.items())) + "}" if v else "{}"
    return str(v)

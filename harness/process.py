"""The `harness` process's own settings, in one place: what the command sets up about the Python process it runs
in (its stdout, its end, its collector, its allocator, its threads) rather than about any stage's work. Each
measured where it was added (benchmarks/README.md); standard library only at import, so every command may use it.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

#: commands whose process ends without the interpreter's teardown once they are done (their files closed, their
#: threads ended): unloading pandas, pyarrow and typer's pydantic and freeing every object one by one cost a
#: compare of two 1M-row files ~0.3 s of its ~3 (benchmarks/README.md)
QUICK_EXIT = ("compare",)


class PipeSafe:
    """stdout that a reader closing the pipe (`harness compare … | head -1`) silences instead of failing the
    command: the files it writes and its exit code (1 only for a gated finding) stay what the command decided."""

    def __init__(self, stream) -> None:  # noqa: ANN001 - a text stream
        self._stream, self._gone = stream, False

    def write(self, text: str) -> int:
        if not self._gone:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._silence()
        return len(text)

    def flush(self) -> None:
        if not self._gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._silence()

    def _silence(self) -> None:
        self._gone = True
        with contextlib.suppress(OSError, ValueError):  # the interpreter flushes stdout at exit: /dev/null then
            os.dup2(os.open(os.devnull, os.O_WRONLY), self._stream.fileno())

    def __getattr__(self, name: str):  # noqa: ANN204 - fileno, isatty, encoding, ...: the stream's own
        return getattr(self._stream, name)


def pipe_safe_stdout() -> None:
    """sys.stdout made a :class:`PipeSafe` (once): for the command run as a command, not for main() in tests."""
    if not isinstance(sys.stdout, PipeSafe):
        sys.stdout = PipeSafe(sys.stdout)


def end(done: SystemExit, command: str) -> None:
    """Raise ``done``, the SystemExit the command ended with; a QUICK_EXIT command instead ends the process as soon
    as atexit's handlers have run and stdout and stderr are flushed, unless another thread still runs (it is waited
    for, as usual) or the exit carries a message rather than a code."""
    import threading

    code = done.code
    if command not in QUICK_EXIT or not isinstance(code, int | None) or threading.active_count() > 1:
        raise done
    _quick_exit(done, code or 0)


def _quick_exit(done: SystemExit, code: int) -> None:
    import atexit

    atexit._run_exitfuncs()
    try:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
    except (OSError, ValueError):  # stderr's pipe closed (stdout's is silenced: PipeSafe): Python's exit says so
        raise done from None
    os._exit(code)


@contextlib.contextmanager
def imports_kept() -> Iterator[None]:
    """Python's garbage collector paused while pandas, numpy's users and rich are imported, and what they made kept
    out of every later collection (gc.freeze): a module lives as long as the process. The imports made ~110
    collections, among them a full one of every object, ~0.1 CPU-s while Arrow read the files on both cores. Only
    where they are the process's first (the command run as a command; not main() called again, as tests do)."""
    import gc

    if not gc.isenabled() or "pandas" in sys.modules:
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


def quiet_numpy() -> None:
    """numpy set up for a command that makes and drops many arrays of a million rows, before it is imported (too
    late after; a setting the environment already has is left as it is):

    - OpenBLAS starts no thread of its own: `harness compare` multiplies no matrices, and the idle thread OpenBLAS
      starts with numpy spins for ~0.07 CPU-seconds after the import, while Arrow reads the files on both cores;
    - no transparent huge pages for numpy's big arrays (NUMPY_MADVISE_HUGEPAGE=0): where the kernel defragments
      memory for the pages an application asks for (``defrag`` "madvise", the common default), each new array
      waited on the kernel's compaction. On the shared 2-core machine a comparison of two million-row labelled
      files took 10.4-11.5 s with them and 7.0-7.9 s without, its system time 6.7-7.1 s against 3.1-3.5 s
      (benchmarks/README.md)."""
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")


def arrow_allocator() -> None:
    """Arrow's jemalloc rather than its default mimalloc, unless ARROW_DEFAULT_MEMORY_POOL names one: with mimalloc
    a comparison of two million-row files spent 1-3 s more system time on the shared 2-core machine (few page
    faults, each expensive), the same user time (benchmarks/README.md). A pyarrow without jemalloc keeps its own."""
    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        return
    import pyarrow as pa

    with contextlib.suppress(NotImplementedError):
        pa.set_memory_pool(pa.jemalloc_memory_pool())

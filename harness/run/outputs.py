"""A run's output files, checked and locked before any env measures anything: OUT holds no results unless the run
resumes it, the sidecar and journal beside it are harness's own (fsutil.guard_outputs, the one guard of output
files), and each OUT is locked (run/locks.py) for as long as the run writes it. :func:`lock_outputs` does both for
every OUT of a run; a run checks its OUT again under the lock (:func:`check_output`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from harness.envs.spec import EnvSpec
from harness.errors import HarnessError
from harness.fsutil import Output, guard_outputs, json_object
from harness.results.schema import sidecar_path, written_sidecar
from harness.run.locks import lock_output
from harness.run.options import RunOptions, check_resume, journal_path, run_options


@contextmanager
def lock_outputs(runs: list[tuple[EnvSpec, Path]], opts: RunOptions, suite_name: str = "") -> Iterator[None]:
    """Check and lock every output of a run before any env measures anything (a --resume: the options the
    command line decides, before a worker starts); unlock when the body ends."""
    if len({Path(o).resolve() for _, o in runs}) != len(runs):
        raise HarnessError("interleaved runs need one output file each")
    with ExitStack() as locks:
        for k, (spec, out) in enumerate(runs):
            check_output(Path(out), opts, "--out" if k == 0 else "--with-out")
            locks.enter_context(lock_output(out))
            check_resume(Path(out), opts, run_options(spec, opts, suite_name, timing=opts.timing or spec.timing))
        yield


def check_output(out: Path, opts: RunOptions, option: str = "--out") -> None:
    """OUT holds no results unless this run resumes it (then only its own: resume.check_resume reads it), and can
    be written (fsutil.guard_outputs)."""
    if out.exists() and out.is_file() and out.stat().st_size and not opts.resume:
        raise HarnessError(f"{out}: exists; pass --resume to measure only what is missing, or choose a new --out")
    guard_outputs([
        Output(option, out, lambda p: opts.resume, "results to resume"),
        # beside it, files a run writes: a user's file of that name is refused, a run's own replaced
        Output(f"{option}'s sidecar", sidecar_path(out), lambda p: written_sidecar(json_object(p)),
               "a sidecar harness wrote"),
        Output(f"{option}'s journal", journal_path(out), _harness_journal, "a journal harness wrote"),
    ])  # fmt: skip


def _harness_journal(path: Path) -> bool:
    import json

    try:
        with path.open(encoding="utf-8") as fh:
            first = json.loads(fh.readline())
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    return isinstance(first, dict) and "kind" in first

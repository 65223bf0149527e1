"""Adding files to the history: ``harness history add`` and the ``--record`` of ``harness run`` / ``compare``.

Every file is read and checked (the one results loader, ``load_compare``) before anything is stored, so a bad
file among good ones stores nothing."""

from __future__ import annotations

import csv
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import HarnessError

COMPARE_MARKERS = {"verdict", "golden_us", "tot_us"}
CALIBRATION_MARKERS = {"resolution_pct", "aa_fp_rate", "resolves"}


@dataclass
class Checked:
    path: Path
    kind: str  # "results", "compare" or "calibration"
    frame: Any = None  # the loaded results (compare files are read again when stored)


def kind_of(path: Path) -> str:
    """``compare`` for a file ``harness compare --out`` wrote (its header names verdicts), ``calibration`` for one
    ``harness calibrate`` wrote, else ``results``."""
    try:
        with path.open(encoding="utf-8-sig", newline="") as fh:
            header = {h.strip() for h in next(csv.reader([fh.readline()]), [])}
    except (OSError, UnicodeDecodeError):
        return "results"  # the loader says what is wrong with it
    if header >= CALIBRATION_MARKERS:
        return "calibration"
    return "compare" if header >= COMPARE_MARKERS else "results"


def check_files(files: Sequence[Path]) -> list[Checked]:
    """Read and check every file; one line (exit 2) for the first bad one."""
    from harness.compare.store import load_compare
    from harness.history.store import recorded_calibration
    from harness.results.load import load_results
    from harness.results.schema import sidecar_path

    if not files:
        raise HarnessError("history add: give at least one results or compare CSV")
    out = []
    for p in map(Path, files):
        kind = kind_of(p)
        if kind == "calibration":
            from harness.compare.calibration import calibration_meta_path, load_calibration

            if not calibration_meta_path(p).is_file():
                raise HarnessError(f"{p}: its metadata {calibration_meta_path(p).name} is not beside it")
            load_calibration(p, option="")
            out.append(Checked(p, "calibration"))
        elif kind == "compare":
            from harness.compare.store import meta_path

            if not meta_path(p).is_file():  # without it: "? vs ?", and a second comparison once it is added with it
                raise HarnessError(
                    f"{p}: its metadata {meta_path(p).name} is not beside it: a comparison is stored with it (the two "
                    "stacks, the rule); add the pair `harness compare --out` wrote"
                )
            recorded_calibration(load_compare(p).calibration, f"{meta_path(p)}: calibration")
            out.append(Checked(p, "compare"))
        else:
            frame = load_results(p)
            recorded_calibration((frame.attrs.get("env") or {}).get("calibration"), f"{sidecar_path(p)}: calibration")
            out.append(Checked(p, "results", frame))
    return out


def describe(a: Any) -> str:
    """``run 12 added: FILE (120 rows, golden, ...)`` / ``... already stored`` (+ the tags it gained)."""
    state = "added" if a.new else "already stored"
    tags = f"; tags +{','.join(a.tags_added)}" if a.tags_added else ""
    label = f"; label {a.label_change}" if getattr(a, "label_change", "") else ""
    return f"{a.kind} {a.id} {state}: {a.path} ({a.summary}{tags}{label})"


def add_files(
    h: Any,
    checked: list[Checked],
    *,
    tags: str = "",
    label: str = "",
    commit: str | None = None,
    echo: Callable[[str], None],
) -> list[Any]:
    """Store checked files one by one (each in its own transaction), saying what each became."""
    done = []
    for c in checked:
        if c.kind == "calibration":
            added = [h.add_calibration(c.path, tags=tags, label=label)]
        elif c.kind == "compare":
            added = h.add_compare(c.path, tags=tags, label=label, commit=commit)
        else:
            added = [h.add_results(c.path, frame=c.frame, tags=tags, label=label, commit=commit)]
        for a in added:
            echo(describe(a))
        done += added
    return done


def kernels_commit() -> str | None:
    """The git commit of the checkout the kernels and their configs come from (``-dirty`` when they have
    uncommitted changes), or None outside a git checkout."""
    import kernels

    where = Path(kernels.__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "-C", str(where), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(where), "status", "--porcelain", "--", "."],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}-dirty" if dirty else head or None


def record(files: Sequence[Path], db: str | None = None) -> None:
    """``--record``: add what a run or a comparison just wrote to the history (``$HARNESS_DB``, else the per-user
    file), with the kernels' git commit; one line per file on stderr. A failure says how to add them later."""
    import sys

    from harness.history.store import History

    def say(message: str) -> None:  # one line each, however narrow the console: logs are grepped
        print(f"history: {message}", file=sys.stderr, flush=True)

    names = " ".join(str(f) for f in files)
    try:
        checked = check_files(files)
        with History.open(db, write=True, log=say) as h:
            add_files(h, checked, commit=kernels_commit(), echo=say)
    except HarnessError as err:
        raise HarnessError(f"--record: {err} (the files are kept: harness history add {names})") from None


def check_record(outputs: Sequence[Path | None], db: str | None = None) -> None:
    """``--record``, before any work: the database ($HARNESS_DB) is one harness can use (a supported scheme, a file
    that is not a folder) and no output of the command is that database."""
    from harness.fsutil import same_file
    from harness.history.url import resolve

    try:
        loc = resolve(db)
    except HarnessError as err:
        raise HarnessError(f"--record: {err}") from None
    if loc.path is None:
        return
    if loc.path.is_dir():
        raise HarnessError(f"--record: the history database {loc.path} is a folder, expected a file")
    for out in outputs:
        if out is not None and same_file(out, loc.path):
            raise HarnessError(f"--record: {out} is the history database: refusing to write results over it")


def record_compare(cmp: Any, out: Path | None) -> None:
    """``harness compare --record``: the comparison as ``--out`` wrote it (else as it would have: the same bytes,
    so adding that file later stores nothing new), with the two results files it compared."""
    if out is not None:
        record([out])
        return
    import tempfile

    from harness.compare.store import write_compare

    with tempfile.TemporaryDirectory(prefix="harness-compare-") as tmp:
        path = Path(tmp) / "compare.csv"
        write_compare(cmp, path)
        record([path])

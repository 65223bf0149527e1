"""Files that prove they are whole: the record a writer leaves in a file's sidecar (its rows and bytes, once the
file is complete), and the check every reader makes of it (issue 43).

A results file is appended to row by row while its run measures: a full disk, a killed copy or a killed run can
leave it cut in the middle of a row, and a cut number is still a number (a ``time_us`` of 3 of its 8 digits read
as the case's time). So:

- a file a harness command wrote (it has a sidecar) must end with a newline: its last row was written whole;
- once its writer has finished, the sidecar's ``integrity`` holds ``{"rows": N, "bytes": B}``, and a reader
  refuses a file that does not have them: cut short, appended to, or edited after it was written. A file edited
  on purpose (rows filtered with pandas) is vouched for by whoever edited it: remove ``integrity`` from its
  sidecar (docs/results-format.md), and the reader checks only that it ends whole.

A run removes the record when it starts writing again (``--resume``) and writes it when it ends cleanly; a run
that was killed leaves none, and its file is read as it stands (it ends whole, or ``--resume`` drops the cut
row and measures that case again).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from harness.errors import HarnessError

KEY = "integrity"
#: how the message tells a user who edited a file on purpose to vouch for it
VOUCH = 'if you edited it on purpose, remove "integrity" from {side} to vouch for it yourself'


def record(path: str | os.PathLike[str], rows: int) -> dict[str, Any]:
    """The record a writer leaves once ``path`` is complete with ``rows`` data rows."""
    return {"rows": int(rows), "bytes": Path(path).stat().st_size}


def ends_whole(path: str | os.PathLike[str]) -> bool:
    """Whether the file is empty or ends with a newline (its last row written whole)."""
    p = Path(path)
    size = p.stat().st_size
    if size == 0:
        return True
    with open(p, "rb") as fh:
        fh.seek(size - 1)
        return fh.read(1) == b"\n"


def check(path: str | os.PathLike[str], env: dict[str, Any], rows: int, side: str | os.PathLike[str]) -> None:
    """One line (HarnessError) when ``path``, read as ``rows`` data rows, is not the file its writer finished:
    cut in a row, or not the rows and bytes its sidecar ``side`` (``env``, read) records. Files without a sidecar
    (written by hand, by another tool) are not checked: nothing vouches for them either way."""
    p = Path(path)
    if not env:  # no writer vouches for it: only a last row that is both unended and short is certainly cut
        if not ends_whole(p) and _short_last_row(p):
            raise HarnessError(f"{p}: line {rows + 1}: ends in the middle of a row (fewer cells than the header: cut "
                               "short?)")  # fmt: skip
        return
    if not ends_whole(p):
        raise HarnessError(
            f"{p}: line {rows + 1}: ends in the middle of a row (cut short: a full disk, a killed copy or run?); "
            "`harness run --resume` measures that case again"
        )
    rec = env.get(KEY)
    if rec is None:
        return
    if not _whole(rec):
        raise HarnessError(
            f'{side}: {KEY} is {json.dumps(rec)[:60]}, expected {{"rows": N, "bytes": B}} in whole numbers; '
            + VOUCH.format(side=Path(side).name)
        )
    size = p.stat().st_size
    if rec.get("rows") != rows or rec.get("bytes") != size:
        raise HarnessError(
            f"{p}: holds {rows} rows ({size} bytes) but its sidecar records {rec.get('rows')} rows "
            f"({rec.get('bytes')} bytes): cut short, appended to or edited after it was written; "
            + VOUCH.format(side=Path(side).name)
        )


def _whole(rec: Any) -> bool:
    """A record as :func:`record` writes it: rows and bytes, whole numbers (true is none)."""
    if not isinstance(rec, dict):
        return False
    return all(isinstance(rec.get(k), int) and not isinstance(rec.get(k), bool) for k in ("rows", "bytes"))


def _short_last_row(path: Path) -> bool:
    """Whether the file's last line holds fewer CSV cells than its header (read from both ends, not whole)."""
    import csv

    with open(path, "rb") as fh:
        head = fh.readline()
        size = fh.seek(0, os.SEEK_END)
        fh.seek(max(0, size - (1 << 16)))
        tail = fh.read().rsplit(b"\n", 1)[-1]
    try:
        header = next(csv.reader([head.decode("utf-8-sig")]))
        last = next(csv.reader([tail.decode("utf-8", errors="replace")]), [])
    except (csv.Error, StopIteration):
        return True  # a quote left open: cut inside a quoted cell
    return len(last) < len(header)


def repair_tail(path: str | os.PathLike[str]) -> bool:
    """Drop a torn last line of a file harness was appending to (the process died mid-write), so it ends whole
    again; whether it dropped one. Only a run resuming its own file calls this."""
    p = Path(path)
    data = p.read_bytes() if p.exists() else b""
    if not data or data.endswith(b"\n"):
        return False
    with open(p, "r+b") as fh:
        fh.truncate(data.rfind(b"\n") + 1)
    return True


def rows_belong(
    path: str | os.PathLike[str], df: Any, env: dict[str, Any], side: str | os.PathLike[str], lines: Any
) -> None:
    """One line when a row cannot be one its sidecar's run measured: timed by another method than the run's (a
    row of another run appended or pasted in). A file without a sidecar, or a sidecar that names no method, is not
    checked. (The sidecar's ``kernels`` cannot vouch for the rows' kernels: a kernel module may time cases under
    another name, as the multi-GPU suite's torch_gemm_all_gather does.) ``lines``: each row's file line, as the
    loader counted them."""
    timing = env.get("timing") if isinstance(env, dict) else None
    if isinstance(timing, str) and timing not in ("", "auto") and "timing" in df.columns and len(df):
        cells = df["timing"].astype(str)
        other = cells[(cells != timing) & (cells != "") & (cells != "nan") & (cells != "None")]
        if len(other):
            line = int(lines[int(other.index[0])])  # the loader's: past blank lines and quoted newlines
            raise HarnessError(f"{path}: line {line}: timed by {other.iloc[0]}, but its run timed by {timing} (its "
                               f"sidecar {Path(side).name}): a row of another run?")  # fmt: skip

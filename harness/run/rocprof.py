"""rocprofv3 kernel traces → per-case rep times. Pure: text in, numbers out.

The worker runs under ``rocprofv3 --kernel-trace --output-format csv``; before and after each rep of each case it launches a
marker kernel whose grid encodes (case index + 1, rep + 1, 1 = start / 2 = end). Between two markers the trace
holds, per timed launch, the L2-flush kernel followed by the op's own dispatches (split-K + reduce: several).

Headers are read by name, case-insensitively, so all known variants parse: the current ``kernel_trace.csv``
(``Stream_Id``, string ``Agent_Id``), the older one (``Private_Segment_Size`` ...), and ``rocpd convert`` output
(a leading ``Guid``, ``Vgpr_Count`` capitalisation).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessError
from harness.worker.timing import FLUSH_NAME, MARKER_NAME, attribute_dispatches


@dataclass(frozen=True)
class Dispatch:
    name: str
    start_ns: int
    end_ns: int
    grid: tuple[int, int, int]  # in workgroups (rocprofv3 reports work-items)

    @property
    def us(self) -> float:
        return (self.end_ns - self.start_ns) / 1e3


def parse_kernel_trace(text: str, source: str = "kernel_trace.csv") -> list[Dispatch]:
    """The dispatches of a trace, by start time. Timestamps and sizes are parsed as integers (never through float:
    nanosecond timestamps pass 2**53 after ~104 days of uptime). A last row cut off mid-write (fewer fields than
    the header, no end timestamp, or an end cut to fewer digits, so before its start) is dropped; a complete last
    row without a final newline is kept (rocprofiler-sdk's own docs/data/kernel_trace_truncated.csv ends so); any
    other inconsistent row is a HarnessError naming the file and line."""
    rows = list(csv.reader(io.StringIO(text.lstrip("\ufeff"))))
    if not rows:
        raise HarnessError(f"{source}: empty kernel trace")
    cols = {h.strip().lower(): i for i, h in enumerate(rows[0])}
    missing = [c for c in ("kernel_name", "start_timestamp", "end_timestamp") if c not in cols]
    if missing:
        raise HarnessError(f"{source}: line 1: missing column {missing[0]!r}: not a rocprofv3 kernel trace")
    body = [(n, row) for n, row in enumerate(rows[1:], start=2) if row]
    out = []
    for k, (n, row) in enumerate(body):
        last = k == len(body) - 1
        try:
            out.append(_dispatch(row, cols, len(rows[0])))
        except ValueError as err:
            if last and _cut_off(row, cols, len(rows[0])):
                break
            raise HarnessError(f"{source}: line {n}: {err}") from None
    return sorted(out, key=lambda d: d.start_ns)


def _int(row: list[str], cols: dict[str, int], name: str, default: int | None = None) -> int:
    i = cols.get(name)
    cell = row[i].strip() if i is not None and i < len(row) else ""
    if not cell:
        if default is None:
            raise ValueError(f"no {name}")
        return default
    if not (cell.isascii() and cell.isdigit()):  # int() would also take '1_000' and ' +1'; float() would round
        raise ValueError(f"{name} {cell!r} is not a whole number")
    return int(cell)


def _dispatch(row: list[str], cols: dict[str, int], width: int) -> Dispatch:
    if len(row) != width:
        raise ValueError(f"{len(row)} fields, the header has {width}")
    start, end = _int(row, cols, "start_timestamp"), _int(row, cols, "end_timestamp")
    if end < start:
        raise ValueError(f"end_timestamp {end} is before start_timestamp {start}")
    grid = tuple(
        max(1, _int(row, cols, f"grid_size_{a}", 1) // max(1, _int(row, cols, f"workgroup_size_{a}", 1))) for a in "xyz"
    )
    return Dispatch(row[cols["kernel_name"]], start, end, grid)  # type: ignore[arg-type]


def _cut_off(row: list[str], cols: dict[str, int], width: int) -> bool:
    """What a row the profiler was still writing looks like: short, no end yet, or an end cut to fewer digits."""
    end = cols["end_timestamp"]
    if len(row) < width or end >= len(row) or not row[end].strip():
        return True
    try:
        return _int(row, cols, "end_timestamp") < _int(row, cols, "start_timestamp")
    except ValueError:
        return False


def rep_times(
    dispatches: list[Dispatch],
    n: int,
    prefixes: tuple[str, ...] = (),
    problems: dict[tuple[int, int], str] | None = None,
) -> dict[tuple[int, int], tuple]:
    """{(case index, rep): (launch times µs, per-dispatch medians)} from the marker-delimited windows.

    ``prefixes``: keep only op dispatches whose name starts with one of them (compiled names carry config
    suffixes, and other libraries' kernels may run in between); the flush kernel is always kept as delimiter.
    A window without ``n`` op invocations raises, or with ``problems`` given is recorded there (that rep fails,
    the others stand).
    """
    out: dict[tuple[int, int], tuple] = {}
    window: list[tuple[str, float]] | None = None
    key: tuple[int, int] | None = None
    for d in dispatches:
        if d.name.startswith(MARKER_NAME):
            idx, rep, kind = d.grid[0] - 1, d.grid[1] - 1, d.grid[2]
            if kind == 1:
                window, key = [], (idx, rep)
            elif window is not None and key == (idx, rep):
                try:
                    out[key] = attribute_dispatches(window, FLUSH_NAME, n)
                except RuntimeError as err:
                    if problems is None:
                        raise HarnessError(f"case {idx} rep {rep}: {err}") from None
                    problems[key] = str(err)
                window, key = None, None
            continue
        if window is not None and (d.name.startswith(FLUSH_NAME) or not prefixes or d.name.startswith(prefixes)):
            window.append((d.name, d.us))
    return out


def read_traces(dirs: list[Path], n: int) -> tuple[dict[tuple[int, int], tuple | str], list[str]]:
    """{(case index, rep): (times, per-dispatch) or why that rep's window is unusable} from the traces of
    ``dirs``, and why a trace could not be read (one line each): a bad trace or window fails only the reps it
    held, not the run."""
    found: dict[tuple[int, int], tuple | str] = {}
    errors: list[str] = []
    for d in dirs:
        for f in sorted(d.rglob("*kernel_trace.csv")):
            problems: dict[tuple[int, int], str] = {}
            try:
                found.update(rep_times(parse_kernel_trace(f.read_text(errors="replace"), str(f)), n, problems=problems))
            except (OSError, HarnessError) as err:
                errors.append(str(err) if isinstance(err, HarnessError) else f"{f}: unreadable: {err}")
            found.update({k: f"{f}: {why}" for k, why in problems.items()})
    return found, errors

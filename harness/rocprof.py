"""rocprofv3 kernel traces → per-case rep times. Pure: text in, numbers out.

The worker runs under ``rocprofv3 --kernel-trace -f csv``; before and after each rep of each case it launches a
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

from harness.errors import HarnessError
from harness.worker import FLUSH_NAME, MARKER_NAME, attribute_dispatches


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
    rows = list(csv.reader(io.StringIO(text.lstrip("\ufeff"))))
    if not rows:
        raise HarnessError(f"{source}: empty kernel trace")
    cols = {h.strip().lower(): i for i, h in enumerate(rows[0])}
    need = ("kernel_name", "start_timestamp", "end_timestamp")
    missing = [c for c in need if c not in cols]
    if missing:
        raise HarnessError(f"{source}: line 1: missing column {missing[0]!r}: not a rocprofv3 kernel trace")

    def get(row: list[str], name: str, default: int = 1) -> int:
        i = cols.get(name)
        if i is None or i >= len(row) or not row[i].strip():
            return default
        return int(float(row[i]))

    out = []
    for n, row in enumerate(rows[1:], start=2):
        if not row:
            continue
        try:
            grid = tuple(max(1, get(row, f"grid_size_{a}") // max(1, get(row, f"workgroup_size_{a}"))) for a in "xyz")
            out.append(
                Dispatch(row[cols["kernel_name"]], get(row, "start_timestamp", 0), get(row, "end_timestamp", 0), grid)
            )  # type: ignore[arg-type]
        except (ValueError, IndexError):
            raise HarnessError(f"{source}: line {n}: unreadable row") from None
    return sorted(out, key=lambda d: d.start_ns)


def rep_times(dispatches: list[Dispatch], n: int, prefixes: tuple[str, ...] = ()) -> dict[tuple[int, int], tuple]:
    """{(case index, rep): (launch times µs, per-dispatch medians)} from the marker-delimited windows.

    ``prefixes``: keep only op dispatches whose name starts with one of them (compiled names carry config
    suffixes, and other libraries' kernels may run in between); the flush kernel is always kept as delimiter.
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
                out[key] = attribute_dispatches(window, FLUSH_NAME, n)
                window, key = None, None
            continue
        if window is not None and (d.name.startswith(FLUSH_NAME) or not prefixes or d.name.startswith(prefixes)):
            window.append((d.name, d.us))
    return out

"""Profiler integrity: a second, independent clock beside the profiler's (issue 46 item 3). Standard library
only: the worker imports it in each env's Python.

Under CUPTI every timed launch is also bracketed by two CUDA events recorded on its stream, right before the op
and right after it. The profiler's records and the events come from different machinery (CUPTI's activity
buffers, the stream's timestamps), so a record that is lost, duplicated or given to the wrong launch shows as a
launch whose two clocks disagree:

- a launch's profiler time cannot exceed its own event bracket: the bracket holds every kernel of the op. More
  than OVER_US beyond it (the events' resolution and their own latency) means a record that is not this
  launch's (a duplicate, one shifted from another launch, a wrong timestamp);
- the bracket also holds what the profiler leaves out on purpose (the gaps between an op's kernels, the host's
  submission after the first event), so it may be longer, but by at most GAP_US + GAP_REL × the time: beyond,
  at the median over the rep's launches, the profiler missed part of the op (a dispatch it did not record);
- the number of launches the profiler saw must be the number made (worker/timing.attribute_dispatches).

A rep that fails one is refused with the status ``instrument``: no time, never a verdict. The bounds were set
from the H200 library suite's launches (docs/timing-backends.md, "Profiler integrity").
"""

from __future__ import annotations

import statistics

#: µs a launch's profiler time may exceed its event bracket by (the events' resolution is about 0.5 µs)
OVER_US = 1.0
#: share of a rep's launches allowed past OVER_US (a real fault shifts or doubles many records, not one)
OVER_SHARE = 0.05
#: the event bracket's median excess over the profiler's time a rep may show: µs plus a share of the time
GAP_US = 20.0
GAP_REL = 0.25


class InstrumentError(RuntimeError):
    """The profiler's records cannot be this rep's launches: its time is refused (status ``instrument``)."""


def compare(profiler_us: list[float], event_us: list[float]) -> dict[str, float | int]:
    """What the two clocks say of one rep's launches (profiler time and event bracket of each, µs): the
    bracket's median, the median of (bracket − profiler), the launches whose profiler time is past its bracket
    by more than OVER_US, and how many launches."""
    if len(profiler_us) != len(event_us) or not event_us:
        raise InstrumentError(f"{len(profiler_us)} profiler records for {len(event_us)} timed launches")
    gaps = [e - p for p, e in zip(profiler_us, event_us)]
    return {
        "event_us": round(statistics.median(event_us), 3),
        "gap_us": round(statistics.median(gaps), 3),
        "over": sum(g < -OVER_US for g in gaps),
        "n": len(gaps),
    }


def problem(summary: dict[str, float | int], time_us: float) -> str:
    """Why the two clocks of a rep (compare's summary) disagree beyond the bounds; '' when they agree."""
    n, over = int(summary["n"]), int(summary["over"])
    if over > OVER_SHARE * n:
        return (f"{over} of {n} launches read longer by the profiler than by the events around them (more than "
                f"{OVER_US:g} µs): records duplicated, shifted or mistimed")  # fmt: skip
    limit = GAP_US + GAP_REL * time_us
    if float(summary["gap_us"]) > limit:
        return (f"the events around each launch read {summary['gap_us']:.1f} µs more than the profiler's "
                f"{time_us:.1f} µs (bound {limit:.1f}): the profiler missed part of the op")  # fmt: skip
    return ""

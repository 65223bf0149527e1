"""Profiler integrity: a second, independent clock beside the profiler's (issue 46 item 3). Standard library
only: the worker imports it in each env's Python.

Under CUPTI every timed launch is also bracketed by two CUDA events recorded on its stream, right before the op
and right after it. The profiler's records and the events come from different machinery (CUPTI's activity
buffers, the stream's timestamps), so a record that is not what the profiler says it is shows:

- a launch's profiler span (its first dispatch's start to its last one's end: dispatches may overlap, on a second
  stream or launched as dependents, so their sum may exceed it) cannot exceed its own event bracket, which holds
  every kernel of the op. More than OVER_US beyond it (the events' resolution and their own latency) means
  records that are not this launch's (a duplicate, one shifted from another launch, a wrong timestamp). On H200s
  (the library suite, FlagGems and the multi-GPU suite at W = 2: 142,188 launches) none read longer by their sum;
- the number of launches the profiler saw must be the number made, and every launch of one op the same number
  of dispatches as most (worker/timing.invocations): a profiler that loses records at random (26–65 % of
  dispatches under HIP graph replay, a public ROCm issue) leaves launches short of their peers.

The bracket cannot bound the op from above: with the GPU idle before a launch (the automatic gap) it also holds
the host's submission, 49 to 420 µs on those H200s with CUPTI on, so a profiler that lost the same dispatch of
every launch is not caught; ``gap_us`` records the excess for the record.

A rep that fails one is refused with the status ``instrument``: no time, never a verdict
(docs/timing-backends.md, "Profiler integrity").
"""

from __future__ import annotations

import statistics

#: µs a launch's profiler time may exceed its event bracket by (the events' resolution is about 0.5 µs)
OVER_US = 1.0
#: share of a rep's launches allowed past OVER_US, and one always (a real fault shifts or doubles many records)
OVER_SHARE = 0.05


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


def problem(summary: dict[str, float | int]) -> str:
    """Why the two clocks of a rep (compare's summary) disagree beyond the bound; '' when they agree."""
    n, over = int(summary["n"]), int(summary["over"])
    if over > max(1, OVER_SHARE * n):
        return (f"{over} of {n} launches read longer by the profiler than by the events around them (more than "
                f"{OVER_US:g} µs): records duplicated, shifted or mistimed")  # fmt: skip
    return ""

"""The stability rule, pure (no I/O). A rep is one independent measurement: N timed launches reduced to their
median; reps of one case are separated in time by going round-robin over the suite.

Take 3 reps. If max/min <= 1 + tol, use their mean. Else, if some pair is within tol, the mean of the closest
pair. Else take reps 4 and 5 and apply the same to all 5; if still no pair is within tol, use the median and
call the case ``unstable``. (ROCm/aiter#3283: "Run 3 reps. If all 3 are within 5%, average all 3. Otherwise,
use the closest pair within 5%. If no pair is within 5%, run up to 5 reps and apply the same rule.")
"""

from __future__ import annotations

import itertools
import statistics
from dataclasses import dataclass, field

FIRST_REPS = 3
MAX_REPS = 5
TOL = 0.05


@dataclass(frozen=True)
class Decision:
    """``need_more``: take another rep; otherwise ``value`` is the case's time and ``status`` ok/unstable."""

    need_more: bool
    value: float | None = None
    status: str = "ok"
    used: tuple[float, ...] = field(default_factory=tuple)
    how: str = ""

    @property
    def spread_pct(self) -> float | None:
        if not self.used:
            return None
        return 100.0 * (max(self.used) / min(self.used) - 1.0)


def within(a: float, b: float, tol: float = TOL) -> bool:
    lo, hi = min(a, b), max(a, b)
    return hi <= lo * (1.0 + tol)


def _mean(xs: tuple[float, ...]) -> float:
    return min(max(statistics.fmean(xs), min(xs)), max(xs))  # never outside the values through rounding


def decide(
    reps: list[float] | tuple[float, ...], tol: float = TOL, first: int = FIRST_REPS, most: int = MAX_REPS
) -> Decision:
    reps = tuple(float(r) for r in reps)
    if any(not (r > 0) for r in reps):
        raise ValueError(f"rep times must be positive, got {reps}")
    if len(reps) < first:
        return Decision(need_more=True)
    if len(reps) < most and len(reps) > first:
        return Decision(need_more=True)  # reps 4 and 5 are taken together
    if max(reps) <= min(reps) * (1.0 + tol):
        return Decision(False, _mean(reps), "ok", reps, f"all {len(reps)} within {tol:.0%}")
    pairs = [(max(a, b) / min(a, b), (a, b)) for a, b in itertools.combinations(reps, 2)]
    ratio, best = min(pairs, key=lambda p: p[0])
    if ratio <= 1.0 + tol:
        return Decision(False, _mean(best), "ok", best, f"closest pair of {len(reps)}")
    if len(reps) < most:
        return Decision(need_more=True)
    return Decision(False, statistics.median(reps), "unstable", reps, f"no pair of {len(reps)} within {tol:.0%}")

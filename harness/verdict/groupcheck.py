"""The guard on a multi-GPU case's time, pure (no I/O): a time is a verdict's input only when its ranks agree and
it agrees with itself. Otherwise the case is ``unstable``, with the reason, and compare never judges it.

- **Rank skew**: each rank's median time against the others'. The ranks of a collective run the same op in
  lockstep, so their times should agree; the fused GEMM + all-scatter's did within ~1 % on two H100s once timed
  in lockstep (docs/multigpu-timing.md), and differed 2-4x when each rank launched on its own host's schedule.
  Ranks apart by more than MAX_SKEW_PCT measured something other than the op (a host arriving late, a GPU clocked
  down): no verdict.
- **A/A self-check**: the rep's launch-by-launch series of slowest-rank times, split into its even and its odd
  launches (interleaved halves see the same drift), gives two medians of the same op under the same stack. When
  they differ by more than SELF_CHECK_PCT in the median rep, the case cannot tell itself from itself at that
  resolution, and a golden-vs-TOT difference of that size would be noise.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

#: the ranks' median times may differ by this much (slowest / fastest − 1, in %)
MAX_SKEW_PCT = 5.0
#: a rep's interleaved halves may differ by this much (in %, the median over the case's reps)
SELF_CHECK_PCT = 2.0
#: how each refusal's reason begins (a results row's ``error``)
REFUSALS = ("ranks disagree:", "A/A self-check failed:")


def refused(row: dict[str, object]) -> bool:
    """Whether a results row is a multi-GPU time this guard refused: a property of the worker group that measured
    it, so another group may measure the same op within the bounds."""
    return row.get("status") == "unstable" and str(row.get("error") or "").startswith(REFUSALS)


def halves_pct(series: Sequence[float]) -> float | None:
    """How far apart the medians of a series' even and odd elements are, in % of the smaller (None: < 4 values)."""
    if len(series) < 4:
        return None
    even, odd = statistics.median(series[0::2]), statistics.median(series[1::2])
    lo, hi = min(even, odd), max(even, odd)
    return 100.0 * (hi / lo - 1.0) if lo > 0 else None


def group_problem(
    skew_pct: float | None,
    rep_halves_pct: Sequence[float | None],
    max_skew_pct: float = MAX_SKEW_PCT,
    self_check_pct: float = SELF_CHECK_PCT,
) -> str:
    """Why a multi-GPU case's time must not be judged ('' when it may): its ranks' skew, its reps' self-check."""
    if skew_pct is not None and skew_pct > max_skew_pct:
        return f"ranks disagree: skew {skew_pct:.1f} % > {max_skew_pct:g} % (rank_times_us)"
    halves = [h for h in rep_halves_pct if h is not None]
    if halves and statistics.median(halves) > self_check_pct:
        worst = statistics.median(halves)
        return f"A/A self-check failed: a rep's interleaved halves differ {worst:.1f} % > {self_check_pct:g} %"
    return ""

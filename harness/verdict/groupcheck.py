"""The guard on a multi-GPU case's time, pure (no I/O): a time is a verdict's input only when its ranks agree and
it agrees with itself. Otherwise the case is ``unstable``, with the reason, and compare never judges it.

- **Rank skew**: each rank's median time against the others'. The ranks of a collective run the same op in
  lockstep, so their times should agree; the fused GEMM + all-scatter's did within ~1 % on two H100s once timed
  in lockstep (docs/multigpu-timing.md), and differed 2-4x when each rank launched on its own host's schedule.
  Ranks apart by more than MAX_SKEW_PCT measured something other than the op (a host arriving late, a GPU clocked
  down): no verdict. Unless they are within RELEASE_SKEW_US of each other: that much is the rank barrier's own
  release skew, which the per-rank times of any op that opens with a barrier of its own carry (below).
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
#: ... or by this much in µs, whatever the %: the rank barrier's own release skew at W = 4. An op that opens with a
#: sync of its own (the fused GEMM + all-scatter's barrier, NCCL's all-gather) waits there for the ranks released
#: after it, so the ranks released first read longer. On 4 x H200 NV18 (lab/gpu_validation/rank_clock.py,
#: reports/h200x4-world-size-4), each GPU's own CUPTI durations: the fused kernel's opening barrier differed
#: across ranks by 1.18 µs (median of 40 cases; NCCL's all-gather kernel 1.82 µs) while its GEMM agreed within
#: 0.39 µs and the GEMM-only twins within 0.30 µs; the rank released first was the slowest in 87 % of launches
#: (no-sync ops: 20 %, chance 25 %); fused and NCCL cases' rank skews reached 2.1 µs (p90 1.8-2.05 µs). At W = 2
#: the barriers agreed within 0.05 µs. So the 5-12 % skews of 15-40 µs cases are the method's, the same for both
#: stacks (A/A 0 confident of 120), not the op's imbalance; host arrival, what this guard is for, put ranks tens of
#: µs apart. Beyond this many µs the % bound applies as before.
RELEASE_SKEW_US = 2.0
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
    skew_us: float | None = None,
    release_skew_us: float = RELEASE_SKEW_US,
) -> str:
    """Why a multi-GPU case's time must not be judged ('' when it may): its ranks' skew (beyond MAX_SKEW_PCT and,
    where ``skew_us`` is known, beyond the rank barrier's release skew in µs), its reps' self-check."""
    if skew_pct is not None and skew_pct > max_skew_pct and (skew_us is None or skew_us > release_skew_us):
        us = f", {skew_us:.2f} µs > {release_skew_us:g} µs" if skew_us is not None else ""
        return f"ranks disagree: skew {skew_pct:.1f} % > {max_skew_pct:g} %{us} (rank_times_us)"
    halves = [h for h in rep_halves_pct if h is not None]
    if halves and statistics.median(halves) > self_check_pct:
        worst = statistics.median(halves)
        return f"A/A self-check failed: a rep's interleaved halves differ {worst:.1f} % > {self_check_pct:g} %"
    return ""

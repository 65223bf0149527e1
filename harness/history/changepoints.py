"""Change points: where a case's time steps up or down within the series of one stack on one GPU model, found
by ruptures' PELT (``model="l2"``) on the log of the times, beside the rule's verdicts.

Noise: each series is scaled by its noise, the larger of its own (the median absolute first difference, robust to
the steps themselves) and the pooled noise of its kernel's other cases in the same series (a short series
estimates its own noise badly), and at least ``NOISE_FLOOR``. The penalty is ``PENALTY × log n`` in units of that
noise. ``benchmarks/history_changepoints.py`` measures what that finds on simulated series with 1 % run-to-run
noise: a 5 % step at its run in 84 % of 5-run series and 96-98 % of 10- to 30-run series; a step in a flat series
in 5 % (5 runs), 2.2 % (10) and 0.2 % (30) of them. A step is also judged by the rule itself: the median after
against the median before, as ``harness compare`` judges TOT against golden."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.history.queries import SERIES, timed
from harness.verdict.rule import Rule, timed_verdicts

#: the least noise a series is assumed to have (log units: 0.5 %): timers and placement are never quieter
NOISE_FLOOR = 0.005
#: penalty per change point, × log(n), in units of the noise
PENALTY = 4.0
#: fewest points in a segment, and so the fewest a series needs (2 × MIN_SIZE) for any change point
MIN_SIZE = 2
#: default fewest points of a series searched (short series have too many false steps: module docstring)
MIN_POINTS = 5


def own_noise(logs: np.ndarray) -> float:
    """A series' noise from its first differences (robust to a few steps): 1.4826 × MAD / √2; 0 if too short."""
    d = np.diff(np.asarray(logs, dtype=np.float64))
    if len(d) < 2:
        return 0.0
    return float(1.4826 * np.median(np.abs(d - np.median(d))) / np.sqrt(2))


def change_points(times: np.ndarray, pooled_noise: float = 0.0, penalty: float = PENALTY) -> list[int]:
    """Indices where a new level starts in ``times`` (positive, in series order); [] when too short."""
    import ruptures as rpt

    y = np.log(np.asarray(times, dtype=np.float64))
    n = len(y)
    if n < 2 * MIN_SIZE or not np.isfinite(y).all():
        return []
    sigma = max(own_noise(y), pooled_noise, NOISE_FLOOR)
    algo = rpt.Pelt(model="l2", min_size=MIN_SIZE, jump=1).fit((y / sigma).reshape(-1, 1))
    return [int(b) for b in algo.predict(pen=penalty * np.log(n))[:-1]]


@dataclass(frozen=True)
class Segment:
    start: int
    end: int
    median: float


def segments(times: np.ndarray, points: list[int]) -> list[Segment]:
    """The levels between change points, each by its median."""
    bounds = [0, *points, len(times)]
    return [Segment(a, b, float(np.median(times[a:b]))) for a, b in zip(bounds[:-1], bounds[1:])]


def judged(before: np.ndarray, after: np.ndarray, rule: Rule) -> np.ndarray:
    """The rule's verdict of each step: its median after as TOT against its median before as golden
    (regression, improvement, ok, or ignored under the floor)."""
    return timed_verdicts(before, after, rule)


STEP_COLUMNS = [
    "kernel",
    "case_id",
    *SERIES,
    "run_id",
    "run_at",
    "triton_before",
    "triton_after",
    "before_us",
    "after_us",
    "step_pct",
    "by_rule",
    "points",
]


def series_steps(rows: pd.DataFrame, rule: Rule | None = None, min_points: int = MIN_POINTS) -> pd.DataFrame:
    """Every change point of every case's series (one stack on one GPU model) in a results frame
    (``queries.results_frame``): where (the first run of the new level), the Triton versions either side, the
    medians either side, the step and the rule's verdict of it."""
    d = timed(rows).sort_values(["run_at", "run_id"])
    out = []
    for _, series in d.groupby([*SERIES, "kernel"], dropna=False, sort=True):
        cases = [g for _, g in series.groupby("case_id", sort=True) if len(g) >= min_points]
        if not cases:
            continue
        pooled = float(np.median([own_noise(np.log(g["time_us"].to_numpy(dtype=float))) for g in cases]))
        for g in cases:
            out += _case_steps(g, pooled)
    steps = pd.DataFrame(out, columns=STEP_COLUMNS)
    if len(steps):
        steps["by_rule"] = judged(steps["before_us"].to_numpy(), steps["after_us"].to_numpy(), rule or Rule())
    return steps


def _case_steps(g: pd.DataFrame, pooled: float) -> list[list]:
    times = g["time_us"].to_numpy(dtype=float)
    points = change_points(times, pooled)
    segs = segments(times, points)
    rows = []
    for prev, seg in zip(segs[:-1], segs[1:]):
        first, last_before = g.iloc[seg.start], g.iloc[seg.start - 1]
        rows.append(
            [
                first["kernel"],
                first["case_id"],
                *(first[c] for c in SERIES),
                int(first["run_id"]),
                first["run_at"],
                last_before["triton_version"],
                first["triton_version"],
                prev.median,
                seg.median,
                (seg.median / prev.median - 1) * 100,
                "",
                len(g),
            ]
        )
    return rows


def index_steps(index: pd.DataFrame, min_points: int = MIN_POINTS) -> pd.DataFrame:
    """Change points of a kernel's index series (``queries.kernel_index``), one series per stack and GPU:
    (series keys, run_id, run_at, step_pct)."""
    out = []
    for keys, g in index.sort_values(["run_at", "run_id"]).groupby(SERIES, dropna=False, sort=True):
        if len(g) < min_points:
            continue
        vals = g["index"].to_numpy(dtype=float)
        for prev, seg in (lambda s: zip(s[:-1], s[1:]))(segments(vals, change_points(vals))):
            first = g.iloc[seg.start]
            out.append([*keys, int(first["run_id"]), first["run_at"], (seg.median / prev.median - 1) * 100])
    return pd.DataFrame(out, columns=[*SERIES, "run_id", "run_at", "step_pct"])

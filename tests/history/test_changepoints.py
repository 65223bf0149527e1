"""Change points (ruptures' PELT on log time, scaled by the series' noise) on series with known steps, and on
series without one; each step judged by the rule."""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np
import pandas as pd

from harness.history.changepoints import change_points, index_steps, judged, own_noise, segments, series_steps
from harness.verdict.rule import Rule


def _noisy(n: int, seed: int, sd: float = 0.003) -> np.ndarray:
    return 100.0 * np.exp(np.random.default_rng(seed).normal(0, sd, n))


def test_a_step_is_found_where_it_starts():
    for seed in range(20):
        t = _noisy(12, seed)
        t[7:] *= 1.05
        assert change_points(t) == [7]
        before, after = segments(t, [7])
        assert abs(after.median / before.median - 1.05) < 0.01


def test_two_steps_and_a_return():
    t = _noisy(18, 1)
    t[6:12] *= 1.08
    assert change_points(t) == [6, 12]


def test_no_step_no_change_point():
    assert all(change_points(_noisy(15, seed)) == [] for seed in range(20))
    assert change_points(np.array([10.0, 10.5, 10.2])) == []  # too short to tell
    # quieter than the floor: a 0.2 % wobble is not a step
    assert change_points(np.r_[np.full(6, 100.0), np.full(6, 100.2)]) == []


def test_noise_estimate_ignores_the_steps():
    t = np.log(np.r_[_noisy(10, 3, 0.01), _noisy(10, 4, 0.01) * 1.2])
    assert 0.005 < own_noise(t) < 0.02  # the 20 % jump is one outlier among the differences


def test_steps_are_judged_by_the_rule():
    # the limit after 100 µs is 1.005 x 100 + 0.5 = 101 µs: 101 itself is not beyond it
    got = judged(np.array([100.0, 100.0, 100.0, 100.0, 3.0]), np.array([101.5, 101.0, 100.2, 95.0, 9.0]), Rule())
    assert list(got) == ["regression", "ok", "ok", "improvement", "ignored"]


def _rows(times: list[float], tritons: list[str], env: str = "tot") -> pd.DataFrame:
    start = datetime(2026, 11, 1)
    return pd.DataFrame(
        {
            "run_id": range(1, len(times) + 1),
            "run_at": [start + timedelta(days=i) for i in range(len(times))],
            "env_name": env,
            "gpu_name": "NVIDIA H100 80GB HBM3",
            "triton_version": tritons,
            "tags": "",
            "kernel": "gemm",
            "case_id": "M16",
            "status": "ok",
            "time_us": times,
        }
    )


def test_series_steps_name_the_run_and_the_triton_change():
    times = list(_noisy(10, 5) * 0.5)
    times[6:] = [t * 1.06 for t in times[6:]]
    rows = _rows(times, ["3.9.0"] * 6 + ["3.10.0"] * 4)
    steps = series_steps(rows)
    assert len(steps) == 1
    s = steps.iloc[0]
    assert (s.run_id, s.triton_before, s.triton_after, s.by_rule, s.points) == (7, "3.9.0", "3.10.0", "regression", 10)
    assert 5 < s.step_pct < 7
    assert series_steps(rows, min_points=11).empty  # too few runs to search


def test_index_steps():
    idx = _rows(list(np.r_[np.ones(5), np.full(5, 1.1)]), ["3.9.0"] * 10).rename(columns={"time_us": "index"})
    steps = index_steps(idx)
    assert list(steps["run_id"]) == [6] and abs(steps["step_pct"].iloc[0] - 10) < 0.01

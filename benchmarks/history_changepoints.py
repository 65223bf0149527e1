"""How often `harness history changepoints` finds a step that is there, and one that is not.

Simulates case series as a team's history holds them: N runs of log-normal noise (1 % by default), either flat or
with one step in the middle, 30 cases per kernel series (their noise pooled, as the command pools it), and
counts the series in which harness.history.changepoints finds the step where it starts, and flat series in
which it finds any. Prints one line per series length.

    python3 benchmarks/history_changepoints.py [--noise 0.01] [--step 0.05] [--trials 400]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.history.changepoints import PENALTY, change_points, own_noise  # noqa: E402


def rates(
    n: int, noise: float, step: float, trials: int, rng: np.random.Generator, penalty: float = PENALTY
) -> tuple[float, float]:
    """(share of stepped series whose step is found where it starts, share of flat series with any step)."""
    found = false = 0
    for _ in range(trials):
        cases = 100 * np.exp(rng.normal(0, noise, (30, n)))
        pooled = float(np.median([own_noise(np.log(c)) for c in cases]))
        flat = cases[0]
        stepped = cases[1].copy()
        stepped[n // 2 :] *= 1 + step
        false += bool(change_points(flat, pooled, penalty))
        found += (n // 2) in change_points(stepped, pooled, penalty)
    return found / trials, false / trials


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--noise", type=float, default=0.01, help="run-to-run noise (relative sd)")
    ap.add_argument("--step", type=float, default=0.05, help="the step (relative)")
    ap.add_argument("--trials", type=int, default=400)
    ap.add_argument("--penalty", type=float, default=PENALTY, help="x log(n), in units of the noise")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    print(f"noise {args.noise:.1%} per run, step {args.step:+.1%}, penalty {args.penalty:g}, {args.trials} series each")
    for n in (5, 6, 10, 20, 30):
        found, false = rates(n, args.noise, args.step, args.trials, rng, args.penalty)
        print(f"{n:3d} runs: step found at its run {found:6.1%}; a step in a flat series {false:6.1%}")


if __name__ == "__main__":
    main()

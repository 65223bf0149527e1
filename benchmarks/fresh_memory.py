"""What this machine charges for memory: 1 GB of new pages touched, freed and touched again, a few times in one
process (benchmarks/README.md: a guest whose free memory goes back to its host pays for a page it has not touched
lately far more than for its work on it).

    python benchmarks/fresh_memory.py [--gb 1] [--times 3] [--idle 0]

--idle: seconds to sleep first (after an idle spell the first touch is the slow one).
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np


def touch(gb: float) -> tuple[float, float]:
    """(wall, system) seconds to fill ``gb`` GB of newly allocated memory."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_stime
    t0 = time.perf_counter()
    block = np.ones(int(gb * 2**30) // 8)
    wall = time.perf_counter() - t0
    del block
    return wall, resource.getrusage(resource.RUSAGE_SELF).ru_stime - before


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--times", type=int, default=3)
    ap.add_argument("--idle", type=float, default=0.0)
    args = ap.parse_args()
    time.sleep(args.idle)
    for k in range(args.times):
        wall, system = touch(args.gb)
        print(f"touch {k + 1}: {args.gb:g} GB in {wall:.2f} s wall, {system:.2f} s system")


if __name__ == "__main__":
    main()

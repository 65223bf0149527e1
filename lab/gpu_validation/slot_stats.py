"""Where an A/A's offsets come from: the place in the round, or the worker process (issue 42's "second env slot").

    python3 lab/gpu_validation/slot_stats.py DIR [DIR...]

DIR: a `run.sh plain` folder (golden.csv, golden-aa.csv and golden's sidecar with its ``schedule``). Per DIR:

- the A/A's per-rep Δ% (golden again / golden, rep by rep of the same round), grouped by where golden-again
  stood against golden in that round's order (+2: two places after it, -1: one place before it, ...): a place
  that favoured its occupant would move these means apart, and apart the same way in every run;
- the A/A's Δ% per worker process epoch (each epoch's reps alone): offsets that belong to the process move
  from epoch to epoch.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd


def by_place(d: Path) -> dict[int, list[float]]:
    sched = json.loads((d / "golden.csv.env.json").read_text()).get("schedule") or {}
    order = {r["round"]: r["order"] for r in sched.get("rounds", [])}
    g, a = (
        pd.read_csv(d / f, keep_default_na=False).set_index(["kernel", "case_id"])
        for f in ("golden.csv", "golden-aa.csv")
    )
    out: dict[int, list[float]] = defaultdict(list)
    for key in g.index.intersection(a.index):
        if g.loc[key, "status"] != "ok" or a.loc[key, "status"] != "ok":
            continue
        gr, ar = json.loads(g.loc[key, "rep_times_us"]), json.loads(a.loc[key, "rep_times_us"])
        for i in range(min(len(gr), len(ar), 3)):  # the main rounds, which every case has
            o = order.get(i + 1)
            if o is not None and 0 in o and 2 in o:
                out[o.index(2) - o.index(0)].append(100.0 * (ar[i] / gr[i] - 1.0))
    return out


def main(argv: list[str]) -> None:
    for name in argv:
        d = Path(name)
        places = by_place(d)
        if not places:
            print(f"{d}: no schedule in the sidecar (a --gpus run keeps it in its parts)")
            continue
        cells = ", ".join(f"{p:+d}: mean {np.mean(v):+.3f} %, median {np.median(v):+.3f} % ({len(v)})"
                          for p, v in sorted(places.items()))  # fmt: skip
        print(f"{d}: A/A per-rep Δ by golden-again's place against golden: {cells}")


if __name__ == "__main__":
    main(sys.argv[1:])

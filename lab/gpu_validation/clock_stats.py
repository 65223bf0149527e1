"""Profiler integrity on a GPU (issue 46 item 3): how far the second clock (CUDA events around every timed launch)
sits from CUPTI's records, over every rep of one or more runs, and what the bounds of harness/worker/clocks.py
refuse among them.

    python3 lab/gpu_validation/clock_stats.py RESULTS.csv [RESULTS.csv ...]

Reads each file's journal (RESULTS.csv.journal.jsonl: every rep's answer, its ``clocks`` summary included) and
its rows (status ``instrument`` counted). Prints the distribution of the events' median excess over CUPTI (µs and
% of the time), per kernel family and over all, the launches past their events (``over``), and the reps the
bounds would refuse.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import numpy as np

from harness.worker import clocks


def reps(path: Path) -> list[dict]:
    journal = Path(str(path) + ".journal.jsonl")
    out = []
    for line in journal.read_text().splitlines():
        e = json.loads(line)
        if e.get("kind") == "rep" and isinstance(e.get("clocks"), dict):
            out.append({"kernel": e["key"].split("\x1f")[0], "key": e["key"], "time_us": e["time_us"], **e["clocks"]})
    return out


def quantiles(values: np.ndarray) -> str:
    q = np.quantile(values, [0.0, 0.5, 0.9, 0.99, 1.0])
    return " / ".join(f"{x:.2f}" for x in q)


def main(paths: list[str]) -> None:
    every: list[dict] = []
    for p in map(Path, paths):
        got = reps(p)
        with p.open() as f:
            rows = list(csv.DictReader(f))
        refused = [r for r in rows if r["status"] == "instrument"]
        print(f"{p}: {len(got)} reps with both clocks, {len(rows)} rows, {len(refused)} instrument")
        for r in refused:
            print(f"  instrument: {r['kernel']}/{r['case_id']}: {r['error'][:200]}")
        every += [{**g, "file": p.name} for g in got]
    if not every:
        print("no rep carried the second clock")
        return
    print("\ngap = events' median − CUPTI's median, per rep: min / median / p90 / p99 / max")
    print(f"{'family':28s} {'reps':>5s}  {'gap µs':>34s}  {'gap % of time':>34s}  over>0")
    fams = sorted({r["kernel"] for r in every})
    for fam in [*fams, "all"]:
        mine = [r for r in every if fam in ("all", r["kernel"])]
        gap = np.array([r["gap_us"] for r in mine])
        rel = np.array([100.0 * r["gap_us"] / r["time_us"] for r in mine])
        over = sum(1 for r in mine if r["over"] > 0)
        print(f"{fam[:28]:28s} {len(mine):5d}  {quantiles(gap):>34s}  {quantiles(rel):>34s}  {over}")
    launches = sum(r["n"] for r in every)
    over = sum(r["over"] for r in every)
    print(f"\nlaunches: {launches}; past their events by more than {clocks.OVER_US:g} µs: {over}")
    refused = [r for r in every if clocks.problem(r)]
    print(f"reps the bound refuses (OVER_SHARE {clocks.OVER_SHARE:g}): {len(refused)} of {len(every)}")
    for r in sorted(refused, key=lambda r: -r["gap_us"])[:20]:
        print(f"  {r['key'].replace(chr(31), '/')}: time {r['time_us']:.2f} µs, gap {r['gap_us']:.2f}, over {r['over']}"
              f"/{r['n']}: {clocks.problem(r)[:90]}")  # fmt: skip
    worst = sorted(every, key=lambda r: -r["gap_us"])[:10]
    print("\nlargest gaps:")
    for r in worst:
        print(f"  {r['key'].replace(chr(31), '/')}: time {r['time_us']:.2f} µs, events {r['event_us']:.2f}, gap "
              f"{r['gap_us']:.2f}, over {r['over']}/{r['n']}")  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:])

"""A three-way run (golden, TOT, golden again) cut before its rows were written: the rule applied to each case's
first rep as the journals hold it, per kernel and world size — A/A flags, golden-vs-TOT verdicts, rank skew and the
A/A self-check (harness/verdict/groupcheck.py).

    python lab/gpu_validation/round_stats.py DIR    # DIR/{golden,tot,golden-aa}.journal.jsonl[.gz]

One rep is not the harness's verdict (it takes 3 to 5 and the stability rule): read these as the noise of a single
rep, an upper bound on what the full run would flag.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import statistics
import sys
from pathlib import Path

REL, ABS, FLOOR = 1.005, 0.5, 4.0


def first_reps(path: Path) -> dict[str, dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    reps: dict[str, dict] = {}
    with opener(path, "rt") as fh:
        for line in fh:
            e = json.loads(line)
            if e.get("kind") == "rep" and e["key"] not in reps:
                reps[e["key"]] = e
    return reps


def verdict(golden: float, other: float) -> str:
    if golden < FLOOR:
        return "ignored"
    if other > REL * golden + ABS:
        return "regression"
    return "improvement" if golden > REL * other + ABS else "ok"


def skew(ranks: list[float] | None) -> float | None:
    return 100.0 * (max(ranks) / min(ranks) - 1.0) if ranks else None


def _median(xs: list[float]) -> str:
    xs = [x for x in xs if x is not None]
    return f"{statistics.median(xs):5.2f}" if xs else "    -"


def table(d: Path) -> list[str]:
    find = lambda name: next(p for p in (d / f"{name}.journal.jsonl", d / f"{name}.journal.jsonl.gz") if p.exists())  # noqa: E731
    g, t, a = (first_reps(find(n)) for n in ("golden", "tot", "golden-aa"))
    groups: dict[tuple[str, int], list[tuple[dict, dict, dict]]] = collections.defaultdict(list)
    for key in sorted(set(g) & set(t) & set(a)):
        kernel, case_id = key.split("\x1f")
        world = int(case_id.rsplit("_W", 1)[1]) if "_W" in case_id else 1
        groups[(kernel, world)].append((g[key], t[key], a[key]))
    out = ["kernel                 W cases | A/A flags med|d|% | TOT reg imp med d% | skew% | halves%"]
    for (kernel, world), rows in sorted(groups.items()):
        aa = [verdict(x["time_us"], z["time_us"]) for x, _, z in rows]
        gt = collections.Counter(verdict(x["time_us"], y["time_us"]) for x, y, _ in rows)
        d_aa = [abs(z["time_us"] / x["time_us"] - 1) * 100 for x, _, z in rows]
        d_gt = [(y["time_us"] / x["time_us"] - 1) * 100 for x, y, _ in rows]
        sk = [skew(r.get("rank_times_us")) for x, _, z in rows for r in (x, z)]
        hv = [r.get("halves_pct") for x, _, z in rows for r in (x, z)]
        flags = sum(v in ("regression", "improvement") for v in aa)
        out.append(f"{kernel:22s} {world} {len(rows):5d} | {flags:5d} {_median(d_aa)}   | {gt['regression']:3d} "
                   f"{gt['improvement']:3d} {statistics.median(d_gt):+6.2f} | {_median(sk)} | {_median(hv)}")  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", type=Path)
    print("\n".join(table(ap.parse_args(argv).dir)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The figures of a plain three-way run (golden, TOT, golden again; `run.sh plain`): what issue 42 asks of it.

    python3 lab/gpu_validation/confirm_stats.py DIR [DIR...]

DIR holds golden.csv, tot.csv, golden-aa.csv (with sidecars), compare.csv and compare-aa.csv (the plain
`harness compare` of each pair) and wall.txt (the run's start and end, epoch seconds). Prints per DIR: the GPUs,
each stack's statuses, the A/A's flags and confident flags, golden vs TOT's verdicts and the share of its
judged cases that are confident (decisiveness), and the slot check: the A/A's Δ per worker process epoch, where a
bias of the env that starts its processes first would show as epochs that disagree in sign.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

JUDGED = ("regression", "improvement", "ok")


def load(d: Path, name: str) -> pd.DataFrame:
    return pd.read_csv(d / name, keep_default_na=False, na_values=[""])


def flags(cmp: pd.DataFrame) -> tuple[int, int]:
    flagged = cmp["verdict"].isin(("regression", "improvement"))
    return int(flagged.sum()), int((flagged & (cmp["confidence"] == "confident")).sum())


def decisiveness(cmp: pd.DataFrame) -> tuple[int, int]:
    judged = cmp["verdict"].isin(JUDGED)
    return int((judged & (cmp["confidence"] == "confident")).sum()), int(judged.sum())


def epoch_deltas(golden: pd.DataFrame, again: pd.DataFrame) -> dict[int, list[float]]:
    """Per main epoch, each case's Δ% of golden-again against golden over that epoch's reps alone."""
    out: dict[int, list[float]] = {}
    g = golden.set_index(["kernel", "case_id"])
    for key, row in again.set_index(["kernel", "case_id"]).iterrows():
        if key not in g.index or row["status"] != "ok" or g.loc[key, "status"] != "ok":
            continue
        means = []
        for r in (g.loc[key], row):
            if not isinstance(r.get("rep_procs"), str):
                return {}
            times, procs = json.loads(r["rep_times_us"]), json.loads(r["rep_procs"])
            by: dict[int, list[float]] = {}
            for t, p in zip(times, procs, strict=True):
                by.setdefault(p, []).append(t)
            means.append({p: float(np.mean(v)) for p, v in by.items()})
        for p in sorted(set(means[0]) & set(means[1])):
            if p < 5:
                out.setdefault(p, []).append(100.0 * (means[1][p] / means[0][p] - 1.0))
    return out


def report(d: Path) -> str:
    lines = [f"## {d}"]
    side = json.loads((d / "golden.csv.env.json").read_text())
    gpus = sorted({str(x) for x in load(d, "golden.csv")["gpu"].dropna()})
    lines.append(f"GPU: {side.get('gpu', {}).get('name')} ({len(gpus)} GPU set(s): {', '.join(g[:12] for g in gpus)})")
    wall = d / "wall.txt"
    if wall.exists():
        a, b = (int(x) for x in wall.read_text().split()[:2])
        lines.append(f"wall: {b - a} s")
    for name in ("golden", "tot", "golden-aa"):
        st = load(d, f"{name}.csv")["status"].value_counts().to_dict()
        lines.append(f"{name}: " + ", ".join(f"{k} {v}" for k, v in sorted(st.items())))
    aa, cmp = load(d, "compare-aa.csv"), load(d, "compare.csv")
    n_flag, n_conf = flags(aa)
    with np.errstate(invalid="ignore"):
        delta = aa.loc[aa["verdict"].isin(JUDGED), "delta_pct"].abs()
    lines.append(f"A/A: {n_flag} flagged, {n_conf} confident flags of {len(aa)}; median |Δ| {delta.median():.2f} %, "
                 f"max {delta.max():.2f} %; decisiveness {decisiveness(aa)[0]} / {decisiveness(aa)[1]}")  # fmt: skip
    reg = cmp["verdict"] == "regression"
    conf = cmp["confidence"] == "confident"
    sure, judged = decisiveness(cmp)
    lines.append(f"golden vs TOT: {int(reg.sum())} regressions ({int((reg & conf).sum())} confident), "
                 f"{int((cmp['verdict'] == 'improvement').sum())} improvements; confident {sure} of {judged} judged "
                 f"({100 * sure / max(judged, 1):.1f} %)")  # fmt: skip
    per = epoch_deltas(load(d, "golden.csv"), load(d, "golden-aa.csv"))
    if per:
        desc = "; ".join(f"epoch {p}: mean {np.mean(v):+.2f} %, median |Δ| {np.median(np.abs(v)):.2f} %"
                         for p, v in sorted(per.items()))  # fmt: skip
        lines.append(f"A/A by process epoch: {desc}")
        if len(per) >= 2 and len(per[0]) == len(per[1]) > 2:
            lines.append(f"  corr(epoch 0, epoch 1) over cases: {np.corrcoef(per[0], per[1])[0, 1]:+.2f}")
    sched = side.get("schedule", {})
    if sched:
        lines.append(f"schedule: mean place per env {sched.get('mean_place')}, rounds {len(sched.get('rounds', []))}")
    rem = side.get("remeasure", {})
    if rem:
        lines.append(f"re-measuring: {rem.get('undecided_at_first')} asked, {rem.get('passes')} passes, "
                     f"stopped {rem.get('stopped')}, {rem.get('seconds')} s")  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    for d in argv:
        print(report(Path(d)))
        print()


if __name__ == "__main__":
    main(sys.argv[1:])

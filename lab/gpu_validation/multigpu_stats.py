"""The multi-GPU proof's figures from a run's files: per kernel and world size, how many cases the rule flags
(golden vs TOT, and golden vs golden: the A/A), the median |Δ|, the ranks' skew, and the cases the guard made
unstable, with their reasons.

    python lab/gpu_validation/multigpu_stats.py DIR [--aa compare-aa.csv] [--vs compare.csv]

DIR holds golden.csv (and golden-aa.csv / tot.csv) with their compare CSVs, as run.sh's multigpu steps write them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import pandas as pd

FLAGS = ("regression", "improvement")


def _kind(row: pd.Series) -> str:
    if row["kernel"] != "gemm_all_scatter":
        return row["kernel"]
    cfg = row.get("golden_config") if isinstance(row.get("golden_config"), str) else row.get("config")
    scatter = json.loads(cfg).get("SCATTER") if isinstance(cfg, str) and cfg.startswith("{") else None
    return "gemm_all_scatter (GEMM only)" if scatter == "none" else "gemm_all_scatter"


def _world(params: str) -> int:
    return int(json.loads(params).get("W", 1))


def verdict_table(cmp_csv: Path) -> list[str]:
    df = pd.read_csv(cmp_csv)
    df["W"] = df["params"].map(_world)
    df["kind"] = df.apply(_kind, axis=1)
    lines = [
        f"{cmp_csv.name}: {len(df)} cases",
        "  kernel                          W  cases flagged confident unjudged  med|d|%  max|d|%",
    ]
    sure = df["confidence"] == "confident" if "confidence" in df.columns else df["verdict"].isin(FLAGS)
    for (kind, w), g in df.groupby(["kind", "W"]):
        judged = g[g["verdict"].isin((*FLAGS, "ok"))]
        d = judged["delta_pct"].abs()
        med = f"{d.median():8.2f}" if len(d) else "       -"
        mx = f"{d.max():8.2f}" if len(d) else "       -"
        flagged = g["verdict"].isin(FLAGS)
        lines.append(f"  {kind:30s} {w:2d} {len(g):6d} {flagged.sum():7d} {(flagged & sure[g.index]).sum():9d} "
                     f"{len(g) - len(judged):8d} {med} {mx}")  # fmt: skip
    flagged = df["verdict"].isin(FLAGS)
    lines.append(f"  total flagged: {flagged.sum()} of {len(df)} ({(flagged & sure).sum()} confident); verdicts: "
                 + ", ".join(f"{k} {v}" for k, v in df["verdict"].value_counts().items()))  # fmt: skip
    return lines


def rank_table(results_csv: Path) -> list[str]:
    df = pd.read_csv(results_csv)
    multi = df[df["world_size"] > 1]
    if multi.empty:
        return [f"{results_csv.name}: no multi-GPU case"]
    skew = multi["skew_pct"].dropna()
    lines = [
        f"{results_csv.name}: {len(multi)} multi-GPU cases, statuses "
        + ", ".join(f"{k} {v}" for k, v in multi["status"].value_counts().items()),  # fmt: skip
        f"  rank skew %: median {skew.median():.2f}, p90 {skew.quantile(0.9):.2f}, max {skew.max():.2f}",
    ]
    for _, r in multi[multi["status"] == "unstable"].iterrows():
        lines.append(f"  unstable {r['kernel']} {r['case_id']}: {r.get('error') or 'reps spread'}")
    spread = multi["spread_pct"].dropna()
    if len(spread):
        lines.append(f"  rep spread %: median {statistics.median(spread):.2f}, max {spread.max():.2f}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", type=Path)
    a = ap.parse_args(argv)
    out: list[str] = []
    for name in ("compare-aa.csv", "compare.csv"):
        if (a.dir / name).exists():
            out += verdict_table(a.dir / name)
    for name in ("golden.csv", "tot.csv", "golden-aa.csv"):
        if (a.dir / name).exists():
            out += rank_table(a.dir / name)
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())

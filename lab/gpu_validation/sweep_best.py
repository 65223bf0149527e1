"""The multi-GPU sweep's answer per world size: the fastest configuration of each shape (dtype, M, N, K), its time,
how often each configuration wins, and the best time's strong scaling from W = 1 (the Iris seed's question: which
tile wins where, and does the best config scale).

    python lab/gpu_validation/sweep_best.py sweep-w1.csv sweep-w2.csv sweep-w4.csv
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import Counter
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scaling_stats import frame  # noqa: E402


def best(paths: list[Path]) -> pd.DataFrame:
    df = frame(paths)  # timed rows, with M, N, K and W from their params
    df["cfg"] = df["case_id"].str.split("_cfg-").str[1]
    i = df.groupby(["W", "dtype", "M", "N", "K"])["time_us"].idxmin()
    return df.loc[i, ["W", "dtype", "M", "N", "K", "time_us", "cfg", "status"]].reset_index(drop=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", type=Path, nargs="+")
    a = ap.parse_args(argv)
    b = best(a.csv)
    out = []
    for w, g in b.groupby("W"):
        wins = Counter(g["cfg"]).most_common(3)
        out.append(f"W = {w}: {len(g)} shapes; most wins: " + "; ".join(f"{c} ({n})" for c, n in wins))
    t = b.pivot_table(index=["dtype", "M", "N", "K"], columns="W", values="time_us")
    for w in t.columns[1:]:
        s = t[1] / t[w]
        out.append(
            f"best config W = 1 -> {w}: speed-up median {statistics.median(s):.2f}x ({s.min():.2f}-{s.max():.2f}x)"
        )
    out += ["", b.to_string(index=False, float_format=lambda v: f"{v:.2f}")]
    sys.stdout.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

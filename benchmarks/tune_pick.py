"""Turn config-sweep results into AITER-style config files: for each (kernel, N, K) the fastest config per
M bucket becomes ``kernels/configs/{arch}-{CONFIG_NAME}-N={N}-K={K}.json``.

    python benchmarks/tune_pick.py SWEEP.csv [MORE.csv ...] [--arch sm90] [--out kernels/configs] [--summary tuning.md]

Several sweeps of one GPU are read as one (a case measured in more than one file: the last file's row counts, so
a re-run of some configs replaces their first measurement).

Buckets follow the sweep's M values: M_LEQ_<m> for each swept M but the largest, which becomes ``any``.
Only ``ok`` rows count; configs that failed to compile (shared memory) or answered wrongly are never picked.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pandas as pd  # noqa: E402

from harness.results.load import load_results
from kernels import load  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("sweep", nargs="+")
    ap.add_argument("--arch", default="sm90")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "kernels" / "configs"))
    ap.add_argument("--summary")
    a = ap.parse_args()
    df = pd.concat([load_results(f) for f in a.sweep]).drop_duplicates(["kernel", "case_id"], keep="last")
    ok = df[df["status"] == "ok"].copy()
    lines = ["| kernel | N | K | bucket | best µs | worst ok µs | config |", "|---|---|---|---|---|---|---|"]
    for (kernel, n, k), g in ok.groupby(["kernel", "N", "K"]):
        ms = sorted(int(m) for m in g["M"].unique())
        buckets = {}
        for m in ms:
            rows = g[g["M"] == m].sort_values("time_us")
            best = rows.iloc[0]
            cfg = json.loads(best["config"])
            key = "any" if m == ms[-1] else f"M_LEQ_{m}"
            buckets[key] = cfg
            lines.append(
                f"| {kernel} | {n} | {k} | {key} | {best['time_us']:.2f} | {rows['time_us'].max():.2f} | "
                f"{json.dumps(cfg, separators=(',', ':'))} |"
            )
        name = load(kernel).CONFIG_NAME
        path = Path(a.out) / f"{a.arch}-{name}-N={int(n)}-K={int(k)}.json"
        path.write_text("{\n" + ",\n".join(f'  "{b}": {json.dumps(c)}' for b, c in buckets.items()) + "\n}\n")
        print(f"wrote {path.name}: {', '.join(buckets)}")
    if a.summary:
        Path(a.summary).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

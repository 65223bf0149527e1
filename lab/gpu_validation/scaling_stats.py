"""The Iris seed's scaling figures from a three-way run's golden (or TOT) results at W = 1 and 2: per shape the
fused GEMM + all-scatter's time against its GEMM-only twin (config SCATTER none: the same tiles, no peer stores,
no barriers), strong scaling (one problem on 1 and 2 GPUs), weak scaling (N doubled with W), and the comm share
at W = 2 ((fused - GEMM only) / fused).

    python lab/gpu_validation/scaling_stats.py W1.csv W2.csv [--md OUT.md]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import pandas as pd


def _frame(paths: list[Path]) -> pd.DataFrame:
    df = pd.concat([pd.read_csv(p) for p in paths], ignore_index=True)
    df = df[(df["kernel"] == "gemm_all_scatter") & (df["status"] == "ok")].copy()
    p = df["params"].map(json.loads)
    for k in ("M", "N", "K", "W"):
        df[k] = p.map(lambda d, k=k: int(d[k]))
    df["twin"] = df["config"].map(lambda c: json.loads(c).get("SCATTER") == "none")
    return df


def table(df: pd.DataFrame) -> pd.DataFrame:
    t = df.pivot_table(index=["dtype", "M", "N", "K"], columns=["twin", "W"], values="time_us", aggfunc="first")
    out = pd.DataFrame(index=t.index)
    out["fused_W1_us"], out["fused_W2_us"] = t[(False, 1)], t[(False, 2)]
    out["gemm_W1_us"], out["gemm_W2_us"] = t[(True, 1)], t[(True, 2)]
    out["strong_speedup"] = out["fused_W1_us"] / out["fused_W2_us"]
    out["gemm_speedup"] = out["gemm_W1_us"] / out["gemm_W2_us"]
    out["comm_share_pct"] = 100 * (out["fused_W2_us"] - out["gemm_W2_us"]) / out["fused_W2_us"]
    return out.reset_index()


def weak(out: pd.DataFrame) -> pd.DataFrame:
    """N doubled with W, K the same: (N, K) = (4096, 4096) at W = 1 against (8192, 4096) at W = 2."""
    one = out[(out["N"] == 4096) & (out["K"] == 4096)].set_index(["dtype", "M"])["fused_W1_us"]
    two = out[(out["N"] == 8192) & (out["K"] == 4096)].set_index(["dtype", "M"])["fused_W2_us"]
    return pd.DataFrame({"W1_N4096_us": one, "W2_N8192_us": two, "weak_efficiency": one / two}).reset_index()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", type=Path, nargs="+")
    ap.add_argument("--md", type=Path)
    a = ap.parse_args(argv)
    out = table(_frame(a.csv))
    w = weak(out)
    lines = [
        f"{len(out)} shapes; strong speed-up W=1->2 (fused) median {statistics.median(out['strong_speedup']):.2f} "
        f"({out['strong_speedup'].min():.2f}-{out['strong_speedup'].max():.2f}), GEMM only "
        f"{statistics.median(out['gemm_speedup']):.2f}; comm share at W=2 median "
        f"{statistics.median(out['comm_share_pct']):.1f} % ({out['comm_share_pct'].min():.1f}-"
        f"{out['comm_share_pct'].max():.1f} %); weak efficiency median {statistics.median(w['weak_efficiency']):.2f}",
        "",
        "```",
        out.to_string(index=False, float_format=lambda v: f"{v:.2f}"),
        "",
        w.to_string(index=False, float_format=lambda v: f"{v:.2f}"),
        "```",
    ]
    text = "\n".join(lines) + "\n"
    if a.md:
        a.md.write_text(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

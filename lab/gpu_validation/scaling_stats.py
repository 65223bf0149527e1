"""The Iris seed's scaling figures from golden (or TOT) results at any world sizes (W = 1, 2, 4 on one node): per
shape the fused GEMM + all-scatter against its GEMM-only twin (config SCATTER none: the same tiles, no peer stores,
no barriers) and against the vendor path (torch_gemm_all_gather: cuBLAS on each rank's columns + NCCL
all_gather, bf16), strong scaling (one problem on 1 GPU and on W), weak scaling (each rank's share of the product
held: N doubled at W = 2, M x 4 at W = 4, the shapes the suite has), and the comm share ((fused - GEMM only) /
fused) per world size.

    python lab/gpu_validation/scaling_stats.py W1.csv W2.csv W4.csv [--md OUT.md]

A case the guard left ``unstable`` keeps its time here (its ranks' skew is the barrier's hop, docs/multigpu-timing.md);
a failed case is left out.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import pandas as pd

SHAPE = ["dtype", "M", "N", "K"]


def frame(paths: list[Path]) -> pd.DataFrame:
    df = pd.concat([pd.read_csv(p) for p in paths], ignore_index=True)
    df = df[df["status"].isin(["ok", "unstable"]) & df["time_us"].notna()].copy()
    p = df["params"].map(json.loads)
    for k in ("M", "N", "K"):
        df[k] = p.map(lambda d, k=k: int(d[k]))
    df["W"] = p.map(lambda d: int(d.get("W", 1)))
    twin = df["config"].fillna("{}").map(lambda c: json.loads(c).get("SCATTER") == "none")
    df["what"] = df["kernel"].map({"torch_gemm": "cublas", "torch_gemm_all_gather": "nccl"}).fillna("fused")
    df.loc[twin & (df["kernel"] == "gemm_all_scatter"), "what"] = "gemm"
    return df


def table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per shape: each kind's µs at each W, strong speed-ups from W = 1, comm share, fused vs vendor."""
    t = df.pivot_table(index=SHAPE, columns=["what", "W"], values="time_us", aggfunc="first")
    ws = sorted(df["W"].unique())
    out = pd.DataFrame(index=t.index)
    for what in ("fused", "gemm", "nccl"):
        for w in ws:
            if (what, w) in t.columns:
                out[f"{what}_W{w}_us"] = t[(what, w)]
    for w in ws[1:]:
        out[f"strong_W{w}"] = out["fused_W1_us"] / out[f"fused_W{w}_us"]
        out[f"gemm_strong_W{w}"] = out["gemm_W1_us"] / out[f"gemm_W{w}_us"]
        out[f"comm_share_W{w}_pct"] = 100 * (out[f"fused_W{w}_us"] - out[f"gemm_W{w}_us"]) / out[f"fused_W{w}_us"]
        if f"nccl_W{w}_us" in out:
            out[f"fused_vs_nccl_W{w}"] = out[f"nccl_W{w}_us"] / out[f"fused_W{w}_us"]
    return out.reset_index()


def weak(out: pd.DataFrame) -> pd.DataFrame:
    """Each rank's M (N/W) K held: (M, 4096, K) at W = 1 against (M, 8192, K) at W = 2 and (4M, 4096, K) at W = 4."""
    rows = []
    one = out.set_index(SHAPE)
    for (dt, m, n, k), r in one.iterrows():
        if n != 4096:
            continue
        two = (dt, m, 8192, k)
        four = (dt, 4 * m, n, k)
        row = {"dtype": dt, "M": m, "N": n, "K": k, "W1_us": r["fused_W1_us"]}
        if "fused_W2_us" in one and two in one.index:
            row["W2_us (N x 2)"] = one.loc[two, "fused_W2_us"]
            row["eff_W2"] = r["fused_W1_us"] / row["W2_us (N x 2)"]
        if "fused_W4_us" in one and four in one.index:
            row["W4_us (M x 4)"] = one.loc[four, "fused_W4_us"]
            row["eff_W4"] = r["fused_W1_us"] / row["W4_us (M x 4)"]
        rows.append(row)
    return pd.DataFrame(rows)


def _range(s: pd.Series, fmt: str = ".2f", unit: str = "") -> str:
    s = s.dropna()
    if s.empty:
        return "-"
    return f"{statistics.median(s):{fmt}}{unit} ({s.min():{fmt}}-{s.max():{fmt}}{unit})"


def summary(out: pd.DataFrame, w: pd.DataFrame) -> list[str]:
    lines = [f"{len(out)} shapes (dtype, M, N, K); medians with (min-max):", ""]
    lines.append(
        "| W | strong speed-up, fused | GEMM only | comm share | fused vs cuBLAS + NCCL (bf16, > 1: fused faster) | weak efficiency |"
    )
    lines.append("|---|---|---|---|---|---|")
    for c in [c for c in out.columns if c.startswith("strong_W")]:
        n = c[len("strong_W") :]
        vs = out[f"fused_vs_nccl_W{n}"] if f"fused_vs_nccl_W{n}" in out else pd.Series(dtype=float)
        eff = w[f"eff_W{n}"] if f"eff_W{n}" in w else pd.Series(dtype=float)
        lines.append(f"| {n} | {_range(out[c])}× | {_range(out[f'gemm_strong_W{n}'])}× | "
                     f"{_range(out[f'comm_share_W{n}_pct'], '.1f', ' %')} | {_range(vs)}× | {_range(eff)} |")  # fmt: skip
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", type=Path, nargs="+")
    ap.add_argument("--md", type=Path)
    a = ap.parse_args(argv)
    out = table(frame(a.csv))
    w = weak(out)
    fmt = {"float_format": lambda v: f"{v:.2f}", "index": False}
    lines = [*summary(out, w), "", "```", out.to_string(**fmt), "", w.to_string(**fmt), "```"]
    text = "\n".join(lines) + "\n"
    if a.md:
        a.md.write_text(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

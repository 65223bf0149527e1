"""Do two comparisons of one suite agree? Verdicts case by case, as #32 asks of two machines: among the cases
both call confident, the share with the same verdict, and the opposite flips (a regression in one, an
improvement in the other). Also the confident regressions per kernel family in each.

    python3 lab/gpu_validation/agreement.py A/compare.csv B/compare.csv [--family batched_gemm] [--same-config]

--same-config keeps only the cases both comparisons ran with the same configs (golden's and TOT's), so that a
config file changed between the two runs does not count as the machines disagreeing.
"""

from __future__ import annotations

import argparse
import sys

import pandas as pd

OPPOSITE = {("regression", "improvement"), ("improvement", "regression")}


def load(path: str) -> pd.DataFrame:
    df = pd.read_csv(path)
    if "confidence" not in df:
        print(f"{path}: no confidence column (an older compare): judge it again with harness compare", file=sys.stderr)
        raise SystemExit(2)
    df["confidence"] = df["confidence"].fillna("")
    return df.set_index(["kernel", "case_id"])


def text(col: pd.Series) -> pd.Series:
    """A column as strings, a missing cell as "" (the TOT config is empty where it is golden's)."""
    return col.map(lambda v: "" if pd.isna(v) else str(v))


def confident(df: pd.DataFrame) -> pd.Series:
    return df["confidence"].eq("confident")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--family", action="append", default=[], help="a kernel-name prefix to count apart")
    ap.add_argument("--same-config", action="store_true", help="only the cases run with the same configs in both")
    args = ap.parse_args()
    a, b = load(args.a), load(args.b)
    both = a.index.intersection(b.index)
    a, b = a.loc[both], b.loc[both]
    if args.same_config:
        same_cfg = (text(a["golden_config"]) == text(b["golden_config"])) & (
            text(a["tot_config"]) == text(b["tot_config"])
        )
        print(f"{int((~same_cfg).sum())} of {len(both)} cases left out: run with other configs")
        both = both[same_cfg.to_numpy()]
        a, b = a.loc[both], b.loc[both]
    sure = confident(a) & confident(b)
    same = (a["verdict"] == b["verdict"]) & sure
    flips = [k for k in both[sure] if (a.at[k, "verdict"], b.at[k, "verdict"]) in OPPOSITE]
    print(
        f"{len(both)} cases in both; confident in both: {int(sure.sum())}; the same verdict: {int(same.sum())} "
        f"({100 * same.sum() / max(1, sure.sum()):.1f} %); opposite flips: {len(flips)}"
    )
    every = (a["verdict"] == b["verdict"]).sum()
    print(f"all verdicts the same: {every} of {len(both)}")
    for k in both[sure & ~same]:
        ra, rb = a.loc[k], b.loc[k]
        print(
            f"  differ: {k[0]}/{k[1]}: {ra['verdict']} {ra['delta_pct']:+.2f} % (limit {ra['limit_us']:.2f} µs) vs "
            f"{rb['verdict']} {rb['delta_pct']:+.2f} %"
        )
    for name, df in (("A", a), ("B", b)):
        reg = df["verdict"].eq("regression")
        line = f"{name}: regressions {int(reg.sum())}, confident {int((reg & confident(df)).sum())}"
        for fam in args.family:
            fam_rows = df.index.get_level_values(0).str.startswith(fam)
            line += f"; {fam}*: {int((reg & fam_rows).sum())} ({int((reg & fam_rows & confident(df)).sum())} confident)"
        print(line)


if __name__ == "__main__":
    main()

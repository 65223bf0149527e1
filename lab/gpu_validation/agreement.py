"""Do two comparisons of one suite agree? `harness agree`'s figures (harness/compare/agreement.py), as the reports
since 2026-11-25 cite them, with the confident regressions per kernel family of each beside them.

    python3 lab/gpu_validation/agreement.py A/compare.csv B/compare.csv [--family batched_gemm] [--same-config]

Unlike `harness agree`, every case is compared unless --same-config is given (the earlier reports' figures).
"""

from __future__ import annotations

import argparse
import sys

import pandas as pd

from harness.compare.agreement import agreement, lines


def load(path: str) -> pd.DataFrame:
    df = pd.read_csv(path)
    if "confidence" not in df:
        print(f"{path}: no confidence column (an older compare): judge it again with harness compare", file=sys.stderr)
        raise SystemExit(2)
    return df


def family_line(name: str, df: pd.DataFrame, families: list[str]) -> str:
    reg = df["verdict"].eq("regression")
    sure = df["confidence"].eq("confident")
    line = f"{name}: regressions {int(reg.sum())}, confident {int((reg & sure).sum())}"
    for fam in families:
        rows = df["kernel"].str.startswith(fam)
        line += f"; {fam}*: {int((reg & rows).sum())} ({int((reg & rows & sure).sum())} confident)"
    return line


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--family", action="append", default=[], help="a kernel-name prefix to count apart")
    ap.add_argument("--same-config", action="store_true", help="only the cases run with the same configs in both")
    args = ap.parse_args()
    a, b = load(args.a), load(args.b)
    for line in lines(agreement(a, b, any_config=not args.same_config)):
        print(line)
    for name, df in (("A", a), ("B", b)):
        print(family_line(name, df, args.family))


if __name__ == "__main__":
    main()

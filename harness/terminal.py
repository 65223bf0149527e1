"""Rich rendering of a comparison for the terminal. Data goes to stdout; messages go to stderr."""

from __future__ import annotations

import pandas as pd
from rich.console import Console
from rich.table import Table

from harness.compare import Comparison, worst_first
from harness.envinfo import one_line

STYLE = {
    "regression": "bold red",
    "failed_in_tot": "bold red",
    "missing_in_tot": "yellow",
    "improvement": "green",
    "ok": "",
    "ignored": "dim",
    "new_in_tot": "cyan",
    "failed_in_golden": "magenta",
    "failed_in_both": "magenta",
}


def stdout() -> Console:
    return Console(highlight=False, emoji=False, soft_wrap=False)


def stderr() -> Console:
    return Console(stderr=True, highlight=False, emoji=False)


def _fmt(v: object, spec: str = ".2f") -> str:
    return "" if v is None or (isinstance(v, float) and pd.isna(v)) else format(v, spec)


def print_comparison(cmp: Comparison, console: Console | None = None, worst: int = 20) -> None:
    con = console or stdout()
    con.print(f"[bold]golden[/]  {one_line(cmp.golden_env)}")
    con.print(f"[bold]TOT[/]     {one_line(cmp.tot_env)}")
    con.print(f"[bold]rule[/]    {cmp.rule.describe()}")
    counts = {k: v for k, v in cmp.counts().items() if v}
    summary = Table(title=f"{len(cmp.table)} cases", title_justify="left")
    summary.add_column("verdict")
    summary.add_column("cases", justify="right")
    for v, n in counts.items():
        summary.add_row(f"[{STYLE[v]}]{v}[/]" if STYLE[v] else v, str(n))
    con.print(summary)

    pk = cmp.per_kernel()
    if len(pk) > 1:
        t = Table(title="per kernel", title_justify="left")
        for c in ("kernel", "cases", "regr", "TOT fail", "missing", "impr", "ok", "ignored", "other"):
            t.add_column(c, justify="left" if c == "kernel" else "right")
        groups = {
            "regr": ["regression"],
            "TOT fail": ["failed_in_tot"],
            "missing": ["missing_in_tot"],
            "impr": ["improvement"],
            "ok": ["ok"],
            "ignored": ["ignored"],
            "other": ["new_in_tot", "failed_in_golden", "failed_in_both"],
        }
        for kernel, row in pk.iterrows():
            cells = [str(int(sum(row.get(v, 0) for v in vs))) for vs in groups.values()]
            t.add_row(str(kernel), str(int(row.sum())), *[c if c != "0" else "" for c in cells])
        con.print(t)

    bad = cmp.table[cmp.table["verdict"].isin(["regression", "failed_in_tot", "missing_in_tot"])]
    bad = bad.iloc[worst_first(bad)]
    if len(bad):
        t = Table(
            title=f"worst {min(worst, len(bad))} of {len(bad)} regressions and TOT failures", title_justify="left"
        )
        for c in ("kernel", "case_id", "golden µs", "TOT µs", "Δ%", "limit µs", "verdict"):
            right = c not in ("kernel", "case_id", "verdict")
            t.add_column(c, justify="right" if right else "left", no_wrap=c == "verdict")
        for _, r in bad.head(worst).iterrows():
            t.add_row(
                str(r["kernel"]),
                str(r["case_id"]),
                _fmt(r["golden_us"]),
                _fmt(r["tot_us"]),
                _fmt(r["delta_pct"], "+.1f"),
                _fmt(r["limit_us"]),
                f"[{STYLE[r['verdict']]}]{r['verdict']}[/]",
            )
        con.print(t)
    if cmp.nothing_compared:  # the headline: a table of failures is not "no regressions"
        con.print(f"[bold red]{cmp.nothing_compared}[/]")
    elif not len(bad):
        con.print("[green]no regressions and no TOT failures[/]")

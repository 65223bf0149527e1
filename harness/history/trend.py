"""What ``history trend``, ``regressions`` and ``changepoints`` show: each function reads what it needs on an open
connection and returns (the frame for ``--csv``, a function printing it as terminal tables)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from rich.console import Console
from rich.markup import escape

from harness.errors import HarnessError
from harness.history import queries as q
from harness.history.changepoints import MIN_POINTS, index_steps, series_steps
from harness.history.render import Col, print_table, short_gpu, styled_verdict, text_or, when
from harness.render.terminal import print_lines
from harness.render.vocabulary import regressions
from harness.verdict.rule import Rule

Shown = tuple[pd.DataFrame, Callable[[Console], None]]


def _series_title(keys: tuple) -> str:
    env, gpu = keys
    return f"{env} on {short_gpu(gpu) or 'an unknown GPU'}"


def _print_annotations(con: Console, notes: pd.DataFrame) -> None:
    if not len(notes):
        return
    lines = []
    for a in notes.itertuples(index=False):
        scope = " ".join(str(s) for s in (a.kernel, a.case_id, a.gpu, a.stack) if s)
        lines.append(f"{when(a.at)}  {a.kind}: {a.text}" + (f"  ({scope})" if scope else ""))
    print_lines(con, "annotations:", lines, "bold")


def case_trend(conn: Any, f: q.Filter, by: str) -> Shown:
    """Each selected case's time per run (or per Triton version), with the verdicts of the comparisons that
    measured each run and the change points of its series."""
    rows = q.results_frame(conn, f)
    if not len(rows):
        raise HarnessError("no stored row matches the filters")
    if by == "triton":  # medians per Triton version: the verdicts, change points and notes below are not shown
        df = q.by_triton(q.timed(rows).assign(case=rows["kernel"] + "/" + rows["case_id"]), "time_us")
        return df, lambda con: _print_by_triton(con, df, "time_us", "median µs")
    comps = q.comparisons_frame(conn)
    verd = q.verdicts_frame(conn, comps["id"].tolist(), f)
    rows = rows.merge(q.run_verdicts(comps, verd), on=["run_id", "kernel", "case_id"], how="left")
    rows["verdicts"] = rows["verdicts"].fillna("")
    steps = series_steps(rows, min_points=MIN_POINTS)
    mark = {(s.run_id, s.kernel, s.case_id): f"{s.step_pct:+.1f}%" for s in steps.itertuples(index=False)}
    rows["step"] = [mark.get((r, k, c), "") for r, k, c in zip(rows["run_id"], rows["kernel"], rows["case_id"])]
    rows["changed"] = changed_since(conn, rows)
    notes = q.annotations_frame(conn, f)
    cols = ["run_id", "run_at", *q.SERIES, "triton_version", "kernel", "case_id", "status", "time_us", "spread_pct"]
    df = rows[[*cols, "verdicts", "step", "changed", "tags"]]

    def show(con: Console) -> None:
        for (kernel, case_id), g in df.groupby(["kernel", "case_id"], sort=True):
            con.print(f"[bold]{escape(kernel)} {escape(case_id)}[/]")
            for keys, s in g.groupby(q.SERIES, dropna=False, sort=True):
                print_table(
                    con,
                    s,
                    [
                        Col("run_id", "run", justify="right"),
                        Col("run_at", "when", "when"),
                        Col("triton_version", "Triton"),
                        Col("time_us", "µs", ".2f", "right"),
                        Col("spread_pct", "±%", ".1f", "right"),
                        Col("step", "step", justify="right"),
                        Col("changed", "changed", fold=True),
                        Col("verdicts", "verdict (comparison)", fold=True),
                    ],
                    _series_title(keys),
                    kernel_col="",
                    styles={"verdicts": styled_verdict},
                )
        _print_annotations(con, notes)
        con.print("step: a change point (ruptures PELT) starts at that run: its level against the one before")
        con.print("changed: what the run measured differently from the one before it in its series")

    return df, show


def changed_since(conn: Any, rows: pd.DataFrame) -> list[str]:
    """Per row, what its run measured differently from the series' run before it (results/identity.SERIES: the
    kernel's code, the suite, the stack, the method): a step beside a change has a cause other than noise."""
    from harness.results import identity

    sides = q.sidecars(conn, sorted(set(rows["run_id"].astype(int))))
    out = [""] * len(rows)
    order = rows.sort_values(["run_at", "run_id"], kind="stable")
    seen: dict[tuple[int, int, str], str] = {}  # the cases of one kernel share their two runs' answer
    for _, g in order.groupby([*q.SERIES, "kernel", "case_id"], dropna=False, sort=False):
        prev = None
        for pos, rid, kernel in zip(g.index, g["run_id"].astype(int), g["kernel"], strict=True):
            if prev is not None:
                key = (prev, rid, kernel)
                if key not in seen:
                    seen[key] = identity.changed(sides.get(prev, {}), sides.get(rid, {}), identity.SERIES, kernel)
                out[rows.index.get_loc(pos)] = seen[key]
            prev = rid
    return out


def kernel_trend(conn: Any, f: q.Filter, by: str) -> Shown:
    """A kernel's index per run (geometric mean of its cases' time / each case's median), per stack and GPU."""
    rows = q.results_frame(conn, f, columns=("kernel", "case_id", "params", "status", "time_us"))
    if not len(rows):
        raise HarnessError("no stored row matches the filters")
    index = q.kernel_index(rows)
    if by == "triton":  # medians per Triton version: no change points or notes
        df = q.by_triton(index, "index")
        return df, lambda con: _print_by_triton(con, df, "index", "median index")
    steps = index_steps(index)
    mark = {int(s.run_id): f"{s.step_pct:+.1f}%" for s in steps.itertuples(index=False)}
    index["step"] = index["run_id"].map(lambda r: mark.get(int(r), ""))
    notes = q.annotations_frame(conn, f)
    kernels = ", ".join(sorted(rows["kernel"].unique()))

    def show(con: Console) -> None:
        con.print(f"[bold]{escape(kernels)}[/]: time relative to each case's median over these runs (1.000 = typical)")
        for keys, s in index.groupby(q.SERIES, dropna=False, sort=True):
            print_table(
                con,
                s,
                [
                    Col("run_id", "run", justify="right"),
                    Col("run_at", "when", "when"),
                    Col("triton_version", "Triton"),
                    Col("cases", justify="right"),
                    Col("index", "index", ".3f", "right"),
                    Col("step", justify="right"),
                    Col("tags", fold=True),
                ],
                _series_title(keys),
                kernel_col="",
            )
        _print_annotations(con, notes)

    return index, show


def _print_by_triton(con: Console, df: pd.DataFrame, value: str, heading: str) -> None:
    for keys, s in df.groupby(q.SERIES, dropna=False, sort=True):
        print_table(
            con,
            s,
            [
                Col("triton_version", "Triton"),
                Col("runs", justify="right"),
                Col("first", "first run", "when"),
                Col("last", "last run", "when"),
                Col(value, heading, ".3f" if value == "index" else ".2f", "right"),
            ],
            _series_title(keys),
            kernel_col="",
        )


def regression_table(conn: Any, f: q.Filter, aa: bool) -> Shown:
    """Regressions per kernel per comparison, one table per GPU model: kernels as rows, comparisons as columns."""
    comps = q.comparisons_frame(conn, f, include_aa=aa)
    verd = q.verdicts_frame(conn, comps["id"].tolist(), f)
    long = q.regression_counts(comps, verd)
    if not len(long):
        raise HarnessError("no comparison matches the filters (harness history list shows what is stored)")

    def show(con: Console) -> None:
        for gpu, g in long.groupby(long["gpu_name"].fillna(""), sort=True):
            _print_pivot(con, g, short_gpu(gpu) or "unknown GPU")
        con.print(
            "cells: regressions ((N?): N of them ambiguous; +N TOT failures) of the kernel's cases in that"
            " comparison; -: not compared"
        )

    return long, show


#: comparisons shown side by side in a terminal table (80 columns): the newest ones
PIVOT_COLUMNS = 5


def _print_pivot(con: Console, g: pd.DataFrame, gpu: str) -> None:
    comps = g.drop_duplicates("comparison_id")[["comparison_id", "when", "golden_triton", "tot_triton"]]
    shown = comps.tail(PIVOT_COLUMNS)
    d = g[g["comparison_id"].isin(shown["comparison_id"])]
    amb = d["ambiguous"].astype(int) if "ambiguous" in d.columns else pd.Series(0, index=d.index)
    cell = (
        d["regressions"].astype(int).astype(str)
        + np.where(amb > 0, " (" + amb.astype(str) + "?)", "")
        + np.where(d["failed_in_tot"] > 0, "+" + d["failed_in_tot"].astype(int).astype(str), "")
    )
    table = d.assign(cell=cell).pivot(index="kernel", columns="comparison_id", values="cell").fillna("-")
    totals = d.groupby("comparison_id")["regressions"].sum().astype(int).astype(str)
    table.loc["all"] = totals
    heads = {
        r.comparison_id: f"#{r.comparison_id} {pd.Timestamp(r.when):%m-%d}\n{r.golden_triton}→{r.tot_triton}"
        for r in shown.itertuples(index=False)
    }
    frame = table.reset_index().rename(columns={c: heads.get(c, c) for c in table.columns})
    earlier = len(comps) - len(shown)
    title = f"regressions per kernel · {gpu}" + (
        f" (the newest {len(shown)}; {earlier} earlier: --csv)" if earlier else ""
    )
    cols = [Col("kernel")] + [Col(heads[c], justify="right") for c in shown["comparison_id"]]
    print_table(con, frame, cols, title, totals=("all",))


def verdict_change_table(conn: Any, f: q.Filter, start: str | None, end: str | None, aa: bool) -> Shown:
    """Cases whose verdict differs between two comparisons (``--from``, ``--to``: ids or dates)."""
    which = q.Filter(gpu=f.gpu, tags=f.tags, without_tags=f.without_tags)  # kernel filters apply to the verdicts
    comps = q.comparisons_frame(conn, which, include_aa=aa)
    if not len(comps):
        raise HarnessError("no comparison matches the filters (harness history list shows what is stored)")
    a = q.pick_comparison(comps, start) if start else comps.iloc[0]
    b = q.pick_comparison(comps, end) if end else comps.iloc[-1]
    va, vb = (q.verdicts_frame(conn, [int(c["id"])], f) for c in (a, b))
    changes = q.verdict_changes(va, vb)
    changes.insert(0, "to", int(b["id"]))
    changes.insert(0, "from", int(a["id"]))

    def show(con: Console) -> None:
        for label, c in (("from", a), ("to", b)):
            con.print(
                f"[bold]{label}[/] #{int(c['id'])} {when(c['when'])}  Triton {c['golden_triton']} vs {c['tot_triton']}"
                f"  {escape(short_gpu(c['gpu_name']))}  {_regressions(c)}  {escape(str(c['file_name']))}"
            )
        if a["gpu_name"] != b["gpu_name"]:
            con.print("[yellow]note:[/] the two ran on different GPUs (--gpu picks one)")
        counts = changes["change"].value_counts()
        con.print(", ".join(f"{counts.get(k, 0)} {k}" for k in ("new", "fixed", "changed", "added", "dropped")))
        if len(changes):
            print_table(
                con,
                _marked(changes),
                [
                    Col("change"),
                    Col("kernel"),
                    Col("case_id", fold=True),
                    Col("verdict_before", "before"),
                    Col("verdict_after", "after"),
                    Col("delta_pct_after", "Δ% after", "+.1f", "right"),
                ],
                "verdict changes (new/fixed: blocking now/before)",
                styles={"verdict_before": styled_verdict, "verdict_after": styled_verdict},
            )

    return changes, show


def _regressions(comparison: pd.Series) -> str:
    amb = comparison.get("ambiguous")
    return regressions(int(comparison["regressions"]), 0 if amb is None or pd.isna(amb) else int(amb))


def _marked(changes: pd.DataFrame) -> pd.DataFrame:
    """Verdicts as shown: ``regression (ambiguous)`` where the 95 % interval straddled the limit."""
    out = changes.copy()
    for side in ("before", "after"):
        amb = out[f"confidence_{side}"].eq("ambiguous").fillna(False).to_numpy(dtype=bool)
        text = out[f"verdict_{side}"].fillna("").astype(str)
        out[f"verdict_{side}"] = np.where(amb, text + " (ambiguous)", text)
    return out


def changepoint_table(conn: Any, f: q.Filter, min_points: int) -> Shown:
    """Change points of every selected case's series, with the rule's verdict of each step and the verdicts of
    the comparisons that measured the run where it starts."""
    rows = q.results_frame(conn, f, columns=("kernel", "case_id", "params", "status", "time_us"))
    if not len(rows):
        raise HarnessError("no stored row matches the filters")
    comps = q.comparisons_frame(conn)
    rule = rule_of(comps)
    steps = series_steps(rows, rule, min_points)
    verd = q.verdicts_frame(conn, comps["id"].tolist(), f)
    steps = steps.merge(q.run_verdicts(comps, verd), on=["run_id", "kernel", "case_id"], how="left")
    steps["verdicts"] = steps["verdicts"].fillna("")
    series = rows.groupby([*q.SERIES, "kernel", "case_id"], dropna=False).size()
    searched = int((series >= min_points).sum())
    notes = q.annotations_frame(conn, f)

    def show(con: Console) -> None:
        con.print(
            f"{len(steps)} change points in {searched} case series of >= {min_points} runs (one stack on one GPU "
            f"model; {len(series) - searched} shorter ones not searched)"
        )
        con.print(f"rule: {escape(rule.describe())}")
        for keys, s in steps.groupby(q.SERIES, dropna=False, sort=True):
            _print_steps(con, s, _series_title(keys))
        _print_annotations(con, notes)

    return steps, show


def _print_steps(con: Console, s: pd.DataFrame, title: str) -> None:
    """One series' change points; the Triton and verdict columns only where they say something."""
    s = s.assign(tritons=s["triton_before"].map(text_or) + "→" + s["triton_after"].map(text_or))
    cols = [Col("kernel"), Col("case_id", fold=True), Col("run_at", "from", "when")]
    if (s["triton_before"] != s["triton_after"]).any():
        cols.append(Col("tritons", "Triton"))
    cols += [Col("step_pct", "step %", "+.1f", "right"), Col("by_rule", "rule")]
    if (s["verdicts"] != "").any():
        cols.append(Col("verdicts", "verdicts there", fold=True))
    print_table(con, s, cols, title, styles={"by_rule": styled_verdict, "verdicts": styled_verdict})


def rule_of(comps: pd.DataFrame) -> Rule:
    """The rule of the newest stored comparison (the one the team gates on), else AITER's default."""
    if not len(comps):
        return Rule()
    c = comps.iloc[-1]
    return Rule(rel=float(c["rule_rel"]), abs_us=float(c["rule_abs_us"]), min_golden_us=float(c["rule_min_golden_us"]))

"""What the HTML report's history section draws from (``harness report --history DB``): everything read from the
database at once, before anything is drawn."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from harness.history import queries as q
from harness.history.changepoints import index_steps, series_steps
from harness.history.trend import rule_of


@dataclass
class HistoryView:
    shown: str  # the database as messages show it (no credentials)
    runs: pd.DataFrame
    comparisons: pd.DataFrame
    counts: pd.DataFrame  # regressions per comparison and kernel (golden vs TOT only)
    index: dict[str, pd.DataFrame]  # kernel → its index per run (queries.kernel_index)
    index_steps: dict[str, pd.DataFrame]  # kernel → change points of its index series
    steps: pd.DataFrame  # change points of every case series
    annotations: pd.DataFrame
    rule: str


def load_view(db: str, kernels: set[str] | None = None) -> HistoryView:
    """Read the history at ``db`` (only ``kernels`` when given: the report's own)."""
    from harness.history.store import History

    f = q.Filter(kernels=tuple(sorted(kernels)) if kernels else ())
    with History.open(db, write=False) as h, h.reading() as conn:
        runs = q.runs_frame(conn, f)
        comps = q.comparisons_frame(conn)
        gvt = comps[~comps["same_triton"].astype(bool)]
        verd = q.verdicts_frame(conn, gvt["id"].tolist(), f)
        counts = q.regression_counts(gvt, verd)
        if kernels:
            comps = comps[comps["id"].isin(counts["comparison_id"])]
        rows = q.results_frame(conn, f, columns=("kernel", "case_id", "params", "status", "time_us"))
        notes = q.annotations_frame(conn, f)
        shown = h.loc.shown
    rule = rule_of(comps)
    index = {k: q.kernel_index(g) for k, g in rows.groupby("kernel", sort=True)}
    return HistoryView(
        shown=shown,
        runs=runs,
        comparisons=comps,
        counts=counts,
        index=index,
        index_steps={k: index_steps(v) for k, v in index.items()},
        steps=series_steps(rows, rule),
        annotations=notes,
        rule=rule.describe(),
    )

"""Report stage: results files (+ a comparison) → one self-contained HTML page with plots and sortable tables.

``write_report`` makes, with matplotlib:

* ``delta.png`` — TOT/golden time ratio per case against its work (FLOPs) and against the golden time, colored by
  verdict, with the rule's limit drawn (``rel + abs/golden`` is a curve in the second panel);
* ``roofline.png`` — achieved TFLOPS against arithmetic intensity, with the compute ceilings of the peaks the
  kernels declare and the memory-bandwidth roof for the GPU named in the env metadata (datasheet peaks,
  overridable by measured ones);
* ``family-*.png`` — each kernel as its SPEC's ``plot`` asks (attention: TFLOPS vs sequence length per head dim;
  norms: GB/s vs hidden size against the bandwidth roof);
* ``scatter-*.png`` — speed against work, log–log, one color+marker per configuration, one panel per kernel
  (config sweeps: ``suites/sweep_sm90.yaml`` makes 896 points over 72 configurations);
* ``dispatch.png`` — the per-dispatch split of ops that launch several kernels (split-K + reduce, quantize + GEMM);
* ``vendor.png`` — time relative to the vendor library, where a baseline file is given.

index.html embeds every PNG (works with no network and when moved alone) and links the PNG files too.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from harness.compare.compare import Comparison, worst_first
from harness.errors import HarnessError
from harness.fsutil import write_bytes, write_text
from harness.outdir import prepare_out_dir
from harness.render.envinfo import get
from harness.render.html import CSS, JS, env_table, html_table, img
from harness.report import history_plots, plots
from harness.report.data import Run, dispatch_table, load_runs, params_frame, parse_vendor, vendor_table
from harness.report.peaks import load_ceilings, peaks_for

if TYPE_CHECKING:
    from harness.history.view import HistoryView

COMPARE_COLUMNS = ("verdict", "confidence", "kernel", "case_id", "dtype", "golden_us", "tot_us", "delta_pct",
                   "delta_lo_pct", "delta_hi_pct", "limit_us", "ratio")  # fmt: skip
RUN_COLUMNS = ("case_id", "dtype", "time_us", "status", "spread_pct", "tflops", "gbps", "compile_s")
RUN_TAIL = ("sm_clock_mhz", "throttle", "config")


def require_matplotlib() -> None:
    """The report draws with matplotlib, an optional dependency: say how to get it instead of a traceback."""
    try:
        import matplotlib
    except ImportError:
        raise HarnessError("harness report needs matplotlib: pip install 'harness[report]' (or matplotlib)") from None
    matplotlib.use("Agg")


@dataclass
class Page:
    """The page being built: its sections in order, and the navigation naming each."""

    out: Path
    sections: list[str] = field(default_factory=list)
    nav: list[tuple[str, str]] = field(default_factory=list)

    def section(self, anchor: str, heading: str, body: str, link: str = "") -> None:
        """``link``: the navigation's text, short but naming the section (which run's scatter or tables)."""
        self.nav.append((anchor, link or heading))
        self.sections.append(f'<h2 id="{anchor}">{html.escape(heading)}</h2>\n{body}')

    def figure(self, name: str, png: bytes, alt: str) -> str:
        write_bytes(self.out / name, png)
        return img(name, png, alt)


#: what only a report folder holds: a folder with it was written by an older harness report (before its marker)
OWN = ("index.html",)


def _db_file(history: str | None) -> str | None:
    """The history database's file (a path, or sqlite:///PATH), to keep --out off it; None for a server URL."""
    if not history or ("://" in history and not history.startswith("sqlite:")):
        return None
    return history.split("sqlite:///", 1)[-1] if history.startswith("sqlite:") else history


def write_report(
    results: list[Path],
    out: Path,
    compare_csv: Path | None = None,
    vendor: Path | None = None,
    ceilings: Path | None = None,
    explain_dir: str = "",
    title: str = "",
    history: str | None = None,
    retune: Path | None = None,
) -> Path:
    """Write ``out/index.html`` and the PNGs; returns the index path. Every input is read and checked before
    anything is drawn or written. ``history``: a history database (a file or URL, ``harness history``) whose
    trends, change points and regression counts become sections of their own; ``retune``: a retune.json
    (``harness retune``), shown as its own section."""
    if not results and compare_csv is None and history is None:
        raise HarnessError("give at least one results CSV, --compare COMPARE.csv or --history DB")
    require_matplotlib()
    from harness.compare.store import meta_path

    given = [*results, compare_csv, compare_csv and meta_path(compare_csv), vendor, ceilings, retune, _db_file(history)]
    prepare_out_dir("--out", out, "report", inputs=given, own=OWN, create=False)
    override = load_ceilings(ceilings) if ceilings is not None else None
    vendor_df = parse_vendor(vendor) if vendor is not None else None
    retuned = None
    if retune is not None:
        from harness.retune.report import load_summary

        retuned = load_summary(retune)
    cmp = None
    if compare_csv is not None:
        from harness.compare.store import load_compare, locate_results

        cmp = load_compare(compare_csv)
        if not results:
            results = [p for p in (locate_results(n, compare_csv) for n in (cmp.golden_path, cmp.tot_path)) if p]
    runs = load_runs(results)
    view = None
    if history is not None:
        from harness.history.view import load_view

        view = load_view(history, {k for r in runs for k in r.df["kernel"].unique()} or None)
    gpu_name = next((get(r.env, ("gpu", "name")) for r in runs if get(r.env, ("gpu", "name"))), "")
    gpu_label, peaks = peaks_for(gpu_name, override)
    prepare_out_dir("--out", out, "report", inputs=[*given, *results], own=OWN)  # before anything is drawn
    page = Page(out)
    if cmp is not None:
        _compare_section(page, cmp, explain_dir)
    if retuned is not None:
        from harness.retune.report import html_section

        page.section("retune", "Retune: configs changed to remove TOT regressions", html_section(retuned), "Retune")
    if view is not None:
        _history_sections(page, view)
    if runs:
        _run_sections(page, runs, peaks, gpu_label, gpu_name, vendor_df, vendor)
    return _write_index(page, runs, title)


def _run_sections(
    page: Page,
    runs: list[Run],
    peaks: dict[str, float],
    gpu_label: str,
    gpu_name: str,
    vendor_df: pd.DataFrame | None,
    vendor: Path | None,
) -> None:
    _roofline_section(page, runs, peaks, gpu_label, gpu_name)
    _family_sections(page, runs, peaks)
    _scatter_sections(page, runs)
    _scaling_sections(page, runs)
    _best_config_sections(page, runs)
    _dispatch_section(page, runs)
    if vendor_df is not None:
        _vendor_section(page, runs, vendor_df, vendor)
    _table_sections(page, runs)
    page.section("env", "Environments", html_table(env_table([(r.label, r.env) for r in runs]), cls="env"))


def _compare_section(page: Page, cmp: Comparison, explain_dir: str) -> None:
    summary = ", ".join(f"{n} {v}" for v, n in cmp.counts().items() if n)
    amb = cmp.ambiguous_counts()
    if amb:  # docs/verdicts.md
        summary += " (ambiguous: " + ", ".join(f"{n} {v}" for v, n in amb.items()) + ")"
    png = plots.plot_delta(cmp.table, cmp.meta()["rule"])
    t = cmp.table.copy()
    t["ratio"] = t["tot_us"] / t["golden_us"]
    cols = [c for c in (*COMPARE_COLUMNS, "note") if c in t.columns]
    t = t.iloc[worst_first(t)][cols]
    body = f"<p>{html.escape(summary)} over {len(t)} cases. Rule: {html.escape(cmp.rule.describe())}.</p>"
    if explain_dir:
        body += f'<p>Why each regression happened: <a href="{html.escape(explain_dir)}">compiled-kernel diffs</a>.</p>'
    body += page.figure("delta.png", png, "TOT/golden ratio per case")
    body += html_table(t, row_class="verdict", table_id="compare-table")
    page.section("compare", "Golden vs TOT", body)


def _history_sections(page: Page, view: HistoryView) -> None:
    """The history database: regressions over time, each kernel's trend with its change points and the
    annotations, every case's change points beside the verdicts."""
    from harness.history.render import when

    runs, comps = view.runs, view.comparisons
    span = f"{when(runs['run_at'].min())} to {when(runs['run_at'].max())} UTC" if len(runs) else "no runs"
    intro = (
        f"<p>{html.escape(view.shown)}: {len(runs)} runs ({span}), {len(comps)} comparisons, "
        f"{len(view.annotations)} annotations. Rule: {html.escape(view.rule)}.</p>"
    )
    body = intro
    if len(view.counts):
        body += page.figure("history-regressions.png", history_plots.plot_regression_counts(view.counts), "regressions")
        body += html_table(_regression_pivot(view.counts))
    else:
        body += "<p>No golden-vs-TOT comparison stored.</p>"
    page.section("history", "History: regressions over time", body, link="History")
    figures = []
    for j, (kernel, index) in enumerate(view.index.items()):
        if index["run_id"].nunique() >= 2:
            notes = _concerning(view.annotations, kernel)
            png = history_plots.plot_kernel_trend(kernel, index, view.index_steps[kernel], notes)
            figures.append(page.figure(f"history-trend-{j}.png", png, f"{kernel} over time"))
    note = (
        "<p class=\"note\">Each kernel's time per run: the geometric mean over its cases of time / that case's median "
        "over every stored run, one line per stack and GPU model. Change points: ruptures' PELT on that line.</p>"
    )
    page.section(
        "history-trends",
        "History: trends per kernel",
        note + ("".join(figures) or "<p>No kernel has two runs.</p>"),
        link="Trends",
    )
    page.section("history-changes", "History: change points per case", _changes_body(view), link="Change points")


def _regression_pivot(counts: pd.DataFrame) -> pd.DataFrame:
    """Kernels as rows, comparisons (``#id date GPU``) as columns, regressions in the cells."""
    label = counts.apply(
        lambda r: f"#{r.comparison_id} {pd.Timestamp(r.when):%m-%d %H:%M} {str(r.gpu_name).removeprefix('NVIDIA ')}",
        axis=1,
    )
    order = list(dict.fromkeys(label))
    t = counts.assign(c=label).pivot(index="kernel", columns="c", values="regressions")[order]
    t.loc["all"] = t.sum()
    return t.reset_index().rename_axis(None, axis=1).fillna("")


def _concerning(notes: pd.DataFrame, kernel: str) -> pd.DataFrame:
    if not len(notes):
        return notes
    return notes[notes["kernel"].isna() | (notes["kernel"] == kernel)]


def _changes_body(view: HistoryView) -> str:
    steps = view.steps
    parts = []
    if len(steps):
        t = steps.assign(
            series=steps["env_name"] + " · " + steps["gpu_name"].fillna("").str.removeprefix("NVIDIA "),
            Triton=steps["triton_before"].fillna("?") + " → " + steps["triton_after"].fillna("?"),
            start=steps["run_at"].map(lambda v: f"{pd.Timestamp(v):%Y-%m-%d %H:%M}"),
        )
        cols = [
            "kernel",
            "case_id",
            "series",
            "start",
            "Triton",
            "before_us",
            "after_us",
            "step_pct",
            "by_rule",
            "points",
        ]
        parts.append(
            f"<p>{len(steps)} change points (ruptures' PELT on each case's log time within one stack on one GPU model, "
            "series of 5 or more runs); <em>by_rule</em>: the rule's verdict of the level after against the level before.</p>"
        )
        parts.append(
            html_table(t[cols].rename(columns={"by_rule": "verdict"}), row_class="verdict", table_id="history-steps")
        )
    else:
        parts.append("<p>No change point in any case series of 5 or more runs.</p>")
    if len(view.annotations):
        a = view.annotations
        shown = a.assign(when=a["at"].map(lambda v: f"{pd.Timestamp(v):%Y-%m-%d %H:%M}"))
        cols = ["when", "kind", "text", "kernel", "case_id", "gpu", "stack", "author"]
        parts.append("<h3>Annotations</h3>" + html_table(shown[cols].fillna("")))
    return "".join(parts)


def _roofline_section(page: Page, runs: list[Run], peaks: dict[str, float], gpu_label: str, gpu_name: str) -> None:
    if gpu_label:
        note = f"ceilings of the {html.escape(gpu_label)}: " + ", ".join(f"{k} {v:g}" for k, v in peaks.items())
    else:
        note = f"no datasheet peaks for {html.escape(gpu_name or 'this GPU')}: pass --ceilings FILE"
    png = plots.plot_roofline(runs, peaks, gpu_label)
    body = (
        f"<p class=\"note\">{note}; FLOPs and bytes from each kernel's SPEC. A multi-GPU case is drawn at one GPU's "
        "share (its FLOPs over its world size); the NVLink panel, where kernels declare link_bytes and the ceilings "
        "hold nvlink_gbs, sets the same points against FLOP per byte sent over the links.</p>"
    )
    page.section("roofline", "Roofline", body + page.figure("roofline.png", png, "roofline"))


def _family_sections(page: Page, runs: list[Run], peaks: dict[str, float]) -> None:
    """Each kernel drawn as its SPEC's plot hint asks, every run in one figure."""
    figures = []
    kernels = sorted({k for r in runs for k in r.df["kernel"].unique()})
    for j, kernel in enumerate(kernels):
        hint = next((h for r in runs if (h := r.kernel(kernel).get("plot"))), None)
        png = plots.plot_family(runs, kernel, hint, peaks) if hint else None
        if png is not None:
            figures.append(page.figure(f"family-{j}.png", png, f"{kernel} by {hint['x']}"))
    if figures:
        page.section("families", "Kernel families by parameter", "".join(figures))


def _scatter_sections(page: Page, runs: list[Run]) -> None:
    for i, run in enumerate(runs):
        png, ncfg = plots.plot_scatter(run.df)
        page.section(
            f"scatter-{i}",
            f"Speed vs work by configuration — {run.label}",
            f"<p>{ncfg} configurations.</p>" + page.figure(f"scatter-{i}.png", png, "scatter"),
            link=f"Scatter: {run.label}",
        )


def _scaling_sections(page: Page, runs: list[Run]) -> None:
    """Multi-GPU kernels that ran at several world sizes: strong and weak scaling, per run."""
    figures = []
    for i, run in enumerate(runs):
        for j, kernel in enumerate(sorted(run.df["kernel"].unique())):
            png = plots.plot_scaling(run.df[run.df["kernel"] == kernel], kernel)
            if png is not None:
                figures.append(page.figure(f"scaling-{i}-{j}.png", png, f"{kernel} scaling · {run.label}"))
    if figures:
        page.section("scaling", "Multi-GPU scaling", "".join(figures))


def _best_config_sections(page: Page, runs: list[Run]) -> None:
    """Sweeps: the best configuration per kernel and shape."""
    for i, run in enumerate(runs):
        table = plots.best_configs(run.df)
        if len(table):
            page.section(f"best-{i}", f"Best configuration per shape — {run.label}", html_table(table),
                         link=f"Best configs: {run.label}")  # fmt: skip


def _dispatch_section(page: Page, runs: list[Run]) -> None:
    disp = dispatch_table(runs)
    if not len(disp):
        body = "<p>No case launched more than one kernel (no split-K or separate quantize).</p>"
    else:
        body = page.figure("dispatch.png", plots.plot_dispatch(disp), "dispatch") + html_table(disp)
    page.section("dispatch", "Per-dispatch breakdown", body)


def _vendor_section(page: Page, runs: list[Run], vendor_df: pd.DataFrame, vendor: Path | None) -> None:
    vt = vendor_table(runs, vendor_df)
    if len(vt):
        body = page.figure("vendor.png", plots.plot_vendor(vt), "vendor") + html_table(vt)
    else:
        body = f"<p>{html.escape(str(vendor))}: no case matches.</p>"
    page.section("vendor", "Relative to the vendor library", body)


def _table_sections(page: Page, runs: list[Run]) -> None:
    """Per run, one table per kernel, its parameters as columns."""
    for i, run in enumerate(runs):
        body = "".join(
            f"<h3>{html.escape(str(k))}</h3>" + html_table(_kernel_table(g)) for k, g in run.df.groupby("kernel")
        )
        page.section(
            f"tables-{i}-{re.sub(r'[^a-z0-9]+', '-', run.label.lower())}",
            f"Per-kernel tables — {run.label}",
            body,
            link=f"Tables: {run.label}",
        )


def _kernel_table(g: pd.DataFrame) -> pd.DataFrame:
    d = g.copy()
    if "config" in d.columns:
        d["config"] = d["config"].fillna("").map(plots.config_label)
    head = [c for c in RUN_COLUMNS if c in d.columns]
    tail = [c for c in RUN_TAIL if c in d.columns]
    params = params_frame(d)
    params = params.drop(columns=[c for c in params.columns if c in d.columns or c == "seed"])
    return pd.concat([d[head[:1]], params, d[head[1:] + tail]], axis=1)


def _write_index(page: Page, runs: list[Run], title: str) -> Path:
    title = title or ("Kernel report: " + " vs ".join(r.label for r in runs) if runs else "Kernel history")
    navhtml = "<nav>" + "".join(f'<a href="#{a}">{html.escape(text)}</a>' for a, text in page.nav) + "</nav>"
    files = html.escape(", ".join(str(r.path) for r in runs))
    text = (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{CSS}</style></head><body><h1>{html.escape(title)}</h1>"
        + (f'<p class="note">{len(runs)} results files: {files}</p>' if runs else "")
        + f"{navhtml}{''.join(page.sections)}<script>{JS}</script></body></html>"
    )
    index = page.out / "index.html"
    write_text(index, text)
    return index

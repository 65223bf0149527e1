"""Terminal tables of the history commands (rich, readable at 80 columns: long kernel names become ``k1``, ``k2``…
with a legend, case ids wrap, nothing is cut) and their CSV form. Data goes to stdout, messages to stderr."""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pandas as pd
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from harness.render.terminal import kernel_keys, plain_table
from harness.render.vocabulary import LOOKS


@dataclass(frozen=True)
class Col:
    """One column of a terminal table: the frame's column, its heading, how a value is shown."""

    name: str
    heading: str = ""
    fmt: str = ""  # a format spec for numbers; "when" for times; "" as text
    justify: str = "left"
    fold: bool = False  # wrap long values (case ids) instead of keeping them on one line
    min_width: int = 0  # a folded column is given this much before others shrink it (0: its longest value, <= 24)


def when(v: Any) -> str:
    """A time as ``YY-MM-DD HH:MM`` (UTC), empty when unknown."""
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NaT:
        return ""
    t = pd.Timestamp(v)
    return "" if pd.isna(t) else t.strftime("%y-%m-%d %H:%M")


def cell(v: Any, fmt: str) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)) or (not isinstance(v, str) and pd.isna(v)):
        return ""
    if fmt == "when":
        return when(v)
    if fmt and isinstance(v, (int, float)) and not isinstance(v, bool):
        return format(v, fmt)
    return str(v)


def short_gpu(name: Any) -> str:
    """``NVIDIA H100 80GB HBM3`` → ``H100 80GB HBM3``."""
    text = "" if name is None or (isinstance(name, float) and math.isnan(name)) else str(name)
    return text.removeprefix("NVIDIA ").removeprefix("AMD ")


def gpu_model(name: Any) -> str:
    """The model alone, for narrow tables: ``NVIDIA H100 80GB HBM3`` → ``H100``; ``AMD Instinct MI300X`` →
    ``MI300X``."""
    words = short_gpu(name).removeprefix("Instinct ").split()
    return words[0] if words else ""


def text_or(v: Any, default: str = "?") -> str:
    """``v`` as text, ``default`` when it is missing (None or NaN)."""
    return default if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)


def styled_verdict(text: str) -> str:
    """A verdict (or ``verdict (#id)``, several ``;``-joined) in its colours."""
    parts = []
    for part in str(text).split("; "):
        word = part.split(" ", 1)[0]
        style = LOOKS[word].style if word in LOOKS else ""
        parts.append(f"[{style}]{escape(part)}[/]" if style else escape(part))
    return "; ".join(parts)


def print_table(
    con: Console,
    df: pd.DataFrame,
    cols: Sequence[Col],
    title: str,
    *,
    kernel_col: str = "kernel",
    styles: dict[str, Callable[[str], str]] | None = None,
    totals: tuple[str, ...] = (),
) -> None:
    """``df`` under its title (a line of its own: a narrow table would wrap it); kernel names too long for the
    console are keyed, with a legend first (``totals``: row labels in that column that are not kernels)."""
    styles = styles or {}
    names = [k for k in df[kernel_col].unique() if k not in totals] if kernel_col in df.columns else []
    keys = kernel_keys(names, con.width) if names else {}
    if any(k != n for n, k in keys.items()):
        con.print("[bold]kernels[/]")
        for name, key in keys.items():
            con.print(f"  {key} = {escape(name)}")
    con.print(Text(title, style="bold"))
    rows = [
        [keys.get(v, str(v)) if c.name == kernel_col else cell(v, c.fmt) for c, v in zip(cols, rec)]
        for rec in df[[c.name for c in cols]].itertuples(index=False, name=None)
    ]
    table = plain_table("")
    for c, width in zip(cols, _fold_widths(cols, rows, con.width), strict=True):
        table.add_column(c.heading or c.name, justify=c.justify, overflow="fold", no_wrap=not c.fold, min_width=width)
    for texts in rows:
        table.add_row(*(styles[c.name](t) if c.name in styles and t else escape(t) for c, t in zip(cols, texts)))
    con.print(table)


def _fold_widths(cols: Sequence[Col], rows: list[list[str]], width: int) -> list[int | None]:
    """Each folding column's least width (None: a column that never folds): its longest cell, at most 24, or
    its share of what the columns that never fold leave of the console, so that a long case id folds rather
    than the table cutting the times beside it; never under its heading's longest word."""
    longest = [max([len(r[k]) for r in rows] + [len(c.heading or c.name)]) for k, c in enumerate(cols)]
    folds = [k for k, c in enumerate(cols) if c.fold]
    room = width - sum(n for k, n in enumerate(longest) if k not in folds) - 2 * (len(cols) - 1)
    share = room // len(folds) if folds else 0
    out: list[int | None] = []
    for k, c in enumerate(cols):
        words = max(len(w) for w in (c.heading or c.name).split())
        out.append(max(c.min_width or min(longest[k], 24, max(share, 1)), words) if c.fold else None)
    return out


def print_listing(con: Console, runs: pd.DataFrame, comps: pd.DataFrame, cals: pd.DataFrame) -> None:
    """`harness history list`: the stored runs, comparisons and (when any) calibrations, a table each."""
    _print_runs(con, runs)
    _print_comparisons(con, comps)
    if len(cals):
        _print_calibrations(con, cals)


def _print_runs(con: Console, runs: pd.DataFrame) -> None:
    runs = runs.assign(
        tags=runs["tags"].str.replace(",", ", "),
        gpu=runs["gpu_name"].map(gpu_model),
        stack=runs["env_name"] + "@" + runs["triton_version"].map(text_or),
        cal=_calibration_refs(runs),
    )
    print_table(
        con,
        runs,
        [
            Col("id", "run", justify="right"),
            Col("run_at", "when", "when"),
            Col("stack"),
            Col("gpu"),
            Col("rows", justify="right"),
            *_calibration_col(runs),
            Col("file_name", "file", fold=True),
            Col("tags", fold=True),
        ],
        f"{len(runs)} runs" + (" (cal: the calibration kept with it)" if _calibration_col(runs) else ""),
    )


def _calibration_refs(df: pd.DataFrame) -> list[str]:
    """``#3``: the calibration a run or comparison was kept or judged with; '' for none."""
    ids = df["calibration_id"] if "calibration_id" in df.columns else pd.Series([None] * len(df), dtype=object)
    return ["" if v is None or pd.isna(v) else f"#{int(v)}" for v in ids]


def _calibration_col(df: pd.DataFrame) -> list[Col]:
    """The ``cal`` column, only where some row has a calibration (the listing stays 80 columns wide without)."""
    return [Col("cal", justify="right")] if "cal" in df.columns and (df["cal"] != "").any() else []


def _print_comparisons(con: Console, comps: pd.DataFrame) -> None:
    comps = comps.assign(
        tags=comps["tags"].str.replace(",", ", "),
        gpu=comps["gpu_name"].map(gpu_model),
        stacks=comps["golden_triton"].map(text_or) + " vs " + comps["tot_triton"].map(text_or),
        runs=comps["golden_run_id"].map(run_ref) + " vs " + comps["tot_run_id"].map(run_ref),
        reg=[_regressions(r, a) for r, a in zip(comps["regressions"], comps["ambiguous"])],
        cal=_calibration_refs(comps),
    )
    print_table(
        con,
        comps,
        [
            Col("id", "cmp", justify="right"),
            Col("when", "when", "when"),
            Col("stacks", "Triton"),
            Col("runs"),
            Col("gpu"),
            Col("reg", justify="right"),
            Col("cases", justify="right"),
            *_calibration_col(comps),
            Col("tags", fold=True),
        ],
        f"{len(comps)} comparisons (reg: regressions, (N?): N of them ambiguous"
        + ("; cal: the calibration that judged it)" if _calibration_col(comps) else ")"),
    )


def _print_calibrations(con: Console, cals: pd.DataFrame) -> None:
    cals = cals.assign(
        gpu=cals["gpu_name"].map(gpu_model),
        stack=cals["env_name"].map(text_or) + "@" + cals["triton_version"].map(text_or),
    )
    cols = [
        Col("id", "cal", justify="right"),
        Col("when", "when", "when"),
        Col("stack"),
        Col("gpu"),
        Col("unresolved", "coarse", justify="right"),
        Col("cases", justify="right"),
        Col("slowdowns", fold=True),
    ]
    print_table(con, cals, cols, f"{len(cals)} calibrations (coarse: cases that cannot resolve the rule)")


def _regressions(n: Any, ambiguous: Any) -> str:
    """``3`` or ``3 (1?)``: how many regressions, how many of them ambiguous (unknown for older comparisons)."""
    amb = 0 if ambiguous is None or pd.isna(ambiguous) else int(ambiguous)
    return f"{int(n)} ({amb}?)" if amb else str(int(n))


def run_ref(v: Any) -> str:
    """``#12``: a run by its id; ``?`` when unknown."""
    return "?" if v is None or pd.isna(v) else f"#{int(v)}"


def to_csv(df: pd.DataFrame) -> str:
    """A frame as CSV text: times in ISO 8601 (UTC, ``Z``), numbers as stored."""
    out = df.copy()
    for c in out.columns:
        if pd.api.types.is_datetime64_any_dtype(out[c]) or (len(out) and isinstance(out[c].iloc[0], datetime)):
            out[c] = pd.to_datetime(out[c]).dt.strftime("%Y-%m-%dT%H:%M:%SZ")
    buf = io.StringIO()
    out.to_csv(buf, index=False, lineterminator="\n")
    return buf.getvalue()

"""Rich rendering of a comparison for the terminal. Data goes to stdout; messages go to stderr.

Readable at 80 columns (what CI logs get): a kernel name or case id is never cut. Kernel names too long for the
console are shown as ``k1``, ``k2``… with a legend above the tables; case ids wrap (fold) rather than end in "…".
Failed, missing and skipped cases are listed one a line with their one-line error, not only counted.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from harness.compare.aa import process_lines
from harness.compare.calibration import calibration_line
from harness.compare.compare import Comparison, worst_first
from harness.errors import counted
from harness.render.envinfo import one_line
from harness.render.vocabulary import LOOKS, case_label, regressions, unknown_line
from harness.verdict.rule import BLOCKING, VERDICTS, is_verdict

STYLE = {v: look.style for v, look in LOOKS.items()}
#: column headings of the per-kernel table: short words, so all twelve fit 80 columns (two lines of heading)
SHORT = {v: look.short for v, look in LOOKS.items()}
#: the case lists under the tables: (verdicts, heading); failures carry their error, skips their reason
LISTS = (
    (("failed_in_tot",), "TOT failures, timed under golden"),
    (("missing_in_tot",), "missing in TOT, no TOT row"),
    (("skipped_in_tot",), "skipped under TOT, timed under golden: not blocking"),
    (("failed_in_golden", "failed_in_both"), "failed under golden"),
)
#: cases listed per list before "... and N more"
LIST_FIRST = 10


def stdout() -> Console:
    return Console(highlight=False, emoji=False, soft_wrap=False)


def stderr() -> Console:
    return Console(stderr=True, highlight=False, emoji=False)


def warn(message: str) -> None:
    """One warning on stderr, never hard-wrapped (a path cut at the terminal's width cannot be pasted)."""
    stderr().print(f"[yellow]warning:[/] {escape(message)}", soft_wrap=True, highlight=False)


def plain_table(title: str, gap: int = 2) -> Table:
    """A table without borders, ``gap`` (1 or 2) spaces between columns (SIMPLE_HEAD's divider is one)."""
    return Table(
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1 if gap > 1 else 0),
        collapse_padding=True,
    )


def _fmt(v: object, spec: str = ".2f") -> str:
    return "" if v is None or (isinstance(v, float) and pd.isna(v)) else format(v, spec)


def _styled(verdict: str, text: str | None = None) -> str:
    text = escape(verdict if text is None else text)
    return f"[{STYLE[verdict]}]{text}[/]" if STYLE[verdict] else text


def kernel_keys(kernels: Iterable[str], width: int) -> dict[str, str]:
    """The label of each kernel in the tables: its name where every name fits in a fifth of the console (the
    per-kernel table has up to fourteen columns), else ``k1``, ``k2``… (sorted by name) for all of them, so one
    table never mixes the two."""
    names = sorted(set(map(str, kernels)))
    if all(len(n) <= max(width // 5, 8) for n in names):
        return {n: n for n in names}
    return {n: f"k{i}" for i, n in enumerate(names, 1)}


def case_lines(
    labels: Sequence[str], texts: Sequence[str], total: int | None = None, first: int = LIST_FIRST
) -> list[str]:
    """``label: text`` for the first ``first`` cases, then ``... and N more`` (of ``total``, default all given)."""
    total = len(labels) if total is None else total
    lines = [f"{lab}: {txt}" if txt else lab for lab, txt in zip(labels[:first], texts[:first])]
    if total > len(lines):
        lines.append(f"... and {total - len(lines)} more")
    return lines


def print_lines(con: Console, heading: str, lines: list[str], style: str = "") -> None:
    """A heading, then one indented line per case; a line too long for the console wraps under its indent."""
    con.print(Text(heading, style=style))
    for line in lines:
        con.print(Padding(Text(line), (0, 0, 0, 2)))


def headline(counts: dict[str, int], ambiguous: dict[str, int] | None = None) -> str:
    """One line: the blocking findings, then what needs a look without blocking. ``ambiguous``: per verdict, the
    cases whose 95 % interval straddles a limit (verdict/confidence.py)."""
    reg, fail = counts["regression"], counts["failed_in_tot"]
    amb = ambiguous or {}
    parts = [
        f"{regressions(reg, amb.get('regression', 0))}, {counted(fail, 'TOT failure')}"
        if reg + fail
        else "no regressions and no TOT failures"
    ]
    if amb.get("ok"):
        parts.append(f"{amb['ok']} ok but ambiguous")
    if counts["missing_in_tot"]:
        parts.append(f"{counts['missing_in_tot']} missing in TOT")
    if counts["skipped_in_tot"]:
        parts.append(f"{counts['skipped_in_tot']} skipped under TOT (not blocking)")
    skipped_elsewhere = counts["skipped_in_golden"] + counts["skipped_in_both"]
    if skipped_elsewhere:
        parts.append(f"{skipped_elsewhere} skipped under golden")
    return "; ".join(parts)


def print_comparison(cmp: Comparison, console: Console | None = None, worst: int = 20) -> None:
    con = console or stdout()
    t = cmp.table
    keys = kernel_keys(t["kernel"].unique(), con.width)
    con.print(f"[bold]golden[/]  {escape(one_line(cmp.golden_env))}")
    con.print(f"[bold]TOT[/]     {escape(one_line(cmp.tot_env))}")
    con.print(f"[bold]rule[/]    {escape(cmp.rule.describe())}")
    if cmp.calibration:
        con.print(f"[bold]calibration[/] {escape(calibration_line(cmp.calibration, len(t)))}")
    for line in process_lines(cmp.process_noise):
        con.print(escape(line))
    if any(k != n for n, k in keys.items()):
        con.print("[bold]kernels[/]")
        for name, key in keys.items():
            con.print(f"  {key} = {escape(name)}")

    counts = cmp.counts()
    summary = plain_table(f"{len(t)} cases")
    summary.add_column("verdict", no_wrap=True)
    summary.add_column("cases", justify="right", no_wrap=True)
    summary.add_column("", no_wrap=True)
    amb = cmp.ambiguous_counts()
    for v, n in counts.items():
        if n:
            summary.add_row(_styled(v), str(n), _blocks(v, n, amb.get(v, 0)))
    con.print(summary)
    bad = sum(counts[v] for v in BLOCKING)
    if not cmp.nothing_compared:
        color = "bold red" if cmp.blocking else "yellow" if bad else "green"
        con.print(f"[{color}]{escape(headline(counts, amb))}[/]")
        if cmp.unknown:
            con.print(f"[yellow]{escape(unknown_line(cmp.unknown))}[/]")

    _print_per_kernel(con, cmp, keys)
    _print_regressions(con, t, keys, worst, quiet=bool(cmp.nothing_compared))
    for verdicts, heading in LISTS:
        _print_list(con, t, keys, verdicts, heading)
    if cmp.nothing_compared:  # the last line: a list of failures is not "no regressions"
        con.print(f"[bold red]{escape(cmp.nothing_compared)}[/]")


def _blocks(verdict: str, n: int, ambiguous: int) -> str:
    """What a verdict's cases do to ``--fail-on-regression``: block, unless ambiguous (``--fail-on-ambiguous``)."""
    if verdict not in BLOCKING:
        return ""
    if ambiguous >= n:
        return "ambiguous"
    return "blocks" if not ambiguous else f"{n - ambiguous} block"


def _print_per_kernel(con: Console, cmp: Comparison, keys: dict[str, str]) -> None:
    pk = cmp.per_kernel()
    if len(pk) < 2:
        return
    table = plain_table("per kernel", gap=1)  # up to fourteen columns
    table.add_column("kernel", no_wrap=True)  # keys are short by construction
    table.add_column("cases", justify="right", no_wrap=True)
    for v in pk.columns:
        word = max(len(w) for w in SHORT[v].split())  # a heading wraps between its words, never inside one
        table.add_column(_styled(v, SHORT[v]), justify="right", overflow="fold", min_width=word)
    for kernel, row in pk.iterrows():
        cells = [str(int(n)) if n else "" for n in row]
        table.add_row(escape(keys[str(kernel)]), str(int(row.sum())), *cells)
    con.print(table)


def _print_regressions(con: Console, t: pd.DataFrame, keys: dict[str, str], worst: int, quiet: bool = False) -> None:
    rows = np.flatnonzero((t["verdict"] == "regression").to_numpy())
    if not len(rows):
        if not quiet:
            con.print("[green]no regressions[/]")
        return
    # rank by the two columns worst_first reads, then take only the rows and columns shown (not 22 of each row)
    rows = rows[worst_first(t[["verdict", "delta_pct"]].iloc[rows])[:worst]]
    reg = t[["kernel", "case_id", "golden_us", "tot_us", "delta_pct", "limit_us"]].iloc[rows]
    table = plain_table(f"worst {len(reg)} of {int((t['verdict'] == 'regression').sum())} regressions (times in µs)")
    table.add_column("kernel", no_wrap=True)
    table.add_column("case_id", overflow="fold")
    for c in ("golden", "TOT", "Δ%", "limit"):
        table.add_column(c, justify="right", no_wrap=True)
    for r in reg.itertuples(index=False):
        table.add_row(
            escape(keys[str(r.kernel)]),
            escape(str(r.case_id)),
            _fmt(r.golden_us),
            _fmt(r.tot_us),
            _fmt(r.delta_pct, "+.1f"),
            _fmt(r.limit_us),
        )
    con.print(table)


def _print_list(con: Console, t: pd.DataFrame, keys: dict[str, str], verdicts: tuple[str, ...], heading: str) -> None:
    rows = np.flatnonzero(is_verdict(t["verdict"], verdicts))
    if not len(rows):
        return
    # worst verdict first, then the table's (golden's) order
    rank = pd.Categorical(t["verdict"].iloc[rows], categories=list(VERDICTS)).codes
    rows = rows[np.argsort(rank, kind="stable")]
    shown = t[[c for c in ("kernel", "case_id", "verdict", "note") if c in t.columns]].iloc[rows[:LIST_FIRST]]
    labels = [f"{keys[str(k)]} {c}" for k, c in zip(shown["kernel"], shown["case_id"])]
    notes = shown["note"] if "note" in shown.columns else [""] * len(shown)
    # the note says which side failed and how (compare_frames); without one, the verdict does
    texts = [v if pd.isna(n) or not str(n) else str(n) for v, n in zip(shown["verdict"], notes)]
    texts = ["" if v == "missing_in_tot" else v for v in texts]
    print_lines(con, f"{heading} ({len(rows)}):", case_lines(labels, texts, len(rows)), STYLE[verdicts[0]])


def failed_row_lines(results: pd.DataFrame, first: int = LIST_FIRST) -> list[str]:
    """The cases of a results frame whose status is neither ok nor unstable, one line each with the first line
    of their error (the first ``first``, then ``... and N more``): the end of `harness run`."""
    from harness.compare.notes import first_line
    from harness.results.schema import TIMED_STATUSES

    bad = results[~results["status"].isin(TIMED_STATUSES).to_numpy()]
    shown = bad.head(first)
    errors = shown["error"] if "error" in shown.columns else pd.Series([""] * len(shown))
    labels = [case_label(k, c) for k, c in zip(shown["kernel"], shown["case_id"])]
    texts = [f"{s}: {first_line('' if pd.isna(e) else str(e))}".rstrip(": ") for s, e in zip(shown["status"], errors)]
    return case_lines(labels, texts, len(bad), first)


def print_failed(con: Console, out: Path, counts: dict[str, int]) -> None:
    """OUT's cases that failed or were skipped, with the first line of their error (the CSV has the rest)."""
    if all(k in ("ok", "unstable") for k in counts):
        return
    from harness.results.load import load_results
    from harness.results.schema import TIMED_STATUSES

    df = load_results(out)
    n = int((~df["status"].isin(TIMED_STATUSES)).sum())
    head = f"{out}: {counted(n, 'case')} not timed (the first line of each error; all of it in the CSV's error column):"
    print_lines(con, head, failed_row_lines(df))


def print_run_counts(con: Console, outs: Sequence[Path], all_counts: Sequence[dict[str, int]]) -> None:
    """Each OUT of a run by its cases' status, then those that failed or were skipped, with their first error line."""
    for o, counts in zip(outs, all_counts):
        con.print(
            f"{o}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) if counts else f"{o}: nothing to do"
        )
        print_failed(con, o, counts)

"""``harness history``: the commands over the history database (added to the main app by harness/cli/__init__.py);
their options here, their work in harness/history/commands.py.

Every command takes ``--db`` (a file, ``sqlite:///FILE`` or ``postgresql://USER@HOST:PORT/DB``; default
``$HARNESS_DB``, else a per-user SQLite file). Filters are shared: ``--kernel``, ``--case`` (names or globs),
``--param NAME=VALUE``, ``--stack`` (the env: golden, tot), ``--triton`` (a version or glob), ``--gpu`` (part of the
GPU's name, or its UUID's start), ``--since`` / ``--until`` (dates or times, UTC), ``--tag`` / ``--without-tag``.
Tables are for the terminal; ``--csv`` writes CSV to stdout, ``--out FILE`` to a file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(
    help="Every run and comparison kept in a database: add, show, trend, regressions, change points, annotate.",
    no_args_is_help=False,
)

Db = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="database: a file, sqlite:///FILE or postgresql://USER@HOST:PORT/DB "
        "(default: $HARNESS_DB, else ~/.local/share/harness/history.sqlite)",
        show_default=False,
    ),
]
Kernel = Annotated[list[str] | None, typer.Option("--kernel", help="kernel name or glob (repeatable)")]
Case = Annotated[list[str] | None, typer.Option("--case", help="case id or glob (repeatable)")]
Param = Annotated[list[str] | None, typer.Option("--param", help="NAME=VALUE a case's parameters hold (repeatable)")]
Stack = Annotated[list[str] | None, typer.Option("--stack", help="the env the run measured: golden, tot, ...")]
Triton = Annotated[list[str] | None, typer.Option("--triton", help="Triton version or glob (repeatable)")]
Gpu = Annotated[str, typer.Option("--gpu", help="part of the GPU's name (H100) or the start of its UUID")]
Since = Annotated[str | None, typer.Option("--since", help="from this date or time (UTC)")]
Until = Annotated[str | None, typer.Option("--until", help="up to this date (inclusive) or time (UTC)")]
Tag = Annotated[list[str] | None, typer.Option("--tag", help="only runs with this tag (repeatable)")]
WithoutTag = Annotated[list[str] | None, typer.Option("--without-tag", help="leave out runs with this tag")]
Csv = Annotated[bool, typer.Option("--csv", help="CSV on stdout instead of a table")]
Out = Annotated[Path | None, typer.Option("--out", help="write the CSV to this file")]


@app.command("add")
def add(
    files: Annotated[
        list[Path], typer.Argument(help="results CSVs (with their .env.json), compare and calibration CSVs")
    ],
    db: Db = None,
    tag: Annotated[
        list[str] | None, typer.Option("--tag", help="tag what is added (repeatable): experiment, nightly")
    ] = None,
    label: Annotated[str, typer.Option("--label", help="a label for what is added (PR 123, nightly 11-24)")] = "",
    commit: Annotated[
        str | None, typer.Option("--commit", help="git commit of the kernels and configs the runs used")
    ] = None,
) -> None:
    """Store results and compare files; a file already stored (same bytes) is not stored again. A compare file
    also stores the two results files it names, when found beside it or at their recorded paths."""
    from harness.history import commands

    commands.add(files, db=db, tag=tag, label=label, commit=commit)


@app.command("remove")
def remove(
    kind: Annotated[str, typer.Argument(help="run, comparison or calibration")],
    ident: Annotated[int, typer.Argument(help="its id (harness history list)", min=1)],
    db: Db = None,
) -> None:
    """Remove a wrongly added run (with its rows) or comparison (with its verdicts). A run a comparison or an
    annotation still refers to is refused: remove the comparison first."""
    from harness.history import commands

    commands.remove(kind, ident, db=db)


@app.command("list")
def list_(
    db: Db = None,
    gpu: Gpu = "",
    since: Since = None,
    until: Until = None,
    tag: Tag = None,
    without_tag: WithoutTag = None,
    csv: Csv = False,
    out: Out = None,
) -> None:
    """The stored runs and comparisons, oldest first."""
    from harness.history import commands

    f = commands.Filters(gpu=gpu, since=since, until=until, tag=tag, without_tag=without_tag)
    commands.listing(db=db, filters=f, csv=csv, out=out)


@app.command("show")
def show(
    db: Db = None,
    kernel: Kernel = None,
    case: Case = None,
    param: Param = None,
    stack: Stack = None,
    triton: Triton = None,
    gpu: Gpu = "",
    since: Since = None,
    until: Until = None,
    tag: Tag = None,
    without_tag: WithoutTag = None,
    limit: Annotated[int, typer.Option(min=1, help="rows in the table, newest (CSV: all)")] = 50,
    csv: Csv = False,
    out: Out = None,
) -> None:
    """Stored results rows: each case's time and status in each run the filters select."""
    from harness.history import commands

    f = commands.Filters(kernel, case, param, stack, triton, gpu, since, until, tag, without_tag)
    commands.show(db=db, filters=f, limit=limit, csv=csv, out=out)


@app.command("calibration")
def calibration(
    ident: Annotated[int | None, typer.Argument(help="its id (harness history list; default: the latest)")] = None,
    db: Db = None,
    kernel: Kernel = None,
    case: Case = None,
    coarse: Annotated[bool, typer.Option("--coarse", help="only cases that cannot resolve the rule")] = False,
    csv: Csv = False,
    out: Out = None,
) -> None:
    """A stored calibration's cases: the smallest slowdown each caught, its A/A flags, whether it resolves the
    rule's slack (docs/verdicts.md)."""
    from harness.history import commands

    f = commands.Filters(kernel, case)
    commands.calibration(ident, db=db, filters=f, coarse=coarse, csv=csv, out=out)


@app.command("trend")
def trend(
    kernel: Annotated[str, typer.Argument(help="the kernel (name or glob)")],
    db: Db = None,
    case: Case = None,
    param: Param = None,
    stack: Stack = None,
    triton: Triton = None,
    gpu: Gpu = "",
    since: Since = None,
    until: Until = None,
    tag: Tag = None,
    without_tag: WithoutTag = None,
    by: Annotated[str, typer.Option("--by", help="'run': every run; 'triton': the median per Triton version")] = "run",
    csv: Csv = False,
    out: Out = None,
) -> None:
    """A case's time across runs (with --case, or filters that leave one case), or a kernel's: the geometric mean of
    its cases' times relative to each case's median. One series per stack and GPU model, with the rule's verdicts
    of each run and its change points."""
    from harness.history import commands

    f = commands.Filters([kernel], case, param, stack, triton, gpu, since, until, tag, without_tag)
    commands.trend(db=db, filters=f, by=by, csv=csv, out=out)


@app.command("regressions")
def regressions(
    db: Db = None,
    kernel: Kernel = None,
    case: Case = None,
    param: Param = None,
    triton: Triton = None,
    gpu: Gpu = "",
    since: Since = None,
    until: Until = None,
    tag: Tag = None,
    without_tag: WithoutTag = None,
    from_: Annotated[
        str | None, typer.Option("--from", help="a comparison (id, or the latest by a date): verdicts before")
    ] = None,
    to: Annotated[
        str | None, typer.Option("--to", help="a comparison (id or date): verdicts after (default: latest)")
    ] = None,
    aa: Annotated[bool, typer.Option("--aa", help="include A/A comparisons (the same Triton on both sides)")] = False,
    csv: Csv = False,
    out: Out = None,
) -> None:
    """Regressions per kernel per comparison over time (the AITER-seed table), one table per GPU model; with
    --from (and --to), the cases whose verdict changed between two comparisons."""
    from harness.history import commands

    f = commands.Filters(kernel, case, param, None, triton, gpu, since, until, tag, without_tag)
    commands.regressions(db=db, filters=f, from_=from_, to=to, aa=aa, csv=csv, out=out)


@app.command("changepoints")
def changepoints(
    db: Db = None,
    kernel: Kernel = None,
    case: Case = None,
    param: Param = None,
    stack: Stack = None,
    triton: Triton = None,
    gpu: Gpu = "",
    since: Since = None,
    until: Until = None,
    tag: Tag = None,
    without_tag: WithoutTag = None,
    min_points: Annotated[int, typer.Option("--min-points", min=4, help="fewest runs a case's series needs")] = 5,
    csv: Csv = False,
    out: Out = None,
) -> None:
    """Change points of every case's time within one stack on one GPU model (ruptures' PELT), each with the rule's
    verdict of the step and the verdicts of the comparisons that measured the run where it starts."""
    from harness.history import commands

    f = commands.Filters(kernel, case, param, stack, triton, gpu, since, until, tag, without_tag)
    commands.changepoints(db=db, filters=f, min_points=min_points, csv=csv, out=out)


@app.command("annotate")
def annotate(
    text: Annotated[str, typer.Argument(help="what happened: 'config retune', 'driver 580 → 590'")],
    db: Db = None,
    at: Annotated[str | None, typer.Option("--at", help="when (date or time, UTC); default: the --run's time")] = None,
    run: Annotated[int | None, typer.Option("--run", help="the run it concerns (harness history list)")] = None,
    kind: Annotated[str, typer.Option("--kind", help="note, retune, bisect, driver, config, ...")] = "note",
    kernel: Annotated[str | None, typer.Option("--kernel", help="the kernel it concerns (default: all)")] = None,
    case: Annotated[str | None, typer.Option("--case", help="the case it concerns (default: all)")] = None,
    gpu: Annotated[str | None, typer.Option("--gpu", help="the GPU model it concerns (default: all)")] = None,
    stack: Annotated[str | None, typer.Option("--stack", help="the stack it concerns (default: all)")] = None,
) -> None:
    """Mark a known step (shown with trends, change points and in the report)."""
    from harness.history import commands

    commands.annotate(text, db=db, at=at, run=run, kind=kind, kernel=kernel, case=case, gpu=gpu, stack=stack)


@app.command("annotations")
def annotations_(
    db: Db = None,
    kernel: Kernel = None,
    gpu: Gpu = "",
    since: Since = None,
    until: Until = None,
    csv: Csv = False,
    out: Out = None,
) -> None:
    """The annotations, by time (those that concern the given kernel / GPU, and those that concern all)."""
    from harness.history import commands

    f = commands.Filters(kernel=kernel, gpu=gpu, since=since, until=until)
    commands.annotations(db=db, filters=f, csv=csv, out=out)

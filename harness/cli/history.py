"""``harness history``: the commands over the history database (added to the main app by harness/cli/__init__.py).

Every command takes ``--db`` (a file, ``sqlite:///FILE`` or ``postgresql://USER@HOST:PORT/DB``; default
``$HARNESS_DB``, else a per-user SQLite file). Filters are shared: ``--kernel``, ``--case`` (names or globs),
``--param NAME=VALUE``, ``--stack`` (the env: golden, tot), ``--triton`` (a version or glob), ``--gpu`` (part of the
GPU's name, or its UUID's start), ``--since`` / ``--until`` (dates or times, UTC), ``--tag`` / ``--without-tag``.
Tables are for the terminal; ``--csv`` writes CSV to stdout, ``--out FILE`` to a file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from harness.errors import HarnessError

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


def _filter(
    kernel: list[str] | None = None,
    case: list[str] | None = None,
    param: list[str] | None = None,
    stack: list[str] | None = None,
    triton: list[str] | None = None,
    gpu: str = "",
    since: str | None = None,
    until: str | None = None,
    tag: list[str] | None = None,
    without_tag: list[str] | None = None,
) -> Any:
    from harness.history import dates
    from harness.history.queries import Filter

    params = {}
    for p in param or []:
        name, eq, value = p.partition("=")
        if not eq or not name.strip():
            raise HarnessError(f"--param {p!r}: expected NAME=VALUE, e.g. --param M=16")
        params[name.strip()] = value.strip()
    return Filter(
        kernels=tuple(kernel or ()),
        cases=tuple(case or ()),
        params=params,
        stacks=tuple(stack or ()),
        tritons=tuple(triton or ()),
        gpu=gpu.strip(),
        since=dates.since(since) if since else None,
        until=dates.until(until) if until else None,
        tags=tuple(_tags(tag or [], "--tag")),
        without_tags=tuple(_tags(without_tag or [], "--without-tag")),
    )


def _tags(tags: list[str], option: str) -> list[str]:
    from harness.history.ingest import bad_tag

    out = [t.strip() for group in tags for t in group.split(",") if t.strip()]
    for t in out:
        if bad_tag(t):
            raise HarnessError(f"{option} {t!r}: a tag is letters, digits and - _ . : / only")
    return out


def _open(db: str | None, write: bool = False) -> Any:
    from harness.history.store import History
    from harness.render.terminal import stderr

    return History.open(db, write=write, log=lambda m: stderr().print(m, markup=False, highlight=False))


def _emit(db: str | None, df: Any, csv: bool, out: Path | None, table: Any) -> None:
    """The result as CSV (stdout or --out) or as the terminal table ``table()`` prints; an --out that is the
    database itself is refused (it would be written over)."""
    from harness.history.render import to_csv

    if out is not None:
        from harness.fsutil import Output, guard_outputs, same_file, write_text
        from harness.history.url import resolve

        loc = resolve(db)
        if loc.path is not None and same_file(out, loc.path):
            raise HarnessError(f"--out {out} is the history database: refusing to write a CSV over it")
        text = to_csv(df)
        header = text.split("\n", 1)[0]
        # a file is replaced only when it is this very export (its header): never a database, a results file or a
        # user's file that happens to sit at that path
        guard_outputs([Output("--out", out, lambda f: _first_line(f) == header, "this `harness history` export")])
        write_text(out, text)
        print(f"wrote {len(df)} rows to {out}")
    elif csv:
        print(to_csv(df), end="")
    else:
        table()


def _first_line(path: Path) -> str:
    with open(path, "rb") as fh:
        return fh.readline(1 << 16).decode("utf-8", errors="replace").rstrip("\r\n")


def _console() -> Any:
    from harness.render.terminal import stdout

    return stdout()


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
    from harness.history.ingest import join_tags
    from harness.history.record import add_files, check_files

    tags = join_tags(_tags(tag or [], "--tag"))
    checked = check_files(files)  # every file is read and checked before anything is stored
    with _open(db, write=True) as h:
        add_files(h, checked, tags=tags, label=label, commit=commit, echo=print)


@app.command("remove")
def remove(
    kind: Annotated[str, typer.Argument(help="run, comparison or calibration")],
    ident: Annotated[int, typer.Argument(help="its id (harness history list)", min=1)],
    db: Db = None,
) -> None:
    """Remove a wrongly added run (with its rows) or comparison (with its verdicts). A run a comparison or an
    annotation still refers to is refused: remove the comparison first."""
    if kind not in ("run", "comparison", "calibration"):
        raise HarnessError(f"history remove: expected 'run', 'comparison' or 'calibration', got {kind!r}")
    with _open(db) as h:  # an existing database only: nothing is created to remove from
        print(h.remove(kind, ident))


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
    from harness.history import queries as q
    from harness.history.render import print_listing

    f = _filter(gpu=gpu, since=since, until=until, tag=tag, without_tag=without_tag)
    with _open(db) as h, h.reading() as conn:
        runs, comps, cals = q.runs_frame(conn, f), q.comparisons_frame(conn, f), q.calibrations_frame(conn, f)
    if csv or out:  # one frame: a run's time is its "when", as a comparison's is
        both = _concat(runs.rename(columns={"run_at": "when"}).assign(kind="run"), comps.assign(kind="comparison"))
        _emit(db, _concat(both, cals.assign(kind="calibration")) if len(cals) else both, csv, out, None)
        return
    print_listing(_console(), runs, comps, cals)


def _concat(a: Any, b: Any) -> Any:
    import pandas as pd

    return pd.concat([a, b], ignore_index=True, sort=False)


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
    from harness.history import queries as q
    from harness.history.render import Col, print_table, short_gpu

    f = _filter(kernel, case, param, stack, triton, gpu, since, until, tag, without_tag)
    with _open(db) as h, h.reading() as conn:
        df = q.results_frame(conn, f)
    if not len(df) and not (csv or out):
        raise HarnessError("no stored row matches the filters")

    def table() -> None:
        shown = df.tail(limit).assign(
            stack=df["env_name"] + "@" + df["triton_version"].fillna("?"), gpu=df["gpu_name"].map(short_gpu)
        )
        cols = [
            Col("run_id", "run", justify="right"),
            Col("run_at", "when", "when"),
            Col("stack"),
            Col("kernel"),
            Col("case_id", fold=True),
            Col("status"),
            Col("time_us", "µs", ".2f", "right"),
        ]
        if shown["gpu"].nunique() > 1:
            cols.insert(3, Col("gpu", fold=True))
        more = f" (the newest {limit} of {len(df)}: --limit, --csv)" if len(df) > limit else ""
        gpus = ", ".join(sorted(set(shown["gpu"]) - {""}))
        print_table(_console(), shown, cols, f"{len(df)} rows{more}" + (f" · {gpus}" if gpus else ""))

    _emit(db, df, csv, out, table)


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
    from harness.history import queries as q
    from harness.history.render import Col, print_table

    f = _filter(kernel, case)
    with _open(db) as h, h.reading() as conn:
        cals = q.calibrations_frame(conn)
        if not len(cals):
            raise HarnessError("no calibration stored (harness history add DIR/calibration.csv)")
        if ident is not None and ident not in set(cals["id"]):
            raise HarnessError(f"no calibration {ident} (harness history list shows them)")
        cid = int(ident if ident is not None else cals["id"].iloc[-1])
        df = q.calibration_cases_frame(conn, [cid], f)
    if coarse:
        df = df[~df["resolves"].astype(bool)]

    def table() -> None:
        cols = [
            Col("kernel"),
            Col("case_id", fold=True),
            Col("golden_us", "µs", ".1f", "right"),
            Col("noise_pct", "noise%", ".2f", "right"),
            Col("resolution_pct", "catches%", ".2f", "right"),
            Col("limit_pct", "rule%", ".2f", "right"),
            Col("aa_flags", "A/A", justify="right"),
        ]
        coarse_n = int((~df["resolves"].astype(bool)).sum())
        print_table(_console(), df, cols, f"calibration {cid}: {len(df)} cases, {coarse_n} cannot resolve the rule")

    _emit(db, df, csv, out, table)


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
    from harness.history.trend import case_trend, kernel_trend

    if by not in ("run", "triton"):
        raise HarnessError(f"--by {by!r}: expected 'run' or 'triton'")
    f = _filter([kernel], case, param, stack, triton, gpu, since, until, tag, without_tag)
    with _open(db) as h, h.reading() as conn:
        if case or param:
            df, show = case_trend(conn, f, by)
        else:
            df, show = kernel_trend(conn, f, by)
    _emit(db, df, csv, out, lambda: show(_console()))


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
    from harness.history.trend import regression_table, verdict_change_table

    f = _filter(kernel, case, param, None, triton, gpu, since, until, tag, without_tag)
    with _open(db) as h, h.reading() as conn:
        if from_ or to:
            df, show = verdict_change_table(conn, f, from_, to, aa)
        else:
            df, show = regression_table(conn, f, aa)
    _emit(db, df, csv, out, lambda: show(_console()))


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
    from harness.history.trend import changepoint_table

    f = _filter(kernel, case, param, stack, triton, gpu, since, until, tag, without_tag)
    with _open(db) as h, h.reading() as conn:
        df, show = changepoint_table(conn, f, min_points)
    _emit(db, df, csv, out, lambda: show(_console()))


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
    from harness.history import dates
    from harness.history.ingest import bad_tag

    if not text.strip() or not text.isprintable():
        raise HarnessError("annotate: the text must be one printable line")
    if bad_tag(kind):
        raise HarnessError(f"--kind {kind!r}: a kind is letters, digits and - _ . : / only")
    if at is None and run is None:
        raise HarnessError("annotate: give --at DATE or --run ID")
    with _open(db, write=True) as h:
        when = dates.at(at) if at else _run_time(h, run)
        aid = h.annotate(text.strip(), when, kind=kind, kernel=kernel, case_id=case, gpu=gpu, stack=stack, run_id=run)
    print(f"annotation {aid}: {when:%Y-%m-%d %H:%M} {kind}: {text.strip()}")


def _run_time(h: Any, run: int | None) -> Any:
    from sqlalchemy import select

    from harness.history.schema import runs

    with h.reading() as conn:
        found = conn.execute(select(runs.c.run_at).where(runs.c.id == run)).first()
    if found is None:
        raise HarnessError(f"{h.loc.shown}: no run {run} (harness history list shows the runs)")
    return found.run_at


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
    from harness.history import queries as q
    from harness.history.render import Col, print_table, run_ref

    f = _filter(kernel=kernel, gpu=gpu, since=since, until=until)
    with _open(db) as h, h.reading() as conn:
        df = q.annotations_frame(conn, f)

    def table() -> None:
        scope = df[["kernel", "case_id", "gpu", "stack"]].fillna("").astype(str).agg(" ".join, axis=1).str.strip()
        shown = df.assign(
            scope=scope.where(scope != "", "all"), run=df["run_id"].map(run_ref).where(df["run_id"].notna(), "")
        )
        cols = [
            Col("id", justify="right"),
            Col("at", "when", "when"),
            Col("kind"),
            Col("text", fold=True),
            Col("scope", fold=True),
            Col("run"),
        ]
        print_table(_console(), shown, cols, f"{len(df)} annotations", kernel_col="")

    _emit(db, df, csv, out, table)

"""The work of the ``harness history`` commands, one keyword function each (harness/cli/history.py declares their
options and forwards them): the shared filters read and checked, the database opened, the query run, and the
result shown as a table or exported as CSV (stdout, or ``--out`` through the one output guard, fsutil.guard_outputs).

Each stage is imported where a command reaches it, as the command line does: ``history remove`` loads no pandas.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import HarnessError


@dataclass(frozen=True)
class Filters:
    """The filter options as given (--kernel, --case, --param, --stack, --triton, --gpu, --since, --until, --tag,
    --without-tag): read and checked by :meth:`parsed` where the command comes to them, so that of two wrong
    options the same one is named as before."""

    kernel: Sequence[str] | None = None
    case: Sequence[str] | None = None
    param: Sequence[str] | None = None
    stack: Sequence[str] | None = None
    triton: Sequence[str] | None = None
    gpu: str = ""
    since: str | None = None
    until: str | None = None
    tag: Sequence[str] | None = None
    without_tag: Sequence[str] | None = None

    def parsed(self) -> Any:
        """The query's Filter (history/queries.py); a --param, date or tag it cannot be is one line (exit 2)."""
        from harness.history import dates
        from harness.history.queries import Filter

        params = {}
        for p in self.param or []:
            name, eq, value = p.partition("=")
            if not eq or not name.strip():
                raise HarnessError(f"--param {p!r}: expected NAME=VALUE, e.g. --param M=16")
            params[name.strip()] = value.strip()
        return Filter(
            kernels=tuple(self.kernel or ()),
            cases=tuple(self.case or ()),
            params=params,
            stacks=tuple(self.stack or ()),
            tritons=tuple(self.triton or ()),
            gpu=self.gpu.strip(),
            since=dates.since(self.since) if self.since else None,
            until=dates.until(self.until) if self.until else None,
            tags=tuple(tags(self.tag or [], "--tag")),
            without_tags=tuple(tags(self.without_tag or [], "--without-tag")),
        )


def tags(given: Sequence[str], option: str) -> list[str]:
    """The tags of a repeatable, comma-separated ``option``; one that is not a tag is one line naming it."""
    from harness.history.ingest import bad_tag

    out = [t.strip() for group in given for t in group.split(",") if t.strip()]
    for t in out:
        if bad_tag(t):
            raise HarnessError(f"{option} {t!r}: a tag is letters, digits and - _ . : / only")
    return out


def open_history(db: str | None, write: bool = False) -> Any:
    """The database ``--db`` names, its notes (a migration, a new file) on stderr."""
    from harness.history.store import History
    from harness.render.terminal import stderr

    return History.open(db, write=write, log=lambda m: stderr().print(m, markup=False, highlight=False))


def emit(db: str | None, df: Any, csv: bool, out: Path | None, table: Callable[[], None] | None) -> None:
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
    elif table is not None:
        table()


def _first_line(path: Path) -> str:
    with open(path, "rb") as fh:
        return fh.readline(1 << 16).decode("utf-8", errors="replace").rstrip("\r\n")


def _console() -> Any:
    from harness.render.terminal import stdout

    return stdout()


def add(files: Sequence[Path], *, db: str | None, tag: Sequence[str] | None, label: str, commit: str | None) -> None:
    """``history add``: every file read and checked before anything is stored, then stored."""
    from harness.history.ingest import join_tags
    from harness.history.record import add_files, check_files

    joined = join_tags(tags(tag or [], "--tag"))
    checked = check_files(files)  # every file is read and checked before anything is stored
    with open_history(db, write=True) as h:
        add_files(h, checked, tags=joined, label=label, commit=commit, echo=print)


def remove(kind: str, ident: int, *, db: str | None) -> None:
    """``history remove``: a run, comparison or calibration by its id."""
    if kind not in ("run", "comparison", "calibration"):
        raise HarnessError(f"history remove: expected 'run', 'comparison' or 'calibration', got {kind!r}")
    with open_history(db) as h:  # an existing database only: nothing is created to remove from
        print(h.remove(kind, ident))


def listing(*, db: str | None, filters: Filters, csv: bool, out: Path | None) -> None:
    """``history list``: the stored runs, comparisons and calibrations; as CSV, one frame of the three."""
    from harness.history import queries as q
    from harness.history.render import print_listing

    f = filters.parsed()
    with open_history(db) as h, h.reading() as conn:
        runs, comps, cals = q.runs_frame(conn, f), q.comparisons_frame(conn, f), q.calibrations_frame(conn, f)
    if csv or out:  # one frame: a run's time is its "when", as a comparison's is
        both = _concat(runs.rename(columns={"run_at": "when"}).assign(kind="run"), comps.assign(kind="comparison"))
        emit(db, _concat(both, cals.assign(kind="calibration")) if len(cals) else both, csv, out, None)
        return
    print_listing(_console(), runs, comps, cals)


def _concat(a: Any, b: Any) -> Any:
    import pandas as pd

    return pd.concat([a, b], ignore_index=True, sort=False)


def show(*, db: str | None, filters: Filters, limit: int, csv: bool, out: Path | None) -> None:
    """``history show``: the stored results rows the filters select; the table shows the newest ``limit``."""
    from harness.history import queries as q
    from harness.history.render import Col, print_table, short_gpu

    f = filters.parsed()
    with open_history(db) as h, h.reading() as conn:
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

    emit(db, df, csv, out, table)


def calibration(
    ident: int | None, *, db: str | None, filters: Filters, coarse: bool, csv: bool, out: Path | None
) -> None:
    """``history calibration``: a stored calibration's cases (default: the latest); ``coarse``: only those that
    cannot resolve the rule."""
    from harness.history import queries as q
    from harness.history.render import Col, print_table

    f = filters.parsed()
    with open_history(db) as h, h.reading() as conn:
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

    emit(db, df, csv, out, table)


def trend(*, db: str | None, filters: Filters, by: str, csv: bool, out: Path | None) -> None:
    """``history trend``: one case's times (a --case or --param given), else the kernel's; ``by`` run or triton."""
    from harness.history.trend import case_trend, kernel_trend

    if by not in ("run", "triton"):
        raise HarnessError(f"--by {by!r}: expected 'run' or 'triton'")
    f = filters.parsed()
    with open_history(db) as h, h.reading() as conn:
        if filters.case or filters.param:
            df, show_ = case_trend(conn, f, by)
        else:
            df, show_ = kernel_trend(conn, f, by)
    emit(db, df, csv, out, lambda: show_(_console()))


def regressions(
    *, db: str | None, filters: Filters, from_: str | None, to: str | None, aa: bool, csv: bool, out: Path | None
) -> None:
    """``history regressions``: per kernel per comparison; with ``from_`` or ``to``, the verdicts that changed."""
    from harness.history.trend import regression_table, verdict_change_table

    f = filters.parsed()
    with open_history(db) as h, h.reading() as conn:
        if from_ or to:
            df, show_ = verdict_change_table(conn, f, from_, to, aa)
        else:
            df, show_ = regression_table(conn, f, aa)
    emit(db, df, csv, out, lambda: show_(_console()))


def changepoints(*, db: str | None, filters: Filters, min_points: int, csv: bool, out: Path | None) -> None:
    """``history changepoints``: every case's change points within one stack on one GPU model."""
    from harness.history.trend import changepoint_table

    f = filters.parsed()
    with open_history(db) as h, h.reading() as conn:
        df, show_ = changepoint_table(conn, f, min_points)
    emit(db, df, csv, out, lambda: show_(_console()))


def annotate(
    text: str,
    *,
    db: str | None,
    at: str | None,
    run: int | None,
    kind: str,
    kernel: str | None,
    case: str | None,
    gpu: str | None,
    stack: str | None,
) -> None:
    """``history annotate``: a known step, at ``at`` or at the time of run ``run``."""
    from harness.history import dates
    from harness.history.ingest import bad_tag

    if not text.strip() or not text.isprintable():
        raise HarnessError("annotate: the text must be one printable line")
    if bad_tag(kind):
        raise HarnessError(f"--kind {kind!r}: a kind is letters, digits and - _ . : / only")
    if at is None and run is None:
        raise HarnessError("annotate: give --at DATE or --run ID")
    with open_history(db, write=True) as h:
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


def annotations(*, db: str | None, filters: Filters, csv: bool, out: Path | None) -> None:
    """``history annotations``: by time, those that concern the filters' kernel / GPU and those that concern all."""
    from harness.history import queries as q
    from harness.history.render import Col, print_table, run_ref

    f = filters.parsed()
    with open_history(db) as h, h.reading() as conn:
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

    emit(db, df, csv, out, table)

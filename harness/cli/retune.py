"""`harness retune`: remove TOT regressions by config changes that slow no case."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from harness.cli.options import CaseTimeout, CompareCsv


def retune(
    compare_csv: CompareCsv,
    env: Annotated[str, typer.Option("--env", help="the TOT env spec: the stack whose regressions to remove")],
    golden_env: Annotated[str, typer.Option("--golden-env", help="the golden env spec")],
    out: Annotated[
        Path, typer.Option("--out", help="folder for the timing cache, runs, report and proposed files (rerun: resume)")
    ],
    kernel: Annotated[list[str] | None, typer.Option("--kernel", help="only these kernels' regressions")] = None,
    budget_min: Annotated[float, typer.Option("--budget-min", help="minutes of measuring (GPU time) to spend")] = 30.0,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="write the new config files to OUT/configs only, not in place")
    ] = False,
    reps: Annotated[int, typer.Option(min=1, help="first reps per timing (the stability rule may add 2)")] = 3,
    launches: Annotated[
        int | None, typer.Option(min=1, help="timed launches per rep (default: as harness run)")
    ] = None,
    timeout: CaseTimeout = 600.0,
    hints: Annotated[
        list[Path] | None,
        typer.Option("--hints", help="another retune's cache.jsonl (or --out): its best configs are timed first"),
    ] = None,
    search_min: Annotated[
        float | None,
        typer.Option("--search-min", help="minutes the search may start steps in (default: 60 % of the budget)"),
    ] = None,
) -> None:
    """Remove TOT regressions by config changes that slow no case, golden or TOT.

    Writes the config files (in place, or OUT/configs with --dry-run), OUT/retune.diff and the report OUT/retune.md,
    .html and .json; the same command again resumes from OUT (docs/retune.md)."""
    from harness.render.progress import console_driver
    from harness.render.terminal import stderr
    from harness.retune.model import Options
    from harness.retune.retune import retune as run_retune
    from harness.run.options import RunOptions, check_timeout
    from harness.run.precompile import default_compile_jobs
    from harness.verdict.remeasure import remeasure_policy

    check_timeout(timeout)
    con = stderr()
    # the guard re-measures the cases it cannot decide; retune binds the referee to the guard's own pairs
    run = RunOptions(reps=reps, launches=launches, timeout_s=timeout, compile_jobs=default_compile_jobs(),
                     remeasure=remeasure_policy(True, 12, 0.3))  # fmt: skip
    opts = Options(compare_csv, env, golden_env, out, list(kernel or []), budget_min, dry_run, run,
                   hints=list(hints or []), search_min=search_min)  # fmt: skip
    data = run_retune(opts, log=lambda m: con.print(m, markup=False, highlight=False), driver=console_driver(con))
    _print_retune(data, out)


def _print_retune(data: dict, out: Path) -> None:
    from rich.table import Table

    from harness.render.terminal import stdout
    from harness.retune.report import asked_line, cost_line, kernel_rows

    cols, rows = kernel_rows(data)
    t = Table(title="regressions before → after", title_justify="left", show_edge=False, box=None)
    for c in cols:
        t.add_column(c, overflow="fold")
    for r in rows:
        t.add_row(*(str(v) for v in r))
    con = stdout()
    if asked_line(data):
        con.print(asked_line(data), markup=False)
    con.print(t)
    con.print(
        f"{len(data['kept'])} changes kept, {len(data['rejected'])} rejected; {len(data['files'])} files "
        f"{'proposed in' if data['dry_run'] else 'written to'} {data['written_to']}",
        markup=False,
    )
    con.print(cost_line(data["cost"], data["budget_min"]), markup=False)
    con.print(f"report: {out / 'retune.md'} ({out / 'retune.html'}); diff: {out / 'retune.diff'}", markup=False)

"""`harness flip`: which single compiler knob brings each regressed case back within the rule."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from harness.cli.options import AutoLaunches, CaseTimeout, CompareCsv, Reps


def flip(
    compare_csv: CompareCsv,
    out: Annotated[Path, typer.Option("--out", help="folder for flip.md, flip.json and the run")],
    knob: Annotated[
        list[str] | None,
        typer.Option("--knob", help="NAME=VALUE: one more environment knob to try on TOT (repeatable)"),
    ] = None,
    case: Annotated[
        list[str] | None, typer.Option("--case", help="regex over 'kernel/case_id' (repeatable); default: regressions")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, help="at most this many regressions, worst first")] = 10,
    suite: Annotated[str | None, typer.Option(help="the suite (default: the one the golden run measured)")] = None,
    golden: Annotated[str | None, typer.Option(help="golden's env spec (default: the one golden ran)")] = None,
    tot: Annotated[str | None, typer.Option(help="TOT's env spec (default: the one TOT ran)")] = None,
    reps: Reps = 3,
    launches: AutoLaunches = None,
    timeout: CaseTimeout = 600.0,
    resume: Annotated[bool, typer.Option("--resume", help="go on with an interrupted flip in OUT")] = False,
) -> None:
    """For each regression of COMPARE, TOT measured again with one compiler knob changed at a time (the backend's
    code-generation knobs TOT's Triton declares, and any --knob), interleaved with golden and TOT, each judged
    against golden with the run's confirmed verdicts: which knob brings it back within the rule, or none."""
    from harness.flip.flip import flip as run_flip
    from harness.flip.knobs import parse
    from harness.flip.render import flipped_by, verdict_line
    from harness.render.progress import console_driver
    from harness.render.terminal import stderr
    from harness.run.options import RunOptions, check_timeout
    from harness.verdict.remeasure import remeasure_policy

    check_timeout(timeout)
    given = parse(knob or [])
    con = stderr()
    opts = RunOptions(reps=reps, launches=launches, timeout_s=timeout, resume=resume,
                      remeasure=remeasure_policy(True, 12, 0.3))  # fmt: skip
    fl = run_flip(compare_csv, out, console_driver(con), opts, given,
                  log=lambda m: con.print(m, markup=False, highlight=False), patterns=case, limit=limit,
                  suite=suite, golden=golden, tot=tot)  # fmt: skip
    for key in fl.results:
        print(verdict_line(fl, key))
    flips = sum(1 for key in fl.results if flipped_by(fl, key))
    print(f"{flips} of {len(fl.results)} cases flipped by a single knob; wrote {out / 'flip.md'}")

"""`harness calibrate`: the command; the work is harness/calibrate/calibrate.py's (calibrate_suite)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from harness.cli.options import (
    AutoLaunches,
    CaseTimeout,
    Filter,
    Kernel,
    Reps,
    RuleAbsUs,
    RuleMinGoldenUs,
    RuleRel,
)
from harness.verdict.defaults import ABS_US, MIN_GOLDEN_US, REL


def calibrate(
    suite: Annotated[Path, typer.Argument(help="suite YAML (suites/*.yaml)")],
    env: Annotated[str, typer.Option("--env", help="env spec to calibrate: envs/NAME.yaml or NAME")],
    out: Annotated[Path, typer.Option("--out", help="new folder (or one calibrate wrote, with --resume)")],
    slowdown: Annotated[
        list[str] | None,
        typer.Option(
            "--slowdown",
            help="a slowdown to inject: 2us, 1% of the case's time, or limit (the rule's slack); repeatable "
            "(default: 2us 8us 1% limit)",
        ),
    ] = None,
    repeats: Annotated[int, typer.Option(min=1, help="interleaved runs of A/A and every slowdown")] = 3,
    kernel: Kernel = None,
    filter_: Filter = None,
    reps: Reps = 3,
    launches: AutoLaunches = None,
    timeout: CaseTimeout = 600.0,
    resume: Annotated[bool, typer.Option("--resume", help="go on with a calibration OUT holds")] = False,
    record: Annotated[bool, typer.Option("--record", help="add calibration.csv to the history ($HARNESS_DB)")] = False,
    rel: RuleRel = REL,
    abs_us: RuleAbsUs = ABS_US,
    min_golden_us: RuleMinGoldenUs = MIN_GOLDEN_US,
) -> None:
    """A/A and injected slowdowns per case: the smallest slowdown each case reliably catches and its A/A
    false-positive rate, in OUT/calibration.csv for `harness compare --calibration` (docs/verdicts.md)."""
    from harness.calibrate.calibrate import calibrate_suite

    calibrate_suite(
        suite, env=env, out=out, slowdown=slowdown, repeats=repeats, kernel=kernel, filter_=filter_, reps=reps,
        launches=launches, timeout=timeout, resume=resume, record=record, rule=(rel, abs_us, min_golden_us),
    )  # fmt: skip

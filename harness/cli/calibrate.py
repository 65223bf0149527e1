"""`harness calibrate`: the command; the work is harness/calibrate/calibrate.py's."""

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
from harness.errors import HarnessError
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
    from harness.calibrate.calibrate import OWN, Plan
    from harness.calibrate.calibrate import calibrate as calibrate_plan
    from harness.envs.spec import load_env_spec
    from harness.envs.venv import check_venv
    from harness.outdir import prepare_out_dir
    from harness.render.progress import console_driver
    from harness.render.terminal import stderr
    from harness.run.options import RunOptions, check_timeout
    from harness.run.orchestrate import selected_cases
    from harness.verdict.remeasure import remeasure_policy
    from harness.verdict.resolution import DEFAULT_SLOWDOWNS, parse_slowdown
    from harness.verdict.rule import rule_of

    check_timeout(timeout)
    rule = rule_of(rel, abs_us, min_golden_us)
    try:
        slowdowns = [parse_slowdown(s) for s in (slowdown or DEFAULT_SLOWDOWNS)]
    except ValueError as err:
        raise HarnessError(f"--slowdown {err}") from None
    if len({s.label for s in slowdowns}) != len(slowdowns):
        raise HarnessError("--slowdown: the same slowdown given twice")
    if record:
        from harness.history.record import check_record

        check_record([out / "calibration.csv"])
    spec = load_env_spec(env)
    check_venv(spec)
    cases = selected_cases(suite, kernel, filter_)
    prepare_out_dir("--out", out, "calibrate", inputs=[suite], own=OWN)
    if not resume and (out / "runs").exists():
        raise HarnessError(f"--out {out}: holds a calibration already; pass --resume to go on with it")
    con = stderr()
    # each repeat's flags confirmed in fresh processes, as `harness run` confirms them: the verdicts compare gives
    opts = RunOptions(reps=reps, launches=launches, timeout_s=timeout, resume=resume,
                      remeasure=remeasure_policy(True, 12, 0.3, rule))  # fmt: skip
    plan = Plan(spec, cases, str(suite), out, slowdowns, repeats, rule, opts)
    table = calibrate_plan(plan, console_driver(con), log=lambda m: con.print(m, markup=False, highlight=False))
    if record:
        from harness.history.record import record as record_files

        record_files([out / "calibration.csv"])
    bad = table[~table["resolves"]]
    fp = int((table["aa_flags"] > 0).sum())
    print(
        f"{len(table)} cases: {len(table) - len(bad)} resolve the rule's slack, {len(bad)} cannot; "
        f"{fp} flagged in an A/A repeat; wrote {out / 'calibration.csv'}"
    )

"""`harness run`: one suite under one env, or several envs interleaved (--with-env), sharded or over GPUs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from harness.cli.options import (
    Artifacts,
    CompileJobs,
    ConfigArch,
    Env,
    FailOnError,
    Filter,
    FreshProcessRounds,
    Gpus,
    Kernel,
    Launches,
    LaunchGap,
    MoveInputs,
    Out,
    Processes,
    Record,
    RemeasureOn,
    RemeasureReps,
    RemeasureShare,
    Reps,
    Resume,
    RuleAbsUs,
    RuleMinGoldenUs,
    RuleRel,
    RunCalibration,
    Shard,
    ShufflePlacement,
    Suite,
    Timeout,
    Times,
    Timing,
    WithEnv,
    WithOut,
)
from harness.errors import HarnessError, counted
from harness.verdict.defaults import ABS_US, EXTRA_REPS, MIN_GOLDEN_US, REL, SHARE

if TYPE_CHECKING:
    from harness.verdict.rule import Rule


def _launch_gap(value: str | None) -> str | None:
    if value is None or value == "auto":
        return value
    try:
        if 0 <= float(value) < float("inf"):
            return str(float(value))
    except ValueError:
        pass
    raise HarnessError(f"--launch-gap {value!r}: expected 'auto' or a number of milliseconds >= 0")


def run(
    env: Env,
    suite: Suite,
    out: Out,
    kernel: Kernel = None,
    filter_: Filter = None,
    reps: Reps = 3,
    launches: Launches = None,
    timeout: Timeout = 600.0,
    timing: Timing = None,
    resume: Resume = False,
    fail_on_error: FailOnError = False,
    compile_jobs: CompileJobs = 0,
    fresh_process_rounds: FreshProcessRounds = False,
    processes: Processes = 2,
    launch_gap: LaunchGap = "auto",
    shuffle_placement: ShufflePlacement = True,
    move_inputs: MoveInputs = True,
    with_env: WithEnv = None,
    with_out: WithOut = None,
    remeasure: RemeasureOn = True,
    remeasure_reps: RemeasureReps = EXTRA_REPS,
    remeasure_time: RemeasureShare = SHARE,
    rel: RuleRel = REL,
    abs_us: RuleAbsUs = ABS_US,
    min_golden_us: RuleMinGoldenUs = MIN_GOLDEN_US,
    calibration: RunCalibration = None,
    shard: Shard = None,
    gpus: Gpus = None,
    times: Times = None,
    artifacts: Artifacts = False,
    record: Record = False,
    config_arch: ConfigArch = None,
) -> None:
    """Run SUITE under ENV into OUT: correctness first, then kernel-only timing with the 3-rep / 5% rule."""
    from harness.envs.spec import load_env_spec
    from harness.envs.venv import check_venv
    from harness.inputs import configarch
    from harness.render.progress import console_driver
    from harness.render.terminal import stderr, warn
    from harness.run.options import RunOptions
    from harness.run.orchestrate import previous_times, selected_cases, write_empty_parts
    from harness.run.precompile import default_compile_jobs
    from harness.verdict.remeasure import remeasure_policy

    with_env, with_out = with_env or [], with_out or []
    gap, shard, gpu_list = _checked(timing, timeout, launch_gap, with_env, with_out, times, shard, gpus)
    rule = _referee_rule(rel, abs_us, min_golden_us, remeasure and bool(with_env))
    if record:
        from harness.history.record import check_record

        check_record([out, *with_out, times])
    runs = [(load_env_spec(env), out), *((load_env_spec(e), o) for e, o in zip(with_env, with_out))]
    for spec, _ in runs:
        check_venv(spec)  # a venv whose pins did not install would run whatever Triton it finds
    previous = previous_times(times) if times else None
    cases = selected_cases(suite, kernel, filter_, shard, previous, config_arch)
    _check_outputs_are_not_inputs(runs, suite, cases, times, calibration)
    for line in configarch.check(cases, config_arch, suite):  # refuses an arch no case has a config file for
        warn(line)
    records, check_worker = _calibration(calibration, cases, str(suite)) if calibration else ({}, None)
    opts = RunOptions(
        reps=reps,
        launches=launches,
        timeout_s=timeout,
        resume=resume,
        timing=timing,
        artifacts=artifacts,
        compile_jobs=default_compile_jobs() if compile_jobs == 0 else compile_jobs,
        fresh_process_rounds=fresh_process_rounds,
        processes=processes,
        launch_gap=gap,
        shuffle_placement=shuffle_placement,
        move_inputs=move_inputs,
        shard=shard,
        config_arch=config_arch,
        remeasure=remeasure_policy(remeasure and bool(with_env), remeasure_reps, remeasure_time, rule),
        records=records,
        check_worker=check_worker,
    )
    con = stderr()
    if not cases:  # a shard without cases (more shards than cases): an empty part, for merge to find
        write_empty_parts(runs, opts, str(suite))
        for _, o in runs:
            con.print(f"{o}: --shard {shard} holds no case of the selection: wrote the header only",
                      markup=False, soft_wrap=True)  # fmt: skip
        return
    driver = console_driver(con)
    if gpu_list is not None:
        all_counts = driver.measure_on_gpus(runs, cases, opts, str(suite), gpu_list, previous)
    else:
        all_counts = driver.measure(runs, cases, opts, str(suite))
    _print_counts(con, runs, all_counts)
    for _, o in runs:
        for line in preview_warnings(o):
            con.print(f"warning: {line}", markup=False, soft_wrap=True, highlight=False)
    if len(runs) > 1:
        from harness.run.interleave import compare_command

        if cmd := compare_command(runs):
            con.print(f"next: {cmd}", markup=False, soft_wrap=True, highlight=False)
    if artifacts:
        _say_no_artifacts(con, [o for _, o in runs])
    if record:
        from harness.history.record import record as record_files

        record_files([o for _, o in runs])
    if fail_on_error and any(k not in ("ok", "unstable") for counts in all_counts for k in counts):
        raise typer.Exit(1)
    if any(all_counts) and not any(k in ("ok", "unstable") for counts in all_counts for k in counts):
        # every case failed or was skipped: nothing was measured, which no later stage should take for a result
        con.print("harness run: no case produced a time (each failed or was skipped: the lines above say why)",
                  markup=False, soft_wrap=True)  # fmt: skip
        raise typer.Exit(1)


def _checked(
    timing: str | None, timeout: float, launch_gap: str | None, with_env: list[str], with_out: list[Path],
    times: Path | None, shard: str | None, gpus: str | None,
) -> tuple[str | None, str | None, list[int] | None]:  # fmt: skip
    """The options checked before anything is read, in this order (the first wrong one is the one line said);
    returns the launch gap, the shard as I/N and the GPUs."""
    from harness.envs.spec import TIMINGS
    from harness.run.options import check_timeout

    if timing is not None and timing not in TIMINGS:
        raise HarnessError(f"--timing: expected one of {', '.join(TIMINGS)}, got {timing!r}")
    check_timeout(timeout)
    gap = _launch_gap(launch_gap)
    if len(with_env) != len(with_out):
        raise HarnessError(
            f"--with-env given {counted(len(with_env), 'time')} but --with-out {counted(len(with_out), 'time')}"
        )
    if times is not None and shard is None and gpus is None:
        raise HarnessError(f"--times {times}: it balances --shard and --gpus, and neither was given")
    if shard is not None:  # an empty --shard '' is refused like any other bad one, never taken as none
        from harness.run.shards import parse_shard

        shard = "{}/{}".format(*parse_shard(shard))
    if gpus is None:
        return gap, shard, None
    from harness.run.node import parse_gpus

    return gap, shard, parse_gpus(gpus)


def _check_outputs_are_not_inputs(
    runs: list, suite: Path, cases: list, times: Path | None, calibration: Path | None
) -> None:  # fmt: skip
    """--out and every --with-out name no file the run reads (the suite, a suite it includes, a shapes file, a
    kernel file, an env spec, --times, --calibration): refused up front, never "exists; pass --resume"."""
    from harness.inputs.sources import suite_sources, what_it_is

    inputs = suite_sources(suite, cases)
    for spec, _ in runs:
        inputs.setdefault(spec.path.resolve(), f"the env spec {spec.name}")
    for path, option in ((times, "--times"), (calibration, "--calibration")):
        if path is not None:
            inputs.setdefault(path.resolve(), f"the {option} file")
    for k, (_, out) in enumerate(runs):
        if what := what_it_is(Path(out), inputs):
            raise HarnessError(f"{'--out' if k == 0 else '--with-out'} {out} is {what}: choose another results file")


def _referee_rule(rel: float, abs_us: float, min_golden_us: float, remeasuring: bool) -> Rule:
    """The rule re-measuring referees with (compare's options, one definition): one that is not AITER's without
    re-measuring would change nothing, and is refused rather than silently recorded nowhere."""
    from harness.verdict.rule import rule_of

    rule = rule_of(rel, abs_us, min_golden_us)
    if not remeasuring and (rel, abs_us, min_golden_us) != (REL, ABS_US, MIN_GOLDEN_US):
        raise HarnessError(
            "--rel/--abs-us/--min-golden-us: the rule only referees re-measuring, which needs --with-env and "
            "--remeasure (compare takes the rule it judges by)"
        )
    return rule


def _calibration(path: Path, cases: list, suite: str) -> tuple[dict, Callable[[dict], None]]:
    """--calibration: the record every sidecar keeps (compare judges with it: docs/verdicts.md) and the check of
    the worker's GPU. Refused (one line, before anything runs): a file that is not a calibration, or one that holds
    none of the selected cases; once the worker reports its GPU, a calibration of another GPU model. Another GPU of
    the same model is a warning (once), said again by compare."""
    from harness.compare.calibration import calibration_record, check_cases, check_gpu, load_calibration

    table, meta = load_calibration(path)
    what = f"--calibration {path}"
    check_cases(table, [c.name for c in cases], [c.case_id for c in cases], what, f"selected from {suite}")
    said: set[str] = set()

    def check(info: dict) -> None:
        # rank 0's GPU, the one the sidecar names: a group's ``gpus`` are not a merge's
        warning = check_gpu(meta, {"gpu": info.get("gpu")}, what, "this run measures on")
        if warning and warning not in said:
            said.add(warning)
            from harness.render.terminal import warn

            warn(warning)

    return {"calibration": calibration_record(table, meta, path)}, check


def _print_counts(con, runs: list, all_counts: list[dict[str, int]]) -> None:  # noqa: ANN001 - a rich Console
    """Each OUT's cases by status, then those that failed or were skipped, with their first error line."""
    from harness.render.terminal import print_failed

    for (_, o), counts in zip(runs, all_counts):
        con.print(
            f"{o}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) if counts else f"{o}: nothing to do"
        )
        print_failed(con, o, counts)


def _say_no_artifacts(con, outs: list[Path]) -> None:  # noqa: ANN001 - a rich Console
    """--artifacts on Triton's CPU interpreter keeps nothing: it compiles no kernels. Say so, not silently."""
    import json

    from harness.results.schema import sidecar_path

    for o in outs:
        try:
            backend = json.loads(sidecar_path(o).read_text()).get("backend")
        except (OSError, ValueError, AttributeError):
            continue
        if backend == "interp":
            con.print(f"{o}: --artifacts kept nothing: Triton's CPU interpreter compiles no kernels "
                      "(`harness explain` needs a GPU run)", markup=False, soft_wrap=True)  # fmt: skip


def preview_warnings(out: Path) -> list[str]:
    """A named warning where the library ran another config than harness's preview of its files (the worker's
    ``chosen_config`` check, in ``config_source``): never a silent difference."""
    import csv

    marker = "; harness's preview ("
    try:
        with open(out, encoding="utf-8", newline="") as fh:
            rows = [r for r in csv.DictReader(fh) if marker in (r.get("config_source") or "")]
    except OSError:
        return []
    if not rows:
        return []
    first = rows[0]
    return [f"{out}: {counted(len(rows), 'case')} ran another config than harness's preview of the library's files: the "
            f"library's choice is recorded (config_source), e.g. {first['kernel']} {first['case_id']}: "
            f"{first['config_source'].split(') differs: ', 1)[-1]}"]  # fmt: skip

"""`harness run`: one suite under one env, or several envs interleaved (--with-env), sharded or over GPUs."""

from __future__ import annotations

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
from harness.verdict.defaults import ABS_US, EXTRA_REPS, MIN_GOLDEN_US, REL, SHARE


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
    from harness.compare.calibration import run_calibration
    from harness.render.progress import console_driver
    from harness.render.terminal import print_run_counts, stderr, warn
    from harness.run import command
    from harness.run.options import RunOptions
    from harness.run.orchestrate import write_empty_parts
    from harness.run.precompile import default_compile_jobs
    from harness.verdict.remeasure import remeasure_policy

    with_env, with_out = with_env or [], with_out or []
    gap, shard, gpu_list = command.checked(timing, timeout, launch_gap, with_env, with_out, times, shard, gpus)
    rule = command.referee_rule(rel, abs_us, min_golden_us, remeasure and bool(with_env))
    if record:
        from harness.history.record import check_record

        check_record([out, *with_out, times])
    runs, cases, previous, warnings = command.selection(
        env, suite, out, with_env, with_out, kernel, filter_, shard, times, calibration, config_arch
    )
    for line in warnings:
        warn(line)
    records, check_worker = run_calibration(calibration, cases, str(suite), warn) if calibration else ({}, None)
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
        for line in command.empty_shard_lines(runs, shard):
            con.print(line, markup=False, soft_wrap=True)
        return
    driver = console_driver(con)
    if gpu_list is not None:
        all_counts = driver.measure_on_gpus(runs, cases, opts, str(suite), gpu_list, previous)
    else:
        all_counts = driver.measure(runs, cases, opts, str(suite))
    print_run_counts(con, [o for _, o in runs], all_counts)
    for line in command.closing_lines(runs, artifacts):
        con.print(line, markup=False, soft_wrap=True, highlight=False)
    if record:
        from harness.history.record import record as record_files

        record_files([o for _, o in runs])
    code, why = command.outcome(all_counts, fail_on_error)
    if why:
        con.print(why, markup=False, soft_wrap=True)
    if code:
        raise typer.Exit(code)

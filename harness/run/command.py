"""What `harness run` decides before and after it measures (harness/cli/run.py declares its options and wires the
stages): its options checked in the order the one line names the first wrong one, the envs and cases it selects,
the outputs that may be none of its inputs, and its closing words. Lines are returned, not printed: the command
line prints them where it has the console."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from harness.errors import HarnessError, counted
from harness.verdict.defaults import ABS_US, MIN_GOLDEN_US, REL

if TYPE_CHECKING:
    from harness.inputs.suite import Case
    from harness.run.orchestrate import Runs
    from harness.verdict.rule import Rule


def launch_gap(value: str | None) -> str | None:
    """--launch-gap as the run stage takes it: 'auto', or milliseconds >= 0 written as a float."""
    if value is None or value == "auto":
        return value
    try:
        if 0 <= float(value) < float("inf"):
            return str(float(value))
    except ValueError:
        pass
    raise HarnessError(f"--launch-gap {value!r}: expected 'auto' or a number of milliseconds >= 0")


def checked(
    timing: str | None, timeout: float, gap: str | None, with_env: list[str], with_out: list[Path],
    times: Path | None, shard: str | None, gpus: str | None,
) -> tuple[str | None, str | None, list[int] | None]:  # fmt: skip
    """The options checked before anything is read, in this order (the first wrong one is the one line said);
    returns the launch gap, the shard as I/N and the GPUs."""
    from harness.envs.spec import TIMINGS
    from harness.run.options import check_timeout

    if timing is not None and timing not in TIMINGS:
        raise HarnessError(f"--timing: expected one of {', '.join(TIMINGS)}, got {timing!r}")
    check_timeout(timeout)
    gap = launch_gap(gap)
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


def referee_rule(rel: float, abs_us: float, min_golden_us: float, remeasuring: bool) -> Rule:
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


def selection(
    env: str, suite: Path, out: Path, with_env: list[str], with_out: list[Path], kernel: list[str] | None,
    filter_: str | None, shard: str | None, times: Path | None, calibration: Path | None, config_arch: str | None,
) -> tuple[Runs, list[Case], dict[str, float] | None, list[str]]:  # fmt: skip
    """The envs (each venv checked) with their outputs, the cases (of this --shard, balanced by --times), the
    previous times, and the warnings of the config arch; outputs that are inputs are refused."""
    from harness.envs.spec import load_env_spec
    from harness.envs.venv import check_venv
    from harness.inputs import configarch
    from harness.run.orchestrate import previous_times, selected_cases

    runs = [(load_env_spec(env), out), *((load_env_spec(e), o) for e, o in zip(with_env, with_out))]
    for spec, _ in runs:
        check_venv(spec)  # a venv whose pins did not install would run whatever Triton it finds
    previous = previous_times(times) if times else None
    cases = selected_cases(suite, kernel, filter_, shard, previous, config_arch)
    check_outputs_are_not_inputs(runs, suite, cases, times, calibration)
    warnings = configarch.check(cases, config_arch, suite)  # refuses an arch no case has a config file for
    return runs, cases, previous, warnings


def check_outputs_are_not_inputs(
    runs: Runs, suite: Path, cases: Sequence[Case], times: Path | None, calibration: Path | None
) -> None:
    """--out and every --with-out name no file the run reads (the suite, a suite it includes, a shapes file, a
    kernel file, an env spec, --times, --calibration): refused up front, never "exists; pass --resume"."""
    from harness.inputs.sources import suite_sources, what_it_is

    inputs = suite_sources(suite, list(cases))
    for spec, _ in runs:
        inputs.setdefault(spec.path.resolve(), f"the env spec {spec.name}")
    for path, option in ((times, "--times"), (calibration, "--calibration")):
        if path is not None:
            inputs.setdefault(path.resolve(), f"the {option} file")
    for k, (_, out) in enumerate(runs):
        if what := what_it_is(Path(out), inputs):
            raise HarnessError(f"{'--out' if k == 0 else '--with-out'} {out} is {what}: choose another results file")


def empty_shard_lines(runs: Runs, shard: str | None) -> list[str]:
    """What a shard without cases says of each OUT, where it wrote the header and sidecar only."""
    return [f"{o}: --shard {shard} holds no case of the selection: wrote the header only" for _, o in runs]


def closing_lines(runs: Runs, artifacts: bool) -> list[str]:
    """What a run says once it has measured, after the counts: each OUT's config preview warnings, the compare
    command of an interleaved run, and an --artifacts that kept nothing."""
    lines = [f"warning: {line}" for _, o in runs for line in preview_warnings(o)]
    if len(runs) > 1:
        from harness.run.interleave import compare_command

        if cmd := compare_command(runs):
            lines.append(f"next: {cmd}")
    return lines + (no_artifacts_lines([o for _, o in runs]) if artifacts else [])


def no_artifacts_lines(outs: Sequence[Path]) -> list[str]:
    """--artifacts on Triton's CPU interpreter keeps nothing: it compiles no kernels. Said, not silent."""
    from harness.fsutil import json_object
    from harness.results.schema import sidecar_path

    lines = []
    for o in outs:
        if (json_object(sidecar_path(o)) or {}).get("backend") == "interp":
            lines.append(f"{o}: --artifacts kept nothing: Triton's CPU interpreter compiles no kernels "
                         "(`harness explain` needs a GPU run)")  # fmt: skip
    return lines


def outcome(all_counts: Sequence[dict[str, int]], fail_on_error: bool) -> tuple[int, str]:
    """The exit code of a run that measured, and the line that says why where it is not 0 and not asked for:
    1 with --fail-on-error and a case not timed; 1 where no case produced a time at all."""
    if fail_on_error and any(k not in ("ok", "unstable") for counts in all_counts for k in counts):
        return 1, ""
    if any(all_counts) and not any(k in ("ok", "unstable") for counts in all_counts for k in counts):
        # every case failed or was skipped: nothing was measured, which no later stage should take for a result
        return 1, "harness run: no case produced a time (each failed or was skipped: the lines above say why)"
    return 0, ""


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
    return [f"{out}: {counted(len(rows), 'case')} ran another config than harness's preview of the library's files: "
            f"the library's choice is recorded (config_source), e.g. {first['kernel']} {first['case_id']}: "
            f"{first['config_source'].split(') differs: ', 1)[-1]}"]  # fmt: skip

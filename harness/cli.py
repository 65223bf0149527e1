"""The `harness` command line: a thin layer over plain functions in the stage modules.

Exit codes: 0 done; 1 `--fail-on-regression` found a regression or a TOT failure (or `run` had failing
cases with `--fail-on-error`); 2 bad input or usage (one line on stderr, never a traceback); 3 a bug in harness
(its traceback kept); 130 Ctrl-C; 143 SIGTERM. A CI gate can so tell "slower" (1) from "could not tell" (2, 3).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from harness.envs.bundle import DEFAULT_PART_MB
from harness.errors import HarnessError

if TYPE_CHECKING:  # the run stage loads only when a command needs it
    from harness.run.remeasure import Remeasure

app = typer.Typer(
    name="harness",
    help="Regression tracking for GPU kernels across Triton compiler stacks (golden vs top-of-tree).",
    no_args_is_help=False,
    pretty_exceptions_show_locals=False,  # locals may hold credentials
    add_completion=False,
    # click's plain help, for every command: rich's panels wrap each option's help into a column ~20 wide
    rich_markup_mode=None,
)


@app.callback()
def _root() -> None:
    """Regression tracking for GPU kernels across Triton compiler stacks (golden vs top-of-tree)."""


ExistingFile = Annotated[Path, typer.Argument(help="a results CSV (see docs/results-format.md)")]


def _check_timeout(timeout: float) -> None:
    if not 0 < timeout < float("inf"):
        raise HarnessError(f"--timeout {timeout:g}: expected a number of seconds > 0")


@app.command()
def compare(
    golden: ExistingFile,
    tot: ExistingFile,
    out: Annotated[Path | None, typer.Option("--out", help="write the verdict table as CSV")] = None,
    markdown: Annotated[Path | None, typer.Option("--markdown", help="write a PR-comment-ready markdown file")] = None,
    rel: Annotated[float, typer.Option(help="relative factor of the rule")] = 1.005,
    abs_us: Annotated[float, typer.Option("--abs-us", help="absolute slack of the rule, µs")] = 0.5,
    min_golden_us: Annotated[float, typer.Option("--min-golden-us", help="ignore cases faster than this")] = 4.0,
    unstable: Annotated[
        str,
        typer.Option(
            help="'compare': unstable rows are compared by their median time; "
            "'fail': an unstable row counts as a failure"
        ),
    ] = "compare",
    fail_on_regression: Annotated[
        bool,
        typer.Option(
            "--fail-on-regression",
            help="exit 1 on a confident regression or a TOT failure (exit 2 if golden and TOT ran the same "
            "Triton); an ambiguous one (its 95 % interval straddles the limit) does not fail",
        ),
    ] = False,
    fail_on_ambiguous: Annotated[
        bool,
        typer.Option(
            "--fail-on-ambiguous",
            help="stricter: exit 1 also on an ambiguous regression, or an ambiguous ok that may be one",
        ),
    ] = False,
    require_same_gpu: Annotated[
        bool,
        typer.Option(
            "--require-same-gpu",
            help="exit 2 when the sidecars name different GPUs or hosts (a warning otherwise): for CI",
        ),
    ] = False,
    worst: Annotated[int, typer.Option(min=1, help="rows in the terminal's worst-cases table")] = 20,
    record: Annotated[
        bool,
        typer.Option(
            "--record",
            help="add it to the history ($HARNESS_DB): docs/history.md",
        ),
    ] = False,
    calibration: Annotated[
        Path | None,
        typer.Option(
            "--calibration",
            help="harness calibrate's calibration.csv: a case that cannot resolve the rule's slack says so, "
            "and its flags are ambiguous",
        ),
    ] = None,
) -> None:
    """Compare GOLDEN and TOT results: ignore golden < 4 µs; regression iff tot > 1.005 × golden + 0.5 µs.
    Exit 2 when nothing could be compared (no case timed under both stacks)."""
    from harness.compare.compare import compare_files
    from harness.compare.rule import Rule
    from harness.compare.store import meta_path, write_compare
    from harness.fsutil import check_writable, refuse_overwrite, write_text
    from harness.render.markdown import render_markdown
    from harness.render.terminal import print_comparison, stderr
    from harness.results.schema import sidecar_path

    if unstable not in ("compare", "fail"):
        raise HarnessError(f"--unstable: expected 'compare' or 'fail', got {unstable!r}")
    try:
        rule = Rule(rel=rel, abs_us=abs_us, min_golden_us=min_golden_us)
    except ValueError as err:
        raise HarnessError(str(err)) from None
    outputs = {"--out": out, "--out's .meta.json": meta_path(out) if out else None, "--markdown": markdown}
    refuse_overwrite(outputs, [golden, tot, sidecar_path(golden), sidecar_path(tot)])
    if out and markdown:
        refuse_overwrite({"--markdown": markdown}, [out, meta_path(out)])
    for option, path in outputs.items():
        if path is not None:
            check_writable(option, path)
    if record:
        from harness.history.record import check_record

        check_record([out, markdown])
    cal = None
    if calibration is not None:
        from harness.compare.calibration import load_calibration

        cal = load_calibration(calibration)
    cmp = compare_files(golden, tot, rule, unstable=unstable)
    if cal is not None:
        from harness.compare.calibration import calibrate_comparison

        calibrate_comparison(cmp, *cal, str(calibration))
    for w in cmp.warnings:
        stderr().print(f"[yellow]warning:[/] {w}")
    print_comparison(cmp, worst=worst)
    if out:
        write_compare(cmp, out)
    if markdown:
        write_text(markdown, render_markdown(cmp, artifact=str(out) if out else "the compare CSV"))
    if record:
        from harness.history.record import record_compare

        record_compare(cmp, out)
    if cmp.nothing_compared:
        raise HarnessError(f"{golden} vs {tot}: {cmp.nothing_compared}")
    if require_same_gpu and cmp.other_gpu:
        raise HarnessError(f"--require-same-gpu: {cmp.other_gpu}")
    gate = "--fail-on-ambiguous" if fail_on_ambiguous else "--fail-on-regression" if fail_on_regression else ""
    if gate and cmp.same_triton:
        raise HarnessError(f"{gate}: {cmp.same_triton}")
    if (fail_on_regression and cmp.blocking) or (fail_on_ambiguous and cmp.strict_blocking):
        raise typer.Exit(1)


env_app = typer.Typer(
    help="Environment specs: create a venv, show what a spec resolves to; pack and unpack a Triton release.",
    no_args_is_help=False,
)
app.add_typer(env_app, name="env")


@env_app.command("create")
def env_create(spec: Annotated[str, typer.Argument(help="envs/NAME.yaml or NAME")]) -> None:
    """Create the spec's venv (uv when present, else venv + pip), install its requirements, check its pins and
    record the install; an existing venv is verified and completed, not rebuilt."""
    from harness.envs.spec import load_env_spec
    from harness.envs.venv import create_env
    from harness.render.terminal import stderr

    py = create_env(load_env_spec(spec), log=lambda m: stderr().print(m, markup=False))
    print(py)


@env_app.command("pack")
def env_pack(
    version: Annotated[str, typer.Argument(help="the Triton release, e.g. 3.8.0")],
    out: Annotated[Path | None, typer.Option("--out", help="new folder for the parts (default .stage/VERSION)")] = None,
    part_mb: Annotated[
        float,
        typer.Option(
            "--part-mb",
            help="largest part, MiB (each part in its own folder; 32: one part and this repository fit a 64 MiB upload)",
        ),
    ] = DEFAULT_PART_MB,
    python: Annotated[
        str | None, typer.Option("--python", help="the node's Python, MAJOR.MINOR (default: this one's)")
    ] = None,
    arch: Annotated[str, typer.Option("--arch", help="the node's CPU: x86_64 or aarch64")] = "x86_64",
    wheel: Annotated[Path | None, typer.Option("--wheel", help="a wheel file at hand instead of pip download")] = None,
    index_url: Annotated[str | None, typer.Option("--index-url", help="pip's index (default: PyPI)")] = None,
    find_links: Annotated[
        str | None, typer.Option("--find-links", help="a folder or page of wheels (alone: no index)")
    ] = None,
    level: Annotated[int, typer.Option("--level", help="xz preset, 0 (fastest) to 9 (smallest)")] = 9,
) -> None:
    """The offline bundle of a Triton release for an NVIDIA node: the wheel without the AMD backend and static
    libraries (ptxas-blackwell stays), as tar.xz parts with sha256 checksums and a manifest."""
    from harness.envs.pack import pack
    from harness.render.progress import byte_bars
    from harness.render.terminal import stderr

    con = stderr()
    target = out or Path(".stage") / version
    with byte_bars(con) as bars:
        man = pack(
            version,
            target,
            part_mb=part_mb,
            python=python,
            arch=arch,
            wheel=wheel,
            index_url=index_url,
            find_links=find_links,
            level=level,
            log=lambda m: con.print(m, markup=False, highlight=False),
            progress=bars,
        )
    arch_ = man["archive"]
    print(
        f"packed triton {man['version']} (Python {man['python']}) into {target}: {len(man['parts'])} parts, "
        f"{arch_['bytes'] / 1e6:.1f} MB, sha256 {arch_['sha256']}"
    )
    print(f"on the node: harness env unpack {target}   (every p*/ folder of it, gathered in one folder)")


@env_app.command("unpack")
def env_unpack(
    src: Annotated[Path, typer.Argument(help="the folder holding the bundle's parts (its p*/ folders)")],
    dest: Annotated[
        Path | None,
        typer.Option(
            "--dest", help="the overlay folder (default $HARNESS_TRITON_DIR/VERSION, else .harness/triton/VERSION)"
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="replace what DEST holds")] = False,
) -> None:
    """Check every part of a bundle (sizes, sha256) and unpack it as an overlay for `mode: overlay` env specs."""
    from harness.envs.pack import unpack
    from harness.render.progress import byte_bars
    from harness.render.terminal import stderr

    con = stderr()
    with byte_bars(con) as bars:
        where, rec = unpack(
            src, dest, force=force, log=lambda m: con.print(m, markup=False, highlight=False), progress=bars
        )
    print(f"PYTHONPATH={where}")
    print(f"env spec: triton: {rec['version']}, mode: overlay, overlay: {where}")


@env_app.command("show")
def env_show(spec: Annotated[str, typer.Argument(help="envs/NAME.yaml or NAME")]) -> None:
    """Print what a spec resolves to (variables expanded): interpreter, overlay, knobs, timing, Triton cache, and
    the Triton and torch that interpreter really imports (version and path). A spec that cannot run exits 2."""
    import json

    from harness.envs.spec import load_env_spec
    from harness.envs.venv import check_venv, probe

    s = load_env_spec(spec)
    check_venv(s)
    info = probe(s)
    print(
        json.dumps(
            {**s.summary(), "python_version": info.get("version"), **{k: info[k] for k in ("triton", "torch")}},
            indent=2,
        )
    )


def _launch_gap(value: str | None) -> str | None:
    if value is None or value == "auto":
        return value
    try:
        if 0 <= float(value) < float("inf"):
            return str(float(value))
    except ValueError:
        pass
    raise HarnessError(f"--launch-gap {value!r}: expected 'auto' or a number of milliseconds >= 0")


# `harness run`'s options, declared once here so that run() reads as what it does
_Env = Annotated[str, typer.Option("--env", help="env spec: envs/NAME.yaml or NAME")]
_Suite = Annotated[Path, typer.Option("--suite", help="suite YAML (suites/*.yaml)")]
_ConfigArch = Annotated[
    str | None,
    typer.Option(
        "--config-arch",
        help="resolve every case's config as on this arch (gfx950 on an H100 or the CPU); recorded in the results",
    ),
]
_Out = Annotated[Path, typer.Option("--out", help="results CSV to write (rows appended as cases finish)")]
_Kernel = Annotated[list[str] | None, typer.Option("--kernel", help="only these kernels (repeatable)")]
_Filter = Annotated[str | None, typer.Option("--filter", help="regex over 'kernel/case_id'")]
_Reps = Annotated[int, typer.Option(min=1, help="first reps per case (the stability rule may add 2)")]
_Launches = Annotated[
    int | None,
    typer.Option(min=1, help="timed launches per rep (default: ~40 ms worth, 10..100; 3 for wallclock)"),
]
_Timeout = Annotated[float, typer.Option(help="seconds (> 0) a case may take to answer before it is a timeout")]
_Timing = Annotated[str | None, typer.Option(help="override the spec's timing backend")]
_Resume = Annotated[
    bool,
    typer.Option(
        "--resume",
        help="measure only the cases OUT does not have yet (refused if a measurement option differs from OUT's)",
    ),
]
_FailOnError = Annotated[bool, typer.Option("--fail-on-error", help="exit 1 if any case failed")]
_CompileJobs = Annotated[
    int,
    typer.Option(
        min=0,
        help="compile in this many processes before measuring (1: off, the default; 0: half the cores, <= 8)",
    ),
]
_FreshProcessRounds = Annotated[
    bool,
    typer.Option(
        "--fresh-process-rounds",
        help="time each rep round in a new worker process, so per-process placement effects average out",
    ),
]
_LaunchGap = Annotated[
    str | None,
    typer.Option(
        "--launch-gap",
        # the reasons behind each choice: docs/reference.md (`harness run`: the longer help of its options)
        help="GPU idle before each timed launch (CUPTI): 'auto' (twice the kernel's time, <= 10 ms), 0 or ms",
    ),
]
_ShufflePlacement = Annotated[
    bool,
    typer.Option(
        "--shuffle-placement/--no-shuffle-placement",
        help="a random-sized allocation before each timed launch, so the op's own buffers move (GPU timing)",
    ),
]
_MoveInputs = Annotated[
    bool,
    typer.Option(
        "--move-inputs/--no-move-inputs",
        help="with --shuffle-placement: copy the inputs to a random place before each timed launch",
    ),
]
_Remeasure = Annotated[
    bool,
    typer.Option(
        "--remeasure/--no-remeasure",
        help="with --with-env: measure the cases whose verdict is ambiguous (the 95 % interval straddles the "
        "rule's limit) again, interleaved, until decided or the budget is spent (default on; docs/verdicts.md)",
    ),
]
_RemeasureReps = Annotated[
    int, typer.Option("--remeasure-reps", min=0, help="--remeasure: at most this many extra reps per case")
]
_RemeasureShare = Annotated[
    float,
    typer.Option(
        "--remeasure-time",
        min=0.0,
        help="--remeasure: stop once re-measuring took this share of the run's wall time before it",
    ),
]
_WithEnv = Annotated[
    list[str] | None,
    typer.Option(
        "--with-env",
        help="another env measured in the same run, reps interleaved in time with ENV's (repeatable; "
        "each needs a --with-out); golden vs TOT, or golden vs golden for an A/A",
    ),
]
_WithOut = Annotated[list[Path] | None, typer.Option("--with-out", help="results CSV of each --with-env")]
_Shard = Annotated[
    str | None,
    typer.Option("--shard", help="I/N: only the I-th of N balanced parts of the suite (a CI matrix job, a Slurm task)"),
]
_Gpus = Annotated[
    str | None,
    typer.Option("--gpus", help="'all' or 0,1,2,3: spread the cases over these GPUs, each measuring every env"),
]
_Times = Annotated[
    Path | None,
    typer.Option("--times", help="a previous results file: its times balance --shard and --gpus (else FLOPs)"),
]
_Artifacts = Annotated[
    bool,
    typer.Option(
        "--artifacts",
        help="keep each case's compiled kernels (IRs, PTX/SASS or AMDGCN) in NAME.artifacts/ for `harness explain`",
    ),
]
_Record = Annotated[
    bool,
    typer.Option(
        "--record",
        help="add OUT(s) to the history ($HARNESS_DB) when done",
    ),
]


@app.command()
def run(
    env: _Env,
    suite: _Suite,
    out: _Out,
    kernel: _Kernel = None,
    filter_: _Filter = None,
    reps: _Reps = 3,
    launches: _Launches = None,
    timeout: _Timeout = 600.0,
    timing: _Timing = None,
    resume: _Resume = False,
    fail_on_error: _FailOnError = False,
    compile_jobs: _CompileJobs = 1,
    fresh_process_rounds: _FreshProcessRounds = False,
    launch_gap: _LaunchGap = "auto",
    shuffle_placement: _ShufflePlacement = True,
    move_inputs: _MoveInputs = True,
    with_env: _WithEnv = None,
    with_out: _WithOut = None,
    remeasure: _Remeasure = True,
    remeasure_reps: _RemeasureReps = 12,
    remeasure_time: _RemeasureShare = 0.3,
    shard: _Shard = None,
    gpus: _Gpus = None,
    times: _Times = None,
    artifacts: _Artifacts = False,
    record: _Record = False,
    config_arch: _ConfigArch = None,
) -> None:
    """Run SUITE under ENV into OUT: correctness first, then kernel-only timing with the 3-rep / 5% rule."""
    from harness.envs.spec import TIMINGS, load_env_spec
    from harness.envs.venv import check_venv
    from harness.render.terminal import stderr
    from harness.run.options import RunOptions
    from harness.run.precompile import default_compile_jobs

    if timing is not None and timing not in TIMINGS:
        raise HarnessError(f"--timing: expected one of {', '.join(TIMINGS)}, got {timing!r}")
    _check_timeout(timeout)
    gap = _launch_gap(launch_gap)
    with_env, with_out = with_env or [], with_out or []
    if len(with_env) != len(with_out):
        raise HarnessError(f"--with-env given {len(with_env)} times but --with-out {len(with_out)} times")
    if times is not None and shard is None and gpus is None:
        raise HarnessError(f"--times {times}: it balances --shard and --gpus, and neither was given")
    if shard is not None:  # an empty --shard '' is refused like any other bad one, never taken as none
        from harness.run.shards import parse_shard

        shard = "{}/{}".format(*parse_shard(shard))
    if gpus is not None:
        from harness.run.node import parse_gpus

        gpu_list = parse_gpus(gpus)
    if record:
        from harness.history.record import check_record

        check_record([out, *with_out, times])
    runs = [(load_env_spec(env), out), *((load_env_spec(e), o) for e, o in zip(with_env, with_out))]
    for spec, _ in runs:
        check_venv(spec)  # a venv whose pins did not install would run whatever Triton it finds
    previous = _previous_times(times) if times else None
    cases = _selected_cases(suite, kernel, filter_, shard, previous, config_arch)
    opts = RunOptions(
        reps=reps,
        launches=launches,
        timeout_s=timeout,
        resume=resume,
        timing=timing,
        artifacts=artifacts,
        compile_jobs=default_compile_jobs() if compile_jobs == 0 else compile_jobs,
        fresh_process_rounds=fresh_process_rounds,
        launch_gap=gap,
        shuffle_placement=shuffle_placement,
        move_inputs=move_inputs,
        shard=shard,
        config_arch=config_arch,
        remeasure=_remeasure(remeasure and bool(with_env), remeasure_reps, remeasure_time),
    )
    con = stderr()
    if not cases:  # a shard without cases (more shards than cases): an empty part, for merge to find
        _write_empty_parts(runs, opts, str(suite))
        for _, o in runs:
            con.print(
                f"{o}: --shard {shard} holds no case of the selection: wrote the header only",
                markup=False,
                soft_wrap=True,
            )
        return
    if gpus is not None:
        all_counts = _measure_on_gpus(con, runs, cases, opts, str(suite), gpu_list, previous)
    else:
        all_counts = _measure(con, runs, cases, opts, str(suite))
    for (_, o), counts in zip(runs, all_counts):
        con.print(
            f"{o}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) if counts else f"{o}: nothing to do"
        )
        _print_failed(con, o, counts)
    if artifacts:
        _say_no_artifacts(con, [o for _, o in runs])
    if record:
        from harness.history.record import record as record_files

        record_files([o for _, o in runs])
    if fail_on_error and any(k not in ("ok", "unstable") for counts in all_counts for k in counts):
        raise typer.Exit(1)


def _remeasure(on: bool, extra_reps: int, share: float) -> Remeasure | None:
    """The re-measuring policy of an interleaved run: AITER's rule referees (the run stage never sees it)."""
    if not on:
        return None
    from harness.compare.referee import rule_referee
    from harness.compare.rule import Rule
    from harness.run.remeasure import Budget, Remeasure

    return Remeasure(rule_referee(Rule()), Budget(extra_reps=extra_reps, share=share))


def _selected_cases(
    suite: Path,
    kernel: list[str] | None,
    filter_: str | None,
    shard: str | None,
    previous: dict[str, float] | None,
    config_arch: str | None = None,
) -> list:
    """The suite's cases that --kernel, --filter and --shard leave (as --config-arch says); none left is bad
    input."""
    from harness.inputs.suite import as_config_arch, load_suite, select

    cases = as_config_arch(select(load_suite(suite), kernel, filter_), config_arch)
    if not cases:
        raise HarnessError(f"{suite}: no case matches --kernel/--filter")
    if shard:
        from harness.run.shards import shard as take_shard

        cases = take_shard(cases, shard, previous)  # may be empty: more shards than cases
    return cases


def _write_empty_parts(runs: list, opts, suite: str) -> None:  # noqa: ANN001
    """Every OUT of a shard without cases: the header and a sidecar (checked and locked like any run's)."""
    from harness.run.options import run_options
    from harness.run.runner import lock_outputs
    from harness.run.sidecar import write_empty_part

    with lock_outputs(runs, opts, suite):
        for spec, out in runs:
            write_empty_part(spec, opts, Path(out), suite, run_options(spec, opts, suite))


def _measure(con, runs: list, cases: list, opts, suite: str) -> list[dict[str, int]]:  # noqa: ANN001
    """Every env of ``runs`` measures ``cases``, with progress bars; the outputs are locked until all are done."""
    from harness.render.progress import env_bars
    from harness.run.interleave import run_interleaved
    from harness.run.runner import lock_outputs, run_suite

    with lock_outputs(runs, opts, suite), env_bars(con, [s.name for s, _ in runs]) as bars:
        if len(runs) == 1:
            spec, out = runs[0]
            progress = lambda label, done, total: bars(0, label, done, total)  # noqa: E731
            return [run_suite(spec, cases, out, opts, progress=progress, suite_name=suite, locked=True)]

        def warn(message: str) -> None:
            con.print(f"WARNING: {message}", style="bold red", markup=False, highlight=False)

        return run_interleaved(runs, cases, opts, progress=bars, suite_name=suite, locked=True, warn=warn)


def _measure_on_gpus(con, runs: list, cases: list, opts, suite: str, gpus: list[int], previous) -> list:  # noqa: ANN001
    """``--gpus``: one part of the cases per GPU, every env on each; the parts merged into each env's OUT."""
    from harness.render.progress import part_bars
    from harness.run.node import run_on_gpus
    from harness.run.runner import lock_outputs

    def warn(message: str) -> None:
        con.print(f"WARNING: {message}", style="bold red", markup=False, highlight=False)

    with lock_outputs(runs, opts, suite), part_bars(con, [s.name for s, _ in runs]) as bars:
        return run_on_gpus(runs, cases, opts, gpus, suite, bars, previous, warn)


def _previous_times(path: Path) -> dict[str, float]:
    """``kernel/case_id`` → time (µs) of the timed rows of a results file."""
    from harness.results.load import load_results

    df = load_results(path)
    df = df[df["time_us"].notna()]
    return dict(zip(df["kernel"] + "/" + df["case_id"], df["time_us"].astype(float)))


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


def _print_failed(con, out: Path, counts: dict[str, int]) -> None:  # noqa: ANN001 - a rich Console
    """OUT's cases that failed or were skipped, with the first line of their error (the CSV has the rest)."""
    if all(k in ("ok", "unstable") for k in counts):
        return
    from harness.render.terminal import failed_row_lines, print_lines
    from harness.results.load import load_results
    from harness.results.schema import TIMED_STATUSES

    df = load_results(out)
    n = int((~df["status"].isin(TIMED_STATUSES)).sum())
    head = f"{out}: {n} cases not timed (the first line of each error; all of it in the CSV's error column):"
    print_lines(con, head, failed_row_lines(df))


@app.command()
def merge(
    parts: Annotated[list[Path], typer.Argument(help="results CSVs of one env: shards, or the parts of --gpus")],
    out: Annotated[Path, typer.Option("--out", help="the merged results CSV")],
    suite: Annotated[
        Path | None, typer.Option("--suite", help="check that every case of this suite is in exactly one part")
    ] = None,
) -> None:
    """Merge the parts of one environment's results (CI shards, Slurm tasks) into one file: parts measured with
    another stack, method or GPU model are refused, naming the field; overlapping or missing cases too."""
    from harness.fsutil import check_writable, refuse_overwrite
    from harness.results.schema import sidecar_path
    from harness.run.merge import merge_results

    refuse_overwrite({"--out": out, "--out's sidecar": sidecar_path(out)}, [*parts, *map(sidecar_path, parts)])
    for p in parts:
        if not p.is_file():
            raise HarnessError(
                f"{p}: " + ("is a directory, expected a results CSV file" if p.is_dir() else "no such file")
            )
    check_writable("--out", out)
    counts = merge_results(list(parts), out, suite)
    print(f"{out}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + f" ({len(parts)} parts)")


@app.command()
def retune(
    compare_csv: Annotated[Path, typer.Argument(help="compare.csv written by `harness compare --out`")],
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
    timeout: Annotated[float, typer.Option(help="seconds a case may take to answer")] = 600.0,
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
    from harness.render.progress import env_bars
    from harness.render.terminal import stderr
    from harness.retune.retune import Options
    from harness.retune.retune import retune as run_retune
    from harness.run.options import RunOptions
    from harness.run.precompile import default_compile_jobs

    _check_timeout(timeout)
    con = stderr()
    # the guard re-measures the cases it cannot decide; retune binds the referee to the guard's own pairs
    run = RunOptions(reps=reps, launches=launches, timeout_s=timeout, compile_jobs=default_compile_jobs(),
                     remeasure=_remeasure(True, 12, 0.3))  # fmt: skip
    opts = Options(compare_csv, env, golden_env, out, list(kernel or []), budget_min, dry_run, run,
                   hints=list(hints or []), search_min=search_min)  # fmt: skip
    data = run_retune(opts, log=lambda m: con.print(m, markup=False, highlight=False), bars=lambda n: env_bars(con, n))
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


@app.command()
def explain(
    compare_csv: Annotated[Path, typer.Argument(help="compare.csv written by `harness compare --out`")],
    out: Annotated[Path, typer.Option("--out", help="folder for index.md / index.html and one page per case")],
    case: Annotated[
        list[str] | None, typer.Option("--case", help="regex over 'kernel/case_id' (repeatable); default: regressions")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, help="at most this many cases, worst first")] = 20,
    golden_artifacts: Annotated[
        Path | None, typer.Option(help="golden artifacts folder (default: beside the golden results file)")
    ] = None,
    tot_artifacts: Annotated[Path | None, typer.Option(help="TOT artifacts folder (default: beside TOT's)")] = None,
) -> None:
    """Diff the compiled kernels (resources, instruction mix, TTGIR, assembly) of regressed cases."""
    from harness.compare.store import meta_path
    from harness.explain.explain import explain_cases, write_explain
    from harness.outdir import prepare_out_dir

    inputs = [compare_csv, meta_path(compare_csv), golden_artifacts, tot_artifacts]
    prepare_out_dir("--out", out, "explain", inputs=inputs, own=("index.md",), create=False)
    cases = explain_cases(compare_csv, case, golden_artifacts, tot_artifacts, limit)
    prepare_out_dir("--out", out, "explain", inputs=inputs, own=("index.md",))
    index = write_explain(cases, out)
    print(f"explained {len(cases)} cases: {index} ({index.with_suffix('.html')})")


@app.command()
def bisect(
    compare_csv: Annotated[Path, typer.Argument(help="compare.csv written by `harness compare --out`")],
    versions: Annotated[
        str,
        typer.Option(
            "--versions",
            help="the releases between golden and TOT, in order, comma-separated (3.7.0,3.7.1,3.8.0); an item may "
            "be an env spec file instead",
        ),
    ],
    out: Annotated[Path, typer.Option("--out", help="folder for bisect.md, the CSVs, the plot and the runs")],
    case: Annotated[
        list[str] | None,
        typer.Option("--case", help="regex over 'kernel/case_id' (repeatable); default: regressions, TOT failures"),
    ] = None,
    suite: Annotated[str | None, typer.Option(help="the suite (default: the one the golden run measured)")] = None,
    golden: Annotated[str | None, typer.Option(help="golden's env spec (default: the one golden ran)")] = None,
    tot: Annotated[
        str | None,
        typer.Option(help="TOT's env spec to measure it again, or 'none' (default: the one TOT ran, if it is here)"),
    ] = None,
    mode: Annotated[
        str, typer.Option(help="how a release gets its env: venv (installs, online) or overlay (harness env unpack)")
    ] = "venv",
    artifacts: Annotated[
        bool, typer.Option("--artifacts", help="keep the compiled kernels and explain each culprit step")
    ] = False,
    reps: Annotated[int, typer.Option(min=1, help="first reps per case (the stability rule may add 2)")] = 3,
    launches: Annotated[int | None, typer.Option(min=1, help="timed launches per rep (default: automatic)")] = None,
    timeout: Annotated[float, typer.Option(help="seconds a case may take to answer")] = 600.0,
    remeasure: Annotated[int, typer.Option(min=0, help="rounds that measure noisy pairs again")] = 2,
    resume: Annotated[
        bool, typer.Option("--resume", help="go on with an interrupted bisection in OUT (same options)")
    ] = False,
) -> None:
    """For every regressed case of COMPARE at once, the first Triton release at which it is slower than golden
    (good / bad / noisy per release, non-monotonic histories as such), the compiled kernels at each culprit step
    and the Triton git range of each step."""
    from harness.bisect.bisect import bisect as run_bisect
    from harness.render.terminal import stderr
    from harness.run.options import RunOptions

    _check_timeout(timeout)
    con = stderr()
    # rep-level re-measuring of ambiguous pairs inside each round; bisect binds it to its comparison's rule
    opts = RunOptions(reps=reps, launches=launches, timeout_s=timeout, resume=resume, artifacts=artifacts,
                      remeasure=_remeasure(True, 12, 0.3))  # fmt: skip
    items = [v.strip() for v in versions.split(",") if v.strip()]
    res = run_bisect(
        compare_csv,
        items,
        out,
        measure=lambda runs, cases, o, s: _measure(con, runs, cases, o, s),
        log=lambda m: con.print(m, markup=False, highlight=False),
        patterns=case,
        suite=suite,
        golden=golden,
        tot=tot,
        mode=mode,
        opts=opts,
        remeasure=remeasure,
    )
    for key, h in res.histories.items():
        print(f"{key}: {h.culprit.text() if h.culprit else '-'}" + ("" if h.kind == "step" else f" [{h.kind}]"))
    print(f"wrote {out / 'bisect.md'} ({sum(r['seconds'] for r in res.rounds):.0f} s measuring)")


@app.command()
def report(
    results: Annotated[list[Path] | None, typer.Argument(help="results CSVs (each with its .env.json)")] = None,
    out: Annotated[Path, typer.Option("--out", help="folder for index.html and the PNGs")] = Path("reports/latest"),
    compare_csv: Annotated[
        Path | None, typer.Option("--compare", help="compare.csv: adds the delta plot and verdict table")
    ] = None,
    vendor: Annotated[
        Path | None, typer.Option(help="vendor baseline (benchmarks/vendor_baseline.py's .md table or a CSV)")
    ] = None,
    ceilings: Annotated[
        Path | None, typer.Option(help="YAML of measured ceilings replacing datasheet peaks, e.g. {bf16: 800}")
    ] = None,
    explain: Annotated[str, typer.Option(help="link to `harness explain` output, shown with the verdicts")] = "",
    title: Annotated[str, typer.Option(help="page title")] = "",
    history: Annotated[
        str | None, typer.Option("--history", help="history database (harness history): trends, change points")
    ] = None,
    retune: Annotated[
        Path | None, typer.Option("--retune", help="OUT/retune.json of `harness retune`: adds its section")
    ] = None,
) -> None:
    """HTML report: delta plot, roofline, TFLOPS-by-config scatter, per-dispatch split, sortable tables."""
    from harness.report.report import write_report

    index = write_report(
        list(results or []), out, compare_csv, vendor, ceilings, explain, title, history=history, retune=retune
    )
    print(f"wrote {index}")


from harness.history.cli import history_app  # noqa: E402 - typer only: its commands import lazily

app.add_typer(history_app, name="history")

from harness.calibrate.cli import calibrate_command  # noqa: E402 - typer only: its work imports lazily

app.command("calibrate")(calibrate_command)

publish_app = typer.Typer(
    help="Publish a comparison: a sticky PR comment, a Google spreadsheet.", no_args_is_help=False
)
app.add_typer(publish_app, name="publish")


@publish_app.command("github")
def publish_github(
    compare_csv: Annotated[Path, typer.Argument(help="compare.csv written by `harness compare --out`")],
    repo: Annotated[str, typer.Option(help="OWNER/NAME")],
    pr: Annotated[int, typer.Option(min=1, help="pull request number")],
    token_env: Annotated[str, typer.Option(help="environment variable holding the token")] = "GITHUB_TOKEN",
    api_url: Annotated[
        str, typer.Option(help="GitHub API root (GHES: https://HOST/api/v3)")
    ] = "https://api.github.com",
    artifact: Annotated[
        str, typer.Option(help="where the full tables are (named if the comment is cut)")
    ] = "the run's artifacts",
    explain_url: Annotated[
        str, typer.Option(help="link to `harness explain` output (compiled-kernel diffs of the regressions)")
    ] = "",
) -> None:
    """Create or update the one comment on PR that carries the comparison (found by its hidden marker)."""
    import os

    from harness.compare.store import load_compare
    from harness.publish.github import GitHub, check_api_url, check_repo
    from harness.render.markdown import render_markdown

    check_repo(repo)
    check_api_url(api_url)
    if pr < 1:
        raise HarnessError(f"--pr {pr}: expected a pull request number (1 or more)")
    token = os.environ.get(token_env, "")
    if not token:
        raise HarnessError(f"${token_env} is empty: give a token with pull-requests: write")
    body = render_markdown(load_compare(compare_csv), artifact=artifact, explain_url=explain_url)
    action, cid = GitHub(repo=repo, token=token, api_url=api_url).upsert_comment(pr, body)
    print(f"{action} comment {cid} on {repo}#{pr}")


@publish_app.command("sheets")
def publish_sheets(
    compare_csv: Annotated[Path, typer.Argument(help="compare.csv written by `harness compare --out`")],
    spreadsheet: Annotated[str, typer.Option(help="the spreadsheet's ID or URL (shared with the service account)")],
    title: Annotated[
        str, typer.Option(help="worksheets are 'TITLE · summary' and 'TITLE · cases'; others are left alone")
    ] = "harness",
    credentials: Annotated[
        str | None,
        typer.Option(
            help="service-account key file; default: $HARNESS_SHEETS_CREDENTIALS, then "
            "$GOOGLE_APPLICATION_CREDENTIALS (a path or the JSON itself)"
        ),
    ] = None,
) -> None:
    """Replace this title's summary and cases worksheets in a Google spreadsheet with the comparison."""
    from harness.compare.store import load_compare
    from harness.publish.sheets import publish_sheets as publish

    url = publish(load_compare(compare_csv), spreadsheet, title=title, credentials=credentials)
    print(f"published '{title} · summary' and '{title} · cases' to {url}")


class Terminated(KeyboardInterrupt):
    """SIGTERM (a CI job cancelled, `timeout`): unwinds like Ctrl-C, so workers are killed, but exits 143."""


#: signals received, in order: typer returns 130 for any KeyboardInterrupt (older click raises Abort), so the
#: exit code is decided from what arrived rather than from what typer makes of it
_SIGNALS: list[int] = []


def _on_signal(signum, frame):  # noqa: ANN001
    import signal

    _SIGNALS.append(signum)
    raise Terminated if signum == signal.SIGTERM else KeyboardInterrupt


#: what a command cut by a signal tells the user to do
RESUME_HINTS = {
    "run": ": rerun with --resume",
    "bisect": ": rerun with --resume",
    "retune": ": rerun the same command, it resumes from its --out",
}


def _exit_signalled(command: str) -> None:
    import signal

    term = signal.SIGTERM in _SIGNALS
    tail = RESUME_HINTS.get(command, "")
    print(f"harness: {'terminated' if term else 'interrupted'}{tail}", file=sys.stderr)
    sys.exit(143 if term else 130)


def _click_exceptions() -> tuple[type[BaseException], ...]:
    """ClickException of every click that typer may raise: its bundled copy (typer >= 0.20) and click itself."""
    import importlib

    found = []
    for name in ("typer._click.exceptions", "click.exceptions"):
        try:
            found.append(importlib.import_module(name).ClickException)
        except (ImportError, AttributeError):
            continue
    return tuple(found)


def _usage_line(err: BaseException) -> str:
    """One line for a click usage error: its message and the command it concerns."""
    ctx = getattr(err, "ctx", None)
    where = (getattr(ctx, "command_path", "") if ctx is not None else "") or "harness"
    msg = " ".join(err.format_message().split()) if hasattr(err, "format_message") else str(err)
    if type(err).__name__ == "NoArgsIsHelpError" or not msg:
        msg = "missing command"
    return f"{where}: {msg} (see '{where} --help')"


suite_app = typer.Typer(help="Suites: what a suite expands to, without running it.", no_args_is_help=True)
app.add_typer(suite_app, name="suite")


@suite_app.command("show")
def suite_show(
    suite: ExistingFile,
    arch: Annotated[str, typer.Option(help="resolve configs as on this arch (sm90, gfx950, ...)")] = "sm90",
    kernel: Annotated[list[str] | None, typer.Option(help="only these kernels (repeatable)")] = None,
    filter: Annotated[str | None, typer.Option("--filter", help="regex over 'kernel/case_id'")] = None,
    config_arch: _ConfigArch = None,
) -> None:
    """List the cases SUITE expands to, each with the config it would resolve on --arch (a suite's config_arch
    or --config-arch wins); runs nothing."""
    from harness.inputs.suite import as_config_arch, load_suite, select
    from harness.run.suiteview import lines, view

    cases = as_config_arch(select(load_suite(suite), kernel, filter), config_arch)
    for line in lines(view(cases, arch)):
        print(line)
    print(f"{len(cases)} cases", file=sys.stderr)


def main(argv: list[str] | None = None) -> None:
    """Exit codes: 0 done; 1 a gated finding (--fail-on-regression, --fail-on-error); 2 bad input or usage;
    3 a bug in harness (with its traceback); 130 interrupted (Ctrl-C); 143 terminated (SIGTERM). Every user
    error is one line on stderr, never a traceback."""
    import signal

    args = sys.argv[1:] if argv is None else argv
    command = args[0] if args else ""
    _SIGNALS.clear()
    previous = {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        rc = app(args=args, prog_name="harness", standalone_mode=False)
    except HarnessError as err:
        print(f"harness: error: {err}", file=sys.stderr)
        sys.exit(err.exit_code)
    except typer.Exit as ex:
        sys.exit(ex.exit_code)
    except (KeyboardInterrupt, typer.Abort):
        _SIGNALS.append(signal.SIGINT)
        _exit_signalled(command)
    except _click_exceptions() as err:
        print(f"harness: error: {_usage_line(err)}", file=sys.stderr)
        sys.exit(2)
    except Exception:  # our bug, not the user's: keep the traceback, and never exit 1 ("regression found")
        import traceback

        traceback.print_exc()
        print("harness: internal error (a bug in harness: please report it with the traceback above)", file=sys.stderr)
        sys.exit(3)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if _SIGNALS:
        _exit_signalled(command)
    sys.exit(rc if isinstance(rc, int) else 0)


if __name__ == "__main__":
    main()

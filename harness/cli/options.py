"""The options and arguments the commands share, declared once as ``Annotated`` aliases (asv's common_args,
weasel's Arg/Opt); what they become is the stages' (verdict.rule.rule_of, verdict.remeasure.remeasure_policy). A
command's own options stay in its module."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

# ------------------------------------------------------------------------------------------- arguments
ExistingFile = Annotated[Path, typer.Argument(help="a results CSV (see docs/results-format.md)")]
CompareCsv = Annotated[Path, typer.Argument(help="compare.csv written by `harness compare --out`")]
EnvSpecName = Annotated[str, typer.Argument(help="envs/NAME.yaml or NAME")]

# ------------------------------- the rule: `harness compare` judges by it, `run` and `calibrate` measure against it
#: one definition for every command that takes the rule; their defaults are AITER's, harness/verdict/defaults.py's
RuleRel = Annotated[float, typer.Option("--rel", help="the rule: regression iff tot > REL x golden + ABS")]
RuleAbsUs = Annotated[float, typer.Option("--abs-us", help="the rule's slack ABS, µs")]
RuleMinGoldenUs = Annotated[float, typer.Option("--min-golden-us", help="the rule ignores golden under this, µs")]


# ------------------------------------------------------------------ measuring: bisect, calibrate, retune
CaseTimeout = Annotated[float, typer.Option(help="seconds a case may take to answer")]
AutoLaunches = Annotated[int | None, typer.Option(min=1, help="timed launches per rep (default: automatic)")]

# ----------------------- `harness run`; Kernel, Filter, Reps and ConfigArch serve calibrate, bisect, suite show too
Env = Annotated[str, typer.Option("--env", help="env spec: envs/NAME.yaml or NAME")]
Suite = Annotated[Path, typer.Option("--suite", help="suite YAML (suites/*.yaml)")]
ConfigArch = Annotated[
    str | None,
    typer.Option(
        "--config-arch",
        help="resolve configs as on ARCH (e.g. gfx950)",
    ),
]
Out = Annotated[Path, typer.Option("--out", help="results CSV to write, case by case")]
Kernel = Annotated[list[str] | None, typer.Option("--kernel", help="only these kernels (repeatable)")]
Filter = Annotated[str | None, typer.Option("--filter", help="regex over 'kernel/case_id'")]
Reps = Annotated[int, typer.Option(min=1, help="first reps per case (the stability rule may add 2)")]
Launches = Annotated[
    int | None,
    typer.Option(min=1, help="timed launches per rep (default: ~40 ms worth, 30..100; 3 for wallclock)"),
]
Timeout = Annotated[float, typer.Option(help="seconds (> 0) a case may take to answer before it is a timeout")]
Timing = Annotated[str | None, typer.Option(help="override the spec's timing backend")]
Resume = Annotated[
    bool,
    typer.Option(
        "--resume",
        help="measure only what OUT lacks (same options)",
    ),
]
FailOnError = Annotated[bool, typer.Option("--fail-on-error", help="exit 1 if any case failed")]
CompileJobs = Annotated[
    int,
    typer.Option(
        min=0,
        help="compile in N processes first (0: half the cores, <= 8; 1: off)",
    ),
]
FreshProcessRounds = Annotated[
    bool,
    typer.Option(
        "--fresh-process-rounds",
        help="time each rep round in a new worker process",
        hidden=True,  # --processes took its place (docs/reference.md); kept for the runs that used it
    ),
]
Processes = Annotated[
    int,
    typer.Option(
        "--processes",
        min=1,
        help="worker processes per env (1: the old way)",
    ),
]
LaunchGap = Annotated[
    str | None,
    typer.Option(
        "--launch-gap",
        # the reasons behind each choice: docs/reference.md (`harness run`: the longer help of its options)
        help="GPU idle before each timed launch (CUPTI): auto, 0 or ms",
    ),
]
ShufflePlacement = Annotated[
    bool,
    typer.Option(
        "--shuffle-placement/--no-shuffle-placement",
        help="a random-sized allocation before each timed launch, so the op's own buffers move (GPU timing)",
    ),
]
MoveInputs = Annotated[
    bool,
    typer.Option(
        "--move-inputs/--no-move-inputs",
        help="with --shuffle-placement: copy the inputs to a random place before each timed launch",
    ),
]
RemeasureOn = Annotated[
    bool,
    typer.Option(
        "--remeasure/--no-remeasure",
        help="with --with-env: confirm flags in fresh processes",
    ),
]
RemeasureReps = Annotated[
    int, typer.Option("--remeasure-reps", min=0, help="--remeasure: at most this many extra reps per case")
]
RemeasureShare = Annotated[
    float,
    typer.Option(
        "--remeasure-time",
        min=0.0,
        help="--remeasure: stop at this share of the run's wall time before it",
    ),
]
WithEnv = Annotated[
    list[str] | None,
    typer.Option(
        "--with-env",
        help="another env, reps interleaved with ENV's (repeatable, each with a --with-out)",
    ),
]
WithOut = Annotated[list[Path] | None, typer.Option("--with-out", help="results CSV of each --with-env")]
Shard = Annotated[
    str | None,
    typer.Option("--shard", help="I/N: only the I-th of N balanced parts of the suite (a CI matrix job, a Slurm task)"),
]
Gpus = Annotated[
    str | None,
    typer.Option("--gpus", help="'all' or 0,1,2,3: spread the cases over these GPUs, each measuring every env"),
]
Times = Annotated[
    Path | None,
    typer.Option("--times", help="a previous results file: its times balance --shard and --gpus (else FLOPs)"),
]
Artifacts = Annotated[
    bool,
    typer.Option(
        "--artifacts",
        help="keep compiled kernels for `harness explain`",
    ),
]
RunCalibration = Annotated[
    Path | None,
    typer.Option("--calibration", help="a calibration.csv to keep in the sidecars"),
]
Record = Annotated[
    bool,
    typer.Option(
        "--record",
        help="add OUT(s) to the history ($HARNESS_DB)",
    ),
]

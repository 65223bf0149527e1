"""How a run measures: the options of `harness run` that its times depend on, and the record of them that a
``--resume`` must match (the journal's first line, the sidecar's ``run_options``)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.envs.spec import EnvSpec
from harness.errors import HarnessError
from harness.results.schema import sidecar_path
from harness.run.locks import resume_conflict
from harness.verdict import stability
from harness.verdict.remeasure import Remeasure
from harness.worker.backends import BACKENDS


@dataclass
class RunOptions:
    reps: int = stability.FIRST_REPS
    launches: int | None = None
    timeout_s: float = 600.0
    resume: bool = False
    timing: str | None = None  # overrides the env spec's
    log_dir: Path | None = None
    quiet: bool = False
    artifacts: bool = False  # keep compiled kernels in artifacts_dir(out)
    heat_s: float = 5.0  # GPU timing: sustained load before the first rep round
    mem_budget: float = 0.6  # fraction of GPU memory a worker keeps prepared cases in
    compile_jobs: int = 1  # > 1: compile in that many worker processes first (GPU timing only)
    fresh_process_rounds: bool = False  # every rep round in a new worker process (new allocations)
    #: worker processes (worker groups at W > 1) each env's reps come from, one after the other, every rep labelled
    #: with its process (run/schedule.py): the between-process spread that compare puts in every interval, and
    #: re-measuring passes in fresh processes that confirm a flag. 1: the one-process method of before (no labels)
    processes: int = 2
    #: GPU idle before every timed launch (CUPTI timing): "auto" = twice the kernel's own time, at most 10 ms, so every
    #: launch starts from the same power state, as under ncu (back to back, ms-long kernels sit at the power cap
    #: and drift by several % between processes); "0" = back to back; or a number of ms
    launch_gap: str | None = "auto"
    #: a random-sized allocation before every timed launch, so the buffers an op allocates per launch do not sit
    #: at one (lucky or unlucky) address for a whole rep; see worker.shuffled
    shuffle_placement: bool = True
    #: with shuffle_placement: the inputs move to a random place before every timed launch (CUPTI and events
    #: timing); where they sit otherwise stays fixed for a process's life, noise between processes that the reps
    #: never see (see worker.rehomed). On an H100 the fp8 prequant GEMM's reps (B=16 M=256) read 654-674 µs with
    #: the inputs fixed; moved, 8 of 9 read 655-658 µs (reports/h100-triton-3.6.0-vs-3.9.0/experiment-input-placement)
    move_inputs: bool = True
    #: the GPUs this run's workers may use (harness run --gpus gives each part its own); None: what the env sees
    visible_gpus: tuple[int, ...] | None = None
    #: --config-arch: every case's config resolved as on this arch (None: as the suite says)
    config_arch: str | None = None
    #: ``I/N`` of --shard: this run's part of the suite, recorded so that a --resume and a merge can check it
    shard: str | None = None
    #: interleaved runs: measure the cases a referee calls undecided again, within a budget (remeasure.py); the
    #: caller injects the referee, so the run stage never learns the rule. None: the stability rule's reps only
    remeasure: Remeasure | None = None
    #: entries the caller adds to every sidecar as given (``harness run --calibration``: the calibration the results
    #: are to be judged with); the run stage writes them, never reads them
    records: dict[str, Any] = field(default_factory=dict)
    #: called with what the worker reports (its stack, its GPU) before anything is measured; raises HarnessError to
    #: refuse the run (a calibration made on another GPU model). None: no check
    check_worker: Callable[[dict[str, Any]], None] | None = None


def check_timeout(timeout: float) -> None:
    """--timeout of every command that measures: a finite number of seconds, else bad input."""
    if not 0 < timeout < float("inf"):
        raise HarnessError(f"--timeout {timeout:g}: expected a number of seconds > 0")


def moves_inputs(opts: RunOptions, timing: str) -> bool:
    """Whether the worker moves the inputs before every timed launch (it can where it times each launch)."""
    b = BACKENDS.get(timing)
    return opts.shuffle_placement and opts.move_inputs and b is not None and b.moves_inputs


class Journal:
    """Append-only JSON lines of every answer, so a killed run can resume without re-measuring. The first line
    records the run's measurement options (:func:`run_options`), which a resumed run must share."""

    def __init__(self, path: Path, options: dict[str, Any], resume: bool):
        self.path = path
        self.entries = read_journal(path) if resume else []
        if not resume and path.exists():
            path.unlink()
        self._fh = open(path, "a")  # noqa: SIM115
        if not self.entries:
            self.add({"kind": "start", "options": options})

    def add(self, entry: dict[str, Any]) -> None:
        self._fh.write(json.dumps(entry, default=float) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()


def read_journal(path: Path) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                entries.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a torn last line
    return entries


def recorded_options(journal: Path, side: Path) -> dict[str, Any] | None:
    """The measurement options a results file was written with: its journal's first line, else its sidecar's
    ``run_options``; None when neither records them (files of an older harness)."""
    head = next((e for e in read_journal(journal) if e.get("kind") == "start"), None)
    if head and isinstance(head.get("options"), dict):
        return head["options"]
    try:
        meta = json.loads(side.read_text())
    except (OSError, ValueError):
        return None
    found = meta.get("run_options") if isinstance(meta, dict) else None
    return found if isinstance(found, dict) else None


def run_options(
    spec: EnvSpec,
    opts: RunOptions,
    suite_name: str,
    info: dict[str, Any] | None = None,
    timing: str | None = None,
) -> dict[str, Any]:
    """What a results file's times depend on (see outputs.RESUME_OPTIONS): the stack, the method, the GPU.
    Without the worker's ``info`` (before it starts), only what the command line and the spec decide."""
    found: dict[str, Any] = {
        "env": spec.name,
        "suite": str(Path(suite_name).resolve()) if suite_name else "",
        "launches": opts.launches or "auto",
        "reps": opts.reps,
        "launch_gap": opts.launch_gap,
        "shuffle_placement": opts.shuffle_placement,
        "move_inputs": opts.move_inputs,
        "fresh_process_rounds": opts.fresh_process_rounds,
        "processes": opts.processes,
        "heat_s": opts.heat_s,
        "host": os.uname().nodename,
        "shard": opts.shard,
        "config_arch": opts.config_arch,
    }
    if timing and timing != "auto":
        found["timing"] = timing
    if info is not None:
        found.update(
            python=info["python"]["executable"],
            triton=info["triton"]["version"],
            triton_path=info["triton"].get("path"),
            knobs=info.get("knobs") or {},
            gpu_uuid=(info.get("gpu") or {}).get("uuid"),
        )
    return found


def check_resume(out: Path, opts: RunOptions, options: dict[str, Any]) -> None:
    """A --resume of OUT measures with the options OUT was measured with (outputs.resume_conflict)."""
    journal = journal_path(out)
    if opts.resume and ((out.exists() and out.stat().st_size) or journal.exists()):
        resume_conflict(recorded_options(journal, sidecar_path(out)), options, out)


def journal_path(out: Path) -> Path:
    return out.with_name(out.name + ".journal.jsonl")

"""Several environments measuring one suite with their reps interleaved in time (golden vs TOT, or golden vs
golden for an A/A): slow drifts of the GPU fall on every stack alike."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.envs.spec import EnvSpec
from harness.errors import HarnessError
from harness.inputs.suite import Case
from harness.results.schema import sidecar_path
from harness.run import schedule
from harness.run.options import RunOptions
from harness.run.outputs import lock_outputs
from harness.run.passes import labels_processes
from harness.run.runner import SuiteRun
from harness.run.sidecar import sidecar_triton, update_sidecar
from harness.run.workers import WorkerPool
from harness.verdict.remeasure import CHECKPOINT, Board, Remeasure, next_targets
from harness.worker.backends import wrapper_of


def run_interleaved(
    runs: list[tuple[EnvSpec, Path]],
    cases: list[Case],
    opts: RunOptions,
    progress: Callable[[int, str, int, int], None] | None = None,
    suite_name: str = "",
    warn: Callable[[str], None] | None = None,
    locked: bool = False,
    workers: WorkerPool | None = None,
) -> list[dict[str, int]]:
    """Measure the same cases under several envs with their reps interleaved in time.

    Each env prepares (builds, compiles, checks) its cases in turn; then the timing reps alternate: case i of
    round r is timed under every env back to back, the order reversed every round (A B, B A, ...) and turned with
    every worker process epoch (run/schedule.py), so slow drifts of the GPU (temperature, power, clocks over
    minutes) and whatever favours a slot fall on all stacks alike instead of on whichever ran second. One results
    file per env, exactly as ``run_suite`` writes it; each sidecar records the order (``schedule``).
    ``workers``: as for ``run_steps``.
    """
    wrapped = [t for t in (opts.timing, *(spec.timing for spec, _ in runs)) if t and wrapper_of(t)]
    if wrapped:
        raise HarnessError(f"interleaved runs need cupti or events timing ({wrapped[0]} reads its trace at exit)")
    with ExitStack() as held:
        if not locked:
            held.enter_context(lock_outputs(runs, opts, suite_name))
        if workers is None:  # the envs' workers start together (SuiteRun.prestart), then are closed with it
            workers = held.enter_context(WorkerPool())
        return _interleave(runs, cases, opts, progress, suite_name, warn, workers)


def _interleave(
    runs: list[tuple[EnvSpec, Path]],
    cases: list[Case],
    opts: RunOptions,
    progress: Callable[[int, str, int, int], None] | None,
    suite_name: str,
    warn: Callable[[str], None] | None = None,
    workers: WorkerPool | None = None,
) -> list[dict[str, int]]:
    started = time.monotonic()  # the run's wall time before re-measuring includes preparing and compiling
    opts = replace(opts, mem_budget=opts.mem_budget / len(runs))  # the workers share one GPU
    board = Board(len(runs)) if opts.remeasure is not None else None
    suite_runs = []
    for k, (spec, out) in enumerate(runs):
        cb = (lambda label, i, n, _k=k: progress(_k, label, i, n)) if progress else None
        meets = (board, k) if board is not None else None
        # one GPU: the last env to prepare heats it, right before the first timed rep of all
        heat = k == len(runs) - 1
        suite_runs.append(SuiteRun(spec, cases, out, opts, cb, suite_name, meets, workers, heat=heat))
    for r in suite_runs:
        r.prestart()
    gens = [r.steps() for r in suite_runs]
    results: list[dict[str, int] | None] = [None] * len(gens)
    paused: list[tuple[int, str] | None] = [None] * len(gens)

    def advance(i: int) -> None:
        try:
            paused[i] = next(gens[i])
        except StopIteration as done:
            paused[i] = None
            results[i] = done.value

    orders: dict[int, tuple[int, list[int]]] = {}  # round → (epoch, env order), for the sidecars
    try:
        for i in range(len(gens)):  # phase 1 of each env, up to its first timing request
            advance(i)
        same = same_triton([(spec, sidecar_triton(out)) for spec, out in runs])
        if same:
            (warn or _warn_stderr)(same)
        outs = [out for _, out in runs]
        referee = _Referee(board, opts.remeasure, outs, started, labels_processes(opts)) if board else None
        while any(p is not None for p in paused):
            live = [p for p in paused if p is not None]
            if referee is not None and all(p[1] == CHECKPOINT for p in live):
                referee.judge()  # every env waits for it: the next pass (or none) is posted on the board
                for i in range(len(gens)):
                    if paused[i] is not None:
                        advance(i)
                continue
            rnd = min(p[0] for p in live if p[1] != CHECKPOINT)
            here = {i for i, p in enumerate(paused) if p is not None and p[0] == rnd and p[1] != CHECKPOINT}
            lead = suite_runs[min(here)]  # every env of a round is in the same epoch
            order = [i for i in schedule.round_order(len(gens), rnd, lead.epoch, lead.epoch_start) if i in here]
            orders.setdefault(rnd, (lead.epoch, order))
            for i in order:
                advance(i)  # times one case (one rep), then pauses before the next
    finally:
        for g in gens:
            g.close()  # an interrupted run: each generator's cleanup kills its worker
        _record_schedule(runs, opts, orders)
    return [r or {} for r in results]


def _record_schedule(runs: list[tuple[EnvSpec, Path]], opts: RunOptions, orders: dict[int, tuple[int, list]]) -> None:
    """Each sidecar's ``schedule``: the envs (this file's index among them), every round's worker process epoch
    and env order, and each env's mean place in the order (0: first), which a balanced run gives every env alike."""
    if not orders:
        return
    names = [spec.name for spec, _ in runs]
    rounds = [{"round": r, "epoch": e, "order": o} for r, (e, o) in sorted(orders.items())]
    places = schedule.positions([o for _, o in orders.values()], len(runs))
    record = {"envs": names, "processes": opts.processes, "rounds": rounds, "mean_place": [round(x, 3) for x in places]}
    for k, (_, out) in enumerate(runs):
        if sidecar_path(out).exists():
            update_sidecar(out, schedule={**record, "this": k})


class _Referee:
    """Between passes: asks the referee about every case held under all envs, posts the next pass's reps on the
    board, and records in each env's sidecar what re-measuring did (``remeasure``)."""

    def __init__(self, board: Board, policy: Remeasure, outs: list[Path], started: float, confirms: bool = False):
        self.board, self.policy, self.outs, self.confirms = board, policy, outs, confirms
        self.start, self.first = started, None
        self.confirmed: float | None = None  # when the confirming pass ended: the time share counts from there
        self.asked: set[str] = set()
        self.passes = 0

    def judge(self) -> None:
        now = time.monotonic()
        if self.first is None:
            self.first = now
        if self.confirms and self.passes == 1 and self.confirmed is None:
            self.confirmed = now
        undecided = self.board.undecided(self.policy.referee)
        if self.passes == 0:
            self.asked = set(undecided)
        # fresh processes: one rep a case a pass (a process's placement is what varies, its reps hardly do: more
        # processes buy more than more reps), the first pass confirming and outside the time share
        confirming = self.confirms and self.passes == 0
        spent = now - (self.confirmed or self.first)
        step = 1 if self.confirms else None
        more, stop = next_targets(undecided, self.policy.budget, spent, self.first - self.start, confirming, step)
        self.board.more = more
        if more:
            self.passes += 1
            return
        b = self.policy.budget
        summary = {
            "undecided_at_first": len(self.asked),
            "still_undecided": sorted(k.replace("\x1f", "/") for k in undecided),
            "passes": self.passes,
            "fresh_processes": self.confirms,  # each pass in new worker processes: the first confirms the flags
            "stopped": stop,
            "seconds": round(now - self.first, 1),
            **({"confirming_s": round(self.confirmed - self.first, 1)} if self.confirmed else {}),
            "budget": {"extra_reps": b.extra_reps, "step": step or b.step, "share": b.share},
            **({"rule": dict(self.policy.rule)} if self.policy.rule else {}),
        }
        for out in self.outs:
            update_sidecar(out, remeasure=summary)


def _warn_stderr(message: str) -> None:
    print(f"WARNING: {message}", file=sys.stderr, flush=True)


def same_triton(runs: list[tuple[EnvSpec, dict[str, Any]]]) -> str | None:
    """The warning for two different env specs whose workers imported the same Triton (version and folder):
    the run would compare a stack with itself. The same spec twice is an A/A on purpose."""
    for i, (a, ta) in enumerate(runs):
        for b, tb in runs[i + 1 :]:
            if a.path == b.path or not ta.get("version") or not ta.get("path"):
                continue
            if (ta["version"], ta["path"]) == (tb.get("version"), tb.get("path")):
                return (
                    f"envs {a.name} ({a.path}) and {b.name} ({b.path}) both run Triton {ta['version']} from "
                    f"{ta['path']}: this run compares a stack with itself (an unset overlay or a venv that "
                    "falls back to the base Triton?)"
                )
    return None


def compare_command(runs: list[tuple[EnvSpec, Path]]) -> str:
    """The ``harness compare`` an interleaved run was made for: its first env against the first env of another
    stack, with the first env measured again (the same spec) as the A/A of ``--aa``; golden twice alone is an A/A.
    '' for a single env, or several stacks without a repeat of the first when nothing pairs."""
    import shlex

    (base_spec, base), *rest = runs
    again = [out for spec, out in rest if spec == base_spec]
    other = [out for spec, out in rest if spec != base_spec]
    if not other:
        return f"harness compare {shlex.quote(str(base))} {shlex.quote(str(again[0]))}" if again else ""
    cmd = f"harness compare {shlex.quote(str(base))} {shlex.quote(str(other[0]))}"
    return cmd + (f" --aa {shlex.quote(str(again[0]))}" if again else "")

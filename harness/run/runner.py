"""The run stage: one suite under one environment → a results CSV (+ sidecar), case by case.

Phase 1 prepares every case in the worker (inputs, config, compile, correctness); phase 2 takes reps
round-robin over the suite, so a case's reps are separated in time; after round 3 (and 5) the stability rule
decides. Every answer is journaled (``OUT.journal.jsonl``) before it is used, and every finished case is
appended (fsync'ed) to OUT: a crash, a hang or a SIGKILL of the whole run loses nothing already measured, and
``--resume`` measures only what is missing.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from harness.envs.spec import EnvSpec
from harness.errors import HarnessError
from harness.inputs.suite import Case
from harness.results import identity, integrity
from harness.results.load import load_env, load_results
from harness.results.schema import artifacts_dir, sidecar_path
from harness.results.write import ResultsAppender
from harness.run.cases import CaseState, group_problem, result_row
from harness.run.gpu_state import gpu_state
from harness.run.group import FailedGroup, WorkerGroup, visible
from harness.run.options import Journal, RunOptions, check_resume, journal_path, moves_inputs, run_options
from harness.run.outputs import check_output, lock_outputs
from harness.run.passes import Passes, case_time, labels_processes, main_epoch
from harness.run.precompile import precompile
from harness.run.rocprof import read_traces
from harness.run.sidecar import PhaseClock, code_record, run_sidecar, smi_id, update_sidecar, write_sidecar
from harness.run.workers import (
    WorkerDied,
    WorkerPool,
    WorkerProc,
    WorkerTimeout,
    resolve_timing,
    start_worker,
    wrap_command,
)
from harness.verdict import stability
from harness.verdict.remeasure import Board
from harness.worker.backends import backend, wrapper_of

Progress = Callable[[str, int, int], None]


class SuiteRun(Passes):
    """One env measuring a suite into OUT. :meth:`steps` is a generator that pauses before every timing request,
    yielding (round, case key), so that run_interleaved can alternate envs; it returns the counts per status."""

    def __init__(
        self,
        spec: EnvSpec,
        cases: list[Case],
        out: Path,
        opts: RunOptions,
        progress: Progress | None,
        suite: str,
        board: tuple[Board, int] | None = None,
        workers: WorkerPool | None = None,
        heat: bool = True,
    ):
        self.spec, self.out, self.opts, self.progress, self.suite = spec, Path(out), opts, progress, suite
        # a caller's pool of idle workers (a retune's batches), unless every round must be a new process
        self.pool = None if opts.fresh_process_rounds else workers
        #: the worker process epoch the reps are timed in now (schedule.py), the round it began at, and the
        #: re-measuring passes so far (each a fresh epoch where the run labels its processes)
        self.epoch, self.epoch_start, self.passes = 0, 1, 0
        self.fresh = False  # past the first epoch: never a kept worker from the pool
        # re-measuring (remeasure.py): decided rows are held, not written, until the referee has seen them
        self.board, self.held, self.gave_up = board, [], set()
        self.cases = cases
        self.log_dir = log_dir(self.out, opts)
        self.timing = opts.timing or spec.timing
        self.worker: WorkerProc | None = None
        self.groups: dict[int, WorkerGroup] = {}  # multi-GPU cases: one worker group per world size, when needed
        self.info: dict[str, Any] = {}
        self.trace_dirs: list[Path] = []  # rocprofv3: one per worker process, read after it exits
        self.counts: dict[str, int] = {}
        self.step, self.total = 0, 0
        self.heat = heat  # False: another env of an interleaved run heats the GPU they share

    # ------------------------------------------------------------------------------------------ worker
    def prestart(self) -> None:
        """Start the worker that opening this run will take from its pool, without waiting for it to start."""
        if self.pool is not None and not wrapper_of(self.timing):  # (rocprofv3 makes a trace folder per start)
            self.pool.start_ahead(self.spec, self.timing, self.log_dir, *self._start_args())

    def _start_args(self) -> tuple[list[str] | None, float, dict[str, str] | None]:
        wrap = wrap_command(self.timing, self.log_dir)
        env = visible(self.opts.visible_gpus[:1]) if self.opts.visible_gpus else None
        return wrap, self.opts.mem_budget, env

    def _start(self) -> WorkerProc:
        wrap, budget, env = self._start_args()
        pool = None if self.fresh else self.pool
        w, self.info = start_worker(self.spec, self.timing, self.log_dir, wrap, budget, env, pool)
        if w.trace_dir:
            self.trace_dirs.append(w.trace_dir)
        return w

    def _retimed(self, w: WorkerProc) -> WorkerProc:
        """The worker that times by ``self.timing`` (resolved from ``auto`` by ``w``'s hello): ``w`` itself, told
        so (a second start would cost torch's and Triton's imports, and a GPU context, again), else a new one."""
        if backend(self.timing).switchable and w.configure(timing=self.timing):
            self.info = {**self.info, "timing": self.timing}
            return w
        w.close()
        return self._start()

    def _executor(self, world: int) -> WorkerProc | WorkerGroup:
        if world > 1:
            g = self.groups.get(world)
            if g is None or not g.alive():
                g = self.groups[world] = self._start_group(world)
            return g
        if self.worker is None or not self.worker.alive():
            self.worker = self._start()
        return self.worker

    def _start_group(self, world: int) -> WorkerGroup:
        """A worker group for ``world``-GPU cases; the GPUs its ranks got go into the sidecar (``groups``)."""
        gpus = list(self.opts.visible_gpus) if self.opts.visible_gpus else None
        g = WorkerGroup(self.spec, self.timing, self.log_dir, world, self.opts.mem_budget, gpus)
        try:
            hello = g.request({"op": "hello"}, timeout=300)
        except (WorkerTimeout, WorkerDied) as err:
            return FailedGroup(f"the {world}-rank worker group did not start: {err}")
        if hello.get("status") != "ok":
            g.kill()
            return FailedGroup(f"the {world}-rank worker group did not start: {hello.get('error', '')}")
        update_sidecar(self.out, groups={str(world): hello["info"].get("gpus")})
        return g

    def _ask(self, req: dict[str, Any]) -> dict[str, Any]:
        """One request; a worker (or a multi-GPU worker group) that hangs or dies fails this request only, and the
        next one starts afresh."""
        world = int((req.get("case") or {}).get("world_size", 1))
        w = self._executor(world)
        try:
            return w.request(req, timeout=self.opts.timeout_s)
        except (WorkerTimeout, WorkerDied) as err:
            if world > 1:
                self.groups.pop(world, None)
            else:
                self.worker = None
            if isinstance(err, WorkerTimeout):
                return {"status": "timeout", "error": f"{req['op']}: {err} (the worker was killed)"}
            return {"status": "runtime_error", "error": f"{req['op']}: the worker process died: {err}"}

    # -------------------------------------------------------------------------------------------- open
    def _open(self) -> None:
        check_output(self.out, self.opts)  # again under the lock: another run may have written OUT since
        done = self._done_keys()
        self.prior_rows = len(done)
        labelled = labels_processes(self.opts)
        self.todo = [CaseState.of(c, labelled) for c in self.cases if f"{c.name}\x1f{c.case_id}" not in done]
        #: a --resume with every case in OUT already: nothing is measured, and no record (sidecar, journal) changes;
        #: its worker still starts, to refuse a stack other than OUT's, as any resume does
        self.idle = self.opts.resume and not self.todo
        self.worker = self._start()
        self.timing = resolve_timing(self.timing, self.info)
        if self.timing != self.worker.timing:
            self.worker = self._retimed(self.worker)
        # 0: the worker picks per case (~40 ms a rep); rocprofv3 needs a fixed count to check the trace against
        self.launches = self.opts.launches or backend(self.timing).launches
        options = run_options(self.spec, self.opts, self.suite, self.info, self.timing)
        try:
            check_resume(self.out, self.opts, options)  # again with what the worker reports: the stack, the GPU
            self._check_resumed_code()
            if self.opts.check_worker is not None:
                self.opts.check_worker(self.info)
        except HarnessError:
            self.worker.kill()
            raise
        if self.idle:
            self.worker.close()
            return
        self.journal = Journal(journal_path(self.out), options, self.opts.resume)
        self._replay()
        if not (self.opts.resume and sidecar_path(self.out).exists()):
            meta = run_sidecar(
                self.spec, self.info, self.opts, self.timing, self.launches, options, self.cases, self.out, self.suite
            )
            write_sidecar(self.out, meta)
        else:  # the file is written again: it vouches for no count until this run has finished it
            update_sidecar(self.out, **{integrity.KEY: None})
        if self.opts.records:
            update_sidecar(self.out, **self.opts.records)
        self.appender = ResultsAppender(self.out)
        self.total = len(self.todo) * (1 + self.opts.reps)

    def _check_resumed_code(self) -> None:
        """A --resume appends to rows measured before: of the same kernel code, library commits and config arch
        (results/identity.RESUME), or the file would hold two kernels under one name."""
        if not (self.opts.resume and sidecar_path(self.out).exists()):
            return
        diffs = identity.differences(load_env(self.out), code_record(self.cases), identity.RESUME)
        if diffs:
            raise HarnessError(f"{self.out}: --resume: {diffs[0].text('the file', 'this run')}; resume with the "
                               "code it was measured with, or start a new --out")  # fmt: skip

    def _done_keys(self) -> set[str]:
        if not (self.opts.resume and self.out.exists() and self.out.stat().st_size):
            return set()
        # its own file, cut in a row when a run died mid-write: the torn row goes, its case is measured again
        integrity.repair_tail(self.out)
        try:
            prev = load_results(self.out)
        except HarnessError as err:
            if "header but no rows" in str(err):
                return set()
            raise
        return set(prev["kernel"] + "\x1f" + prev["case_id"])

    def _replay(self) -> None:
        """What a killed run had measured, from its journal."""
        by_key = {s.key: s for s in self.todo}
        for e in self.journal.entries:
            st = by_key.get(e.get("key"))
            if st is None:
                continue
            if e["kind"] == "prepare":
                st.prep = e["answer"]
            elif e["kind"] == "rep":
                st.add_journaled(e)

    # ----------------------------------------------------------------------------------------- helpers
    def _tick(self, label: str, extra: int = 0) -> None:
        self.step += 1
        self.total += extra
        if self.progress:
            self.progress(label, self.step, self.total)

    def _finish(self, st: CaseState, row: dict[str, Any]) -> None:
        row["gpu"] = self._gpu_of(int(st.request["world_size"]))
        st.final = row
        self.appender.append(row)
        self.counts[row["status"]] = self.counts.get(row["status"], 0) + 1

    def _gpu_of(self, world: int) -> str:
        """Which physical GPU(s) measured a case (UUIDs; ';' between the ranks of a multi-GPU case): a case's golden
        and TOT must share them, which compare checks row by row."""
        if world > 1:
            gpus = _sidecar_groups(self.out).get(str(world)) or []
            return ";".join(str(g.get("uuid") or "") for g in gpus if isinstance(g, dict)).strip(";")
        return str((self.info.get("gpu") or {}).get("uuid") or "")

    def _fail(self, st: CaseState, answer: dict[str, Any], default: str = "runtime_error") -> None:
        error = answer.get("error", "no time")
        self._finish(st, result_row(st, answer.get("status", default), error=error, timing=self.timing))

    # ------------------------------------------------------------------------------------------ phases
    def steps(self) -> Generator[tuple[int, str], None, dict[str, int]]:
        clock = PhaseClock()
        self._open()
        if self.idle:
            return self.counts
        clock.lap("open_s")
        clean = False
        try:
            self._prepare_all()
            clock.lap("prepare_s")
            self._heat()
            clock.lap("heat_s")
            for rnd in range(1, stability.MAX_REPS + 1):
                yield from self._round(rnd)
                if rnd >= self.opts.reps:
                    self._decide(rnd)
            clock.lap("reps_s")
            if self.board is not None:
                yield from self._remeasure(stability.MAX_REPS + 1)
                clock.lap("remeasure_s")
            clean = True
        finally:
            self._close(clean, clock)
        return self.counts

    def _prepare_all(self) -> None:
        """Phase 1: build, compile and check every case."""
        # a multi-GPU case builds its inputs across its ranks: only its worker group can compile it
        unprepared = [s for s in self.todo if s.prep is None and int(s.request["world_size"]) == 1]
        if self.opts.compile_jobs > 1 and backend(self.timing).gpu and len(unprepared) > 1:
            jobs = min(self.opts.compile_jobs, len(unprepared))
            figures = precompile(
                self.spec, self.timing, [s.request for s in unprepared], self.log_dir, jobs, self.opts.timeout_s
            )
            update_sidecar(self.out, precompile=figures)
        for i, st in enumerate(self.todo):
            st.request["index"] = i
            if st.prep is None:
                st.prep = self._prepare(st)
                self.journal.add({"kind": "prepare", "key": st.key, "answer": st.prep})
            if st.prep.get("status") != "ok":
                self._fail(st, st.prep)
                self._tick(st.case.case_id, -self.opts.reps)
            else:
                self._tick(st.case.case_id)

    def _prepare(self, st: CaseState) -> dict[str, Any]:
        gpus, have = int(st.request["world_size"]), int(self.info.get("device_count") or 0)
        if gpus > 1 and self.info.get("backend") != "interp" and gpus > have:
            return {"status": "skipped", "error": f"needs {gpus} GPUs (world_size {gpus}); this machine has {have}"}
        if gpus > 1 and not backend(self.timing).switchable:
            return {"status": "skipped", "error": f"multi-GPU cases need cupti or events timing, not {self.timing}"}
        req = {"op": "prepare", "case": st.request, "check": True}
        if self.opts.artifacts:
            req["artifacts"] = str(artifacts_dir(self.out).resolve())
        return self._ask(req)

    def _heat(self) -> None:
        if backend(self.timing).gpu and self.heat and self.opts.heat_s > 0 and any(s.final is None for s in self.todo):
            self._ask({"op": "heat", "seconds": self.opts.heat_s})

    def _round(self, rnd: int) -> Generator[tuple[int, str], None, None]:
        """Phase 2, one round: one rep of every case that needs one."""
        pending = [s for s in self.todo if s.final is None and len(s.reps) < rnd]
        if pending:
            self._enter_epoch(main_epoch(self.opts, rnd), rnd)
        traced: list[CaseState] = []
        for st in pending:
            st.request["rep"] = rnd - 1
            yield rnd, st.key
            ans = self._ask(self._time_request(st))
            if ans.get("status") == "instrument":  # the profiler's records, not the kernel: once more, then as said
                ans = self._ask(self._time_request(st))
            if wrapper_of(self.timing) and ans.get("status") == "ok":
                traced.append(st)  # its time is in the wrapper's trace, readable once the worker has exited
            elif ans.get("status") != "ok" or ans.get("time_us") is None:
                self._fail(st, ans)
            else:
                self._record(st, ans)
        if traced:
            self._read_traced(traced, rnd)

    def _enter_epoch(self, epoch: int, rnd: int) -> None:
        """Time from round ``rnd`` on in worker processes of ``epoch``: new ones when it is not the current one
        (new input allocations and a new CUDA context, so a process's placement luck, which moves some shapes by
        several % from process to process, is sampled by the reps instead of fixed for all of them)."""
        if epoch == self.epoch:
            return
        self.epoch, self.epoch_start, self.fresh = epoch, rnd, True
        if wrapper_of(self.timing):
            return  # its worker exits after every round anyway (its trace is read then)
        for w in [self.worker, *self.groups.values()]:
            if w is not None:
                w.close()
        self.worker, self.groups = None, {}

    def _time_request(self, st: CaseState) -> dict[str, Any]:
        return {
            "op": "time",
            "case": st.request,
            "n": self.launches,
            "gap": self.opts.launch_gap,
            "shuffle": self.opts.shuffle_placement,
            "move_inputs": moves_inputs(self.opts, self.timing),
        }

    def _record(self, st: CaseState, ans: dict[str, Any]) -> None:
        """One rep of ``st`` from a worker's (or worker group's) answer: journaled, then kept."""
        entry = {"kind": "rep", "key": st.key, "time_us": ans["time_us"], "dispatch_us": ans.get("dispatch_us"),
                 "telemetry": ans.get("telemetry"), "proc": self.epoch}  # fmt: skip
        for extra in ("clocks", "rank_times_us", "halves_pct"):  # the second clock's; a worker group's
            if ans.get(extra) is not None:
                entry[extra] = ans[extra]
        self.journal.add(entry)
        st.add_journaled(entry)
        self._tick(st.case.case_id)

    def _read_traced(self, traced: list[CaseState], rnd: int) -> None:
        if self.worker is not None:
            self.worker.close()
            self.worker = None
        found, errors = read_traces(self.trace_dirs, self.launches)
        for st in traced:
            got = found.get((st.request["index"], rnd - 1))
            if not isinstance(got, tuple):
                why = got or (errors[0] if errors else "no marker-delimited record for this rep")
                # records the trace holds but that cannot be the launches made are the profiler's (instrument);
                # a trace that cannot be read is the run's failure
                status = "instrument" if got and ("invocations" in got or "dispatches" in got) else "runtime_error"
                self._fail(st, {"status": status, "error": f"rocprofv3: {why}"})
                continue
            self._record(st, {"time_us": sorted(got[0])[len(got[0]) // 2], "dispatch_us": got[1]})

    def _decide(self, rnd: int) -> None:
        """After the first reps (and again after the extra two): the stability rule's verdict per case."""
        most = max(self.opts.reps, stability.MAX_REPS)
        for st in [s for s in self.todo if s.final is None and s.prep and s.prep.get("status") == "ok"]:
            # the reps of the rounds so far: a resumed run may hold re-measured reps beyond them already
            d = stability.decide(st.reps[:rnd], first=self.opts.reps, most=most)
            if not d.need_more:
                why = group_problem(st) if d.status == "ok" else ""  # a multi-GPU time that must not be judged
                status = "unstable" if why else d.status
                value = case_time(st, rnd, d.value) if d.status == "ok" else d.value
                row = result_row(st, status, time_us=value, decision=d, timing=self.timing, error=why)
                if self.board is None:
                    self._finish(st, row)
                else:
                    st.final, st.base_reps = row, rnd
                    self.held.append(st)
            elif len(st.reps) == rnd and rnd == self.opts.reps:
                self.total += stability.MAX_REPS - self.opts.reps  # two more reps to come for this case

    def _close(self, clean: bool, clock: PhaseClock) -> None:
        if clean and self.pool is not None and self.worker is not None and self.worker.trace_dir is None:
            self.pool.give(self.worker, self.info)  # (rocprofv3's worker must exit: its trace is read then)
            self.worker = None
        # interrupted (Ctrl-C, SIGTERM): kill the workers, they run in sessions of their own
        for w in [self.worker, *self.groups.values()]:
            if w is not None:
                w.close() if clean else w.kill()
        self.appender.close()
        self.journal.close()
        fields: dict[str, Any] = {"phases": clock.figures(clean)}
        if clean:  # whole: what a reader checks it against (results/integrity.py)
            fields[integrity.KEY] = integrity.record(self.out, self.prior_rows + self.appender.rows)
        if backend(self.timing).gpu:
            fields["gpu"] = {"after": gpu_state(smi_id(self.info))}
        update_sidecar(self.out, **fields)


def log_dir(out: Path, opts: RunOptions) -> Path:
    """Where a run into ``out`` keeps its workers' logs: ``--log-dir``, else OUT.logs beside it."""
    return opts.log_dir or out.parent / (out.name + ".logs")


def run_steps(
    spec: EnvSpec,
    cases: list[Case],
    out: Path,
    opts: RunOptions,
    progress: Progress | None = None,
    suite_name: str = "",
    locked: bool = False,
    board: tuple[Board, int] | None = None,
    workers: WorkerPool | None = None,
) -> Generator[tuple[int, str], None, dict[str, int]]:
    """``run_suite`` as a generator (SuiteRun.steps). OUT is locked for the whole run (run.locks), unless the
    caller holds the lock already (``locked``). ``board``: where this env (its index) meets the others of an
    interleaved run that re-measures undecided cases (remeasure.py). ``workers``: where the worker is taken from
    and given back to, when the caller keeps workers between its runs."""
    with ExitStack() as stack:
        if not locked:
            stack.enter_context(lock_outputs([(spec, Path(out))], opts, suite_name))
        run = SuiteRun(spec, cases, Path(out), opts, progress, suite_name, board, workers)
        return (yield from run.steps())


def run_suite(
    spec: EnvSpec,
    cases: list[Case],
    out: Path,
    opts: RunOptions,
    progress: Progress | None = None,
    suite_name: str = "",
    locked: bool = False,
    workers: WorkerPool | None = None,
) -> dict[str, int]:
    """Measure ``cases`` under ``spec`` into ``out``. Returns counts per status. ``locked``: the caller holds
    :func:`lock_outputs` already; ``workers``: as for :func:`run_steps`."""
    steps = run_steps(spec, cases, out, opts, progress, suite_name, locked, workers=workers)
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


def _sidecar_groups(out: Path) -> dict[str, Any]:
    import json

    try:
        return json.loads(sidecar_path(out).read_text()).get("groups") or {}
    except (OSError, ValueError, AttributeError):
        return {}

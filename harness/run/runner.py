"""The run stage: one suite under one environment → a results CSV (+ sidecar), case by case.

Phase 1 prepares every case in the worker (inputs, config, compile, correctness); phase 2 takes reps
round-robin over the suite, so a case's reps are separated in time; after round 3 (and 5) the stability rule
decides. Every answer is journaled (``OUT.journal.jsonl``) before it is used, and every finished case is
appended (fsync'ed) to OUT: a crash, a hang or a SIGKILL of the whole run loses nothing already measured, and
``--resume`` measures only what is missing.
"""

from __future__ import annotations

import itertools
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Generator, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from harness import stability
from harness.inputs.env import EnvSpec
from harness.errors import HarnessError
from harness.fsutil import check_writable, write_text
from harness.run.gpu_state import gpu_state
from harness.run.locks import lock_output, resume_conflict
from harness.results.format import SCHEMA_VERSION, ResultsAppender, artifacts_dir, load_results, sidecar_path
from harness.worker.session import AUTO_GAP_FACTOR, AUTO_GAP_MAX_US

#: what --launch-gap auto means in this version, recorded in the sidecar so that runs made under the older rule
#: (the kernel's time, at most 1 ms, until 2026-11-22) are told apart by compare
AUTO_GAP = {"factor": AUTO_GAP_FACTOR, "max_ms": AUTO_GAP_MAX_US / 1e3}
WORKER = Path(__file__).resolve().parent / "worker.py"
REPO = Path(__file__).resolve().parent.parent


class WorkerDied(Exception):
    pass


class WorkerTimeout(Exception):
    pass


class WorkerProc:
    """One worker process in the env's Python. Requests on stdin, answers on a dedicated pipe, output to a log."""

    def __init__(
        self, spec: EnvSpec, timing: str, log_dir: Path, wrap: list[str] | None = None, mem_budget: float = 0.6
    ):
        self.spec, self.timing = spec, timing
        self.trace_dir = Path(wrap[wrap.index("-d") + 1]) if wrap and "-d" in wrap else None
        rfd, wfd = os.pipe()
        log_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = log_dir / f"worker-{spec.name}-{int(time.time() * 1000)}-{next(_WORKER_IDS)}.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115
        cmd = [spec.interpreter(), str(WORKER), "--repo", str(REPO), "--result-fd", str(wfd), "--timing", timing]
        cmd += ["--mem-budget", f"{mem_budget:g}"]
        env = spec.environ()
        Path(env["TRITON_CACHE_DIR"]).mkdir(parents=True, exist_ok=True)
        try:
            self.proc = subprocess.Popen(
                (wrap or []) + cmd,
                stdin=subprocess.PIPE,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                pass_fds=(wfd,),
                env=env,
                start_new_session=True,
            )
        except OSError as err:
            os.close(rfd)
            os.close(wfd)
            raise HarnessError(f"{spec.path}: cannot start {cmd[0]}: {err.strerror}") from None
        os.close(wfd)
        self._r = os.fdopen(rfd, "rb")
        self._buf = b""

    def request(self, obj: dict[str, Any], timeout: float) -> dict[str, Any]:
        try:
            self.proc.stdin.write((json.dumps(obj) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise WorkerDied(self.tail()) from None
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise WorkerTimeout(f"no answer within {timeout:g} s")
            ready, _, _ = select.select([self._r], [], [], min(left, 1.0))
            if ready:
                chunk = os.read(self._r.fileno(), 1 << 16)
                if not chunk:
                    self.proc.wait(timeout=30)
                    raise WorkerDied(self.tail())
                self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        ans = json.loads(line)
        if ans.get("worker_exits"):  # its GPU context is lost and it is exiting: callers start a fresh worker
            self.close()
        return ans

    def tail(self, n: int = 1500) -> str:
        self._log.flush()
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            text = ""
        code = self.proc.poll()
        sig = ""
        if code is not None and code < 0:
            sig = f"killed by signal {signal.Signals(-code).name}; "
        elif code:
            sig = f"exit code {code}; "
        body = text.strip()[-n:]
        return (sig + body) if body else (sig + "no output").strip()

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.proc.kill()
            self.proc.wait()

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(b'{"op": "quit"}\n')
                self.proc.stdin.flush()
                self.proc.wait(timeout=30)
            except (BrokenPipeError, OSError, subprocess.TimeoutExpired):
                self.kill()
        self._r.close()
        self._log.close()


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


def _moves_inputs(opts: RunOptions, timing: str) -> bool:
    """Whether the worker moves the inputs before every timed launch (it can where it times each launch)."""
    return opts.shuffle_placement and opts.move_inputs and timing in ("cupti", "events")


@dataclass
class CaseState:
    case: dict[str, Any]
    prep: dict[str, Any] | None = None
    reps: list[float] = field(default_factory=list)
    dispatch: list[dict[str, float]] = field(default_factory=list)
    telemetry: list[dict[str, Any]] = field(default_factory=list)  # per rep, when the worker had NVML
    final: dict[str, Any] | None = None

    @property
    def key(self) -> str:
        return f"{self.case['kernel']}\x1f{self.case['case_id']}"


def _row(
    st: CaseState,
    status: str,
    *,
    time_us: float | None = None,
    error: str = "",
    decision: stability.Decision | None = None,
    timing: str = "",
) -> dict[str, Any]:
    c, p = st.case, st.prep or {}
    row: dict[str, Any] = {
        "kernel": c["kernel"],
        "case_id": c["case_id"],
        "B": c["B"],
        "M": c["M"],
        "N": c["N"],
        "K": c["K"],
        "dtype": p.get("dtype") or c.get("dtype", ""),
        "status": status,
        "config": p.get("config"),
        "config_source": p.get("config_source"),
        "compile_s": p.get("compile_s"),
        "rel_err": p.get("rel_err"),
        "timing": timing,
        "error": error[-1500:] if error else "",
        "artifacts": ";".join(p.get("artifacts") or []),
    }
    if st.reps:
        row["reps"] = len(st.reps)
        row["rep_times_us"] = [round(r, 4) for r in st.reps]
    if time_us is not None:
        row["time_us"] = time_us
        if p.get("flops"):
            row["tflops"] = p["flops"] / (time_us * 1e-6) / 1e12
        if p.get("bytes"):
            row["gbps"] = p["bytes"] / (time_us * 1e-6) / 1e9
    if decision is not None and decision.spread_pct is not None:
        row["spread_pct"] = decision.spread_pct
    row.update(telemetry_columns(st.telemetry))
    if st.dispatch and len(st.dispatch[0]) > 1:
        names = st.dispatch[-1].keys()
        row["dispatch_us"] = {
            n: round(sorted(d.get(n, 0.0) for d in st.dispatch)[len(st.dispatch) // 2], 4) for n in names
        }
    return row


def telemetry_columns(reps: list[dict[str, Any]]) -> dict[str, Any]:
    """The results columns from each rep's GPU telemetry (worker's gpu_telemetry.summarize): the SM clock per
    rep and its mean, the clock-lowering reasons seen in any rep, the hottest temperature."""
    clocks = [t.get("sm_clock_mhz") for t in reps]
    if not any(clocks):
        return {}
    seen = [c for c in clocks if c]
    reasons = sorted({r for t in reps for r in (t.get("throttle") or "").split(";") if r})
    temps = [t["temp_c"] for t in reps if t.get("temp_c") is not None]
    out: dict[str, Any] = {
        "sm_clock_mhz": round(sum(seen) / len(seen), 1),
        "rep_clocks_mhz": [c if c is None else round(c, 1) for c in clocks],
        "throttle": ";".join(reasons),
    }
    if temps:
        out["gpu_temp_c"] = float(max(temps))
    return out


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
        "heat_s": opts.heat_s,
        "host": os.uname().nodename,
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


def _write_json(path: Path, obj: dict[str, Any]) -> None:
    write_text(path, json.dumps(obj, indent=2, default=str) + "\n")


_WORKER_IDS = itertools.count()


def default_compile_jobs() -> int:
    """Parallel compile workers when not given: half the cores, at most 8 (each holds a CUDA context)."""
    return max(1, min(8, (os.cpu_count() or 2) // 2))


def precompile(
    spec: EnvSpec, timing: str, cases: list[dict[str, Any]], log_dir: Path, jobs: int, timeout_s: float
) -> dict[str, Any]:
    """Compile every case's kernels in ``jobs`` worker processes at once (Triton compiles on the CPU, one kernel
    at a time per process), filling the env's TRITON_CACHE_DIR so the measuring worker then loads them from cache.
    Nothing measured here is kept: a case that fails to compile fails again, and is reported, in phase 1."""
    from concurrent.futures import ThreadPoolExecutor

    shards = [cases[i::jobs] for i in range(jobs)]

    def one(shard: list[dict[str, Any]]) -> int:
        done, w = 0, None
        for case in shard:
            try:
                if w is None or w.proc.poll() is not None:
                    w = WorkerProc(spec, timing, log_dir, mem_budget=0.0)
                    w.request({"op": "hello"}, timeout=300)
                w.request({"op": "prepare", "case": case, "check": False, "compile_only": True}, timeout=timeout_s)
                done += 1
            except (WorkerDied, WorkerTimeout):
                if w is not None:
                    w.kill()
                w = None  # a crashing kernel: a fresh worker for the rest of the shard
        if w is not None:
            w.close()
        return done

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        compiled = sum(pool.map(one, [s for s in shards if s]))
    return {"jobs": jobs, "cases": compiled, "wall_s": round(time.perf_counter() - t0, 2)}


def run_suite(
    spec: EnvSpec,
    cases: list[dict[str, Any]],
    out: Path,
    opts: RunOptions,
    progress: Callable[[str, int, int], None] | None = None,
    suite_name: str = "",
    locked: bool = False,
) -> dict[str, int]:
    """Measure ``cases`` under ``spec`` into ``out``. Returns counts per status. ``locked``: the caller holds
    :func:`lock_outputs` already."""
    steps = run_steps(spec, cases, out, opts, progress, suite_name, locked)
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


def run_interleaved(
    runs: list[tuple[EnvSpec, Path]],
    cases: list[dict[str, Any]],
    opts: RunOptions,
    progress: Callable[[int, str, int, int], None] | None = None,
    suite_name: str = "",
    warn: Callable[[str], None] | None = None,
    locked: bool = False,
) -> list[dict[str, int]]:
    """Measure the same cases under several envs with their reps interleaved in time.

    Each env prepares (builds, compiles, checks) its cases in turn; then the timing reps alternate: case i of
    round r is timed under every env back to back, the order reversed every round (A B, B A, ...), so slow drifts
    of the GPU (temperature, power, clocks over minutes) fall on all stacks alike instead of on whichever ran
    second. One results file per env, exactly as ``run_suite`` writes it.
    """
    if opts.timing == "rocprofv3" or any(spec.timing == "rocprofv3" for spec, _ in runs):
        raise HarnessError("interleaved runs need cupti or events timing (rocprofv3 reads its trace at exit)")
    with ExitStack() as held:
        if not locked:
            held.enter_context(lock_outputs(runs, opts, suite_name))
        return _interleave(runs, cases, opts, progress, suite_name, warn)


@contextmanager
def lock_outputs(runs: list[tuple[EnvSpec, Path]], opts: RunOptions, suite_name: str = "") -> Iterator[None]:
    """Check and lock every output of a run before any env measures anything (a --resume: the options the
    command line decides, before a worker starts); unlock when the body ends."""
    if len({Path(o).resolve() for _, o in runs}) != len(runs):
        raise HarnessError("interleaved runs need one output file each")
    with ExitStack() as locks:
        for k, (spec, out) in enumerate(runs):
            check_output(Path(out), opts, "--out" if k == 0 else "--with-out")
            locks.enter_context(lock_output(out))
            check_resume(Path(out), opts, run_options(spec, opts, suite_name, timing=opts.timing or spec.timing))
        yield


def _interleave(
    runs: list[tuple[EnvSpec, Path]],
    cases: list[dict[str, Any]],
    opts: RunOptions,
    progress: Callable[[int, str, int, int], None] | None,
    suite_name: str,
    warn: Callable[[str], None] | None = None,
) -> list[dict[str, int]]:
    opts = replace(opts, mem_budget=opts.mem_budget / len(runs))  # the workers share one GPU
    gens = []
    for k, (spec, out) in enumerate(runs):
        cb = (lambda label, i, n, _k=k: progress(_k, label, i, n)) if progress else None
        gens.append(run_steps(spec, cases, out, opts, cb, suite_name, locked=True))
    results: list[dict[str, int] | None] = [None] * len(gens)
    paused: list[tuple[int, str] | None] = [None] * len(gens)

    def advance(i: int) -> None:
        try:
            paused[i] = next(gens[i])
        except StopIteration as done:
            paused[i] = None
            results[i] = done.value

    try:
        for i in range(len(gens)):  # phase 1 of each env, up to its first timing request
            advance(i)
        same = same_triton([(spec, _sidecar_triton(out)) for spec, out in runs])
        if same:
            (warn or _warn_stderr)(same)
        while any(p is not None for p in paused):
            rnd = min(p[0] for p in paused if p is not None)
            order = [i for i in range(len(gens)) if paused[i] is not None and paused[i][0] == rnd]
            if rnd % 2 == 0:
                order.reverse()
            for i in order:
                advance(i)  # times one case (one rep), then pauses before the next
    finally:
        for g in gens:
            g.close()  # an interrupted run: each generator's cleanup kills its worker
    return [r or {} for r in results]


def check_output(out: Path, opts: RunOptions, option: str = "--out") -> None:
    """OUT can be written, and holds no results unless this run resumes it."""
    check_writable(option, out)
    if out.exists() and out.stat().st_size and not opts.resume:
        raise HarnessError(f"{out}: exists; pass --resume to measure only what is missing, or choose a new --out")


def run_steps(
    spec: EnvSpec,
    cases: list[dict[str, Any]],
    out: Path,
    opts: RunOptions,
    progress: Callable[[str, int, int], None] | None = None,
    suite_name: str = "",
    locked: bool = False,
) -> Generator[tuple[int, str], None, dict[str, int]]:
    """``run_suite`` as a generator: it pauses before every timing request, yielding (round, case key), and
    returns the counts per status. :func:`run_interleaved` uses the pauses to alternate envs. OUT is locked
    (outputs.lock_output) for the whole run, unless the caller holds the lock already (``locked``)."""
    out = Path(out)
    with ExitStack() as stack:
        if not locked:
            stack.enter_context(lock_outputs([(spec, out)], opts, suite_name))
        return (yield from _steps(spec, cases, out, opts, progress, suite_name))


def _steps(
    spec: EnvSpec,
    cases: list[dict[str, Any]],
    out: Path,
    opts: RunOptions,
    progress: Callable[[str, int, int], None] | None,
    suite_name: str,
) -> Generator[tuple[int, str], None, dict[str, int]]:
    check_output(out, opts)  # again under the lock: another run may have written OUT since
    done: set[str] = set()
    if opts.resume and out.exists() and out.stat().st_size:
        try:
            prev = load_results(out)
            done = set(prev["kernel"] + "\x1f" + prev["case_id"])
        except HarnessError as err:
            if "header but no rows" not in str(err):
                raise
    states = [CaseState(c) for c in cases]
    todo = [s for s in states if s.key not in done]
    log_dir = opts.log_dir or out.parent / (out.name + ".logs")
    timing = opts.timing or spec.timing

    worker: WorkerProc | None = None
    info: dict[str, Any] = {}
    trace_dirs: list[Path] = []  # rocprofv3: one per worker process, read after it exits

    def start() -> WorkerProc:
        nonlocal info
        w = WorkerProc(spec, timing, log_dir, wrap=_rocprof_wrap(timing, log_dir), mem_budget=opts.mem_budget)
        try:
            hello = w.request({"op": "hello"}, timeout=300)
        except (WorkerDied, WorkerTimeout) as err:
            w.kill()
            raise HarnessError(
                f"env {spec.name}: the worker did not start ({spec.interpreter()}): "
                f"{str(err).strip().splitlines()[-1] if str(err).strip() else err}"
            ) from None
        if hello.get("status") != "ok":
            w.kill()
            raise HarnessError(f"env {spec.name}: {hello.get('error', 'worker failed').splitlines()[0]}")
        info = hello["info"]
        if w.trace_dir:
            trace_dirs.append(w.trace_dir)
        return w

    worker = start()
    timing = _resolve_timing(timing, info)
    if timing != worker.timing:
        worker.close()
        worker = start()
    # 0: the worker picks per case (~40 ms a rep); rocprofv3 needs a fixed count to check the trace against
    n = opts.launches or {"wallclock": 3, "rocprofv3": 20}.get(timing, 0)
    side = sidecar_path(out)
    options = run_options(spec, opts, suite_name, info, timing)
    try:
        check_resume(out, opts, options)  # again with what the worker reports: the stack, the GPU
    except HarnessError:
        worker.kill()
        raise
    journal = Journal(journal_path(out), options, opts.resume)
    for e in journal.entries:  # replay what a killed run had measured
        st = next((s for s in todo if s.key == e.get("key")), None)
        if st is None:
            continue
        if e["kind"] == "prepare":
            st.prep = e["answer"]
        elif e["kind"] == "rep":
            st.reps.append(e["time_us"])
            if e.get("dispatch_us"):
                st.dispatch.append(e["dispatch_us"])
            if e.get("telemetry"):
                st.telemetry.append(e["telemetry"])

    env_meta = {
        "schema_version": SCHEMA_VERSION,
        "env_name": spec.name,
        "env_spec": spec.summary(),
        "captured_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "suite": suite_name,
        **{k: info.get(k) for k in ("python", "triton", "torch", "knobs", "backend", "arch")},
        "gpu": {**info.get("gpu", {}), **({"before": gpu_state(_smi_id(info))} if timing != "wallclock" else {})},
        "timing": timing,
        "launches_per_rep": n,
        "heat_s": opts.heat_s if timing != "wallclock" else 0.0,
        "launch_gap": opts.launch_gap if timing != "wallclock" else None,
        **({"launch_gap_auto": AUTO_GAP} if opts.launch_gap == "auto" and timing != "wallclock" else {}),
        "placement": ("shuffled" if opts.shuffle_placement else "as allocated") if timing != "wallclock" else None,
        "move_inputs": _moves_inputs(opts, timing),
        "host": options["host"],
        "run_options": options,
    }
    if opts.artifacts:
        env_meta["artifacts_dir"] = artifacts_dir(out).name  # beside the results file
    if timing == "wallclock":
        env_meta["timing_note"] = "wallclock: CPU interpreter or host timers; for CI and demos only, not kernel time"
    if not (opts.resume and side.exists()):
        _write_json(side, env_meta)

    counts: dict[str, int] = {}
    appender = ResultsAppender(out)
    total_steps = len(todo) * (1 + opts.reps)
    step = 0

    def tick(label: str, extra: int = 0) -> None:
        nonlocal step, total_steps
        step += 1
        total_steps += extra
        if progress:
            progress(label, step, total_steps)

    def finish(st: CaseState, row: dict[str, Any]) -> None:
        st.final = row
        appender.append(row)
        counts[row["status"]] = counts.get(row["status"], 0) + 1

    def ask(req: dict[str, Any], st: CaseState) -> dict[str, Any]:
        nonlocal worker
        if worker is None or worker.proc.poll() is not None:
            worker = start()
        try:
            return worker.request(req, timeout=opts.timeout_s)
        except WorkerTimeout as err:
            worker = None
            return {"status": "timeout", "error": f"{req['op']}: {err} (the worker was killed)"}
        except WorkerDied as err:
            worker = None
            return {"status": "runtime_error", "error": f"{req['op']}: the worker process died: {err}"}

    clean = False
    try:
        unprepared = [s.case for s in todo if s.prep is None]
        if opts.compile_jobs > 1 and timing != "wallclock" and len(unprepared) > 1:
            pre = precompile(spec, timing, unprepared, log_dir, min(opts.compile_jobs, len(unprepared)), opts.timeout_s)
            meta = json.loads(side.read_text())
            meta["precompile"] = pre
            _write_json(side, meta)
        for i, st in enumerate(todo):  # phase 1: build, compile, check
            st.case["index"] = i
            if st.prep is None:
                req = {"op": "prepare", "case": st.case, "check": True}
                if opts.artifacts:
                    req["artifacts"] = str(artifacts_dir(out).resolve())
                st.prep = ask(req, st)
                journal.add({"kind": "prepare", "key": st.key, "answer": st.prep})
            if st.prep.get("status") != "ok":
                finish(
                    st, _row(st, st.prep.get("status", "runtime_error"), error=st.prep.get("error", ""), timing=timing)
                )
                tick(st.case["case_id"], -opts.reps)
            else:
                tick(st.case["case_id"])
        if timing in ("cupti", "events", "rocprofv3") and opts.heat_s > 0 and any(s.final is None for s in todo):
            ask({"op": "heat", "seconds": opts.heat_s}, todo[0])
        for rnd in range(1, stability.MAX_REPS + 1):  # phase 2: reps, round-robin over the suite
            pending = [s for s in todo if s.final is None and len(s.reps) < rnd]
            if opts.fresh_process_rounds and rnd > 1 and pending and worker is not None and timing != "rocprofv3":
                # a new process: new input allocations and a new CUDA context, so a rep's placement luck (which
                # moves some shapes by several % from process to process) is averaged over the reps
                worker.close()
                worker = None
            traced: list[CaseState] = []
            for st in pending:
                st.case["rep"] = rnd - 1
                yield rnd, st.key
                ans = ask(
                    {
                        "op": "time",
                        "case": st.case,
                        "n": n,
                        "gap": opts.launch_gap,
                        "shuffle": opts.shuffle_placement,
                        "move_inputs": _moves_inputs(opts, timing),
                    },
                    st,
                )
                if timing == "rocprofv3" and ans.get("status") == "ok":
                    traced.append(st)  # its time is in the trace, readable once the worker has exited
                    continue
                if ans.get("status") != "ok" or ans.get("time_us") is None:
                    finish(
                        st,
                        _row(st, ans.get("status", "runtime_error"), error=ans.get("error", "no time"), timing=timing),
                    )
                    continue
                journal.add(
                    {
                        "kind": "rep",
                        "key": st.key,
                        "time_us": ans["time_us"],
                        "dispatch_us": ans.get("dispatch_us"),
                        "telemetry": ans.get("telemetry"),
                    }
                )
                st.reps.append(ans["time_us"])
                if ans.get("dispatch_us"):
                    st.dispatch.append(ans["dispatch_us"])
                if ans.get("telemetry"):
                    st.telemetry.append(ans["telemetry"])
                tick(st.case["case_id"])
            if traced:
                if worker is not None:
                    worker.close()
                    worker = None
                found, trace_errors = _read_traces(trace_dirs, n)
                for st in traced:
                    got = found.get((st.case["index"], rnd - 1))
                    if not isinstance(got, tuple):
                        why = got or (trace_errors[0] if trace_errors else "no marker-delimited record for this rep")
                        finish(st, _row(st, "runtime_error", error=f"rocprofv3: {why}", timing=timing))
                        continue
                    t = sorted(got[0])[len(got[0]) // 2]
                    journal.add({"kind": "rep", "key": st.key, "time_us": t, "dispatch_us": got[1]})
                    st.reps.append(t)
                    st.dispatch.append(got[1])
                    tick(st.case["case_id"])
            if rnd < opts.reps:
                continue
            for st in [s for s in todo if s.final is None and s.prep and s.prep.get("status") == "ok"]:
                d = stability.decide(st.reps, first=opts.reps, most=max(opts.reps, stability.MAX_REPS))
                if not d.need_more:
                    finish(st, _row(st, d.status, time_us=d.value, decision=d, timing=timing))
                elif len(st.reps) == rnd and rnd == opts.reps:
                    total_steps += stability.MAX_REPS - opts.reps  # two more reps to come for this case
        clean = True
    finally:
        if worker is not None:  # interrupted (Ctrl-C, SIGTERM): kill the worker, it runs in its own session
            worker.close() if clean else worker.kill()
        appender.close()
        journal.close()
        if timing != "wallclock":
            meta = json.loads(side.read_text())
            meta.setdefault("gpu", {})["after"] = gpu_state(_smi_id(info))
            _write_json(side, meta)
    return counts


def _smi_id(info: dict[str, Any]) -> str | None:
    """nvidia-smi's --id for the worker's GPU: its UUID (nvidia-smi's index 0 ignores CUDA_VISIBLE_DEVICES)."""
    uuid = (info.get("gpu") or {}).get("uuid")
    if not uuid:
        return None
    return uuid if uuid.startswith("GPU-") else f"GPU-{uuid}"


def _warn_stderr(message: str) -> None:
    import sys

    print(f"WARNING: {message}", file=sys.stderr, flush=True)


def _sidecar_triton(out: Path) -> dict[str, Any]:
    try:
        return json.loads(sidecar_path(out).read_text()).get("triton") or {}
    except (OSError, ValueError, AttributeError):
        return {}


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


def _read_traces(dirs: list[Path], n: int) -> tuple[dict[tuple[int, int], tuple | str], list[str]]:
    """{(case index, rep): (times, per-dispatch) or why that rep's window is unusable} from the traces of
    ``dirs``, and why a trace could not be read (one line each): a bad trace or window fails only the reps it
    held, not the run."""
    from harness.run.rocprof import parse_kernel_trace, rep_times

    found: dict[tuple[int, int], tuple | str] = {}
    errors: list[str] = []
    for d in dirs:
        for f in sorted(d.rglob("*kernel_trace.csv")):
            problems: dict[tuple[int, int], str] = {}
            try:
                found.update(rep_times(parse_kernel_trace(f.read_text(errors="replace"), str(f)), n, problems=problems))
            except (OSError, HarnessError) as err:
                errors.append(str(err) if isinstance(err, HarnessError) else f"{f}: unreadable: {err}")
            found.update({k: f"{f}: {why}" for k, why in problems.items()})
    return found, errors


def _resolve_timing(timing: str, info: dict[str, Any]) -> str:
    if timing != "auto":
        return timing
    backend = info.get("backend")
    if backend == "interp":
        return "wallclock"
    if backend == "hip":
        return "rocprofv3" if shutil.which("rocprofv3") else "events"
    return "cupti"


def _rocprof_wrap(timing: str, log_dir: Path) -> list[str] | None:
    if timing != "rocprofv3":
        return None
    exe = shutil.which("rocprofv3")
    if not exe:
        raise HarnessError("timing rocprofv3: rocprofv3 is not on PATH")
    d = Path(tempfile.mkdtemp(prefix="rocprof-", dir=log_dir))
    # --output-format: ROCm 6.2's rocprofv3 rejects the short -f; the long form works in every version
    return [exe, "--kernel-trace", "--output-format", "csv", "-d", str(d), "-o", "trace", "--"]

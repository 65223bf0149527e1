"""Worker processes from the driver's side: one per environment (or per compile shard), started in the env's
Python, asked one request at a time over stdin, answering on a dedicated pipe; killed whole on a hang."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from harness.envs.spec import EnvSpec
from harness.errors import HarnessError
from harness.worker.backends import BACKENDS, auto

#: the worker, run by path with each env's interpreter
WORKER = Path(__file__).resolve().parent.parent / "worker" / "main.py"
REPO = Path(__file__).resolve().parent.parent.parent


class WorkerDied(Exception):
    pass


class WorkerTimeout(Exception):
    pass


class WorkerProc:
    """One worker process in the env's Python. Requests on stdin, answers on a dedicated pipe, output to a log."""

    def __init__(
        self,
        spec: EnvSpec,
        timing: str,
        log_dir: Path,
        wrap: list[str] | None = None,
        mem_budget: float = 0.6,
        extra_env: dict[str, str] | None = None,
        tag: str = "",
    ):
        self.spec, self.timing, self.mem_budget = spec, timing, mem_budget
        self.trace_dir = Path(wrap[wrap.index("-d") + 1]) if wrap and "-d" in wrap else None
        rfd, wfd = os.pipe()
        log_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = log_dir / f"worker-{spec.name}{tag}-{int(time.time() * 1000)}-{next(_WORKER_IDS)}.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115
        args, env = _command(spec, timing, extra_env)
        #: what makes two workers interchangeable: the same command line and environment (a WorkerPool's key); the
        #: memory budget is not in it: a kept worker is told another one (configure)
        self.key = _key(args, env, wrap)
        cmd = [*args, "--mem-budget", f"{mem_budget:g}", "--result-fd", str(wfd)]
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

    def configure(self, **changes: Any) -> bool:
        """Tell the worker another ``timing`` and/or ``mem_budget`` (its op ``set``): whether it took them."""
        try:
            ok = self.request({"op": "set", **changes}, timeout=60).get("status") == "ok"
        except (WorkerDied, WorkerTimeout):
            return False
        if ok:
            for name, value in changes.items():
                setattr(self, name, value)
        return ok

    def request(self, obj: dict[str, Any], timeout: float) -> dict[str, Any]:
        self.send(obj)
        return self.receive(time.monotonic() + timeout, timeout)

    def send(self, obj: dict[str, Any]) -> None:
        try:
            self.proc.stdin.write((json.dumps(obj) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise WorkerDied(self.tail()) from None

    def receive(self, deadline: float, timeout: float) -> dict[str, Any]:
        """The next answer, by ``deadline`` (time.monotonic()); WorkerTimeout (the process killed) after it."""
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

    def alive(self) -> bool:
        return self.proc.poll() is None

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


_WORKER_IDS = itertools.count()


def _command(spec: EnvSpec, timing: str, extra_env: dict[str, str] | None) -> tuple[list[str], dict[str, str]]:
    """The worker's command line (less its memory budget and result pipe) and environment."""
    args = [spec.interpreter(), str(WORKER), "--repo", str(REPO), "--timing", timing]
    return args, {**spec.environ(), **(extra_env or {})}


def _key(args: list[str], env: dict[str, str], wrap: list[str] | None) -> tuple:
    return tuple(wrap or ()), tuple(args), tuple(sorted(env.items()))


class WorkerPool:
    """Workers kept between the runs of one caller, at most one idle worker per command line and environment: a
    run takes a matching one (told the run's memory budget) instead of starting a process (torch and Triton
    imported again: ~1.7 s of CPU, more than a retune's small batch measures) and gives it back when it ends
    cleanly. A worker given back forgets the cases it had prepared, so the next run starts it holding what a fresh
    worker holds: its CUDA context only. Its log stays the first run's. ``close`` (or the end of a ``with``) ends
    every idle worker."""

    def __init__(self) -> None:
        self._idle: dict[tuple, tuple[WorkerProc, dict[str, Any]]] = {}
        self._starting: dict[tuple, list[WorkerProc]] = {}

    def start_ahead(
        self,
        spec: EnvSpec,
        timing: str,
        log_dir: Path,
        wrap: list[str] | None = None,
        mem_budget: float = 0.6,
        extra_env: dict[str, str] | None = None,
    ) -> None:
        """Start the worker that ``start_worker`` with these arguments will take, without waiting for its hello
        (``start_worker`` asks it), unless an idle one is kept. The envs of an interleaved run import torch and
        Triton at the same time this way, not one after the other. Workers of one key are taken in the order
        they were started."""
        key = _key(*_command(spec, timing, extra_env), wrap)
        if key not in self._idle:
            w = WorkerProc(spec, timing, log_dir, wrap=wrap, mem_budget=mem_budget, extra_env=extra_env)
            self._starting.setdefault(key, []).append(w)

    def started(self, key: tuple) -> WorkerProc | None:
        """The first worker started ahead with ``key``, not yet asked its hello, out of the pool; None if none."""
        return self._starting[key].pop(0) if self._starting.get(key) else None

    def take(self, key: tuple) -> tuple[WorkerProc, dict[str, Any]] | None:
        """An idle worker with ``key`` and its hello's info, out of the pool; None if there is none (or it died)."""
        w, info = self._idle.pop(key, (None, {}))
        if w is None or not w.alive():
            if w is not None:
                w.close()
            return None
        return w, info

    def give(self, w: WorkerProc, info: dict[str, Any]) -> None:
        """Keep ``w`` for a later run (closing the one it replaces); a worker that cannot forget is closed."""
        try:
            forgot = w.alive() and w.request({"op": "forget"}, timeout=60).get("status") == "ok"
        except (WorkerDied, WorkerTimeout):
            forgot = False
        if not forgot:
            w.close()
            return
        old, _ = self._idle.pop(w.key, (None, {}))
        if old is not None:
            old.close()
        self._idle[w.key] = (w, info)

    def close(self) -> None:
        for w, _ in self._idle.values():
            w.close()
        for w in (w for ws in self._starting.values() for w in ws):
            w.kill()  # never asked anything: it may still be importing
        self._idle.clear()
        self._starting.clear()

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def start_worker(
    spec: EnvSpec,
    timing: str,
    log_dir: Path,
    wrap: list[str] | None = None,
    mem_budget: float = 0.6,
    extra_env: dict[str, str] | None = None,
    pool: WorkerPool | None = None,
) -> tuple[WorkerProc, dict[str, Any]]:
    """A started worker and its ``hello`` (versions, GPU); HarnessError, naming the env, when it cannot start.
    With ``pool``: the worker it started ahead for this command and environment (WorkerPool.start_ahead), else an
    idle one of them it keeps, else a new one."""
    key = _key(*_command(spec, timing, extra_env), wrap)
    ahead = pool.started(key) if pool is not None else None  # started for this very run: its log is this run's
    if ahead is not None:
        with contextlib.suppress(HarnessError):  # it did not start: a new one does, or says why it cannot
            return ahead, _hello(ahead, spec)
    else:
        kept = pool.take(key) if pool is not None else None
        if kept is not None:
            w, info = kept
            if w.mem_budget == mem_budget or w.configure(mem_budget=mem_budget):
                return kept
            w.close()
    w = WorkerProc(spec, timing, log_dir, wrap=wrap, mem_budget=mem_budget, extra_env=extra_env)
    return w, _hello(w, spec)


def _hello(w: WorkerProc, spec: EnvSpec) -> dict[str, Any]:
    """The started worker's ``hello`` info; HarnessError, naming the env, when it did not start (it is killed)."""
    try:
        hello = w.request({"op": "hello"}, timeout=300)
    except (WorkerDied, WorkerTimeout) as err:
        w.kill()
        last = str(err).strip().splitlines()[-1] if str(err).strip() else err
        raise HarnessError(f"env {spec.name}: the worker did not start ({spec.interpreter()}): {last}") from None
    if hello.get("status") != "ok":
        w.kill()
        raise HarnessError(f"env {spec.name}: {hello.get('error', 'worker failed').splitlines()[0]}")
    return hello["info"]


def resolve_timing(timing: str, info: dict[str, Any]) -> str:
    """The timing backend ``auto`` stands for on the stack the worker reported (``info``); others as given."""
    if timing != "auto":
        return timing
    installed = frozenset(b.wrapper for b in BACKENDS.values() if b.wrapper and shutil.which(b.wrapper))
    return auto(str(info.get("backend") or "cuda"), installed)


def wrap_command(timing: str, log_dir: Path) -> list[str] | None:
    """The command a worker timing by ``timing`` starts under (its backend's wrapper, a new output folder), or None."""
    b = BACKENDS.get(timing)
    if b is None or not b.wrapper:
        return None
    exe = shutil.which(b.wrapper)
    if not exe:
        raise HarnessError(f"timing {timing}: {b.wrapper} is not on PATH")
    log_dir.mkdir(parents=True, exist_ok=True)
    d = Path(tempfile.mkdtemp(prefix=f"{b.wrapper}-", dir=log_dir))
    return [exe, *(str(d) if a == "{dir}" else a for a in b.wrapper_args)]

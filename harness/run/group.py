"""Multi-GPU cases: a worker group of ``world_size`` processes, one per GPU, started, fed and torn down as one unit.

Every rank gets the same request; the group answers once: the first failure of any rank (named), or the ranks'
answers combined — a case's time is the **maximum over ranks** (the slowest rank finishes the collective), with
every rank's time and the skew between them kept. A rank that hangs or dies takes the whole group down (all its
processes are killed, as a single worker is), so the next multi-GPU case gets a fresh group.

NVLink multicast stays off: every rank runs with ``NCCL_NVLS_ENABLE=0``, ``TORCH_SYMM_MEM_DISABLE_MULTICAST=1`` and
``NVSHMEM_DISABLE_NVLS=1`` (a program that uses multicast can take a host's shared GPUs out of service), and the
worker refuses to start a rank without them (harness/worker/group.py).
"""

from __future__ import annotations

import os
import socket
import statistics
import time
from pathlib import Path
from typing import Any

from harness.envs.spec import EnvSpec
from harness.run.workers import WorkerDied, WorkerProc, WorkerTimeout
from harness.verdict.groupcheck import halves_pct
from harness.worker.group import NO_MULTICAST


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_env(rank: int, world: int, port: int, gpus: list[int] | None = None) -> dict[str, str]:
    """One rank's environment: torch.distributed's env:// rendezvous, its GPU, multicast off."""
    env = {
        "RANK": str(rank),
        "LOCAL_RANK": str(rank),
        "WORLD_SIZE": str(world),
        "LOCAL_WORLD_SIZE": str(world),
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
        **NO_MULTICAST,
    }
    if gpus:  # the GPUs this group may use, in rank order (harness run --gpus)
        env.update(visible(gpus))
    return env


def inherited_gpus() -> list[str] | None:
    """The GPUs this process was given (a Slurm allocation, a CI runner pinned to some GPUs): its own
    CUDA_VISIBLE_DEVICES entries (indices or UUIDs), or None when it was given every GPU of the machine."""
    given = os.environ.get("CUDA_VISIBLE_DEVICES")
    return None if given is None else [g.strip() for g in given.split(",") if g.strip()]


def visible(gpus: list[int] | tuple[int, ...]) -> dict[str, str]:
    """The environment that shows a process only ``gpus``, numbered as this process sees them (0 is the first GPU
    it was given): CUDA_VISIBLE_DEVICES, which ROCm honours too (setting HIP_VISIBLE_DEVICES as well would filter
    twice there)."""
    given = inherited_gpus()
    return {"CUDA_VISIBLE_DEVICES": ",".join(str(g) if given is None else given[g] for g in gpus)}


class WorkerGroup:
    """``world`` worker processes of one env, one per GPU, that answer each request together."""

    def __init__(
        self,
        spec: EnvSpec,
        timing: str,
        log_dir: Path,
        world: int,
        mem_budget: float = 0.6,
        gpus: list[int] | None = None,
    ):
        self.spec, self.timing, self.world = spec, timing, world
        self.trace_dir = None
        port = free_port()
        self.ranks: list[WorkerProc] = []
        try:
            for r in range(world):
                env = rank_env(r, world, port, gpus)
                self.ranks.append(WorkerProc(spec, timing, log_dir, None, mem_budget, env, tag=f"-rank{r}of{world}"))
        except Exception:
            self.kill()
            raise

    def alive(self) -> bool:
        return all(w.alive() for w in self.ranks)

    def request(self, obj: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send ``obj`` to every rank, then collect every answer by one deadline; any rank's hang or death kills
        the group (WorkerTimeout / WorkerDied naming the rank)."""
        deadline = time.monotonic() + timeout
        answers = []
        for r, w in enumerate(self.ranks):
            try:
                w.send(obj)
            except WorkerDied as err:
                self.kill()
                raise WorkerDied(f"rank {r}: {err}") from None
        for r, w in enumerate(self.ranks):
            try:
                answers.append(w.receive(deadline, timeout))
            except (WorkerDied, WorkerTimeout) as err:
                self.kill()
                raise type(err)(f"rank {r} of {self.world}: {err}") from None
        ans = combine(obj.get("op", ""), answers)
        if ans.get("worker_exits"):
            self.close()
        return ans

    def kill(self) -> None:
        for w in self.ranks:
            w.kill()

    def close(self) -> None:
        for w in self.ranks:
            w.close()

    def tail(self, n: int = 1500) -> str:
        return "; ".join(f"rank {r}: {w.tail(n // max(self.world, 1))}" for r, w in enumerate(self.ranks))


def combine(op: str, answers: list[dict[str, Any]]) -> dict[str, Any]:
    """One answer for the group: a failure of any rank (the first, named), else the ranks' answers merged."""
    for r, a in enumerate(answers):
        if a.get("status") not in ("ok",):
            return {**a, "error": f"rank {r} of {len(answers)}: {a.get('error', a.get('status'))}"}
    first = dict(answers[0])
    if any(a.get("worker_exits") for a in answers):
        first["worker_exits"] = True
    if op == "hello":
        first["info"] = {**first["info"], "world_size": len(answers), "gpus": [a["info"]["gpu"] for a in answers]}
    elif op == "prepare" and "rel_err" in first:
        first["rel_err"] = max(a.get("rel_err", 0.0) for a in answers)
    elif op == "time" and all("time_us" in a for a in answers):
        first.update(rank_times(answers))
    first.pop("samples_us", None)
    return first


def rank_times(answers: list[dict[str, Any]]) -> dict[str, Any]:
    """The rep's time and what it hides: each rank's time (its median) and the skew between them; the per-dispatch
    times and the second clock's are the slowest rank's. With every rank's launch-by-launch samples (lockstep timing: launch i ran on
    all GPUs together) the rep's time is the median over launches of the slowest rank's time of that launch — a
    collective ends when its slowest rank does — and the A/A self-check of harness/verdict/groupcheck.py is taken
    on that series; else the slowest rank's median."""
    times = [float(a["time_us"]) for a in answers]
    slowest = max(range(len(times)), key=times.__getitem__)
    out: dict[str, Any] = {"time_us": times[slowest], "rank_times_us": times}
    out["skew_pct"] = 100.0 * (max(times) / min(times) - 1.0) if min(times) > 0 else None
    series = [a.get("samples_us") for a in answers]
    if all(series) and len({len(x) for x in series}) == 1:
        per_launch = [max(col) for col in zip(*series)]
        out["time_us"] = statistics.median(per_launch)
        out["halves_pct"] = halves_pct(per_launch)
    for part in ("dispatch_us", "clocks"):
        if answers[slowest].get(part):
            out[part] = answers[slowest][part]
    return out


class FailedGroup:
    """A worker group that could not start: every request to it fails with why, and the next case tries again."""

    def __init__(self, why: str):
        self.why = why

    def alive(self) -> bool:
        return False

    def request(self, obj: dict[str, Any], timeout: float) -> dict[str, Any]:
        return {"status": "runtime_error", "error": self.why}

    def close(self) -> None:
        pass

    kill = close

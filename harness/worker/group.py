"""A worker that is one rank of a multi-GPU case (WORLD_SIZE > 1 in its environment): torch.distributed set up
before any case, the ranks held in lockstep while a rep is timed, and NVLink multicast off — checked, not assumed.

Lockstep (docs/multigpu-timing.md says why, with the numbers that decided it): a collective's time on one rank
includes waiting for its peers, so a time whose ranks started apart measures when each host reached the launch,
not the op. A rank queues its launches behind a **gate** (a kernel that holds its GPU until the host has queued
the next GATE_EVERY launches), so no launch waits for its host; and every timed launch behind a **device-side
barrier** of the ranks
(``_harness_rank_barrier``: each rank signals every peer through symmetric memory and waits for all of them, on
its own stream), so the op starts on all GPUs together whatever each host was doing; the GPU idle gap is a
device-side wait too (``_harness_idle``), so no host sleep lets one rank's queue drain. The host only meets its
peers once per rep (a gloo barrier, then the launches queued back to back, as nccl-tests does). The harness's own
kernels are named ``_harness_*`` and left out of the op's time.

NVLink multicast (NVLS) must stay off on shared multi-GPU hosts: a program that uses it can take the host's GPUs
out of service for a day or more. So a rank refuses to start unless its environment turns it off for NCCL, torch's
symmetric memory and NVSHMEM, and nothing in harness or the kernels uses multimem operations or multicast objects
(tests/kernels/test_gemm_all_scatter.py greps for them): the barrier is point-to-point atomics on peer memory.
"""

from __future__ import annotations

import os
import time
from typing import Any

#: what every rank's environment must hold (the driver sets it: harness/run/group.py)
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
#: kernels of the harness's own that the timers leave out of an op's dispatches (the L2 flush delimits them)
HELPER_PREFIX = "_harness_"
#: a gate lets the GPU go after this long even if the host never released it (a full launch queue)
GATE_TIMEOUT_S = 2.0
#: launches queued behind one gate: few enough that the queue never fills (each launch is up to ~10 entries:
#: flush, idle, barrier, the op's kernels, input copies)
GATE_EVERY = 10
#: a device barrier gives up after this long (the ranks queued different launches): the case fails, never hangs
BARRIER_TIMEOUT_S = 20.0


def world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1") or 1)


def multicast_problem() -> str:
    """Why this rank must not start ('' when its environment turns multicast off everywhere)."""
    wrong = [f"{k}={v}" for k, v in NO_MULTICAST.items() if os.environ.get(k) != v]
    if not wrong:
        return ""
    return "refusing to start a multi-GPU rank without " + " ".join(wrong) + " (NVLink multicast must stay off)"


class Ranks:
    """This process's place in the group, the host-side barrier once per rep, and (on GPUs) the device-side
    barrier and idle wait that keep the ranks' timed launches in lockstep."""

    def __init__(self, torch: Any):
        import torch.distributed as dist

        problem = multicast_problem()
        if problem:
            raise RuntimeError(problem)
        self.dist = dist
        self.rank, self.world = int(os.environ["RANK"]), world_size()
        self.cuda = torch.cuda.is_available() and "TRITON_INTERPRET" not in os.environ
        if self.cuda:
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", self.rank)))
        dist.init_process_group("nccl" if self.cuda else "gloo", init_method="env://")
        # a host barrier through gloo: an NCCL barrier is a GPU kernel, which CUPTI would count in the op's time
        self.host = dist.new_group(backend="gloo") if self.cuda else dist.group.WORLD
        self.torch = torch
        self._flags: Any = None  # the device barrier's symmetric buffer, made at first use
        self._gate: Any = None  # the gate's flag in pinned host memory, made at first use

    def barrier(self) -> None:
        self.dist.barrier(group=self.host)

    def max_over_ranks(self, value: float) -> float:
        """The largest ``value`` of all ranks (every rank then decides the same: launch counts, idle gaps)."""
        t = self.torch.tensor([value], dtype=self.torch.float64)
        self.dist.all_reduce(t, op=self.dist.ReduceOp.MAX, group=self.host)
        return float(t.item())

    # ------------------------------------------------------------------------------------ lockstep, on GPUs
    def align(self) -> None:
        """Queue a device-side barrier of all ranks on the current stream: what follows it starts on every GPU
        once every rank's GPU has reached it, however late each host queued it. No-op without GPUs."""
        if not self.cuda:
            return
        flags, table = self._device_flags()
        _kernels()[0][(1,)](flags, table, self.rank, int(BARRIER_TIMEOUT_S * 1e9), WORLD=self.world, num_warps=1)

    def broken(self) -> str:
        """Why this rank's lockstep can no longer be trusted ('' when it can): a device barrier that timed out
        means the ranks queued different launch sequences, and their barrier counts now disagree for good."""
        if self._flags is None:
            return ""
        missed = int(self._flags[0][self.world + 1].item())
        if not missed:
            return ""
        return (f"rank {self.rank}: {missed} device barrier(s) of the ranks timed out after {BARRIER_TIMEOUT_S:g} s "
                "(the ranks queued different launches)")  # fmt: skip

    def idle(self, seconds: float) -> None:
        """The GPU waits ``seconds`` (a one-thread kernel reading the global timer) without the host waiting:
        its queue stays ahead, so the idle gap cannot let the ranks drift apart. Host sleep without GPUs."""
        if seconds <= 0:
            return
        if not self.cuda or self.torch.version.hip:  # %globaltimer is PTX; ROCm waits on the host
            if self.cuda:
                self.torch.cuda.synchronize()
            time.sleep(seconds)
            return
        _kernels()[1][(1,)](int(seconds * 1e9), num_warps=1)

    def gate(self) -> Any:
        """Hold this rank's GPU (a kernel polling a flag in pinned host memory) until the returned function is
        called: the host queues the launches behind it, so they run back to back however slowly the host queued
        them (nvbench's blocking kernel). Released after GATE_TIMEOUT_S regardless: a full launch queue must not
        deadlock the host against the held GPU. No-op without GPUs."""
        if not self.cuda or self.torch.version.hip:
            return lambda: None
        if self._gate is None:
            self._gate = self.torch.zeros(1, dtype=self.torch.int32, pin_memory=True)
            self._gate_epoch = 0
        self._gate_epoch += 1
        epoch, flag = self._gate_epoch, self._gate
        _kernels()[2][(1,)](flag.data_ptr(), epoch, int(GATE_TIMEOUT_S * 1e9), num_warps=1)

        def release() -> None:
            flag[0] = epoch

        return release

    def _device_flags(self) -> tuple[Any, Any]:
        """Each rank's flags in symmetric memory — slot p: the last barrier peer p signalled here; slot W: this
        rank's own barrier count; slot W + 1: its barriers that timed out — and the device table of every rank's
        flags address."""
        if self._flags is None:
            import torch.distributed._symmetric_memory as symm_mem

            torch = self.torch
            name = self.dist.group.WORLD.group_name
            if hasattr(symm_mem, "enable_symm_mem_for_group"):  # needed before torch 2.9 made it implicit
                symm_mem.enable_symm_mem_for_group(name)
            flags = symm_mem.empty((self.world + 2,), dtype=torch.int32, device=torch.device("cuda"))
            handle = symm_mem.rendezvous(flags, name)
            flags.zero_()
            ptrs = [int(p) + int(getattr(handle, "offset", 0)) for p in handle.buffer_ptrs]
            if ptrs[self.rank] != flags.data_ptr():
                raise RuntimeError(f"symmetric memory: rank {self.rank}'s flags are not at {ptrs[self.rank]:#x}")
            torch.cuda.synchronize()
            self.barrier()  # every rank's flags zeroed before any peer signals into them
            self._flags = (flags, handle, torch.tensor(ptrs, dtype=torch.int64, device="cuda"))
        return self._flags[0], self._flags[2]


_KERNELS: tuple[Any, Any, Any] | None = None


def _kernels() -> tuple[Any, Any, Any]:
    """(rank barrier, idle wait, gate), compiled at first use: Triton is imported only by a worker timing GPUs."""
    global _KERNELS
    if _KERNELS is None:
        _KERNELS = _define_kernels()
    return _KERNELS


def _define_kernels() -> tuple[Any, Any, Any]:
    import triton
    import triton.language as tl

    from harness.worker.devclock import helpers

    now, spin = helpers()

    @triton.jit(do_not_specialize=["timeout_ns"])
    def _harness_rank_barrier(flags_ptr, table_ptr, rank, timeout_ns, WORLD: tl.constexpr):
        # this rank's count of barriers, kept on the device: every rank passes the same number of them
        epoch = tl.load(flags_ptr + WORLD) + 1
        tl.store(flags_ptr + WORLD, epoch)
        for p in tl.static_range(WORLD):  # signal: the epoch into slot `rank` of every rank's flags
            peer = tl.load(table_ptr + p).to(tl.pointer_type(tl.int32))
            tl.atomic_xchg(peer + rank, epoch, sem="release", scope="sys")
        start = now()
        # once one barrier timed out the counts disagree for good: the rest of the rep runs unsynchronized, at
        # once, so a rank that stopped queueing costs its peers one timeout, not one per launch
        patience = tl.where(tl.load(flags_ptr + WORLD + 1) > 0, 0, timeout_ns)
        for p in tl.static_range(WORLD):  # wait: every rank has signalled this epoch (or a later one)
            seen = tl.atomic_add(flags_ptr + p, 0, sem="acquire", scope="sys")
            t = start
            while (seen < epoch) & (t - start < patience):
                seen = tl.atomic_add(flags_ptr + p, 0, sem="acquire", scope="sys")
                t = now()
            if seen < epoch:  # a peer never came: counted, so the host fails the case instead of hanging
                tl.atomic_add(flags_ptr + WORLD + 1, 1)

    @triton.jit(do_not_specialize=["ns"])
    def _harness_idle(ns):
        spin(ns)

    @triton.jit(do_not_specialize=["addr", "epoch", "timeout_ns"])
    def _harness_gate(addr, epoch, timeout_ns):
        # the flag's host address is valid on the GPU (pinned memory, unified addressing); volatile: re-read
        flag = addr.to(tl.pointer_type(tl.int32))
        start = now()
        t = start
        while (tl.load(flag, volatile=True) < epoch) & (t - start < timeout_ns):
            t = now()

    return _harness_rank_barrier, _harness_idle, _harness_gate

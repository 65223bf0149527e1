"""Kernel-only time of one rep: a dedicated L2 flush before every launch, and four ways to read the clock (CUPTI
through torch.profiler, CUDA events, the host clock under the interpreter, marker kernels for rocprofv3).
Needs torch and triton, passed in; nothing else."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from harness.worker.clocks import InstrumentError
from harness.worker.group import GATE_EVERY, HELPER_PREFIX
from harness.worker.placement import launch_plan
from harness.worker.telemetry import NoSampler

FLUSH_BYTES = 256 * 1024 * 1024
FLUSH_NAME = "_harness_l2_flush"
MARKER_NAME = "_harness_marker"
#: auto launch count: about this much kernel time per rep, at least this many launches. Power-bound ms-long
#: kernels wander by a few % from launch to launch on Hopper; 5 launches a rep let that through to the verdicts.
#: With the inputs moved before every launch, each launch is one more placement sampled: 30 keep an H100's rep
#: medians of ms-long GEMMs within about 0.15 % (lab/gpu_validation/launch_trace.py).
AUTO_REP_US = 40_000
AUTO_MIN_LAUNCHES = 30
#: --launch-gap auto: the GPU idles AUTO_GAP_FACTOR x the kernel's time, at most AUTO_GAP_MAX_US, before each
#: timed launch. On an H100 a 5.7 ms bf16 GEMM read 5850-6090 us between rounds with 1 ms of idle (the power
#: limiter had not let go) and 5576-5579 us with 10 ms (lab/gpu_validation/power_trace.py, 2026-11-22)
AUTO_GAP_FACTOR = 2.0
AUTO_GAP_MAX_US = 10_000.0
Op = Callable[[], Any]


def auto_launches(est_us: float) -> int:
    """Launches a rep for a kernel estimated at ``est_us`` (launch overhead included): about AUTO_REP_US of kernel
    time, at least AUTO_MIN_LAUNCHES, at most 100."""
    return int(min(100, max(AUTO_MIN_LAUNCHES, AUTO_REP_US // max(est_us, 1.0))))


def auto_idle_s(est_us: float) -> float:
    """--launch-gap auto: seconds the GPU idles before each timed launch of a kernel estimated at ``est_us``."""
    return min(AUTO_GAP_FACTOR * est_us, AUTO_GAP_MAX_US) / 1e6


def kernel_events(prof, spans: bool = False) -> list[tuple]:  # noqa: ANN001 - a finished torch.profiler.profile
    """(name, µs) of every GPU kernel a torch.profiler session recorded, in start order (copies and memsets
    dropped); with ``spans``, (name, µs, start µs, end µs), on the profiler's clock."""
    import torch

    cuda = torch.autograd.DeviceType.CUDA
    kin = [e for e in prof.profiler.kineto_results.events() if e.device_type() == cuda]
    kin = sorted(
        (
            e
            for e in kin
            if e.end_ns() > e.start_ns() and "memcpy" not in e.name().lower() and "memset" not in e.name().lower()
        ),
        key=lambda e: e.start_ns(),
    )
    if spans:
        return [(e.name(), (e.end_ns() - e.start_ns()) / 1e3, e.start_ns() / 1e3, e.end_ns() / 1e3) for e in kin]
    return [(e.name(), (e.end_ns() - e.start_ns()) / 1e3) for e in kin]


#: share of an op's launches that may run more dispatches than most (a one-off kernel): worker/clocks.py
EXTRA_SHARE = 0.05


def attribute_dispatches(
    events: list[tuple], flush_name: str, n: int, drop: set[int] | frozenset[int] = frozenset()
) -> tuple[list[float], dict]:
    """Group a stream of (kernel name, µs, ...) into op invocations delimited by the flush kernel.

    Returns one op time per invocation (the sum of its dispatches: split-K + reduce count as one op) and the
    median time of each dispatch name, leaving out the invocations numbered in ``drop`` (0-based, of the ``n``).
    Raises InstrumentError if the number of invocations is not ``n``, or if timed invocations have fewer
    dispatches than most (records lost): :func:`dispatch_counts`.
    """
    return op_times(invocations(events, flush_name, n, drop))


def op_times(groups: list[list[tuple]]) -> tuple[list[float], dict]:
    """Each invocation's op time (its dispatches' sum) and the median time of each dispatch (``i:name``)."""
    per_name: dict[str, list[float]] = {}
    for g in groups:
        for i, (name, us, *_) in enumerate(g):
            per_name.setdefault(f"{i}:{name}", []).append(us)
    return [sum(e[1] for e in g) for g in groups], {k: statistics.median(v) for k, v in per_name.items()}


def span(group: list[tuple]) -> float:
    """An invocation's time from its first dispatch's start to its last one's end (events with start and end:
    kernel_events(spans=True)): what the events around the launch must hold, whatever the dispatches overlap (a
    second stream, programmatic dependent launch), where their sum may not."""
    return max(e[3] for e in group) - min(e[2] for e in group)


def invocations(events: list[tuple], flush_name: str, n: int, drop: set[int] | frozenset[int] = frozenset()) -> list:
    """The kept invocations (each its dispatches, the harness's own left out) of the last ``n`` delimited by the
    flush kernel; InstrumentError when they cannot be the launches made (attribute_dispatches)."""
    groups: list[list[tuple]] = []
    cur: list[tuple] | None = None
    for e in events:
        name = e[0]
        if name.startswith(flush_name):
            if cur is not None:
                groups.append(cur)
            cur = []
        elif cur is not None and not name.startswith(HELPER_PREFIX):  # a rank barrier, an idle wait: not the op's
            cur.append(e)
    if cur is not None:
        groups.append(cur)
    groups = groups[-n:] if len(groups) >= n else groups
    if len(groups) != n or any(not g for g in groups):
        seen = sum(1 for g in groups if g)
        raise InstrumentError(f"profiler saw {seen} op invocations with kernels, expected {n}")
    groups = [g for i, g in enumerate(groups) if i not in drop]
    dispatch_counts(groups)
    return groups


def dispatch_counts(groups: list[list[tuple]]) -> None:
    """Raise InstrumentError unless the launches of one op agree in their number of dispatches, as an op that
    launches the same kernels every time does: a launch with fewer than most lost records. A launch with more
    is an op's one-off (the multi-GPU kernel fills its signal pad once a rep: one launch of 47 or 93 on an
    H200), allowed for one launch or 5 % of them; more such launches mean most launches lost records."""
    counts = [len(g) for g in groups]
    usual = statistics.mode(counts)
    short = [c for c in counts if c < usual]
    extra = [c for c in counts if c > usual]
    if short:
        raise InstrumentError(f"{len(short)} of {len(counts)} launches have fewer dispatches ({min(short)}) than "
                              f"most ({usual}): the profiler lost records")  # fmt: skip
    if len(extra) > max(1, EXTRA_SHARE * len(counts)):
        raise InstrumentError(f"{len(extra)} of {len(counts)} launches have more dispatches ({max(extra)}) than "
                              f"most ({usual}): the profiler lost records from the others")  # fmt: skip


class Gates:
    """A rank's launches in chunks of GATE_EVERY, each queued behind a gate that opens once the next chunk is
    queued (group.Ranks.gate): the GPU runs a chunk without waiting for its host. Nothing for a single GPU."""

    def __init__(self, step) -> None:  # noqa: ANN001 - a group.Ranks or None
        self.step, self.held, self.count = step, None, 0

    def before_launch(self) -> None:
        if self.step is None:
            return
        if self.count % GATE_EVERY == 0:
            new = self.step.gate()
            self.open()
            self.held = new
        self.count += 1

    def open(self) -> None:
        if self.held is not None:
            self.held()
            self.held = None


class Timer:
    """The timing loops of one worker process, with its flush kernel (compiled on first use)."""

    def __init__(self, torch: Any, triton: Any, backend: str):
        self.torch, self.triton, self.backend = torch, triton, backend
        self._flush_kernel: Any = None
        self._marker: Any = None

    def sync(self) -> None:
        if self.backend != "interp":
            self.torch.cuda.synchronize()

    def flush(self) -> None:
        """Evict L2 with a dedicated Triton kernel that *reads* 256 MiB (the profiler backends find it by name).

        A flush that writes (``cache.zero_()``, as do_bench does) leaves L2 full of dirty lines, and the timed
        kernel then pays their write-back: on an H200 that inflated 9 µs kernels by up to 25% against ncu,
        whose own cache control invalidates clean. Reading leaves only clean lines behind.
        """
        if self.backend == "interp":
            return
        if self._flush_kernel is None:
            import triton.language as tl

            @self.triton.jit
            def _harness_l2_flush(ptr, out_ptr, n, BLOCK: tl.constexpr):
                offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
                v = tl.load(ptr + offs, mask=offs < n, other=0)
                s = tl.sum(v, axis=0)
                if s == 123456789:  # (almost) never true; keeps the load from being optimized away
                    tl.store(out_ptr, s)

            # random, not zeros: Hopper can compress zero-filled L2 lines, so a zero buffer may evict less than
            # its size (on the H200 the switch made no measurable difference; it removes the doubt)
            self._flush_buf = self.torch.randint(
                1, 2**31 - 1, (FLUSH_BYTES // 4,), dtype=self.torch.int32, device="cuda"
            )
            self._flush_out = self.torch.zeros(1, dtype=self.torch.int32, device="cuda")
            self._flush_kernel = _harness_l2_flush
        n = self._flush_buf.numel()
        self._flush_kernel[(self.triton.cdiv(n, 8192),)](self._flush_buf, self._flush_out, n, BLOCK=8192)

    def wallclock(self, op: Op, n: int) -> list[float]:
        out = []
        for _ in range(n):
            self.flush()
            self.sync()
            t0 = time.perf_counter()
            op()
            self.sync()
            out.append((time.perf_counter() - t0) * 1e6)
        return out

    def events(
        self,
        op,  # noqa: ANN001
        n: int,
        sampler=None,  # noqa: ANN001
        rehome=None,  # noqa: ANN001
        every: int = 0,
        warm: bool = False,
        step=None,  # noqa: ANN001 - a group.Ranks: the ranks' launches in lockstep
    ) -> list[float]:
        torch = self.torch
        sampler = sampler or NoSampler()
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
        timed = iter(ev)
        gates = Gates(step)
        with sampler:
            self._meet(step)
            try:
                for move, is_timed in launch_plan(n, every if rehome is not None else 0, warm):
                    gates.before_launch()
                    if move:  # before the flush: the copies leave the inputs' tail in L2
                        sampler.busy = False
                        rehome()
                    if not is_timed:
                        self.flush()
                        op()
                        continue
                    s, e = next(timed)
                    sampler.busy = True
                    self.flush()
                    self._in_step(step, 0.0)
                    s.record()
                    op()
                    e.record()
            finally:
                gates.open()
            torch.cuda.synchronize()
            sampler.busy = False
        return [s.elapsed_time(e) * 1e3 for s, e in ev]

    def cupti(
        self,
        op,  # noqa: ANN001
        n: int,
        idle_s: float = 0.0,
        sampler=None,  # noqa: ANN001 - a gpu_telemetry.Sampler
        rehome=None,  # noqa: ANN001 - a zero-argument callable that moves the inputs
        every: int = 0,
        warm: bool = False,
        step=None,  # noqa: ANN001 - a group.Ranks: the ranks' launches in lockstep
    ) -> tuple[list[float], dict[str, float]]:
        """Kernel-only device time through CUPTI (torch.profiler): the op's own dispatches between flushes;
        with ``idle_s`` the GPU idles that long (flush done) before every launch. ``sampler`` records the SM
        clock while the launches run (not during the idle gaps). With ``rehome``, every ``every`` launches the
        inputs move (byte copies: memcpys, which the kernel list leaves out); with ``warm`` one untimed launch
        follows each move, its own flush-delimited invocation, dropped from the samples. With ``step`` (one rank
        of a multi-GPU case) the ranks meet once, then every launch is queued behind a device-side barrier of the
        ranks and the idle gap is a device-side wait (harness/worker/group.py): the op starts on every GPU
        together, however each host was doing.

        Returns (op time of each timed launch, median of each dispatch, (the profiler's span of each timed launch,
        the events' time of each)): two CUDA events bracket every timed launch on its stream, the second clock of
        worker/clocks.py."""
        from torch.profiler import ProfilerActivity, profile

        torch = self.torch
        sampler = sampler or NoSampler()
        plan = launch_plan(n, every if rehome is not None else 0, warm)
        # events mark the stream, they launch no kernel: the profiler's list of the op's kernels is unchanged
        bracket_list = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                        for _, is_timed in plan if is_timed]  # fmt: skip
        brackets = iter(bracket_list)
        self.flush()
        gates = Gates(step)
        with sampler, profile(activities=[ProfilerActivity.CUDA]) as prof:
            self._meet(step)
            try:
                for move, is_timed in plan:
                    gates.before_launch()
                    if move:  # before the flush: the copies leave the inputs' tail in L2
                        sampler.busy = False
                        rehome()
                    if not is_timed:  # its own flush-delimited invocation, dropped below
                        self.flush()
                        op()
                        continue
                    self.flush()
                    if step is not None:
                        self._in_step(step, idle_s)
                    elif idle_s:
                        torch.cuda.synchronize()
                        sampler.busy = False
                        time.sleep(idle_s)
                    sampler.busy = True
                    s, e = next(brackets)
                    s.record()
                    op()
                    e.record()
            finally:
                gates.open()
            torch.cuda.synchronize()
            sampler.busy = False
        untimed = {i for i, (_, is_timed) in enumerate(plan) if not is_timed}
        groups = invocations(kernel_events(prof, spans=True), FLUSH_NAME, len(plan), drop=untimed)
        samples, dispatch = op_times(groups)
        return samples, dispatch, ([span(g) for g in groups], [s.elapsed_time(e) * 1e3 for s, e in bracket_list])

    def _meet(self, step) -> None:  # noqa: ANN001
        """The ranks meet on the host once a rep, their GPUs idle: the launches after it are queued back to back."""
        if step is not None:
            self.sync()
            step.barrier()

    @staticmethod
    def _in_step(step, idle_s: float) -> None:  # noqa: ANN001
        """Before a rank's timed launch: the idle gap and the barrier of the ranks, both on the GPU."""
        if step is not None:
            step.idle(idle_s)
            step.align()

    def markers(self, op: Op, n: int, index: int, rep: int) -> list[float]:
        """Under rocprofv3 the trace is read by the driver after this process exits; here only the launches
        happen, bracketed by marker kernels whose grid encodes (case index, rep)."""
        import triton.language as tl

        if self._marker is None:

            @self.triton.jit
            def _harness_marker(ptr):
                tl.store(ptr + tl.program_id(0) * 0, 1)

            self._marker = _harness_marker
            self._marker_buf = self.torch.zeros(1, dtype=self.torch.int32, device="cuda")
        self._marker[(index + 1, rep + 1, 1)](self._marker_buf)
        for _ in range(n):
            self.flush()
            op()
        self._marker[(index + 1, rep + 1, 2)](self._marker_buf)
        self.sync()
        return []

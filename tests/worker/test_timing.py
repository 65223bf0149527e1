"""The timing loops' pure parts: ops told apart by the flush kernel, the automatic launch count and idle gap."""

from __future__ import annotations

import pytest


def test_attribute_dispatches_groups_by_flush_and_drops_untimed_launches():
    from harness.worker.timing import attribute_dispatches

    F = "_harness_l2_flush"
    events = [(F, 30.0), ("warm", 9.0)]  # an untimed launch (invocation 0)
    events += [(F, 30.0), ("gemm", 5.0), ("reduce", 1.0)]  # split-K: two dispatches, one op
    events += [(F, 30.0), ("gemm", 6.0), ("reduce", 1.5)]
    events += [(F, 30.0), ("warm", 9.0), (F, 30.0), ("gemm", 7.0), ("reduce", 2.0)]
    times, per_name = attribute_dispatches(events, F, 5, drop={0, 3})
    assert times == [6.0, 7.5, 9.0]
    assert per_name == {"0:gemm": 6.0, "1:reduce": 1.5}
    with pytest.raises(RuntimeError, match="saw 5 op invocations with kernels, expected 6"):
        attribute_dispatches(events, F, 6)


def test_the_harness_own_kernels_between_flushes_are_not_the_op():
    """A rank's lockstep launch is flush, idle wait, rank barrier, op: only the op's dispatches are its time, and an
    op kernel whose name merely contains 'barrier' (the fused kernel's symmetric-memory barriers) stays in."""
    from harness.worker.timing import attribute_dispatches

    F = "_harness_l2_flush"
    events = []
    for gemm in (20.0, 22.0):
        events += [(F, 85.0), ("_harness_idle", 40.0), ("_harness_rank_barrier", 3.0)]
        events += [("c10d::symmetric_memory::barrier_kernel", 2.0), ("gemm", gemm), ("barrier_kernel", 1.0)]
    times, per_name = attribute_dispatches(events, F, 2)
    assert times == [23.0, 25.0]
    assert set(per_name) == {"0:c10d::symmetric_memory::barrier_kernel", "1:gemm", "2:barrier_kernel"}


def test_auto_launch_count_and_gap():
    from harness.worker.timing import AUTO_MIN_LAUNCHES, auto_idle_s, auto_launches

    assert auto_launches(1.0) == 100  # tiny kernels: capped
    assert auto_launches(1000.0) == 40  # ~40 ms of kernel time
    assert auto_launches(6000.0) == AUTO_MIN_LAUNCHES == 30  # ms-long: the floor
    assert auto_idle_s(1000.0) == 0.002  # twice the kernel's time
    assert auto_idle_s(8000.0) == 0.010  # at most 10 ms


def test_a_rank_opens_each_gate_only_once_the_next_chunk_is_queued():
    """Lockstep (harness/worker/group.py): the GPU runs a chunk of GATE_EVERY launches from its queue while the host
    queues the next one behind a new gate; the last gate opens after the last launch is queued."""
    from harness.worker.group import GATE_EVERY
    from harness.worker.timing import Gates

    log: list[str] = []

    class Step:
        n = 0

        def gate(self):
            Step.n += 1
            k = Step.n
            log.append(f"gate{k}")
            return lambda: log.append(f"open{k}")

    gates = Gates(Step())
    for i in range(2 * GATE_EVERY + 1):
        gates.before_launch()
        log.append(f"L{i}")
    gates.open()
    gates.open()  # idempotent: a finally after a normal end
    g = GATE_EVERY
    assert log[:2] == ["gate1", "L0"]
    assert log[g : g + 4] == [f"L{g - 1}", "gate2", "open1", f"L{g}"]
    assert log[-3:] == ["open2", f"L{2 * g}", "open3"] and log.count("open3") == 1
    assert Gates(None).before_launch() is None  # one GPU: no gates

"""The options a run measures with."""

from __future__ import annotations


def test_inputs_move_only_where_the_worker_times_each_launch():
    from harness.run.options import RunOptions
    from harness.run.options import moves_inputs as _moves_inputs

    on = RunOptions()
    assert _moves_inputs(on, "cupti") and _moves_inputs(on, "events")
    assert not _moves_inputs(on, "wallclock")  # the CPU interpreter: nothing to move
    assert not _moves_inputs(on, "rocprofv3")  # markers bracket a whole rep: the copies would sit inside it
    assert not _moves_inputs(RunOptions(shuffle_placement=False), "cupti")
    assert not _moves_inputs(RunOptions(move_inputs=False), "cupti")

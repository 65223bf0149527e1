"""Which process times each rep and in which order the envs take their turns (run/schedule.py): every env as often
early as late, the processes' start order turning with the epoch, so that a slot that favours its occupant
favours every stack alike."""

from __future__ import annotations

import pytest

from harness.run.schedule import FIRST_EXTRA_EPOCH, balanced_mean, epoch_of_round, positions, round_order


def test_the_first_reps_split_over_the_processes_the_rule_s_extra_reps_in_the_last():
    assert [epoch_of_round(r, 3, 2) for r in range(1, 6)] == [0, 0, 1, 1, 1]
    assert [epoch_of_round(r, 4, 2) for r in range(1, 6)] == [0, 0, 1, 1, 1]
    assert [epoch_of_round(r, 3, 3) for r in range(1, 6)] == [0, 1, 2, 2, 2]
    assert [epoch_of_round(r, 3, 1) for r in range(1, 6)] == [0] * 5
    assert max(epoch_of_round(r, 1, 9) for r in range(1, 6)) < FIRST_EXTRA_EPOCH  # re-measuring epochs are apart


def test_the_order_turns_with_the_epoch_and_reverses_within_it():
    assert [round_order(2, r, 0, 1) for r in (1, 2)] == [[0, 1], [1, 0]]
    assert [round_order(2, r, 1, 3) for r in (3, 4)] == [[1, 0], [0, 1]]  # epoch 1: env 1 starts its process first
    assert round_order(3, 1, 0, 1) == [0, 1, 2] and round_order(3, 3, 1, 3) == [1, 2, 0]


@pytest.mark.parametrize("n", [2, 3])
def test_over_two_epochs_of_two_rounds_every_env_sits_in_the_middle_on_average(n):
    orders = [round_order(n, r, e, s) for r, e, s in ((1, 0, 1), (2, 0, 1), (3, 1, 3), (4, 1, 3))]
    assert positions(orders, n) == pytest.approx([(n - 1) / 2] * n)


def _aa(bias_pct: float, first_starter: list[int]) -> float:
    """An A/A (one stack twice) whose processes carry a start-order bias: the process that starts first in its
    epoch reads ``bias_pct`` faster, everything else equal. Each env's time is schedule.balanced_mean of its reps;
    returns Δ% of env 1 against env 0."""
    reps: dict[int, list[float]] = {0: [], 1: []}
    procs: dict[int, list[int]] = {0: [], 1: []}
    for epoch, first in enumerate(first_starter):
        for env in (0, 1):
            for _ in range(2):
                reps[env].append(100.0 * (1 - bias_pct / 100 if env == first else 1.0))
                procs[env].append(epoch)
    g, t = (balanced_mean(reps[k], procs[k]) for k in (0, 1))
    return 100.0 * (t / g - 1.0)


def test_a_start_order_bias_cancels_under_the_schedule_and_shows_without_it():
    """The test that would catch a slot bias in the schedule: the env that starts its process first in each
    epoch (round_order's first) is favoured. Turned with the epoch, the A/A reads 0; the order of before (env 0
    always first) reads the whole bias as a difference between two identical stacks."""
    turned = [round_order(2, 1, e, 1)[0] for e in range(2)]
    assert turned == [0, 1]
    assert _aa(10.0, turned) == pytest.approx(0.0)
    assert _aa(10.0, [0, 0]) == pytest.approx(100 / 90 * 100 - 100)  # +11.1 %: a confident false flag


def test_balanced_mean_gives_every_process_one_vote():
    assert balanced_mean([10.0, 10.0, 13.0], [0, 0, 1]) == pytest.approx(11.5)  # not 11.0, the mean of the reps
    assert balanced_mean([10.0, 12.0], [0, 0]) == pytest.approx(11.0)

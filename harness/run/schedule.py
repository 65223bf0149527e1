"""Which worker process times each rep, and in which order the envs of an interleaved run take their turns. Pure.

**Processes.** A process (a worker, or a worker group at W > 1) lands its inputs, code and context somewhere, and
some kernels move by several % with that placement: between two processes of one stack the same case read 1-12 %
apart on two H100s while the reps inside each agreed within 0.2 %. Reps of one process cannot see that noise. So
each env's reps come from ``processes`` **epochs**: at an epoch's first round every env's workers are closed and
new ones started, and each rep is labelled with its epoch (``rep_procs``), from which compare estimates the
between-process spread of every case. The stability rule's first reps are split over the epochs as evenly as
they go, the earlier epochs taking the extra (3 reps over 2 processes: 2 + 1); its reps 4 and 5 go to the last
main epoch. Every re-measuring pass after the stability rule is a fresh epoch of its own, numbered from
FIRST_EXTRA_EPOCH on, so that compare tells the first pass (epochs below it) from its confirmations.

**Order.** Within a round each case is timed under every env back to back. The order of the envs turns with the
epoch (env k of n goes first in epoch k mod n, so the order in which the epochs' processes start and allocate
turns too) and reverses every round within an epoch (A B, B A, ...): over a run each env is as often early as
late, and a slot that favours its occupant (the first process to allocate, the one that runs right after a peer)
favours every env alike instead of one stack.
"""

from __future__ import annotations

# the epoch number of the first re-measuring pass: every main epoch is below it (the stability rule takes at most
# 5 rounds, so even a new process every round stays below); the results contract's, which compare reads
from harness.results.schema import FIRST_EXTRA_EPOCH

__all__ = ["FIRST_EXTRA_EPOCH", "balanced_mean", "epoch_of_round", "positions", "round_order"]


def epoch_of_round(rnd: int, reps: int, processes: int) -> int:
    """The main epoch of round ``rnd`` (1-based) for ``reps`` first reps over ``processes`` processes; rounds
    beyond ``reps`` (the stability rule's 4 and 5) stay in the last. ``processes`` 1: always 0."""
    if processes <= 1 or reps <= 0:
        return 0
    return min(processes - 1, (rnd - 1) * processes // reps, FIRST_EXTRA_EPOCH - 1)


def round_order(n: int, rnd: int, epoch: int, epoch_start: int) -> list[int]:
    """The env order of round ``rnd``, the ``(rnd - epoch_start)``-th round of ``epoch``: the envs turned by the
    epoch, reversed on every other round of it."""
    base = [(k + epoch) % n for k in range(n)]
    return base if (rnd - epoch_start) % 2 == 0 else base[::-1]


def balanced_mean(reps: list[float], procs: list[int]) -> float:
    """A case's time from reps of several processes: the mean of each process's mean, every process one equal
    vote (a process that took two reps is not twice as likely to be right about its placement); never outside
    the reps through rounding."""
    by: dict[int, list[float]] = {}
    for r, p in zip(reps, procs, strict=True):
        by.setdefault(p, []).append(r)
    means = [sum(v) / len(v) for v in by.values()]
    return min(max(sum(means) / len(means), min(reps)), max(reps))


def positions(orders: list[list[int]], n: int) -> list[float]:
    """Each env's mean position (0: first) over the rounds' ``orders``: equal for every env when the order is
    balanced (the sidecar's record of a run, and the test of the schedule, read it)."""
    seen = [0.0] * n
    count = [0] * n
    for order in orders:
        for pos, k in enumerate(order):
            seen[k] += pos
            count[k] += 1
    return [s / c if c else float("nan") for s, c in zip(seen, count, strict=True)]

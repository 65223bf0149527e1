"""The re-measuring passes of a run that holds its undecided cases (remeasure.Board): extra reps of the cases the
board names, each pass in worker processes of its own, until it names none; then each held case's row, its time
pooled over every rep. A mixin of runner.SuiteRun; and the processes' part in a run: which worker process epoch
a round runs in, how a case's time is made from several processes' reps."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from harness.run import schedule
from harness.run.cases import CaseState, rejudged, result_row
from harness.run.options import RunOptions
from harness.verdict import stability
from harness.verdict.remeasure import CHECKPOINT, pooled_time


def labels_processes(opts: RunOptions) -> bool:
    """Whether a run times its reps in several worker processes and labels each rep with its process
    (``rep_procs``): the default; ``--processes 1`` is the one-process method of before, which writes no labels."""
    return opts.processes > 1 or opts.fresh_process_rounds


def case_time(st: CaseState, reps: int, otherwise: float | None) -> float | None:
    """A timed case's time from its first ``reps`` reps where they came from several labelled processes: every
    process's mean an equal vote (schedule.balanced_mean); ``otherwise`` (the stability rule's value, the pooled
    mean of a re-measured case) for a run of one process."""
    times, procs = st.reps[:reps], st.procs[:reps]
    if st.label_procs and len(set(procs)) > 1:
        return schedule.balanced_mean(times, procs)
    return otherwise


def main_epoch(opts: RunOptions, rnd: int) -> int:
    """The worker process epoch of main round ``rnd`` (schedule.epoch_of_round; a new one every round with
    --fresh-process-rounds)."""
    if opts.fresh_process_rounds:
        return min(rnd - 1, schedule.FIRST_EXTRA_EPOCH - 1)
    return schedule.epoch_of_round(rnd, opts.reps, opts.processes)


class Passes:
    """SuiteRun's re-measuring passes (it holds the state: board, held, gave_up, passes, total)."""

    def _remeasure(self, rnd: int) -> Generator[tuple[int, str], None, None]:
        """Passes of extra reps for the held cases the driver names (Board.more), until it names none; then every
        held case is written, its time pooled over all its reps where it got more."""
        board, index = self.board
        while True:
            board.held[index] = {
                st.key: (self._held_row(st), len(st.reps) - st.base_reps, st.key not in self.gave_up)
                for st in self.held
            }
            yield rnd, CHECKPOINT
            want = {st.key: len(st.reps) + board.more[st.key] for st in self.held if board.more.get(st.key)}
            todo = [st for st in self.held if st.key in want and st.key not in self.gave_up]
            if not todo:
                break
            if labels_processes(self.opts):  # every pass in processes of its own: it confirms the first pass
                self._enter_epoch(schedule.FIRST_EXTRA_EPOCH + self.passes, rnd)
            self.passes += 1
            self.total += sum(want[st.key] - len(st.reps) for st in todo)
            while todo:
                yield from self._extra_round(rnd, todo)
                rnd += 1
                todo = [st for st in todo if len(st.reps) < want[st.key] and st.key not in self.gave_up]
        for st in self.held:
            self._finish(st, self._held_row(st))

    def _extra_round(self, rnd: int, todo: list[CaseState]) -> Generator[tuple[int, str], None, None]:
        """One extra rep of each case in ``todo``. A rep that fails (a hang, a crash) ends that case's
        re-measuring and keeps what it had: nothing measured is dropped for a later failure."""
        for st in todo:
            st.request["rep"] = len(st.reps)
            yield rnd, st.key
            ans = self._ask(self._time_request(st))
            if ans.get("status") != "ok" or ans.get("time_us") is None:
                self.gave_up.add(st.key)
                self._tick(st.case.case_id)
            else:
                self._record(st, ans)

    def _held_row(self, st: CaseState) -> dict[str, Any]:
        """A held case's row: the stability rule's while it has no extra reps, else its time pooled over all."""
        row = st.final
        if len(st.reps) > st.base_reps:
            reps = list(st.reps)
            value = case_time(st, len(reps), pooled_time(reps))
            status, error = rejudged(st, row)
            d = stability.Decision(False, value, status, tuple(reps), f"mean of {len(reps)}")
            row = result_row(st, status, time_us=d.value, decision=d, timing=self.timing, error=error)
        row["gpu"] = self._gpu_of(int(st.request["world_size"]))
        return row

"""Every env's reps from several worker processes, each rep labelled with its process; every re-measuring pass in
fresh ones; the order of the envs balanced and recorded (run/schedule.py). A real interleaved run on the CPU
interpreter, its processes counted by their logs."""

from __future__ import annotations

import json
import sys

import pytest

from harness.results.load import load_results
from harness.results.schema import FIRST_EXTRA_EPOCH
from tests.conftest import DATA

pytestmark = pytest.mark.slow

SUITE = "name: s\ndefaults: {dtype: fp16}\nentries:\n  - kernel: batched_gemm_bf16\n    B: 1\n    N: 32\n    K: 64\n    M: [16, 32]\n"


class OnePass:
    """Undecided at the first look (every case gets one pass), decided at the second."""

    def __init__(self) -> None:
        self.looks = 0

    def __call__(self, cases):
        self.looks += 1
        return set() if self.looks == 1 else set(cases)


def _run(tmp_path, monkeypatch, processes: int):
    from harness.envs.spec import load_env_spec
    from harness.inputs.suite import load_suite
    from harness.run.interleave import run_interleaved
    from harness.run.options import RunOptions
    from harness.verdict.remeasure import Budget, Remeasure

    monkeypatch.setenv("HARNESS_TEST_PYTHON", sys.executable)
    suite = tmp_path / "s.yaml"
    suite.write_text(SUITE)
    spec = load_env_spec(str(DATA / "cpu-env.yaml"))
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    opts = RunOptions(launches=1, heat_s=0, processes=processes,
                      remeasure=Remeasure(OnePass(), Budget(extra_reps=2, step=2, share=0.0)))  # fmt: skip
    run_interleaved([(spec, a), (spec, b)], load_suite(suite), opts)
    return a, b


def _workers(out) -> int:
    """Worker processes a run started for ``out``: one log each."""
    return len(list(out.parent.joinpath(out.name + ".logs").glob("worker-*.log")))


def test_two_processes_a_stack_and_a_fresh_one_for_the_confirming_pass(tmp_path, monkeypatch):
    a, b = _run(tmp_path, monkeypatch, processes=2)
    for out in (a, b):
        df = load_results(out)
        for reps, procs in zip(df["rep_times_us"], df["rep_procs"], strict=True):
            reps, procs = json.loads(reps), json.loads(procs)
            main = [p for p in procs if p < FIRST_EXTRA_EPOCH]
            assert main in ([0, 0, 1], [0, 0, 1, 1, 1]) and len(procs) == len(reps)
            # the pass that the share of 0 would cut for time still ran: it confirms, one rep in an epoch of its own
            assert procs[len(main) :] == [FIRST_EXTRA_EPOCH]
        assert _workers(out) == 3  # the first epoch's, the second's, the confirming pass's
        side = json.loads(out.with_name(out.name + ".env.json").read_text())
        sched, rem = side["schedule"], side["remeasure"]
        assert sched["envs"] == ["cpu", "cpu"] and sched["processes"] == 2
        epochs = [r["epoch"] for r in sched["rounds"]]
        assert epochs[:3] == [0, 0, 1] and epochs[-1] == FIRST_EXTRA_EPOCH
        # within each epoch the order reverses every round; the second epoch starts with the other env
        orders = {r["round"]: r["order"] for r in sched["rounds"]}
        assert orders[1] == [0, 1] and orders[2] == [1, 0] and orders[3] == [1, 0]
        assert rem["fresh_processes"] is True and rem["passes"] == 1 and rem["stopped"] == "decided"
        assert rem["confirming_s"] > 0  # the share counts the passes after it


def test_passes_after_the_confirming_one_stop_at_the_time_share(tmp_path, monkeypatch):
    from harness.envs.spec import load_env_spec
    from harness.inputs.suite import load_suite
    from harness.run.interleave import run_interleaved
    from harness.run.options import RunOptions
    from harness.verdict.remeasure import Budget, Remeasure

    monkeypatch.setenv("HARNESS_TEST_PYTHON", sys.executable)
    suite = tmp_path / "s.yaml"
    suite.write_text(SUITE)
    spec = load_env_spec(str(DATA / "cpu-env.yaml"))
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    never = Remeasure(lambda cases: set(), Budget(extra_reps=6, step=2, share=0.0))
    run_interleaved([(spec, a), (spec, b)], load_suite(suite), RunOptions(launches=1, heat_s=0, remeasure=never))
    rem = json.loads(a.with_name("a.csv.env.json").read_text())["remeasure"]
    assert rem["passes"] == 1 and rem["stopped"] == "time"  # the confirming pass only: no share for more
    for procs in load_results(a)["rep_procs"]:
        assert json.loads(procs).count(FIRST_EXTRA_EPOCH) == 1


def test_one_process_is_the_method_of_before_and_labels_nothing(tmp_path, monkeypatch):
    a, _ = _run(tmp_path, monkeypatch, processes=1)
    df = load_results(a)
    assert "rep_procs" not in df.columns or (df["rep_procs"].fillna("") == "").all()
    assert _workers(a) == 1  # every rep, the pass's too, in the one worker
    assert json.loads(a.with_name("a.csv.env.json").read_text())["remeasure"]["fresh_processes"] is False

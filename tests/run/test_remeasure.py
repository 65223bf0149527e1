"""Measure again until decided: the pure policy (remeasure.py), and a real interleaved run on the CPU interpreter
whose referee asks for more reps of one case, appended to its reps, journaled, kept across a kill and resume."""

from __future__ import annotations

import json
import sys

import pytest

from harness.results.load import load_results
from harness.verdict.remeasure import Board, Budget, next_targets, pooled_time
from tests.conftest import DATA, ROOT

# -- the policy ----------------------------------------------------------------------------------------------


def test_next_targets_step_cap_and_time():
    b = Budget(extra_reps=5, step=2, share=0.5)
    assert next_targets({}, b, 0.0, 10.0) == ({}, "decided")
    assert next_targets({"a": 0, "b": 4}, b, 1.0, 10.0) == ({"a": 2, "b": 1}, "")
    assert next_targets({"a": 5}, b, 1.0, 10.0) == ({}, "reps")
    assert next_targets({"a": 0}, b, 5.1, 10.0) == ({}, "time")  # past half the run's time before re-measuring
    with pytest.raises(ValueError):
        Budget(step=0)


def test_board_asks_only_about_cases_held_under_every_env():
    board = Board(2)
    row = lambda t: {"time_us": t}  # noqa: E731
    board.held[0] = {"k1": (row(1.0), 0, True), "k2": (row(2.0), 2, True), "k3": (row(3.0), 0, True)}
    board.held[1] = {"k1": (row(1.5), 0, True), "k2": (row(2.5), 4, True)}  # k3 failed under env 1
    seen = []

    def referee(cases):  # all undecided cases at once, in key order
        seen.extend([r["time_us"] for r in rows] for rows in cases.values())
        return {k for k, rows in cases.items() if rows[0]["time_us"] == 1.0}  # decides k1 only

    assert board.undecided(referee) == {"k2": 4}  # the most extra reps either env had
    assert seen == [[1.0, 1.5], [2.0, 2.5]]  # every case held under both envs (k3 is not)
    board.held[1]["k2"] = (row(2.5), 4, False)  # an extra rep of k2 failed under env 1: no more of it
    assert board.undecided(referee) == {} and seen[2:] == []  # nothing open: the referee is not asked
    board.held[1]["k2"] = (row(2.5), 4, True)
    assert board.undecided(lambda cases: set()) == {"k2": 4}  # k1, decided before, stays decided


def test_board_measures_a_refused_multigpu_time_again_in_other_groups():
    """The referee has no verdict to decide for a time the guard refused (compare never judges it), so it would
    call it decided; the board keeps it open, since another worker group may measure it within the bounds."""
    board = Board(2)
    ok = {"status": "ok", "time_us": 10.0}
    skewed = {"status": "unstable", "time_us": 10.0, "error": "ranks disagree: skew 5.6 % > 5 % (rank_times_us)"}
    noisy = {"status": "unstable", "time_us": 10.0, "error": "unstable: reps spread 9 %"}  # the stability rule's
    board.held[0] = {"k1": (ok, 0, True), "k2": (ok, 0, True), "k3": (noisy, 0, True)}
    board.held[1] = {"k1": (ok, 0, True), "k2": (skewed, 0, True), "k3": (ok, 0, True)}
    everything = lambda cases: set(cases)  # noqa: E731
    assert board.undecided(everything) == {"k2": 0}
    board.held[1]["k2"] = ({**ok, "time_us": 10.1}, 1, True)  # a fresh group's ranks agreed
    assert board.undecided(everything) == {}


def test_pooled_time_is_the_mean_of_every_rep():
    assert pooled_time([10.0, 11.0, 12.0, 11.0]) == pytest.approx(11.0)


# -- a real interleaved run ----------------------------------------------------------------------------------

SUITE = "name: s\ndefaults: {dtype: fp16}\nentries:\n  - kernel: batched_gemm_bf16\n    B: 1\n    N: 32\n    K: 64\n    M: [16, 32]\n"


class Referee:
    """Undecided for M16 until ``until`` reps under every env; M32 always decided. Records every call."""

    def __init__(self, until: int, stop_after: int | None = None):
        self.until, self.stop_after, self.calls = until, stop_after, []
        self.done: set[str] = set()

    def __call__(self, cases):  # every held case, those it decided before too (they stay decided)
        decided = set()
        for key, rows in cases.items():
            if key in self.done:
                continue
            self.calls.append((rows[0]["case_id"], [r["reps"] for r in rows]))
            if self.stop_after is not None and len(self.calls) > self.stop_after:
                raise KeyboardInterrupt  # the run is killed while it re-measures
            if "_M32_" in rows[0]["case_id"] or min(r["reps"] for r in rows) >= self.until:
                decided.add(key)
        self.done |= decided
        return decided


@pytest.fixture
def setup(tmp_path, monkeypatch):
    from harness.envs.spec import load_env_spec
    from harness.inputs.suite import load_suite
    from harness.run.workers import WorkerProc

    monkeypatch.setenv("HARNESS_TEST_PYTHON", sys.executable)
    suite = tmp_path / "s.yaml"
    suite.write_text(SUITE)
    timed: list[tuple[str, str]] = []
    real = WorkerProc.request

    def spy(self, obj, timeout):
        if obj["op"] == "time":
            timed.append((self.log_name, obj["case"]["case_id"]))
        return real(self, obj, timeout)

    real_init = WorkerProc.__init__

    def init(self, spec, timing, log_dir, *a, **kw):
        real_init(self, spec, timing, log_dir, *a, **kw)
        self.log_name = "A" if str(log_dir).endswith("a.csv.logs") else "B"

    monkeypatch.setattr(WorkerProc, "request", spy)
    monkeypatch.setattr(WorkerProc, "__init__", init)
    spec = load_env_spec(str(DATA / "cpu-env.yaml"))
    return spec, load_suite(suite), tmp_path / "a.csv", tmp_path / "b.csv", timed


def _run(setup, referee, budget=Budget(extra_reps=6, step=2, share=100.0), resume=False):
    from harness.run.interleave import run_interleaved
    from harness.run.options import RunOptions
    from harness.verdict.remeasure import Remeasure

    spec, cases, a, b, _ = setup
    # one process an env: the passes' mechanics (targets, budget, pooling, resume) in the method of before;
    # tests/run/test_processes.py runs them in fresh processes
    opts = RunOptions(launches=1, heat_s=0, resume=resume, remeasure=Remeasure(referee, budget), processes=1)
    return run_interleaved([(spec, a), (spec, b)], cases, opts)


def _rows(path):
    df = load_results(path)
    return {r.case_id.split("_")[1]: r for r in df.itertuples()}


@pytest.mark.slow
def test_an_undecided_case_gets_more_reps_interleaved_and_pooled(setup):
    spec, cases, a, b, timed = setup
    ref = Referee(until=7)
    _run(setup, ref)
    ra, rb = _rows(a), _rows(b)
    base = {k: r.reps for k, r in ra.items()}
    # M16: the stability rule's reps (3 or 5, each env its own) and passes of 2 each until both have 7 or more: the
    # passes stop at the first where the fewer reaches 7, and give both envs the same extra reps
    fewer, more = sorted((ra["M16"].reps, rb["M16"].reps))
    assert fewer >= 7 and fewer - 7 < 2 and more - fewer in (0, 2)
    assert ra["M32"].reps in (3, 5) and rb["M32"].reps in (3, 5)  # decided at once: no extra rep
    for r in (ra["M16"], rb["M16"]):
        reps = json.loads(r.rep_times_us)
        assert len(reps) == r.reps and r.time_us == pytest.approx(sum(reps) / len(reps), rel=1e-3)
    # the extra reps alternate between the envs, case by case, as the first rounds do
    m16 = [w for w, c in timed if "_M16_" in c]
    last_pass = m16[-4:]  # two extra reps under each env: A B, B A (or B A, A B)
    assert last_pass[0] != last_pass[1] and last_pass[2] != last_pass[3] and last_pass[1] == last_pass[2]
    side = json.loads((a.parent / "a.csv.env.json").read_text())["remeasure"]
    assert side["undecided_at_first"] == 1 and side["stopped"] == "decided" and side["still_undecided"] == []
    assert [c for c, _ in ref.calls].count("B1_M32_N32_K64_fp16") == 1  # decided: never asked again
    assert base["M16"] >= 7


@pytest.mark.slow
def test_the_budget_stops_a_case_that_never_decides(setup):
    spec, cases, a, b, timed = setup
    _run(setup, Referee(until=10**6), budget=Budget(extra_reps=4, step=2, share=100.0))
    ra, rb = _rows(a), _rows(b)
    side = json.loads((a.parent / "a.csv.env.json").read_text())["remeasure"]
    assert side["stopped"] == "reps" and side["still_undecided"] == ["batched_gemm_bf16/B1_M16_N32_K64_fp16"]
    assert side["passes"] == 2
    for r in (ra["M16"], rb["M16"]):
        assert r.reps in (3 + 4, 5 + 4)


@pytest.mark.slow
def test_a_run_killed_while_remeasuring_keeps_every_rep_on_resume(setup):
    spec, cases, a, b, timed = setup
    with pytest.raises(KeyboardInterrupt):
        _run(setup, Referee(until=9, stop_after=2))  # killed the third time it is asked: after one pass
    assert not a.exists() or "_M16_" not in a.read_text()  # the held rows were not written yet
    journaled = [json.loads(x) for x in (a.parent / "a.csv.journal.jsonl").read_text().splitlines()]
    had = sum(1 for e in journaled if e["kind"] == "rep" and "_M16_" in e["key"])
    assert had >= 5  # the first rounds and one pass of extra reps
    timed.clear()
    _run(setup, Referee(until=9), resume=True)
    ra = _rows(a)
    assert ra["M16"].reps >= 9
    again = [c for w, c in timed if w == "A" and "_M16_" in c]
    assert len(again) == ra["M16"].reps - had  # nothing measured before was measured again


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "harness" / "run").glob("*.py")))
def test_the_run_stage_never_imports_the_rule(name):
    """Data flows one way (run → results → compare): the referee is injected, never imported."""
    from tests.worker.test_imports import imports

    for line, mod in imports(ROOT / "harness" / "run" / name):
        assert not mod.startswith(("harness.compare", "harness.retune", "harness.bisect")), f"{name}:{line}: {mod}"


@pytest.mark.slow
def test_the_cli_referees_with_the_rule(tmp_path):
    """`harness run --with-env` re-measures by default (AITER's rule referees, injected by the CLI), and records
    what it did; --no-remeasure runs the stability rule's reps only."""
    import os
    import subprocess

    env = {**os.environ, "HARNESS_TEST_PYTHON": sys.executable, "PYTHONPATH": str(ROOT), "COLUMNS": "80"}
    suite = tmp_path / "s.yaml"
    suite.write_text(SUITE)
    for flag, name in (("--remeasure", "on"), ("--no-remeasure", "off")):
        a, b = tmp_path / f"{name}-a.csv", tmp_path / f"{name}-b.csv"
        cpu = DATA / "cpu-env.yaml"
        args = [
            "run",
            "--env",
            cpu,
            "--suite",
            suite,
            "--out",
            a,
            "--with-env",
            cpu,
            "--with-out",
            b,
            "--launches",
            "1",
        ]
        r = subprocess.run([sys.executable, "-m", "harness", *map(str, args), flag, "--remeasure-reps", "2"],
                           capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)  # fmt: skip
        assert r.returncode == 0, r.stderr
        side = json.loads((tmp_path / f"{name}-a.csv.env.json").read_text())
        reps = load_results(a)["reps"]
        if name == "off":
            assert "remeasure" not in side and set(reps) <= {3, 5}
            continue
        done = side["remeasure"]
        # fresh processes a pass: one rep a case each, so 2 extra reps are up to 2 passes
        assert done["budget"] == {"extra_reps": 2, "step": 1, "share": 0.3}
        assert done["stopped"] in ("decided", "reps", "time") and done["passes"] <= 2
        assert len(done["still_undecided"]) <= done["undecided_at_first"] <= 2
        assert set(reps) <= {3, 4, 5, 6, 7}  # the stability rule's 3 or 5, and at most 2 extra reps

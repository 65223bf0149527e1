"""Several environments in one run, their reps interleaved in time."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness.results.load import load_results
from tests.conftest import DATA, cli


@pytest.mark.slow
def test_interleaved_runs_alternate_envs_case_by_case(tmp_path, monkeypatch):
    """--with-env: after each env's prepare phase, every (round, case) is timed under both envs back to back,
    the order reversed each round; each env still writes its own complete results file."""
    from harness.envs.spec import load_env_spec
    from harness.inputs.suite import load_suite
    from harness.run.interleave import run_interleaved
    from harness.run.options import RunOptions
    from harness.run.workers import WorkerProc

    monkeypatch.setenv("HARNESS_TEST_PYTHON", sys.executable)
    suite = tmp_path / "s.yaml"
    suite.write_text(
        "name: s\ndefaults: {dtype: fp16}\nentries:\n"
        "  - kernel: batched_gemm_bf16\n    B: 1\n    N: 32\n    K: 64\n    M: [16, 32]\n"
    )
    log: list[tuple[str, str, str]] = []
    real = WorkerProc.request

    def spy(self, obj, timeout):
        ans = real(self, obj, timeout)
        if obj["op"] in ("prepare", "time"):
            log.append((self.log_name, obj["op"], obj["case"]["case_id"]))
        return ans

    monkeypatch.setattr(WorkerProc, "request", spy)
    real_init = WorkerProc.__init__

    def init(self, spec, timing, log_dir, *a, **kw):
        real_init(self, spec, timing, log_dir, *a, **kw)
        self.log_name = str(log_dir)

    monkeypatch.setattr(WorkerProc, "__init__", init)
    spec = load_env_spec(str(DATA / "cpu-env.yaml"))
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    counts = run_interleaved([(spec, a), (spec, b)], load_suite(suite), RunOptions(launches=1, heat_s=0))
    # wallclock on the interpreter with 1 launch a rep: a case may end `unstable`; the order is what is tested
    assert [sum(c.get(k, 0) for k in ("ok", "unstable")) for c in counts] == [2, 2]
    la, lb = str(a) + ".logs", str(b) + ".logs"
    who = {la: "A", lb: "B"}
    ops = [(who[w], op, c) for w, op, c in log]
    assert [o[:2] for o in ops[:4]] == [("A", "prepare"), ("A", "prepare"), ("B", "prepare"), ("B", "prepare")]
    times = [(w, c) for w, op, c in ops if op == "time"]
    m16, m32 = sorted({c for _, c in times})
    assert times[:8] == [("A", m16), ("B", m16), ("A", m32), ("B", m32), ("B", m16), ("A", m16), ("B", m32), ("A", m32)]
    for out in (a, b):
        assert len(load_results(out)) == 2 and (out.parent / (out.name + ".env.json")).exists()


def test_interleaved_cli_refuses_mismatched_options(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HARNESS_TEST_PYTHON", sys.executable)
    code, _, err = cli(capsys, "run", "--env", DATA / "cpu-env.yaml", "--suite", DATA / "slow.yaml", "--out",
                       tmp_path / "a.csv", "--with-env", DATA / "cpu-env.yaml")  # fmt: skip
    assert code == 2 and "--with-env given 1 time but --with-out 0 times" in err


@pytest.mark.slow
def test_interleaved_envs_start_together_and_the_last_one_heats(tmp_path, monkeypatch):
    """Every env's worker process is started before the first env asks its worker anything (torch and Triton
    import side by side), each env takes its own (its log in its OUT.logs), no worker is started twice; and
    only the last env to prepare heats the GPU they share, right before the first timed rep."""
    from harness.envs.spec import load_env_spec
    from harness.inputs.suite import load_suite
    from harness.run.interleave import run_interleaved
    from harness.run.options import RunOptions
    from harness.run.runner import SuiteRun
    from harness.run.workers import WorkerProc

    monkeypatch.setenv("HARNESS_TEST_PYTHON", sys.executable)
    suite = tmp_path / "s.yaml"
    suite.write_text("name: s\nentries:\n  - kernel: batched_gemm_bf16\n    B: 1\n    N: 32\n    K: 64\n    M: 16\n")
    events: list[tuple[str, str]] = []
    real_init, real_request = WorkerProc.__init__, WorkerProc.request

    def init(self, spec, timing, log_dir, *a, **kw):
        real_init(self, spec, timing, log_dir, *a, **kw)
        events.append(("start", str(log_dir)))

    def request(self, obj, timeout):
        events.append((obj["op"], str(self.log_path.parent)))
        return real_request(self, obj, timeout)

    heats: list[tuple[str, bool]] = []
    real_heat = SuiteRun._heat

    def heat(self):
        heats.append((self.out.name, self.heat))
        real_heat(self)

    monkeypatch.setattr(WorkerProc, "__init__", init)
    monkeypatch.setattr(WorkerProc, "request", request)
    monkeypatch.setattr(SuiteRun, "_heat", heat)
    spec = load_env_spec(str(DATA / "cpu-env.yaml"))
    outs = [tmp_path / f"{n}.csv" for n in ("a", "b", "c")]  # one spec three times: one pool key for all
    run_interleaved([(spec, o) for o in outs], load_suite(suite), RunOptions(launches=1, heat_s=0))
    starts = [d for op, d in events if op == "start"]
    assert starts == [str(o) + ".logs" for o in outs]
    assert [op for op, _ in events[:3]] == ["start"] * 3
    hellos = [d for op, d in events if op == "hello"]
    assert hellos == starts  # each env's hello went to the worker started in its own logs folder
    assert heats == [("a.csv", False), ("b.csv", False), ("c.csv", True)]
    for o in outs:
        assert len(load_results(o)) == 1


def test_the_compare_an_interleaved_run_was_made_for(monkeypatch):
    """golden, TOT, golden again: compare golden with TOT, judged with the repeat as its A/A (--aa); golden twice
    alone is the A/A itself; one env, nothing."""
    from dataclasses import replace

    from harness.envs.spec import load_env_spec
    from harness.run.interleave import compare_command

    monkeypatch.setenv("HARNESS_TEST_PYTHON", sys.executable)
    g = load_env_spec(str(DATA / "cpu-env.yaml"))
    t = replace(g, name="tot")
    p = [Path(f"{n}.csv") for n in ("g", "t", "g 2")]
    assert compare_command([(g, p[0]), (t, p[1]), (g, p[2])]) == "harness compare g.csv t.csv --aa 'g 2.csv'"
    assert compare_command([(g, p[0]), (t, p[1])]) == "harness compare g.csv t.csv"
    assert compare_command([(g, p[0]), (g, p[2])]) == "harness compare g.csv 'g 2.csv'"
    assert compare_command([(g, p[0])]) == ""

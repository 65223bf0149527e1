"""The runner end to end on the CPU interpreter: real worker processes, user kernels loaded by path that fail to
compile, crash, hang or answer wrongly, and a run killed with SIGKILL then resumed."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from harness.results.load import load_results
from harness.results.schema import sidecar_path
from tests.conftest import DATA, ROOT, cli

pytestmark = pytest.mark.slow
ENV = {**os.environ, "HARNESS_TEST_PYTHON": sys.executable, "PYTHONPATH": str(ROOT), "COLUMNS": "160"}


def harness(*args, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "harness", *map(str, args)],
        capture_output=True,
        text=True,
        env=ENV,
        cwd=ROOT,
        timeout=timeout,
    )


def test_faults_become_statuses_and_the_run_goes_on(tmp_path):
    out = tmp_path / "faults.csv"
    r = harness(
        "run",
        "--env",
        DATA / "cpu-env.yaml",
        "--suite",
        DATA / "faults.yaml",
        "--out",
        out,
        "--timeout",
        "10",  # the hang's cost: it is killed after this long
        "--launches",
        "2",
    )
    assert r.returncode == 0, r.stderr[-2000:]
    df = load_results(out).set_index("kernel")
    st = df["status"].to_dict()
    # the good kernel is timed; 2 wallclock launches of an interpreted kernel on a busy 2-core CI machine may
    # disagree by > 5 % across the reps, which the stability rule reports as "unstable" (a timed status)
    assert st.pop("good") in ("ok", "unstable")
    assert df.loc["good", "time_us"] > 0
    assert st == {
        "compile_fail": "compile_error",
        "crash": "runtime_error",
        "hang": "timeout",
        "wrong": "incorrect",
        "unwritten": "incorrect",
    }  # a missing kernel file is refused when the suite loads (tests/test_suite.py)
    assert "SIGABRT" in df.loc["crash", "error"]
    assert "multiple of 3" in df.loc["compile_fail", "error"]
    assert "never written" in df.loc["unwritten", "error"]
    assert "no answer within 10 s" in df.loc["hang", "error"]
    good = df.loc["good"]
    assert good["time_us"] > 0 and good["reps"] >= 3 and good["rel_err"] < 1e-2
    assert json.loads(good["rep_times_us"])
    env = json.loads(sidecar_path(out).read_text())
    assert env["timing"] == "wallclock" and "for CI and demos only" in env["timing_note"]
    assert env["knobs"]["TRITON_DEFAULT_FP_FUSION"] == "1" and env["triton"]["version"]


def test_a_lost_gpu_context_fails_only_the_case_that_lost_it(tmp_path):
    """After an illegal address every CUDA call of that process fails: the worker answers, exits, and the next
    case gets a fresh one (on the H100 one bad config otherwise failed the 67 cases after it)."""
    out = tmp_path / "lost.csv"
    r = harness("run", "--env", DATA / "cpu-env.yaml", "--suite", DATA / "context_loss.yaml", "--out", out,
                "--launches", "1", "--compile-jobs", "2")  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    df = load_results(out).set_index("kernel")
    st = df["status"].to_dict()
    assert st.pop("lose_context") == "runtime_error"
    # the other two were timed: one wallclock launch a rep on a busy 2-core CI machine may read "unstable"
    assert {k: v in ("ok", "unstable") for k, v in st.items()} == {
        "after_lost": True,
        "good": True,
    }
    assert (df.loc[["after_lost", "good"], "time_us"] > 0).all()
    err = df.loc["lose_context", "error"]
    assert "illegal memory access" in err and "GPU context lost (simulated)" in err and "fresh one" in err


def test_registered_kernels_with_shared_case_ids_are_timed_separately(tmp_path):
    """Two kernels with the same case_id must not share prepared state in the worker."""
    suite = tmp_path / "two.yaml"
    suite.write_text(
        f"name: two\ndefaults: {{dtype: fp16}}\nentries:\n"
        f"  - kernel: [batched_gemm_bf16, {DATA / 'user_kernels.py'}:wrong]\n    B: 1\n    N: 32\n    K: 64\n"
        "    M: [16]\n    config: {BLOCK_SIZE_M: 16, BLOCK_SIZE_N: 16, BLOCK_SIZE_K: 32, GROUP_SIZE_M: 1}\n"
    )
    out = tmp_path / "two.csv"
    r = harness("run", "--env", DATA / "cpu-env.yaml", "--suite", suite, "--out", out, "--launches", "1")
    assert r.returncode == 0, r.stderr[-2000:]
    df = load_results(out).set_index("kernel")
    assert df["case_id"].nunique() == 1 and len(df) == 2
    # each row is its own kernel's: the shipped one right and timed, the broken one caught
    assert df.loc["batched_gemm_bf16", "status"] in ("ok", "unstable") and df.loc["wrong", "status"] == "incorrect"


def test_sigkill_then_resume_loses_and_duplicates_nothing(tmp_path, capsys, monkeypatch):
    out = tmp_path / "slow.csv"
    journal = tmp_path / "slow.csv.journal.jsonl"
    args = [
        sys.executable,
        "-m",
        "harness",
        "run",
        "--env",
        str(DATA / "cpu-env.yaml"),
        "--suite",
        str(DATA / "slow.yaml"),
        "--out",
        str(out),
        "--launches",
        "1",
    ]
    p = subprocess.Popen(
        args, env=ENV, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    deadline = time.time() + 240
    while time.time() < deadline:  # kill once some reps are journaled but the run is not finished
        if journal.exists() and journal.read_text().count('"kind": "rep"') >= 4:
            break
        time.sleep(0.2)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    reps_before = journal.read_text().count('"kind": "rep"')
    assert reps_before >= 4
    r = harness(
        "run",
        "--env",
        DATA / "cpu-env.yaml",
        "--suite",
        DATA / "slow.yaml",
        "--out",
        out,
        "--launches",
        "1",
        "--resume",
    )
    assert r.returncode == 0, r.stderr[-2000:]
    df = load_results(out)  # the loader rejects duplicate (kernel, case_id)
    assert sorted(json.loads(p)["M"] for p in df["params"]) == [16, 17, 18, 19, 20, 21]
    assert (df["status"].isin(["ok", "unstable"])).all()
    # the resumed run reused what was journaled: 6 cases x >= 3 reps in all, not re-measured from scratch
    assert journal.read_text().count('"kind": "rep"') == int(df["reps"].sum())
    monkeypatch.setenv("HARNESS_TEST_PYTHON", sys.executable)  # the last two in process: nothing to measure
    monkeypatch.setenv("COLUMNS", ENV["COLUMNS"])  # the summary line unwrapped, as in the runs above
    records = [p.read_bytes() for p in (out, sidecar_path(out), journal)]
    code, _, err = cli(capsys, "run", "--env", DATA / "cpu-env.yaml", "--suite", DATA / "slow.yaml", "--out", out,
                       "--resume", "--launches", "1")  # fmt: skip
    assert code == 0 and "nothing to do" in err
    assert [p.read_bytes() for p in (out, sidecar_path(out), journal)] == records  # nothing measured, nothing changed
    code, _, err = cli(capsys, "run", "--env", DATA / "cpu-env.yaml", "--suite", DATA / "slow.yaml", "--out", out,
                       "--resume")  # fmt: skip
    assert code == 2 and "--resume with --launches auto but the file was measured with 1" in err


def test_refuses_to_overwrite_and_bad_env(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HARNESS_TEST_PYTHON", sys.executable)
    out = tmp_path / "x.csv"
    out.write_text("kernel,case_id,time_us,status\nk,a,1,ok\n")
    code, _, err = cli(capsys, "run", "--env", DATA / "cpu-env.yaml", "--suite", DATA / "slow.yaml", "--out", out)
    assert code == 2 and "exists; pass --resume" in err
    code, _, err = cli(capsys, "run", "--env", tmp_path / "nope.yaml", "--suite", DATA / "slow.yaml", "--out",
                       tmp_path / "y.csv")  # fmt: skip
    assert code == 2 and "no such env spec" in err and "Traceback" not in err
    # an overlay folder that is not there: the run must stop, not measure site-packages' Triton as "TOT"
    spec = tmp_path / "tot.yaml"
    spec.write_text(
        f"name: tot\npython: {sys.executable}\npythonpath: [/nonexistent/triton-3.9.0]\ntiming: wallclock\n"
    )
    code, _, err = cli(capsys, "run", "--env", spec, "--suite", DATA / "slow.yaml", "--out", tmp_path / "z.csv")
    assert code == 2 and "pythonpath entry /nonexistent/triton-3.9.0" in err and "does not exist" in err
    assert "Traceback" not in err
    code, _, err = cli(capsys, "run", "--env", DATA / "cpu-env.yaml", "--suite", DATA / "slow.yaml", "--out",
                       tmp_path / "w.csv", "--launch-gap", "soon")  # fmt: skip
    assert code == 2 and "--launch-gap 'soon'" in err and "Traceback" not in err


def test_fresh_process_rounds_time_each_round_in_a_new_worker(tmp_path):
    suite = tmp_path / "s.yaml"
    suite.write_text(
        "name: s\ndefaults: {dtype: fp16}\nentries:\n"
        "  - kernel: batched_gemm_bf16\n    B: 1\n    N: 32\n    K: 64\n    M: [16, 32]\n"
    )
    out = tmp_path / "f.csv"
    r = harness("run", "--env", DATA / "cpu-env.yaml", "--suite", suite, "--out", out, "--launches", "1",
                "--fresh-process-rounds")  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    df = load_results(out)
    assert set(df["status"]) <= {"ok", "unstable"} and (df["reps"] >= 3).all()  # wallclock may be unstable
    logs = list((tmp_path / "f.csv.logs").glob("worker-*.log"))
    # one worker for phase 1 + round 1 (told the timing "auto" resolved to, not started again), one per further round
    assert len(logs) == df["reps"].max()


def test_a_pool_keeps_one_worker_for_the_runs_of_one_env(tmp_path, monkeypatch):
    """A caller's WorkerPool (a retune's batches): its runs of one env share one worker process (told each run's
    memory budget), which forgets each run's prepared cases when it goes back; a run that asks for fresh process
    rounds takes none from it; closing the pool ends the kept worker."""
    from dataclasses import replace

    from harness.envs.spec import load_env_spec
    from harness.inputs.suite import load_suite
    from harness.run.options import RunOptions
    from harness.run.runner import run_suite
    from harness.run.workers import WorkerPool, WorkerProc

    monkeypatch.setenv("HARNESS_TEST_PYTHON", sys.executable)
    suite = tmp_path / "s.yaml"
    suite.write_text(
        "name: s\ndefaults: {dtype: fp16}\nentries:\n"
        "  - kernel: batched_gemm_bf16\n    B: 1\n    N: 32\n    K: 64\n    M: [16]\n"
    )
    asked: list[tuple[str, WorkerProc, dict]] = []
    real = WorkerProc.request

    def spy(self, obj, timeout):
        ans = real(self, obj, timeout)
        asked.append((obj["op"], self, ans))
        return ans

    monkeypatch.setattr(WorkerProc, "request", spy)
    spec, cases = load_env_spec(str(DATA / "cpu-env.yaml")), load_suite(suite)
    opts = RunOptions(reps=1, launches=1, timing="wallclock", log_dir=tmp_path / "logs")
    timed = lambda counts: sum(counts.get(k, 0) for k in ("ok", "unstable"))  # noqa: E731
    with WorkerPool() as pool:
        for name, budget in (("a", 0.6), ("b", 0.3)):
            run = replace(opts, mem_budget=budget)
            assert timed(run_suite(spec, cases, tmp_path / f"{name}.csv", run, workers=pool)) == 1
        # one rep: its one round in a fresh process, not the pool's (later rounds: a new one each, as tested above)
        fresh = replace(opts, fresh_process_rounds=True, log_dir=tmp_path / "fresh")
        assert timed(run_suite(spec, cases, tmp_path / "c.csv", fresh, workers=pool)) == 1
        kept = {w for op, w, _ in asked if op == "forget"}
        assert len(kept) == 1 and all(w.alive() and w.mem_budget == 0.3 for w in kept)
    assert len(list((tmp_path / "logs").glob("worker-*.log"))) == 1, "runs a and b: one worker"
    assert [ans["dropped"] for op, _, ans in asked if op == "forget"] == [1, 1], "each run's case, forgotten"
    assert not {w for op, w, _ in asked if op == "time" and w.log_path.parent.name == "fresh"} & kept
    assert not any(w.alive() for w in kept), "the pool's close ended it"


def test_resume_refuses_changed_options_and_the_sidecar_records_them(tmp_path, capsys, monkeypatch):
    """--resume measures with the options OUT was measured with: a changed command-line option is refused
    before a worker starts, a changed stack (here a knob of the env) once the worker reports it."""
    monkeypatch.setenv("HARNESS_TEST_PYTHON", sys.executable)  # the refusals run in process
    suite = tmp_path / "one.yaml"
    suite.write_text(
        "name: one\ndefaults: {dtype: fp16}\nentries:\n"
        "  - kernel: batched_gemm_bf16\n    B: 1\n    N: 32\n    K: 64\n    M: [16]\n"
    )
    out = tmp_path / "r.csv"
    base = ["run", "--env", DATA / "cpu-env.yaml", "--suite", suite, "--out", out]
    r = harness(*base, "--launches", "1")
    assert r.returncode == 0, r.stderr[-2000:]
    env = json.loads(sidecar_path(out).read_text())
    opts = env["run_options"]
    assert opts["launches"] == 1 and opts["reps"] == 3 and opts["timing"] == "wallclock"
    assert opts["triton"] == env["triton"]["version"] and opts["host"] == env["host"] == os.uname().nodename
    assert "gpu_uuid" in opts and opts["gpu_uuid"] is None, "the CPU interpreter has no GPU UUID"
    assert not (tmp_path / "r.csv.lock").exists(), "the lock file goes with the run"
    rows = out.read_text()
    for more, shown in [
        (("--launches", "2"), "--launches 2 but the file was measured with 1"),
        (("--launches", "1", "--no-move-inputs"), "--move-inputs off but the file was measured with on"),
        (("--launches", "1", "--launch-gap", "0"), "--launch-gap 0.0 but the file was measured with auto"),
    ]:
        code, _, err = cli(capsys, *base, *more, "--resume")  # in process: refused before a worker starts
        assert code == 2 and err.strip().count("\n") == 0 and shown in err, err
    spec = tmp_path / "cpu.yaml"  # the same env name, another knob: only the worker can tell
    spec.write_text(
        (DATA / "cpu-env.yaml").read_text().replace('TRITON_INTERPRET: "1"', 'TRITON_INTERPRET: "1", TRITON_X: "1"')
    )
    code, _, err = cli(capsys, "run", "--env", spec, "--suite", suite, "--out", out, "--launches", "1", "--resume")
    assert code == 2 and "--resume with the env's knobs" in err and "TRITON_X=1" in err, err
    assert out.read_text() == rows, "nothing was measured into OUT"


def test_resume_after_the_kernel_was_edited_is_refused(tmp_path, capsys, monkeypatch):
    """The rows measured before and the ones a --resume adds would be of two kernels under one name: refused,
    naming the kernel, once the stack is known (results/identity.RESUME); OUT untouched."""
    monkeypatch.setenv("HARNESS_TEST_PYTHON", sys.executable)
    kernel = tmp_path / "softmax.py"
    shutil.copy(ROOT / "examples" / "softmax.py", kernel)
    suite = tmp_path / "s.yaml"
    suite.write_text("name: s\nentries:\n  - kernel: softmax.py\n    M: 4\n    N: [64, 128]\n")
    out = tmp_path / "r.csv"
    base = ["run", "--env", DATA / "cpu-env.yaml", "--suite", suite, "--out", out, "--launches", "1"]
    r = harness(*base, "--filter", "N64")
    assert r.returncode == 0, r.stderr[-2000:]
    rows = out.read_text()
    kernel.write_text(kernel.read_text().replace("e / tl.sum(e, axis=0)", "e / (tl.sum(e, axis=0) + 0.0)"))
    code, _, err = cli(capsys, *base, "--resume")  # after the worker's progress line: it reports the stack
    assert code == 2 and err.count("harness: error") == 1 and "Traceback" not in err, err
    assert "kernels' source files (kernel_content): {softmax:" in err and "start a new --out" in err
    assert out.read_text() == rows


def test_a_refusal_inside_an_interleaved_run_is_one_line(tmp_path, capsys, monkeypatch):
    """A stranger's test: an interleaved --resume that a worker's first step refuses (the env specs moved, so
    their Triton caches are other folders) printed an internal error from the run's cleanup, not the refusal."""
    monkeypatch.setenv("HARNESS_TEST_PYTHON", sys.executable)
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        for name in ("g", "t"):
            (tmp_path / folder / f"{name}.yaml").write_text(
                f"name: {name}\npython: ${{HARNESS_TEST_PYTHON}}\nenv: {{TRITON_INTERPRET: '1'}}\n"
            )
    g, t = tmp_path / "g.csv", tmp_path / "t.csv"

    def run(folder, *more):
        return cli(capsys, "run", "--env", tmp_path / folder / "g.yaml", "--out", g, "--with-env",
                   tmp_path / folder / "t.yaml", "--with-out", t, "--suite", DATA / "slow.yaml", "--filter", "M16",
                   "--launches", "1", *more)  # fmt: skip

    assert run("a")[0] == 0
    code, _, err = run("b", "--resume")
    assert code == 2 and "internal error" not in err and "Traceback" not in err, err
    assert err.strip().splitlines()[-1].startswith("harness: error: ") and "--resume with the env's knobs" in err

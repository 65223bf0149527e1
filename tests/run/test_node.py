"""``harness run --gpus``: one part of the suite per GPU, every env measured on each, multi-GPU cases on the
GPUs they need, the parts merged into each env's results file. On the CPU the 'GPUs' are only labels, which is
enough to check the parts, the merge and the resume."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from harness.errors import HarnessError
from harness.inputs.suite import load_suite
from harness.results.load import load_results
from harness.run.node import parse_gpus, plan
from tests.conftest import DATA, ROOT, cli

ENV = {**os.environ, "HARNESS_TEST_PYTHON": sys.executable, "PYTHONPATH": str(ROOT), "COLUMNS": "160"}


def test_gpu_lists():
    assert parse_gpus("0,1,3") == [0, 1, 3]
    for bad in ("", "0,0", "a", "-1"):
        with pytest.raises(HarnessError, match="--gpus"):
            parse_gpus(bad)


def test_the_plan_keeps_multi_gpu_cases_whole():
    cases = load_suite(DATA / "group.yaml")
    steps = plan(cases, list(range(4, 12)), None)
    singles = [s for s in steps if s[0].startswith("gpu")]
    assert all(len(g) == 1 for _, g, _ in singles) and sum(len(c) for _, _, c in singles) == 1
    assert [(n, g) for n, g, _ in steps[len(singles) :]] == [
        ("ranks2", [4, 5]),
        ("ranks3", [4, 5, 6]),
        ("ranks4", [4, 5, 6, 7]),
        ("ranks8", list(range(4, 12))),  # W = 8: no 8-GPU machine is lent, so the plan is checked here
    ]
    with pytest.raises(
        HarnessError, match=r"3 cases need more GPUs than the 2 given \(1 needs 3, 1 needs 4, 1 needs 8\)"
    ):
        plan(cases, [0, 1], None)
    with pytest.raises(HarnessError, match=r"1 case needs more GPUs than the 4 given \(1 needs 8\)"):
        plan(cases, [0, 1, 2, 3], None)


def test_the_node_compiles_once_before_its_parts_and_the_parts_then_do_not(tmp_path, monkeypatch):
    """With --compile-jobs > 1 on GPU timing, every env's single-GPU cases are compiled once for the node, the
    compile workers taking the GPUs in turn, before any part starts; the parts then compile nothing themselves."""
    from dataclasses import replace

    from harness.envs.spec import load_env_spec
    from harness.run import node
    from harness.run.options import RunOptions

    monkeypatch.setenv("HARNESS_TEST_PYTHON", sys.executable)
    spec = replace(load_env_spec(str(DATA / "cpu-env.yaml")), timing="cupti")
    cases = load_suite(ROOT / "examples" / "softmax.yaml")
    calls, parts = [], []

    def fake_precompile(spec_, timing, requests, logs, jobs, timeout_s, gpus=None):
        calls.append((spec_.name, timing, len(requests), jobs, gpus, len(parts)))
        return {"jobs": jobs, "cases": len(requests)}

    monkeypatch.setattr(node, "precompile", fake_precompile)
    monkeypatch.setattr(node, "_run_part", lambda runs, opts, *a: parts.append(opts.compile_jobs) or 1.0)
    monkeypatch.setattr(node, "merge_results", lambda paths, out: {})
    monkeypatch.setattr(node, "update_sidecar", lambda out, **f: None)
    monkeypatch.setattr(node.os, "cpu_count", lambda: 16)
    runs = [(spec, tmp_path / "g.csv"), (spec, tmp_path / "t.csv")]
    node.run_on_gpus(runs, cases, RunOptions(compile_jobs=8), [0, 1], "s", lambda name: None)
    where = [{"CUDA_VISIBLE_DEVICES": "0"}, {"CUDA_VISIBLE_DEVICES": "1"}]
    assert calls == [(spec.name, "cupti", len(cases), 16, where, 0)] * 2  # both envs, before any part
    assert parts == [1, 1]  # no part compiles again
    calls.clear(), parts.clear()
    node.run_on_gpus(runs, cases, RunOptions(compile_jobs=1), [0, 1], "s", lambda name: None)
    assert calls == [] and parts == [1, 1]  # --compile-jobs 1: the parts compile as they go, as before


def test_envs_of_two_compile_caches_compile_at_once_one_cache_in_turn(tmp_path, monkeypatch):
    import threading
    from dataclasses import replace

    from harness.envs.spec import load_env_spec
    from harness.run import node
    from harness.run.options import RunOptions

    monkeypatch.setenv("HARNESS_TEST_PYTHON", sys.executable)
    golden = replace(load_env_spec(str(DATA / "cpu-env.yaml")), timing="cupti", name="golden")
    tot = replace(golden, name="tot")
    assert golden.triton_cache() != tot.triton_cache()
    meet = threading.Barrier(2, timeout=10)  # broken unless golden and TOT compile at the same time
    order = []

    def fake_precompile(spec_, *a, **k):
        if spec_.name == "tot" or len(order) == 0:
            meet.wait()
        order.append(spec_.name)
        return {"cases": 3}

    monkeypatch.setattr(node, "precompile", fake_precompile)
    cases = load_suite(ROOT / "examples" / "softmax.yaml")
    runs = [(golden, tmp_path / "g.csv"), (tot, tmp_path / "t.csv"), (golden, tmp_path / "a.csv")]
    figures = node._precompile_node(runs, RunOptions(compile_jobs=4), cases, [0])
    assert [f["env"] for f in figures] == ["golden", "tot", "golden"]  # in the runs' order, whoever ended first
    assert sorted(order[:2]) == ["golden", "tot"] and order[2] == "golden"  # the A/A's golden after the first


@pytest.mark.slow
def test_a_suite_over_two_gpus_merges_into_one_file_per_env(tmp_path, capsys, monkeypatch):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    args = [sys.executable, "-m", "harness", "run", "--env", str(DATA / "cpu-env.yaml"), "--suite",
            str(ROOT / "examples" / "softmax.yaml"), "--out", str(a), "--with-env", str(DATA / "cpu-env.yaml"),
            "--with-out", str(b), "--gpus", "0,1", "--launches", "1"]  # fmt: skip
    r = subprocess.run(args, capture_output=True, text=True, env=ENV, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    for out in (a, b):
        df = load_results(out)
        assert len(df) == 6 and df["status"].isin(["ok", "unstable"]).all()
        parts = df.attrs["env"]["parts"]
        assert [p["path"].rsplit("/", 1)[1] for p in parts] == ["gpu0.csv", "gpu1.csv"]
        assert len(load_results(out.parent / f"{out.name}.parts" / "gpu0.csv")) in range(1, 6)
        node = df.attrs["env"]["node"]  # where the node's time went, part by part
        assert [(p["part"], p["gpus"]) for p in node["parts"]] == [("gpu0", [0]), ("gpu1", [1])]
        assert sum(p["cases"] for p in node["parts"]) == 6
        assert 0 < max(p["wall_s"] for p in node["parts"]) <= node["wall_s"]
        phases = load_results(out.parent / f"{out.name}.parts" / "gpu0.csv").attrs["env"]["phases"]
        assert phases["finished"] and phases["prepare_s"] + phases["reps_s"] <= phases["wall_s"] + 0.01
    monkeypatch.setenv("HARNESS_TEST_PYTHON", sys.executable)
    code, _, err = cli(capsys, *args[3:])  # the same command in process: refused before anything starts
    assert code == 2 and "exists; pass --resume" in err
    resumed = subprocess.run([*args, "--resume"], capture_output=True, text=True, env=ENV, cwd=ROOT, timeout=600)
    assert resumed.returncode == 0 and len(load_results(a)) == 6, resumed.stderr[-2000:]


@pytest.mark.slow
def test_shards_of_a_suite_merge_back_into_it(tmp_path, capsys):
    suite = ROOT / "examples" / "softmax.yaml"
    parts = []
    for i in (1, 2, 3):
        out = tmp_path / f"s{i}.csv"
        r = subprocess.run([sys.executable, "-m", "harness", "run", "--env", str(DATA / "cpu-env.yaml"), "--suite",
                            str(suite), "--out", str(out), "--shard", f"{i}/3", "--launches", "1"],
                           capture_output=True, text=True, env=ENV, cwd=ROOT, timeout=600)  # fmt: skip
        assert r.returncode == 0, r.stderr[-2000:]
        parts.append(out)
    merged = tmp_path / "all.csv"
    code, out, err = cli(capsys, "merge", *parts, "--out", merged, "--suite", suite)  # merging: in process
    assert code == 0 and "(3 parts)" in out, err
    assert sorted(load_results(merged)["case_id"]) == sorted(c.case_id for c in load_suite(suite))
    code, _, err = cli(capsys, "merge", parts[0], "--out", tmp_path / "x.csv", "--suite", suite)
    assert code == 2 and "cases are in no part" in err and "Traceback" not in err


def test_gpus_all_means_the_gpus_this_process_was_given(monkeypatch, tmp_path):
    from harness.run.group import visible

    # a 4-GPU machine as nvidia-smi lists it (it ignores CUDA_VISIBLE_DEVICES), of which this process was given 2,3
    smi = tmp_path / "nvidia-smi"
    smi.write_text('#!/bin/sh\nfor i in 0 1 2 3; do echo "GPU $i: NVIDIA H200 (UUID: GPU-$i)"; done\n')
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    shown = {visible([g])["CUDA_VISIBLE_DEVICES"] for g in parse_gpus("all")}
    assert shown == {"2", "3"}


def test_gpu_indices_count_within_the_gpus_this_process_was_given(monkeypatch):
    from harness.run.group import visible

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-aa,GPU-bb")
    assert (
        visible([1]) == {"CUDA_VISIBLE_DEVICES": "GPU-bb"}
        and visible([0, 1])["CUDA_VISIBLE_DEVICES"] == "GPU-aa,GPU-bb"
    )
    with pytest.raises(HarnessError, match="given 2 GPUs"):
        parse_gpus("0,2")

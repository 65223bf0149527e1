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
    steps = plan(cases, [4, 5, 6, 7], None)
    singles = [s for s in steps if s[0].startswith("gpu")]
    assert all(len(g) == 1 for _, g, _ in singles) and sum(len(c) for _, _, c in singles) == 1
    assert [(n, g) for n, g, _ in steps[len(singles) :]] == [
        ("ranks2", [4, 5]),
        ("ranks3", [4, 5, 6]),
        ("ranks4", [4, 5, 6, 7]),
    ]
    with pytest.raises(HarnessError, match=r"2 cases need more GPUs than the 2 given \(1 need 3, 1 need 4\)"):
        plan(cases, [0, 1], None)


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

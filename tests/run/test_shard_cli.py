"""`harness run --shard`: a shard without cases writes a valid empty part (header and sidecar) and exits 0 so that
a merge job finds every shard; the shard is recorded, and a --resume with another shard is refused."""

from __future__ import annotations

import json
import os
import sys

import pytest

from harness.cli import main
from harness.results.schema import COLUMNS, sidecar_path
from tests.conftest import DATA, ROOT

SUITE = ROOT / "examples" / "softmax.yaml"
ONE = "softmax/M4_N100"  # --filter leaving one case: its shard 2/2 is empty


@pytest.fixture(autouse=True)
def _python(monkeypatch):
    monkeypatch.setenv("HARNESS_TEST_PYTHON", os.environ.get("HARNESS_TEST_PYTHON", sys.executable))


def run(capsys, out, *extra) -> tuple[int, str]:
    with pytest.raises(SystemExit) as ex:
        main(["run", "--env", str(DATA / "cpu-env.yaml"), "--suite", str(SUITE), "--out", str(out), *extra])
    return ex.value.code or 0, capsys.readouterr().err


def test_an_empty_shard_writes_the_header_and_its_sidecar(tmp_path, capsys):
    out = tmp_path / "s2.csv"
    code, err = run(capsys, out, "--filter", ONE, "--shard", "2/2")
    assert code == 0, err
    assert "--shard 2/2 holds no case of the selection: wrote the header only" in err
    assert out.read_text().splitlines() == [",".join(COLUMNS)]
    meta = json.loads(sidecar_path(out).read_text())
    assert meta["shard"] == "2/2" and meta["run_options"]["shard"] == "2/2" and meta["empty"]


def test_a_resume_with_another_shard_is_refused(tmp_path, capsys):
    out = tmp_path / "s.csv"
    assert run(capsys, out, "--filter", ONE, "--shard", "2/2")[0] == 0
    code, err = run(capsys, out, "--filter", ONE, "--shard", " 1 / 2", "--resume")
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "--resume with --shard 1/2 but the file was measured with 2/2" in err


def test_no_case_before_sharding_is_still_an_error(tmp_path, capsys):
    code, err = run(capsys, tmp_path / "x.csv", "--filter", "nothing-like-this", "--shard", "1/2")
    assert code == 2 and "no case matches" in err and not (tmp_path / "x.csv").exists()


def test_a_bad_shard_is_one_line(tmp_path, capsys):
    code, err = run(capsys, tmp_path / "x.csv", "--shard", "3/2")
    assert code == 2 and "--shard '3/2': expected I/N with 1 <= I <= N" in err


# ------------------------------------------------------------------- options that did nothing now say so


def test_times_without_shard_or_gpus_is_refused(tmp_path, capsys):
    code, err = run(capsys, tmp_path / "x.csv", "--times", str(DATA / "golden.csv"))
    assert code == 2 and "--times" in err and "balances --shard and --gpus, and neither was given" in err


@pytest.mark.parametrize("db", ["mysql://u@h/db", "redis://h/0"])
def test_an_unsupported_history_database_is_refused_before_the_run(tmp_path, capsys, monkeypatch, db):
    monkeypatch.setenv("HARNESS_DB", db)
    code, err = run(capsys, tmp_path / "x.csv", "--record")
    assert code == 2 and "--record: $HARNESS_DB: unsupported database" in err
    assert not (tmp_path / "x.csv").exists()  # refused before anything ran


def test_results_over_the_history_database_are_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HARNESS_DB", str(tmp_path / "h.sqlite"))
    code, err = run(capsys, tmp_path / "h.sqlite", "--record")
    assert code == 2 and "is the history database: refusing to write results over it" in err


def test_gpus_beyond_the_machine_are_refused(tmp_path, capsys, monkeypatch):
    smi = tmp_path / "nvidia-smi"
    smi.write_text('#!/bin/sh\nfor i in 0 1; do echo "GPU $i: NVIDIA H100 (UUID: GPU-$i)"; done\n')
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    code, err = run(capsys, tmp_path / "x.csv", "--gpus", "7")
    assert code == 2 and "--gpus '7': this machine has 2 GPUs, numbered 0 to 1" in err


@pytest.mark.slow
def test_artifacts_on_the_interpreter_say_nothing_was_kept(tmp_path, capsys):
    code, err = run(capsys, tmp_path / "x.csv", "--filter", ONE, "--launches", "1", "--reps", "1", "--artifacts")
    assert code == 0, err
    assert "--artifacts kept nothing: Triton's CPU interpreter compiles no kernels" in err


@pytest.mark.parametrize(("option", "says"), [("--gpus", "--gpus ''"), ("--shard", "--shard ''")])
def test_an_empty_gpus_or_shard_is_refused_not_ignored(tmp_path, capsys, option, says):
    code, err = run(capsys, tmp_path / "x.csv", option, "")
    assert code == 2 and says in err and not (tmp_path / "x.csv").exists()

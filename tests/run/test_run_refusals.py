"""`harness run` refuses a bad env spec before any worker starts: a ``pythonpath`` overlay that does not exist
(envs/tot.yaml with $HARNESS_TOT_TRITON naming no folder) is one line, exit 2, and the run leaves nothing behind
(no OUT, no OUT.logs/)."""

from __future__ import annotations

import os
import sys

import pytest

from tests.conftest import DATA, ROOT, cli


def test_a_missing_tot_overlay_is_refused_before_golden_runs(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_TEST_PYTHON", os.environ.get("HARNESS_TEST_PYTHON", sys.executable))
    monkeypatch.setenv("HARNESS_TOT_TRITON", str(tmp_path / "nonexist"))
    monkeypatch.chdir(tmp_path)
    code, _, err = cli(
        capsys, "run", "--env", DATA / "cpu-env.yaml", "--suite", ROOT / "examples" / "softmax.yaml", "--out", "g.csv",
        "--with-env", ROOT / "envs" / "tot.yaml", "--with-out", "t.csv", "--filter", "M4_N100",
    )  # fmt: skip
    assert code == 2
    assert err.splitlines() == [
        f"harness: error: {ROOT / 'envs' / 'tot.yaml'}: pythonpath entry {tmp_path / 'nonexist'} does not exist"
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_with_env_and_with_out_counts_are_said_in_good_grammar(capsys, tmp_path):
    code, _, err = cli(
        capsys, "run", "--env", DATA / "cpu-env.yaml", "--suite", ROOT / "examples" / "softmax.yaml", "--out",
        tmp_path / "g.csv", "--with-env", DATA / "cpu-env.yaml",
    )  # fmt: skip
    assert code == 2 and err.strip() == "harness: error: --with-env given 1 time but --with-out 0 times"


def test_an_interpreter_that_is_not_there_is_refused_before_golden_runs(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_TEST_PYTHON", os.environ.get("HARNESS_TEST_PYTHON", sys.executable))
    monkeypatch.setenv("HARNESS_TOT_TRITON", str(tmp_path))
    monkeypatch.setenv("HARNESS_TOT_PYTHON", str(tmp_path / "nopython"))
    code, _, err = cli(
        capsys, "run", "--env", DATA / "cpu-env.yaml", "--suite", ROOT / "examples" / "softmax.yaml", "--out",
        tmp_path / "g.csv", "--with-env", ROOT / "envs" / "tot.yaml", "--with-out", tmp_path / "t.csv",
    )  # fmt: skip
    assert code == 2
    assert err.splitlines() == [
        f"harness: error: {ROOT / 'envs' / 'tot.yaml'}: python {tmp_path / 'nopython'} cannot run: no such file"
    ]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_a_run_in_which_no_case_produced_a_time_exits_1_in_one_line(tmp_path, monkeypatch, capsys):
    """Every case failing (here: a kernel that does not compile) is no result: exit 1, one line saying so, the
    failures listed above it; the file keeps the failed rows as it always did."""
    monkeypatch.setenv("HARNESS_TEST_PYTHON", sys.executable)
    code, out, err = cli(capsys, "run", "--env", DATA / "cpu-env.yaml", "--suite", DATA / "faults.yaml",
                         "--kernel", "compile_fail", "--out", tmp_path / "r.csv", "--launches", "1")  # fmt: skip
    said = out + err
    assert code == 1 and said.count("no case produced a time") == 1, said
    assert (tmp_path / "r.csv").read_text().count("compile_error") == 1

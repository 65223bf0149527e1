"""`harness run` refuses an --out or --with-out that names a file the run reads (the suite, a suite it includes,
a shapes file, a kernel file, an env spec, --times): one line saying what it is, exit 2, the file untouched."""

from __future__ import annotations

import os
import shutil
import sys

import pytest

from tests.conftest import DATA, ROOT, cli


@pytest.fixture
def suite(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_TEST_PYTHON", os.environ.get("HARNESS_TEST_PYTHON", sys.executable))
    shutil.copy(ROOT / "examples" / "softmax.py", tmp_path / "softmax.py")
    shutil.copy(DATA / "cpu-env.yaml", tmp_path / "cpu.yaml")
    (tmp_path / "shapes.csv").write_text("M,N\n4,100\n")
    (tmp_path / "inner.yaml").write_text("entries:\n  - kernel: softmax.py\n    zip: shapes.csv\n")
    (tmp_path / "s.yaml").write_text("include: [inner.yaml]\nentries:\n  - kernel: softmax.py\n    M: 8\n    N: 128\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("out,what", [
    ("s.yaml", "the suite"),
    ("inner.yaml", "a suite that s.yaml includes"),
    ("shapes.csv", "a shapes file of the suite (zip: in inner.yaml)"),
    ("softmax.py", "the kernel file of softmax"),
    ("cpu.yaml", "the env spec cpu"),
    ("sub/../s.yaml", "the suite"),
])  # fmt: skip
def test_an_out_that_is_an_input_is_refused_before_anything_runs(capsys, suite, out, what):
    before = {p.name: p.read_bytes() for p in suite.iterdir()}
    (suite / "sub").mkdir()
    code, _, err = cli(capsys, "run", "--env", "cpu.yaml", "--suite", "s.yaml", "--out", out)
    assert code == 2 and err.splitlines() == [f"harness: error: --out {out} is {what}: choose another results file"]
    assert {p.name: p.read_bytes() for p in suite.iterdir() if p.is_file()} == before


def test_every_with_out_is_checked_too(capsys, suite):
    args = ["--with-env", "cpu.yaml", "--with-out", "t.csv", "--with-env", "cpu.yaml", "--with-out", "shapes.csv"]
    code, _, err = cli(capsys, "run", "--env", "cpu.yaml", "--suite", "s.yaml", "--out", "g.csv", *args)
    assert code == 2 and "--with-out shapes.csv is a shapes file of the suite" in err
    assert not (suite / "g.csv").exists() and not (suite / "t.csv").exists()


def test_the_times_file_is_no_output(capsys, suite):
    (suite / "prev.csv").write_text("kernel,case_id,M,N,time_us,status\nsoftmax,M8_N128,8,128,5.0,ok\n")
    code, _, err = cli(
        capsys, "run", "--env", "cpu.yaml", "--suite", "s.yaml", "--out", "prev.csv", "--times", "prev.csv",
        "--shard", "1/2",
    )  # fmt: skip
    assert code == 2 and err.splitlines() == [
        "harness: error: --out prev.csv is the --times file: choose another results file"
    ]

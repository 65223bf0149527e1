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

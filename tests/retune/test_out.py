"""`harness retune --out`: checked before any work — never over its inputs or the config files it rewrites,
never into a folder of files harness did not write, never a traceback for a folder it cannot make."""

from __future__ import annotations

import os

import pytest

import harness.outdir
from harness.cli import main
from harness.errors import HarnessError
from harness.kernel_api.configs import config_dir
from harness.retune.model import Options
from harness.retune.retune import retune
from tests.bisect.known_times import comparison
from tests.conftest import DATA

ENV = DATA / "cpu-env.yaml"  # an env spec that loads (the test's own interpreter): the --out checks come after


@pytest.fixture(autouse=True)
def _python(monkeypatch):
    import sys

    monkeypatch.setenv("HARNESS_TEST_PYTHON", os.environ.get("HARNESS_TEST_PYTHON", sys.executable))


def refused(tmp_path, out, capsys) -> str:
    cmp = comparison(tmp_path, {"a": [40.0, 40.1, 40.2]}, {"a": [60.0, 60.1, 60.2]})
    with pytest.raises(SystemExit) as ex:
        main(["retune", str(cmp), "--env", str(ENV), "--golden-env", str(ENV), "--out", str(out)])
    err = capsys.readouterr().err
    assert ex.value.code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_out_under_a_file_is_one_line(tmp_path, capsys):
    (tmp_path / "f").write_text("x")
    assert f"{tmp_path / 'f'} is a file, not a folder" in refused(tmp_path, tmp_path / "f" / "o", capsys)


def test_out_that_is_a_file_is_one_line(tmp_path, capsys):
    (tmp_path / "f").write_text("x")
    assert "is a file, expected a folder" in refused(tmp_path, tmp_path / "f", capsys)
    assert (tmp_path / "f").read_text() == "x"


def test_an_unwritable_out_is_one_line(tmp_path, capsys, monkeypatch):
    real = os.access
    ro = tmp_path / "o"  # a read-only filesystem, even for root
    monkeypatch.setattr(harness.outdir.os, "access", lambda p, mode, **k: False if p == ro else real(p, mode, **k))
    assert "the folder is not writable" in refused(tmp_path, tmp_path / "o", capsys)


def test_an_out_that_cannot_be_made_is_one_line(tmp_path, capsys, monkeypatch):
    real = harness.outdir.Path.mkdir

    def deny(self, *a, **k):
        if self != tmp_path / "o":
            return real(self, *a, **k)
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(harness.outdir.Path, "mkdir", deny)
    assert "cannot create the folder: Permission denied" in refused(tmp_path, tmp_path / "o", capsys)


def test_out_holding_the_comparison_is_refused(tmp_path, capsys):
    assert f"--out {tmp_path} holds the input {tmp_path / 'compare.csv'}" in refused(tmp_path, tmp_path, capsys)


def test_out_inside_the_config_files_is_refused(tmp_path):
    opts = Options(tmp_path / "c.csv", "t", "g", config_dir() / "retune-out")
    with pytest.raises(HarnessError, match="lies inside the input .*configs"):
        retune(opts, log=lambda m: None)
    assert not (config_dir() / "retune-out").exists()


def test_out_of_unrelated_files_is_refused(tmp_path, capsys):
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "data.parquet").write_text("x")
    assert "holds files harness did not write (data.parquet)" in refused(tmp_path, tmp_path / "o", capsys)


def test_hints_from_the_out_itself_are_refused(tmp_path):
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "cache.jsonl").write_text(
        '{"key": {"kernel": "k", "source": "", "case_id": "c", "config": "{}", "stack": "s", "gpu": "g", '
        '"tag": "search"}, "status": "ok", "time_us": 1.0}\n'
    )
    opts = Options(tmp_path / "c.csv", "t", "g", tmp_path / "o", hints=[tmp_path / "o"])
    with pytest.raises(HarnessError, match=r"--out .*o is the input .*o"):
        retune(opts, log=lambda m: None)


def test_golden_given_as_tot_is_refused_before_any_measuring(tmp_path, capsys):
    """One stack under both options would retune a stack against itself: every regression would read as fixed
    ("6 / 13 → 0 / 13" where nothing changed)."""
    err = refused(tmp_path, tmp_path / "out", capsys)
    assert "run the same Triton (triton " in err and "--golden-env" in err
    assert not (tmp_path / "out" / "cache.jsonl").exists()

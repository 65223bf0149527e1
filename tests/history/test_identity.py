"""History identity: a compare CSV is stored only with its metadata (never as "? vs ?", never twice); a label
given again is applied and said, not dropped; a wrongly added run or comparison can be removed."""

from __future__ import annotations

import shutil

import pytest

from harness.history.store import History
from tests.conftest import DATA, cli

H100 = DATA / "h100-triton-3.6.0-vs-3.9.0"


def counts(db) -> tuple[int, int]:
    from harness.history import queries as q

    with History.open(db, write=False) as h, h.reading() as conn:
        return len(q.runs_frame(conn)), len(q.comparisons_frame(conn))


def test_a_compare_csv_without_its_metadata_is_refused(tmp_path, capsys):
    shutil.copy(H100 / "compare.csv", tmp_path / "compare.csv")
    db = tmp_path / "h.sqlite"
    rc, out, err = cli(capsys, "history", "add", "--db", db, tmp_path / "compare.csv")
    assert rc == 2 and out == "" and "compare.csv.meta.json is not beside it" in err and len(err.splitlines()) == 1
    assert not db.exists()


def test_a_label_given_again_is_applied_and_said(tmp_path, capsys):
    db = tmp_path / "h.sqlite"
    assert cli(capsys, "history", "add", "--db", db, H100 / "golden.csv")[0] == 0
    rc, out, _ = cli(capsys, "history", "add", "--db", db, "--label", "PR 123", H100 / "golden.csv")
    assert rc == 0 and out.startswith("run 1 already stored: ") and out.rstrip().endswith("; label 'PR 123')")
    rc, out, _ = cli(capsys, "history", "add", "--db", db, "--label", "PR 124", H100 / "golden.csv")
    assert out.rstrip().endswith("; label 'PR 123' → 'PR 124')")
    rc, out, _ = cli(capsys, "history", "add", "--db", db, "--label", "PR 124", H100 / "golden.csv")
    assert "label" not in out  # the same label: nothing changed, nothing said


def test_a_wrongly_added_run_or_comparison_can_be_removed(tmp_path, capsys):
    db = tmp_path / "h.sqlite"
    assert cli(capsys, "history", "add", "--db", db, H100 / "compare.csv", H100 / "golden-aa.csv")[0] == 0
    assert counts(db) == (3, 1)
    rc, _, err = cli(capsys, "history", "remove", "run", "1", "--db", db)
    assert rc == 2 and "run 1: comparison 1 refers to it: remove it first" in err
    rc, out, _ = cli(capsys, "history", "remove", "comparison", "1", "--db", db)
    assert rc == 0 and out.startswith("removed comparison 1 and its 120 verdicts")
    rc, out, _ = cli(capsys, "history", "remove", "run", "3", "--db", db)
    assert rc == 0 and out.startswith("removed run 3 and its ")
    assert counts(db) == (2, 0)
    rc, _, err = cli(capsys, "history", "remove", "run", "3", "--db", db)
    assert rc == 2 and "no run 3" in err


def test_remove_refusals_are_one_line(tmp_path, capsys):
    rc, _, err = cli(capsys, "history", "remove", "table", "1", "--db", tmp_path / "h.sqlite")
    assert rc == 2 and "expected 'run', 'comparison' or 'calibration'" in err
    rc, _, err = cli(capsys, "history", "remove", "run", "1", "--db", tmp_path / "none.sqlite")
    assert rc == 2 and "no history database here yet" in err and not (tmp_path / "none.sqlite").exists()


@pytest.mark.parametrize("command", [["list"], ["show"], ["regressions"], ["annotations"]])
def test_a_csv_over_the_database_is_refused(tmp_path, capsys, command):
    db = tmp_path / "h.sqlite"
    assert cli(capsys, "history", "add", "--db", db, H100 / "compare.csv")[0] == 0
    before = db.read_bytes()
    rc, _, err = cli(capsys, "history", *command, "--db", db, "--out", db)
    assert rc == 2 and "is the history database: refusing to write a CSV over it" in err, err
    assert db.read_bytes() == before

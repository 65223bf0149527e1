"""History keeps a calibration with the run whose sidecar records it and with the comparison it judged (migration
0005: runs.calibration_id, comparisons.calibration_id, calibrations.sha256), from the record, so the file itself
may be gone; one calibration is stored once, however it comes in (its file, a sidecar, a comparison)."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select, text

from harness.fsutil import file_sha256
from harness.history.schema import calibration_cases, calibrations, comparisons, runs
from harness.history.store import History
from tests.compare.test_calibration_travels import write_pair
from tests.history.test_cli import cli


@pytest.fixture(autouse=True)
def wide(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")


@pytest.fixture
def files(tmp_path):
    """golden and TOT (5 % slower) whose sidecars both record one calibration; returns (g, t, cal, db)."""

    def at(second: str):
        return lambda rec: {"calibration": rec, "captured_at": f"2026-11-25T11:00:0{second}Z"}

    g, t, cal = write_pair(tmp_path, at("0"), at("1"))
    return g, t, cal, str(tmp_path / "h.sqlite")


def stored(db):
    with History.open(db, write=False) as h, h.reading() as conn:
        return (
            conn.execute(select(runs.c.id, runs.c.calibration_id).order_by(runs.c.id)).all(),
            conn.execute(select(comparisons.c.id, comparisons.c.calibration_id, comparisons.c.meta)).all(),
            conn.execute(select(calibrations).order_by(calibrations.c.id)).all(),
            conn.execute(select(calibration_cases.c.calibration_id, calibration_cases.c.case_id)).all(),
        )


def test_a_run_keeps_its_calibration_even_when_the_file_is_gone(files, capsys):
    g, t, cal, db = files
    sha = file_sha256(cal)
    cal.unlink()
    rc, out, err = cli(capsys, "history", "add", g, t, "--db", db)
    assert rc == 0, err
    assert "run 1 added" in out and "calibration 1" in out.splitlines()[0] and "calibration 1" in out.splitlines()[1]
    rs, _, cals, cases = stored(db)
    assert [r.calibration_id for r in rs] == [1, 1] and len(cals) == 1 and len(cases) == 2
    c = cals[0]
    assert (c.sha256, c.path, c.env_name, c.gpu_uuid, c.cases, c.unresolved) == (
        sha, str(cal.resolve()), "golden", "1", 2, 1
    )  # fmt: skip
    rc, out, _ = cli(capsys, "history", "list", "--db", db)
    assert rc == 0 and "cal: the calibration kept with it" in out and "#1" in out
    rc, out, _ = cli(capsys, "history", "calibration", "1", "--db", db)
    assert rc == 0 and "calibration 1: 2 cases, 1 cannot resolve the rule" in out


def test_one_calibration_is_stored_once_whichever_way_it_comes(files, tmp_path, capsys):
    g, t, cal, db = files
    assert cli(capsys, "history", "add", g, "--db", db)[0] == 0  # from the sidecar's record first
    rc, out, _ = cli(capsys, "history", "add", cal, "--db", db, "--tag", "pool-a")  # then its file: the same one
    assert rc == 0 and "calibration 1 already stored" in out and "tags +pool-a" in out
    # the comparison of the two, judged with it, links to it too (and its runs: t is added with it)
    rc, _, err = cli(capsys, "compare", g, t, "--out", tmp_path / "c.csv")
    assert rc == 0, err
    rc, out, err = cli(capsys, "history", "add", tmp_path / "c.csv", "--db", db)
    assert rc == 0, err
    assert "comparison 1 added" in out and out.count("calibration 1") == 3  # g (already stored), t, the comparison
    rs, cs, cals, _ = stored(db)
    assert [r.calibration_id for r in rs] == [1, 1] and [c.calibration_id for c in cs] == [1] and len(cals) == 1
    meta = json.loads(cs[0].meta)["calibration"]
    assert meta["source"] == "golden's and TOT's sidecars" and meta["sha256"] == file_sha256(cal)
    assert "rows" not in meta and "rows" not in json.dumps(json.loads(cs[0].meta)["golden"])  # figures: stored once
    rc, out, _ = cli(capsys, "history", "list", "--db", db)
    assert rc == 0 and "cal: the calibration that judged it" in out
    # a calibration something was kept with is not removed from under it
    rc, _, err = cli(capsys, "history", "remove", "calibration", "1", "--db", db)
    assert rc == 2 and err.strip().endswith(
        "calibration 1: run 1, run 2, comparison 1 refer to it (it was kept with them): remove them first"
    )
    for kind, ident in (("comparison", 1), ("run", 1), ("run", 2), ("calibration", 1)):
        rc, out, err = cli(capsys, "history", "remove", kind, ident, "--db", db)
        assert rc == 0, err
    assert stored(db)[2] == []


def test_a_calibration_stored_before_its_sha256_was_kept_is_found_by_its_file(files, capsys):
    g, t, cal, db = files
    assert cli(capsys, "history", "add", cal, "--db", db)[0] == 0
    with History.open(db, write=True) as h, h.writing() as conn:  # as schema 0004 stored it
        conn.execute(text("UPDATE calibrations SET sha256 = NULL"))
    rc, out, err = cli(capsys, "history", "add", g, "--db", db)
    assert rc == 0 and "calibration 1" in out, err
    rs, _, cals, _ = stored(db)
    assert [r.calibration_id for r in rs] == [1] and len(cals) == 1 and cals[0].sha256 == file_sha256(cal)


def test_a_run_stored_before_is_linked_when_added_again(files, capsys):
    g, t, cal, db = files
    assert cli(capsys, "history", "add", g, "--db", db)[0] == 0
    with History.open(db, write=True) as h, h.writing() as conn:  # as schema 0004 stored it: no link
        conn.execute(text("UPDATE runs SET calibration_id = NULL"))
    rc, out, err = cli(capsys, "history", "add", g, "--db", db)
    assert rc == 0 and "run 1 already stored" in out and "calibration 1 linked" in out, err
    assert [r.calibration_id for r in stored(db)[0]] == [1]


def test_a_malformed_record_stores_nothing_and_is_one_line(files, capsys):
    g, t, cal, db = files
    side = g.with_name("g.csv.env.json")
    bad = json.loads(side.read_text())
    bad["calibration"]["rows"][0] = ["k"]
    side.write_text(json.dumps(bad))
    rc, out, err = cli(capsys, "history", "add", t, g, "--db", db)
    assert rc == 2 and err.strip() == f"harness: error: {side}: calibration: row 1 has 1 values for 13 columns"
    assert out == ""  # t was good, but a bad file among good ones stores nothing

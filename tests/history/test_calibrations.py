"""History keeps calibrations (migration 0004): `history add` of a calibration.csv, `list`, `calibration`,
`remove calibration`."""

from __future__ import annotations

import io

import pandas as pd
import pytest
from sqlalchemy import select

from harness.compare.calibration import write_calibration
from harness.history.schema import calibration_cases, calibrations
from harness.history.store import History
from harness.verdict.resolution import judge_pair, summarize
from harness.verdict.rule import Rule
from tests.calibrate.test_resolution import results
from tests.history.test_cli import cli


@pytest.fixture
def cal_file(tmp_path):
    """A calibration of two cases (the pure pipeline on fixed reps): quiet catches the limit, noisy does not."""
    quiet, noisy = [100.0, 100.1, 99.9], [100.0, 103.0, 97.0]
    golden = results({"quiet": quiet, "noisy": noisy})
    same = judge_pair(golden, results({"quiet": quiet, "noisy": noisy}), Rule())
    slow = judge_pair(golden, results({"quiet": [x + 1 for x in quiet], "noisy": [x + 1 for x in noisy]}), Rule())
    idx = pd.MultiIndex.from_tuples([("k", "quiet"), ("k", "noisy")], names=["kernel", "case_id"])
    table = summarize([same], {"limit": [slow]}, {"limit": pd.Series([1.0, 1.0], index=idx)}, Rule())
    meta = {
        "captured_at": "2026-11-25T10:00:00Z",
        "env": "golden",
        "triton": {"version": "3.6.0"},
        "gpu": {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-1"},
        "slowdowns": ["limit"],
        "repeats": 1,
        "rule": {"rel": 1.005, "abs_us": 0.5, "min_golden_us": 4.0},
    }
    path = tmp_path / "calibration.csv"
    write_calibration(table, meta, path)
    return path


def test_add_list_show_remove(tmp_path, cal_file, capsys):
    db = str(tmp_path / "h.sqlite")
    rc, out, _ = cli(capsys, "history", "add", cal_file, "--db", db, "--tag", "cal")
    assert rc == 0 and "calibration 1 added" in out and "2 cases, 1 cannot resolve the rule" in out
    rc, out, _ = cli(capsys, "history", "add", cal_file, "--db", db)
    assert rc == 0 and "calibration 1 already stored" in out
    with History.open(db, write=False) as h, h.reading() as conn:
        c = conn.execute(select(calibrations)).one()
        rows = {r.case_id: r for r in conn.execute(select(calibration_cases)).all()}
    assert (c.env_name, c.triton_version, c.gpu_uuid, c.slowdowns, c.cases, c.unresolved, c.tags) == (
        "golden",
        "3.6.0",
        "1",  # as compare reads the meta's GPU-1: without nvidia-smi's prefix
        "limit",
        2,
        1,
        "cal",
    )
    assert rows["quiet"].resolves is True and rows["quiet"].resolution_pct == 1.0
    assert rows["noisy"].resolves is False and rows["noisy"].caught == "limit:0/1"
    rc, out, _ = cli(capsys, "history", "list", "--db", db)
    assert rc == 0 and "1 calibrations" in out and "golden@3.6.0" in out
    rc, out, _ = cli(capsys, "history", "calibration", "--db", db, "--coarse", "--csv")
    df = pd.read_csv(io.StringIO(out))
    assert rc == 0 and df["case_id"].tolist() == ["noisy"]
    rc, out, _ = cli(capsys, "history", "calibration", "--db", db)
    assert rc == 0 and "calibration 1: 2 cases, 1 cannot resolve the rule" in out
    assert max(len(line) for line in out.splitlines()) <= 80
    rc, out, err = cli(capsys, "history", "calibration", "7", "--db", db)
    assert rc == 2 and "no calibration 7" in err
    rc, out, _ = cli(capsys, "history", "remove", "calibration", "1", "--db", db)
    assert rc == 0 and out.strip() == "removed calibration 1 and its 2 cases"


def test_a_calibration_without_its_metadata_is_refused(tmp_path, cal_file, capsys):
    cal_file.with_name("calibration.csv.meta.json").unlink()
    rc, _, err = cli(capsys, "history", "add", cal_file, "--db", str(tmp_path / "h.sqlite"))
    assert rc == 2 and "calibration.csv.meta.json is not beside it" in err

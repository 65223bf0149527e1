"""History keeps how sure each verdict was: the confidence, rep noise and 95 % interval of every verdict row, the
ambiguous regressions of every comparison (migration 0003), and shows them in list and regressions."""

from __future__ import annotations

import io

import pandas as pd
import pytest
from sqlalchemy import select, text

from harness.history import queries as q
from harness.history.schema import comparisons, verdicts
from harness.history.store import History
from tests.history.files import compare_file, results_file
from tests.history.test_cli import cli

GOLDEN = {("gemm", "M16_N512"): 10.0, ("gemm", "M1024_N512"): 50.0, ("gemm", "M64_N512"): 20.0}


def _night(folder, name: str, tot: dict, spread: float, day: int):
    """A comparison of GOLDEN (quiet reps) with ``tot`` whose reps spread by ``spread``."""
    folder.mkdir()
    g = results_file(folder, "golden.csv", GOLDEN, when=f"2026-11-{day}T02:00:00Z")
    t = results_file(folder, "tot.csv", tot, env="tot", triton="3.9.0", when=f"2026-11-{day}T02:30:00Z", spread=spread)
    return compare_file(g, t, folder / name)


@pytest.fixture
def two(tmp_path):
    """Night 1: M16 7 % slower with quiet reps (a confident regression: the limit is 5.5 % at 10 µs), M1024 60 %
    slower. Night 2: the same times but TOT's reps spread 3 %: M16's interval straddles the limit (ambiguous),
    M1024 stays confident."""
    tot = {**GOLDEN, ("gemm", "M16_N512"): 10.7, ("gemm", "M1024_N512"): 80.0}
    a = _night(tmp_path / "n1", "compare.csv", tot, 0.001, 10)
    b = _night(tmp_path / "n2", "compare.csv", tot, 0.03, 11)
    db = str(tmp_path / "h.sqlite")
    with History.open(db, write=True) as h:
        h.add_compare(a)
        h.add_compare(b)
    return db


def test_verdict_rows_keep_confidence_noise_and_interval(two):
    with History.open(two, write=False) as h, h.reading() as conn:
        amb = conn.execute(select(comparisons.c.id, comparisons.c.ambiguous).order_by(comparisons.c.id)).all()
        rows = conn.execute(select(verdicts).where(verdicts.c.case_id == "M16_N512").order_by(verdicts.c.id)).all()
    assert [a for _, a in amb] == [0, 1]
    quiet, noisy = rows
    assert (quiet.verdict, quiet.confidence, noisy.verdict, noisy.confidence) == (
        "regression",
        "confident",
        "regression",
        "ambiguous",
    )
    limit = 0.5 + 100 * 0.5 / 10.0
    assert quiet.delta_lo_pct > limit and noisy.delta_lo_pct < limit < noisy.delta_hi_pct
    assert noisy.delta_lo_pct < 7.0 < noisy.delta_hi_pct and noisy.noise_pct > 2.5 > quiet.noise_pct


def test_list_and_regressions_show_the_ambiguous_ones(two, capsys):
    rc, out, _ = cli(capsys, "history", "list", "--db", two)
    assert rc == 0 and "(N?): N of them ambiguous" in out
    lines = [line for line in out.splitlines() if "3.6.0 vs 3.9.0" in line]
    assert len(lines) == 2 and " 2 (1?) " in lines[1] and "(1?)" not in lines[0]
    rc, out, _ = cli(capsys, "history", "regressions", "--db", two)
    assert rc == 0 and "2 (1?)" in out
    rc, out, _ = cli(capsys, "history", "regressions", "--db", two, "--csv")
    df = pd.read_csv(io.StringIO(out))
    assert df["ambiguous"].tolist() == [0, 1] and df["regressions"].tolist() == [2, 2]


def test_a_regression_that_turned_ambiguous_no_longer_blocks(two, capsys):
    rc, out, _ = cli(capsys, "history", "regressions", "--db", two, "--from", "#1", "--to", "#2", "--csv")
    df = pd.read_csv(io.StringIO(out))
    assert rc == 0 and len(df) == 1
    row = df.iloc[0]
    assert (row.change, row.case_id, row.confidence_before, row.confidence_after) == (
        "fixed",
        "M16_N512",
        "confident",
        "ambiguous",
    )
    assert row.delta_lo_pct_after < row.delta_pct_after < row.delta_hi_pct_after
    rc, out, _ = cli(capsys, "history", "regressions", "--db", two, "--from", "#1", "--to", "#2")
    assert rc == 0 and "2 regressions (1 ambiguous)" in " ".join(out.split()) and "regression (ambiguous)" in out
    assert max(len(line) for line in out.splitlines()) <= 80


def test_run_verdicts_name_the_ambiguous_ones(two):
    with History.open(two, write=False) as h, h.reading() as conn:
        comps = q.comparisons_frame(conn)
        verd = q.verdicts_frame(conn, comps["id"].tolist())
        rv = q.run_verdicts(comps, verd)
    m16 = rv[rv["case_id"] == "M16_N512"]["verdicts"].tolist()
    assert "regression (#2, ambiguous)" in m16 and "regression (#1)" in m16


def test_comparisons_stored_before_0003_have_no_confidence(tmp_path, capsys):
    """A database at 0002 holding a comparison upgrades: its verdicts' confidence is NULL (never judged, not
    confident) and its comparison's ambiguous count unknown; list shows its plain count."""
    from alembic import command
    from alembic.config import Config

    from harness.history.database import MIGRATIONS
    from harness.history.database import make_engine as _engine
    from harness.history.url import resolve

    db = str(tmp_path / "old.sqlite")
    engine = _engine(resolve(db))
    with engine.connect() as conn:
        cfg = Config()
        cfg.set_main_option("script_location", str(MIGRATIONS))
        cfg.attributes["connection"] = conn
        with conn.begin():
            command.upgrade(cfg, "0002")
        with conn.begin():
            conn.execute(
                text(
                    "INSERT INTO comparisons (content_hash, path, file_name, added_at, added_by, rule_rel, "
                    "rule_abs_us, rule_min_golden_us, same_triton, cases, regressions, failed_in_tot, improvements, "
                    "counts, meta, golden_triton, tot_triton) VALUES ('c1', 'c.csv', 'c.csv', '2026-11-20 10:00:00', "
                    "'me', 1.005, 0.5, 4.0, 0, 1, 1, 0, 0, '{}', '{}', '3.6.0', '3.9.0')"
                )
            )
            conn.execute(
                text(
                    "INSERT INTO verdicts (comparison_id, kernel, case_id, verdict, delta_pct) "
                    "VALUES (1, 'gemm', 'M16', 'regression', 9.0)"
                )
            )
    engine.dispose()
    with History.open(db, write=False) as h, h.reading() as conn:
        v = conn.execute(select(verdicts)).one()
        c = conn.execute(select(comparisons)).one()
    assert (v.confidence, v.delta_lo_pct, c.ambiguous) == (None, None, None)
    rc, out, _ = cli(capsys, "history", "list", "--db", db)
    line = next(x for x in out.splitlines() if "3.6.0 vs 3.9.0" in x)
    assert rc == 0 and " 1 " in line and "?)" not in line

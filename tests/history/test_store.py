"""The history store on a real SQLite file: what a run and a comparison become, idempotent adds, migrations from an
empty database and from the previous schema, refusals in one line, and two writers at once. The checks are
functions of a database location, so tests/history/test_postgres.py runs the same ones on a real PostgreSQL."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import create_engine, func, select, text

from harness.errors import HarnessError
from harness.history.schema import HEAD, annotations, comparisons, metadata, results, runs, verdicts
from harness.history.store import History
from tests.conftest import DATA, REPORTS_DIR, ROOT, needs_reports
from tests.history.files import compare_file, results_file

H200 = DATA / "h200-triton-3.6.0-vs-3.9.0"
CASES = {("gemm", "M16_N512"): 10.0, ("gemm", "M1024_N512"): 50.0, ("rmsnorm", "M16_N512"): 5.0}


def _count(h: History, table, *where) -> int:
    with h.reading() as conn:
        return int(conn.execute(select(func.count()).select_from(table).where(*where)).scalar_one())


# -- checks shared with PostgreSQL --------------------------------------------------------------------------------


def check_add_results(db: str, tmp: Path) -> None:
    src = results_file(tmp, "golden.csv", CASES, status={("rmsnorm", "M16_N512"): "runtime_error"})
    with History.open(db, write=True) as h:
        added = h.add_results(src, tags="nightly", label="PR 1", commit="abc123")
        assert added.new and added.kind == "run"
        with h.reading() as conn:
            run = conn.execute(select(runs).where(runs.c.id == added.id)).one()
            rows = conn.execute(select(results).where(results.c.run_id == added.id).order_by(results.c.id)).all()
    assert (run.env_name, run.triton_version, run.gpu_name) == ("golden", "3.6.0", "NVIDIA H100 80GB HBM3")
    assert (run.gpu_uuid, run.driver, run.host, run.timing) == ("52e77cf8-0000", "580.159.04", "node-1", "cupti")
    assert (run.sm_clock_mhz, run.launch_gap, run.placement, run.move_inputs, run.reps) == (
        1980.0,
        "auto",
        "shuffled",
        True,
        3,
    )
    assert json.loads(run.knobs) == {"TRITON_DEFAULT_FP_FUSION": "1"} and run.git_commit == "abc123"
    assert (run.tags, run.label, run.rows, run.schema_version, run.run_at_source) == (
        "nightly",
        "PR 1",
        3,
        2,
        "sidecar",
    )
    assert str(run.run_at).startswith("2026-11-22 10:00:00") and json.loads(run.sidecar)["host"] == "node-1"
    assert [r.case_id for r in rows] == ["M16_N512", "M1024_N512", "M16_N512"]
    first, failed = rows[0], rows[2]
    assert first.time_us == 10.0 and json.loads(first.rep_times_us) == [10.0, 10.01, 9.99]
    assert json.loads(first.dispatch_us) == {"_k": 10.0} and json.loads(first.params)["M"] == 16
    assert failed.status == "runtime_error" and failed.time_us is None and failed.error == "boom"


def check_idempotent(db: str, tmp: Path) -> None:
    src = results_file(tmp, "tot.csv", CASES, env="tot", triton="3.9.0")
    copy = tmp / "elsewhere" / "same.csv"
    copy.parent.mkdir()
    shutil.copy(src, copy)
    shutil.copy(src.with_name("tot.csv.env.json"), copy.with_name("same.csv.env.json"))
    with History.open(db, write=True) as h:
        first = h.add_results(src)
        again = h.add_results(src, tags="experiment")
        moved = h.add_results(copy)  # the same bytes under another name: the same run
        assert first.new and not again.new and not moved.new
        assert first.id == again.id == moved.id and again.tags_added == ["experiment"]
        assert _count(h, runs) == 1 and _count(h, results) == 3
        with h.reading() as conn:
            assert conn.execute(select(runs.c.tags)).scalar_one() == "experiment"
        # the same rows measured at another time (its sidecar says so) are another run
        side = copy.with_name(copy.name + ".env.json")
        side.write_text(side.read_text().replace("2026-11-22T10:00:00Z", "2026-11-23T10:00:00Z"))
        assert h.add_results(copy).new and _count(h, runs) == 2


def check_compare(db: str, tmp: Path) -> None:
    g = results_file(tmp, "golden.csv", CASES, when="2026-11-22T10:00:00Z")
    t = results_file(
        tmp, "tot.csv", {**CASES, ("gemm", "M1024_N512"): 60.0}, env="tot", triton="3.9.0", when="2026-11-22T10:05:00Z"
    )
    cmp = compare_file(g, t, tmp / "compare.csv")
    with History.open(db, write=True) as h:
        added = h.add_compare(cmp, tags="nightly")
        assert [a.kind for a in added] == ["run", "run", "comparison"] and all(a.new for a in added)
        assert not any(a.new for a in h.add_compare(cmp))
        with h.reading() as conn:
            c = conn.execute(select(comparisons)).one()
            v = conn.execute(select(verdicts.c.case_id, verdicts.c.verdict).order_by(verdicts.c.id)).all()
    assert (c.golden_run_id, c.tot_run_id) == (added[0].id, added[1].id)
    assert (c.golden_triton, c.tot_triton, c.same_triton, c.regressions, c.cases) == ("3.6.0", "3.9.0", False, 1, 3)
    assert str(c.compared_at).startswith("2026-11-22 10:05") and (c.rule_rel, c.rule_abs_us) == (1.005, 0.5)
    assert dict(v)["M1024_N512"] == "regression" and json.loads(c.counts)["regression"] == 1


def check_two_writers(db: str, tmp: Path) -> None:
    """Two processes add five files each, in opposite orders, to a database neither has created yet."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from history_add import make_results

    files = []
    for i in range(5):
        files.append(tmp / f"r{i}.csv")
        make_results(files[-1], 20_000, seed=i)
    cmd = [sys.executable, "-m", "harness", "history", "add", "--db", db]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen([*cmd, *order], cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for order in (list(map(str, files)), list(map(str, reversed(files))))
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 0, err
    lines = [line for out, _ in outs for line in out.splitlines()]
    assert sum("added" in line for line in lines) == 5 and sum("already stored" in line for line in lines) == 5
    with History.open(db, write=False) as h:
        assert _count(h, runs) == 5 and _count(h, results) == 100_000


# -- SQLite ------------------------------------------------------------------------------------------------------


def test_add_results(tmp_path):
    check_add_results(str(tmp_path / "h.sqlite"), tmp_path)


def test_same_file_twice_is_stored_once(tmp_path):
    check_idempotent(str(tmp_path / "h.sqlite"), tmp_path)


def test_compare_is_linked_to_both_runs(tmp_path):
    check_compare(str(tmp_path / "h.sqlite"), tmp_path)


@pytest.mark.slow
def test_two_writers_at_once(tmp_path):
    check_two_writers(str(tmp_path / "new" / "h.sqlite"), tmp_path)


def test_version_1_files_load_through_the_one_loader(tmp_path):
    with History.open(tmp_path / "h.sqlite", write=True) as h:
        added = h.add_compare(H200 / "compare.csv")
        with h.reading() as conn:
            run = conn.execute(select(runs).where(runs.c.id == added[0].id)).one()
            row = conn.execute(select(results).where(results.c.run_id == run.id).order_by(results.c.id)).first()
    assert run.schema_version == 1 and run.gpu_name == "NVIDIA H200" and run.rows == 120
    assert json.loads(row.params) == {"B": 128, "K": 128, "M": 16, "N": 512} and row.flops == 2.0 * 128 * 16 * 512 * 128


def test_a_results_file_measured_again_is_not_linked_to_an_older_comparison(tmp_path):
    g = results_file(tmp_path, "golden.csv", CASES)
    t = results_file(tmp_path, "tot.csv", CASES, env="tot", triton="3.9.0", when="2026-11-22T10:05:00Z")
    cmp = compare_file(g, t, tmp_path / "compare.csv")
    results_file(tmp_path, "golden.csv", CASES, when="2026-11-23T09:00:00Z")  # golden measured again since
    with History.open(tmp_path / "h.sqlite", write=True) as h:
        added = h.add_compare(cmp)
        with h.reading() as conn:
            c = conn.execute(select(comparisons)).one()
    assert [a.kind for a in added] == ["run", "comparison"] and c.golden_run_id is None and c.tot_run_id == added[0].id


def test_annotations(tmp_path):
    from datetime import datetime

    with History.open(tmp_path / "h.sqlite", write=True) as h:
        aid = h.annotate(
            "config retune", datetime(2026, 11, 23, 23, 40), kind="retune", kernel="gemm", details={"files": 14}
        )
        with h.reading() as conn:
            a = conn.execute(select(annotations)).one()
        with pytest.raises(HarnessError, match="no run 7"):
            h.annotate("x", datetime(2026, 1, 1), run_id=7)
    assert (a.id, a.kind, a.text, a.kernel, json.loads(a.details)) == (
        aid,
        "retune",
        "config retune",
        "gemm",
        {"files": 14},
    )


def test_reading_what_is_not_there_is_one_line(tmp_path):
    with pytest.raises(HarnessError, match="no history database here yet"):
        History.open(tmp_path / "none.sqlite", write=False)
    assert not (tmp_path / "none.sqlite").exists()  # a read never creates the file
    (tmp_path / "notes.txt").write_text("not a database, just text\n" * 100)
    with pytest.raises(HarnessError, match=r"notes.txt: not an SQLite database"):
        History.open(tmp_path / "notes.txt", write=True)
    with pytest.raises(HarnessError, match="is a directory"):
        History.open(tmp_path, write=True)
    History.open(tmp_path / "empty.sqlite", write=True).close()
    create_engine(f"sqlite:///{tmp_path / 'empty2.sqlite'}").connect().close()
    with pytest.raises(HarnessError, match="no history stored yet"):
        History.open(tmp_path / "empty2.sqlite", write=False)


def test_foreign_and_newer_databases_are_refused(tmp_path):
    other = tmp_path / "other.sqlite"
    with create_engine(f"sqlite:///{other}").begin() as conn:
        conn.execute(text("CREATE TABLE runs (x INTEGER)"))
    with pytest.raises(HarnessError, match="has a 'runs' table but no harness schema revision"):
        History.open(other, write=True)
    newer = tmp_path / "newer.sqlite"
    History.open(newer, write=True).close()
    with create_engine(f"sqlite:///{newer}").begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0099'"))
    with pytest.raises(HarnessError, match="revision 0099 is newer than this harness knows .0005.: upgrade harness"):
        History.open(newer, write=False)


def check_migrated_schema_is_the_models(db: str) -> None:
    """Upgrading an empty database gives exactly the tables, columns and indexes of harness/history/schema.py."""
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    with History.open(db, write=True) as h, h.engine.connect() as conn:
        assert MigrationContext.configure(conn).get_current_revision() == HEAD
        diff = compare_metadata(MigrationContext.configure(conn), metadata)
    assert [
        d for d in diff if not (isinstance(d, tuple) and d[0] == "remove_table" and d[1].name == "alembic_version")
    ] == []


def check_upgrade_from_previous_schema(db: str) -> None:
    """A database made by revision 0001 (before annotations, tags and labels), with a run in it, is upgraded on
    open: the run is kept and the new columns and table work."""
    from alembic import command
    from alembic.config import Config

    from harness.history.database import MIGRATIONS
    from harness.history.database import make_engine as _engine
    from harness.history.url import resolve

    loc = resolve(db)
    engine = _engine(loc)
    with engine.connect() as conn:
        cfg = Config()
        cfg.set_main_option("script_location", str(MIGRATIONS))
        cfg.attributes["connection"] = conn
        with conn.begin():
            command.upgrade(cfg, "0001")
        with conn.begin():
            conn.execute(
                text(
                    "INSERT INTO runs (content_hash, path, file_name, added_at, added_by, run_at_source, env_name, "
                    "schema_version, rows, sidecar) VALUES ('h1', 'a.csv', 'a.csv', '2026-11-20 10:00:00', 'me', "
                    "'sidecar', 'golden', 2, 1, '{}')"
                )
            )
            conn.execute(
                text(
                    "INSERT INTO results (run_id, kernel, case_id, status, time_us) VALUES (1, 'gemm', 'M16', 'ok', 3.5)"
                )
            )
    engine.dispose()
    said = []
    with History.open(db, write=False, log=said.append) as h:
        with h.reading() as conn:
            run = conn.execute(select(runs)).one()
            assert conn.execute(select(results.c.time_us)).scalar_one() == 3.5
        from datetime import datetime

        h.annotate("after the upgrade", datetime(2026, 11, 21))
    assert (run.env_name, run.tags, run.label) == ("golden", "", "")
    assert said == [f"{loc.shown}: schema upgraded from revision 0001 to {HEAD}"]


def test_migrations_from_empty(tmp_path):
    check_migrated_schema_is_the_models(str(tmp_path / "h.sqlite"))


def test_migrations_from_the_previous_schema(tmp_path):
    check_upgrade_from_previous_schema(str(tmp_path / "h.sqlite"))


@needs_reports
def test_the_committed_example_database(tmp_path):
    """reports/history/history.sqlite.xz (reports/history/seed.sh): at this schema, with every committed run."""
    import lzma

    from harness.history import queries as q

    db = tmp_path / "history.sqlite"
    db.write_bytes(lzma.decompress((REPORTS_DIR / "history" / "history.sqlite.xz").read_bytes()))
    with History.open(db, write=False) as h, h.reading() as conn:
        runs_, comps = q.runs_frame(conn), q.comparisons_frame(conn, include_aa=False)
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar_one() == HEAD
    assert len(runs_) == 32 and set(runs_["gpu_name"]) == {"NVIDIA H100 80GB HBM3", "NVIDIA H200"}
    assert runs_["tags"].str.contains("experiment").sum() == 16 and runs_["tags"].str.contains("tuning").sum() == 7
    # golden vs TOT: the H200 and H100 batched GEMMs (2026-11-22), the H100 library (2026-11-23)
    assert comps[["gpu_name", "regressions"]].values.tolist() == [
        ["NVIDIA H200", 35],
        ["NVIDIA H100 80GB HBM3", 30],
        ["NVIDIA H100 80GB HBM3", 38],
    ]

"""The history store on a real PostgreSQL server (started by tests/history/conftest.py): the same checks as on
SQLite, two writers at once, and failures (a refused password, a server that is not there, a database that does
not exist) as one line that never shows a credential."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from harness.errors import HarnessError
from harness.history.store import History
from tests.conftest import DATA, ROOT
from tests.history import test_store as checks
from tests.history.conftest import PASSWORD, USER, _free_port

pytestmark = pytest.mark.slow  # a real PostgreSQL server


def test_add_results(postgres, tmp_path):
    checks.check_add_results(postgres.new_database(), tmp_path)


def test_same_file_twice_is_stored_once(postgres, tmp_path):
    checks.check_idempotent(postgres.new_database(), tmp_path)


def test_compare_is_linked_to_both_runs(postgres, tmp_path):
    checks.check_compare(postgres.new_database(), tmp_path)


def test_two_writers_at_once(postgres, tmp_path):
    checks.check_two_writers(postgres.new_database(), tmp_path)


def test_migrations_from_empty(postgres):
    checks.check_migrated_schema_is_the_models(postgres.new_database())


def test_migrations_from_the_previous_schema(postgres):
    checks.check_upgrade_from_previous_schema(postgres.new_database())


def _cli(*args: str, db: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HARNESS_DB": db}
    return subprocess.run(
        [sys.executable, "-m", "harness", "history", *args], env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    "case",
    ["wrong password", "no such database", "nothing listening"],
)
def test_failures_are_one_line_without_credentials(postgres, case):
    if case == "wrong password":
        db, want = postgres.url(password="Wrong-" + PASSWORD), "password authentication failed"
    elif case == "no such database":
        db, want = postgres.url("no_such_db"), 'database "no_such_db" does not exist'
    else:
        db, want = f"postgresql://{USER}:{PASSWORD}@127.0.0.1:{_free_port()}/x", "Connection refused"
    with pytest.raises(HarnessError) as err:
        History.open(db, write=True)
    message = str(err.value)
    assert want in message and "\n" not in message
    assert PASSWORD not in message and USER not in message and message.startswith("postgresql://***@127.0.0.1:")
    for args in (["list"], ["add", str(DATA / "h200-triton-3.6.0-vs-3.9.0" / "golden.csv")]):
        res = _cli(*args, db=db)
        assert res.returncode == 2 and res.stdout == ""
        assert res.stderr.count("\n") == 1 and res.stderr.startswith("harness: error: postgresql://***@127.0.0.1:")
        assert PASSWORD not in res.stderr and USER not in res.stderr and want in res.stderr


def test_the_cli_over_postgres(postgres):
    db = postgres.new_database()
    h100 = DATA / "h100-triton-3.6.0-vs-3.9.0"
    res = _cli("add", "--tag", "nightly", str(h100 / "compare.csv"), db=db)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[-1].startswith("comparison 1 added: ")
    res = _cli("regressions", "--csv", db=db)
    assert res.returncode == 0 and "batched_gemm_a16wfp4" in res.stdout
    assert PASSWORD not in res.stdout + res.stderr

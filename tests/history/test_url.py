"""Where the history is: --db, $HARNESS_DB, the per-user file; URLs shown without credentials; bad ones refused in
one line that never repeats them."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.history.url import default_path, resolve


def test_file_paths_and_sqlite_urls(tmp_path, monkeypatch):
    monkeypatch.delenv("HARNESS_DB", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert resolve(None).path == tmp_path / "harness" / "history.sqlite" == default_path()
    assert resolve("runs.sqlite").path == Path("runs.sqlite") and resolve("runs.sqlite").shown == "runs.sqlite"
    assert resolve("sqlite:////tmp/x.db").path == Path("/tmp/x.db")
    monkeypatch.setenv("HARNESS_DB", str(tmp_path / "team.sqlite"))
    assert resolve(None).path == tmp_path / "team.sqlite"
    assert resolve("mine.sqlite").path == Path("mine.sqlite")  # --db wins over $HARNESS_DB


def test_postgres_urls_are_shown_without_credentials():
    loc = resolve("postgresql://alice:p%40ss-w0rd@db.example:5433/perf?sslmode=require&password=qpw123")
    assert loc.shown == "postgresql://***@db.example:5433/perf" and not loc.sqlite
    assert loc.url.startswith("postgresql+psycopg://alice:")  # the driver harness installs
    assert "alice" not in repr(loc) and "p%40ss" not in repr(loc)
    msg = loc.scrub('FATAL:  password authentication failed for user "alice" (p@ss-w0rd, p%40ss-w0rd, qpw123)')
    assert msg == 'FATAL: password authentication failed for user "***" (***, ***, ***)'
    assert resolve("postgres://h/db").url.startswith("postgresql+psycopg://")
    assert resolve("postgresql+psycopg2://h/db").url.startswith("postgresql+psycopg2://")


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("mysql://root:hunter22@h/db", "--db: unsupported database 'mysql'"),
        ("postgresql://u:hunter22@h:port/db", "--db: not a valid postgresql URL"),
        ("postgresql://u:hunter22@h:5432", "--db: postgresql URL without a database name"),
        ("sqlite://", "--db: sqlite URL without a file"),
    ],
)
def test_bad_urls_are_one_line_without_the_url(given, message):
    with pytest.raises(HarnessError) as err:
        resolve(given)
    assert str(err.value).startswith(message) and "hunter22" not in str(err.value)


def test_bad_url_in_the_environment_names_the_variable(monkeypatch):
    monkeypatch.setenv("HARNESS_DB", "postgresql://u:hunter22@h:x/db")
    with pytest.raises(HarnessError, match=r"^\$HARNESS_DB: not a valid postgresql URL"):
        resolve(None)

"""The history database's connection and schema: the engine (SQLite's write lock, PostgreSQL's timeouts), driver
errors as one line with credentials scrubbed, the file checks, the schema revision (Alembic) checked and
upgraded, and rows inserted in bounded batches (COPY on PostgreSQL). store.py writes and reads through it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.history import ingest
from harness.history.schema import HEAD
from harness.history.url import Location

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
#: the PostgreSQL advisory lock a migration holds (any constant unique to harness)
MIGRATION_LOCK = 0x4841524E  # "HARN"
#: seconds a writer waits for another's lock (SQLite) and a client for a server to answer (PostgreSQL)
LOCK_WAIT_S = 60
CONNECT_TIMEOUT_S = 10
#: rows per INSERT statement batch (bounded memory for million-row files)
CHUNK = 20_000


@contextlib.contextmanager
def db_errors(loc: Location) -> Iterator[None]:
    """Driver and SQL errors as one line naming the database, credentials scrubbed."""
    from sqlalchemy.exc import DBAPIError, SQLAlchemyError

    try:
        yield
    except DBAPIError as err:
        raise HarnessError(f"{loc.shown}: {_driver_message(loc, err)}") from None
    except SQLAlchemyError as err:
        raise HarnessError(
            f"{loc.shown}: {loc.scrub(str(err).splitlines()[0] if str(err) else type(err).__name__)}"
        ) from None


def _driver_message(loc: Location, err: Any) -> str:
    orig = getattr(err, "orig", None)
    text = str(orig) if orig is not None and str(orig) else str(err).split("\n[SQL:", 1)[0]
    text = loc.scrub(text)
    if loc.sqlite and "file is not a database" in text:
        return "not an SQLite database (file is not a database)"
    if loc.sqlite and "unable to open database file" in text:
        return "cannot open the database file (is its folder there and readable?)"
    return text or type(orig or err).__name__


def make_engine(loc: Location) -> Any:
    from sqlalchemy import create_engine, event

    if loc.sqlite:
        engine = create_engine(loc.url, connect_args={"timeout": LOCK_WAIT_S})

        @event.listens_for(engine, "connect")
        def _connect(dbapi_conn: Any, record: Any) -> None:
            dbapi_conn.isolation_level = None  # transactions are begun below, DDL included
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        @event.listens_for(engine, "begin")
        def _begin(conn: Any) -> None:
            write = conn.get_execution_options().get("harness_write", False)
            conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

        return engine
    return create_engine(loc.url, connect_args={"connect_timeout": CONNECT_TIMEOUT_S}, pool_pre_ping=False)


def check_file(path: Path, write: bool) -> None:
    from harness.fsutil import check_writable

    if path.is_dir():
        raise HarnessError(f"{path}: is a directory, expected a database file")
    if write:
        check_writable("--db", path)
    elif not path.exists():
        raise HarnessError(f"{path}: no history database here yet (harness history add FILES creates it)")


def revision(conn: Any) -> tuple[str | None, bool]:
    """(the database's schema revision or None, whether harness may use it: False when it has a ``runs`` table
    but no revision, i.e. it is someone else's)."""
    from alembic.runtime.migration import MigrationContext
    from sqlalchemy import inspect

    # the table first, the revision second: another process's first migration commits both at once, and outside
    # its lock each statement sees what is committed when it runs, so this order never reads its tables without
    # its revision (the other order did: two writers at once on an empty PostgreSQL database)
    has_runs = inspect(conn).has_table("runs")
    current = MigrationContext.configure(conn).get_current_revision()
    if current is not None:
        return current, True
    return None, not has_runs


def _known_revisions() -> set[str]:
    return {p.name.split("_", 1)[0] for p in (MIGRATIONS / "versions").glob("[0-9]*.py")}


def check_revision(loc: Location, current: str | None, ours: bool, write: bool) -> None:
    if current is None and not ours:
        raise HarnessError(f"{loc.shown}: has a 'runs' table but no harness schema revision: not a history database")
    if current is not None and current not in _known_revisions():
        raise HarnessError(
            f"{loc.shown}: schema revision {current} is newer than this harness knows ({HEAD}): upgrade harness"
        )
    if current is None and not write:
        raise HarnessError(f"{loc.shown}: no history stored yet (harness history add FILES stores some)")


def upgrade(conn: Any) -> None:
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["connection"] = conn
    command.upgrade(cfg, HEAD)


def insert_rows(conn: Any, table: Any, rows: ingest.Rows) -> None:
    """Insert many rows in the connection's transaction. PostgreSQL through psycopg: ``COPY ... FROM STDIN``
    (100,000 rows: ~35 s as an executemany, a few seconds copied). Otherwise Core's INSERT, compiled once for the
    dialect, with the rows handed to the driver's executemany as tuples in the statement's parameter order (Core's
    per-row parameter processing costs 3x the insert itself at 100,000 rows; every column here is text or a
    number, which need no processing)."""
    if not len(rows):
        return
    if conn.dialect.name == "postgresql" and conn.dialect.driver == "psycopg":
        _copy_rows(conn, table, rows)
        return
    compiled = table.insert().compile(dialect=conn.dialect, column_keys=rows.names)
    order = compiled.positiontup
    index = [rows.names.index(k) for k in order] if order else []
    for i in range(0, len(rows), CHUNK):
        chunk = rows.values[i : i + CHUNK]
        if order:  # positional parameters (sqlite's qmark)
            params: list[Any] = (
                chunk if index == list(range(len(index))) else [tuple(r[j] for j in index) for r in chunk]
            )
        else:  # named parameters (psycopg2's pyformat, ...)
            params = [dict(zip(rows.names, r)) for r in chunk]
        conn.exec_driver_sql(str(compiled), params)


def _copy_rows(conn: Any, table: Any, rows: ingest.Rows) -> None:
    quote = conn.dialect.identifier_preparer.quote
    sql = f"COPY {quote(table.name)} ({', '.join(quote(c) for c in rows.names)}) FROM STDIN"
    with conn.connection.driver_connection.cursor() as cur, cur.copy(sql) as copy:
        for row in rows.values:
            copy.write_row(row)

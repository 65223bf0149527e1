"""The history database: opened (and migrated) through SQLAlchemy Core and Alembic, written one file per
transaction.

* **Idempotent.** A results file or a comparison is keyed by the SHA-256 of its CSV's bytes: adding it again
  stores nothing (its tags are merged).
* **Concurrent writers.** SQLite: every write transaction starts with ``BEGIN IMMEDIATE`` (the database's write
  lock, waited for up to a minute), so two writers take turns instead of failing halfway. PostgreSQL: the unique
  key decides; the second writer of the same file waits for the first, then finds it stored. Migrations take
  the same lock (PostgreSQL: an advisory lock), so two processes opening an empty database create it once.
* **One line on failure.** Any driver error is one line naming the database as shown (``postgresql://***@host``),
  with every credential scrubbed; never a traceback (docs/history.md).
"""

from __future__ import annotations

import contextlib
import getpass
import hashlib
import json
import os
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.history import ingest
from harness.history.database import (
    MIGRATION_LOCK,
    check_file,
    check_revision,
    db_errors,
    insert_rows,
    make_engine,
    revision,
    upgrade,
)
from harness.history.schema import (
    HEAD,
    annotations,
    calibration_cases,
    calibrations,
    comparisons,
    results,
    runs,
    verdicts,
)
from harness.history.url import Location, resolve


def who() -> str:
    """``user@host`` of whoever adds something (stored with it)."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid()) if hasattr(os, "getuid") else "unknown"
    return f"{user}@{socket.gethostname()}"


@dataclass
class Added:
    """What one file became: a run or a comparison, new or already stored."""

    kind: str
    id: int
    new: bool
    path: Path
    summary: str
    tags_added: list[str] = field(default_factory=list)
    label_change: str = ""  # a stored file given a label again: "'old' → 'new'" (or "'new'" where it had none)


class History:
    """An open history database. ``History.open(db, write=...)``; use as a context manager to dispose of it."""

    def __init__(self, loc: Location, engine: Any, log: Callable[[str], None]):
        self.loc, self.engine, self.log = loc, engine, log

    # -- opening -------------------------------------------------------------------------------------------------

    @classmethod
    def open(
        cls, db: str | os.PathLike[str] | None = None, *, write: bool, log: Callable[[str], None] | None = None
    ) -> History:
        """Open the database at ``db`` (else ``$HARNESS_DB``, else the per-user file), migrating it to this
        harness's schema. ``write``: a missing SQLite file (and its folder) is created; otherwise it is an error."""
        loc = resolve(db)
        if loc.path is not None:
            check_file(loc.path, write)
        try:
            engine = make_engine(loc)
        except ImportError as err:  # a driver named in the URL that is not installed
            raise HarnessError(f"{loc.shown}: its driver is not installed ({loc.scrub(str(err))})") from None
        except Exception as err:  # noqa: BLE001 - SQLAlchemy's ArgumentError, NoSuchModuleError, ...: one line
            raise HarnessError(
                f"{loc.shown}: {loc.scrub(str(err).splitlines()[0] if str(err) else type(err).__name__)}"
            ) from None
        history = cls(loc, engine, log or (lambda _m: None))
        try:
            with db_errors(loc):
                history._migrate(write)
        except BaseException:
            history.close()
            raise
        return history

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def reading(self) -> Iterator[Any]:
        """A connection in one read transaction."""
        with db_errors(self.loc), self.engine.connect() as conn, conn.begin():
            yield conn

    @contextlib.contextmanager
    def writing(self, migration: bool = False) -> Iterator[Any]:
        """A connection in one write transaction, holding the database's write lock (SQLite) or, for a migration,
        PostgreSQL's advisory lock; committed on a clean exit."""
        from sqlalchemy import text

        with db_errors(self.loc), self.engine.connect() as conn:
            conn = conn.execution_options(harness_write=True)
            with conn.begin():
                if migration and not self.loc.sqlite:
                    conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": MIGRATION_LOCK})
                yield conn

    def _migrate(self, write: bool) -> None:
        with self.reading() as conn:
            current, ours = revision(conn)
        if current == HEAD:
            return
        check_revision(self.loc, current, ours, write)
        with self.writing(migration=True) as conn:
            current, ours = revision(conn)
            check_revision(self.loc, current, ours, True)
            if current != HEAD:
                upgrade(conn)
        if current is not None and current != HEAD:
            self.log(f"{self.loc.shown}: schema upgraded from revision {current} to {HEAD}")

    # -- adding --------------------------------------------------------------------------------------------------

    def add_results(
        self, path: Path, *, tags: str = "", label: str = "", commit: str | None = None, frame: Any = None
    ) -> Added:
        """Store one results file (checked by the one loader, ``harness.results.load.load_results``)."""
        from harness.results.load import load_results
        from harness.results.schema import sidecar_path

        path = Path(path)
        df = frame if frame is not None else load_results(path)
        env = df.attrs.get("env") or {}
        digest = ingest.content_hash(path.read_bytes(), env.get("captured_at"))
        record = ingest.run_record(df, path, digest, added_by=who(), label=label, tags=tags, commit=commit)
        cal = recorded_calibration(env.get("calibration"), f"{sidecar_path(path)}: calibration")
        summary = _run_summary(record)
        found = self._stored(runs, digest, tags, label)
        if found:
            return Added("run", found[0], False, path, summary + self._link_late(runs, found[0], cal), *found[1:])
        try:
            with self.writing() as conn:
                found = _existing(conn, runs, digest)
                if found is not None:
                    return Added("run", found, False, path, summary)
                if cal is not None:
                    record["calibration_id"] = keep_calibration(conn, *cal)
                    summary += f", calibration {record['calibration_id']}"
                run_id = conn.execute(runs.insert().values(record)).inserted_primary_key[0]
                insert_rows(conn, results, ingest.result_rows(df, run_id))
        except HarnessError:
            found = self._stored(runs, digest, tags, label)  # another writer stored the same file first
            if not found:
                raise
            return Added("run", found[0], False, path, summary, *found[1:])
        return Added("run", run_id, True, path, summary)

    def add_compare(self, path: Path, *, tags: str = "", label: str = "", commit: str | None = None) -> list[Added]:
        """Store one compare CSV (read by ``harness.compare.store.load_compare``), after the two results files it
        names where they are found (beside it or at their recorded paths), so it is linked to both runs."""
        from harness.compare.store import load_compare, locate_results, meta_path

        path = Path(path)
        cmp = load_compare(path)
        added: list[Added] = []
        links: dict[str, int | None] = {}
        for side, named, env in (("golden", cmp.golden_path, cmp.golden_env), ("tot", cmp.tot_path, cmp.tot_env)):
            found = locate_results(named, path) if named else None
            if found is not None and _same_run(found, env):
                added.append(self.add_results(found, tags=tags, label=label, commit=commit))
                links[side] = added[-1].id
            else:
                links[side] = self._run_by_env(env)
        digest = ingest.content_hash(
            path.read_bytes(), cmp.golden_env.get("captured_at"), cmp.tot_env.get("captured_at")
        )
        record = ingest.comparison_record(cmp, path, digest, added_by=who(), label=label, tags=tags)
        record.update(golden_run_id=links["golden"], tot_run_id=links["tot"])
        cal = recorded_calibration(cmp.calibration, f"{meta_path(path)}: calibration")
        summary = _comparison_summary(record)
        found = self._stored(comparisons, digest, tags, label)
        if found:
            late = self._link_late(comparisons, found[0], cal)
            return [*added, Added("comparison", found[0], False, path, summary + late, *found[1:])]
        try:
            with self.writing() as conn:
                existing = _existing(conn, comparisons, digest)
                if existing is not None:
                    return [*added, Added("comparison", existing, False, path, summary)]
                if cal is not None:
                    record["calibration_id"] = keep_calibration(conn, *cal)
                    summary += f", calibration {record['calibration_id']}"
                cid = conn.execute(comparisons.insert().values(record)).inserted_primary_key[0]
                insert_rows(conn, verdicts, ingest.verdict_rows(cmp.table, cid))
        except HarnessError:
            found = self._stored(comparisons, digest, tags, label)
            if not found:
                raise
            return [*added, Added("comparison", found[0], False, path, summary, *found[1:])]
        return [*added, Added("comparison", cid, True, path, summary)]

    def add_calibration(self, path: Path, *, tags: str = "", label: str = "") -> Added:
        """Store one calibration file (harness calibrate's calibration.csv, with its .meta.json)."""
        from sqlalchemy import select

        from harness.compare.calibration import load_calibration

        path = Path(path)
        table, meta = load_calibration(path, option="")
        data = path.read_bytes()
        sha = hashlib.sha256(data).hexdigest()
        digest = ingest.content_hash(data, meta.get("captured_at"))
        record = ingest.calibration_record(
            table, meta, path, digest, added_by=who(), label=label, tags=tags, sha256=sha
        )
        summary = f"{record['cases']} cases, {record['unresolved']} cannot resolve the rule, {record['env_name']}"
        with self.reading() as conn:  # stored from its file, or from a run's or a comparison's record of it
            key = _existing(conn, calibrations, digest) and digest
            key = key or conn.execute(select(calibrations.c.content_hash).where(calibrations.c.sha256 == sha)).scalar()
        found = self._stored(calibrations, key or digest, tags, label)
        if found:
            self._fill_sha256(found[0], sha)
            return Added("calibration", found[0], False, path, summary, *found[1:])
        with self.writing() as conn:
            existing = _existing(conn, calibrations, digest)
            if existing is not None:
                return Added("calibration", existing, False, path, summary)
            cid = conn.execute(calibrations.insert().values(record)).inserted_primary_key[0]
            insert_rows(conn, calibration_cases, ingest.calibration_rows(table, cid))
        return Added("calibration", cid, True, path, summary)

    def _fill_sha256(self, cid: int, sha: str) -> None:
        """A calibration stored before its SHA-256 was kept (schema 0004) gets it when its file is added again, so
        the runs and comparisons that record it find it."""
        from sqlalchemy import select

        with self.reading() as conn:
            have = conn.execute(select(calibrations.c.sha256).where(calibrations.c.id == cid)).scalar()
        if have is None:
            with self.writing() as conn:
                conn.execute(calibrations.update().where(calibrations.c.id == cid).values(sha256=sha))

    def _link_late(self, table: Any, ident: int, cal: tuple | None) -> str:
        """A run or comparison stored without its calibration (before schema 0005) linked to it when added again;
        returns what the summary says of it ('' when nothing changed)."""
        if cal is None:
            return ""
        from sqlalchemy import select

        with self.reading() as conn:
            have = conn.execute(select(table.c.calibration_id).where(table.c.id == ident)).scalar()
        if have is not None:
            return f", calibration {have}"
        with self.writing() as conn:
            cid = keep_calibration(conn, *cal)
            conn.execute(table.update().where(table.c.id == ident).values(calibration_id=cid))
        return f", calibration {cid} linked"

    def annotate(
        self,
        text: str,
        at: datetime,
        *,
        kind: str = "note",
        kernel: str | None = None,
        case_id: str | None = None,
        gpu: str | None = None,
        stack: str | None = None,
        run_id: int | None = None,
        details: dict[str, Any] | None = None,
    ) -> int:
        """Store an annotation (a known step at ``at``, naive UTC) and return its id."""
        from sqlalchemy import select

        record = {
            "created_at": datetime.now(timezone.utc).replace(tzinfo=None),
            "author": who(),
            "at": at,
            "kind": kind,
            "text": text,
            "kernel": kernel,
            "case_id": case_id,
            "gpu": gpu,
            "stack": stack,
            "run_id": run_id,
            "details": json.dumps(details, sort_keys=True) if details else None,
        }
        with self.writing() as conn:
            if run_id is not None and conn.execute(select(runs.c.id).where(runs.c.id == run_id)).first() is None:
                raise HarnessError(f"{self.loc.shown}: no run {run_id} (harness history list shows the runs)")
            return int(conn.execute(annotations.insert().values(record)).inserted_primary_key[0])

    def remove(self, kind: str, ident: int) -> str:
        """Remove a wrongly added run (with its rows) or comparison (with its verdicts), in one transaction; a run
        a comparison or an annotation still refers to is refused, naming them. Returns what was removed."""
        from sqlalchemy import delete, func, or_, select

        table, rows, fk = {"run": (runs, results, results.c.run_id),
                           "comparison": (comparisons, verdicts, verdicts.c.comparison_id),
                           "calibration": (calibrations, calibration_cases,
                                           calibration_cases.c.calibration_id)}[kind]  # fmt: skip
        with self.writing() as conn:
            if conn.execute(select(table.c.id).where(table.c.id == ident)).first() is None:
                raise HarnessError(f"{self.loc.shown}: no {kind} {ident} (harness history list shows them)")
            if kind == "run":
                users = conn.execute(select(comparisons.c.id).where(
                    or_(comparisons.c.golden_run_id == ident, comparisons.c.tot_run_id == ident))).scalars().all()  # fmt: skip
                if users:
                    raise HarnessError(
                        f"run {ident}: comparison {', '.join(map(str, users))} refers to it: remove "
                        f"{'it' if len(users) == 1 else 'them'} first (harness history remove comparison ID)"
                    )
                notes = conn.execute(select(annotations.c.id).where(annotations.c.run_id == ident)).scalars().all()
                if notes:
                    raise HarnessError(f"run {ident}: annotation {', '.join(map(str, notes))} refers to it")
            if kind == "calibration":
                users = [f"{what} {i}" for what, t in (("run", runs), ("comparison", comparisons))
                         for i in conn.execute(select(t.c.id).where(t.c.calibration_id == ident)).scalars().all()]  # fmt: skip
                if users:
                    raise HarnessError(
                        f"calibration {ident}: {', '.join(users)} {'refers' if len(users) == 1 else 'refer'} to it "
                        "(it was kept with them): remove them first"
                    )
            n = conn.execute(select(func.count()).select_from(rows).where(fk == ident)).scalar_one()
            conn.execute(delete(rows).where(fk == ident))
            conn.execute(delete(table).where(table.c.id == ident))
        return f"removed {kind} {ident} and its {n} {dict(run='rows', comparison='verdicts').get(kind, 'cases')}"

    # -- helpers -------------------------------------------------------------------------------------------------

    def _stored(self, table: Any, digest: str, tags: str, label: str = "") -> tuple[int, list[str], str] | None:
        """(id, tags newly merged, label change) of the stored file with this hash, or None. A label given again
        replaces the stored one, and the change is said, never dropped."""
        from sqlalchemy import select

        with self.reading() as conn:
            row = conn.execute(
                select(table.c.id, table.c.tags, table.c.label).where(table.c.content_hash == digest)
            ).first()
        if row is None:
            return None
        new = sorted(set(filter(None, tags.split(","))) - set(filter(None, (row.tags or "").split(","))))
        if new:
            with self.writing() as conn:
                current = conn.execute(select(table.c.tags).where(table.c.id == row.id)).scalar_one()
                conn.execute(table.update().where(table.c.id == row.id).values(tags=ingest.join_tags(current, tags)))
        change = ""
        if label and label != (row.label or ""):
            with self.writing() as conn:
                conn.execute(table.update().where(table.c.id == row.id).values(label=label))
            change = f"'{row.label}' → '{label}'" if row.label else f"'{label}'"
        return int(row.id), new, change

    def _run_by_env(self, env: dict[str, Any]) -> int | None:
        """The one stored run measured at the sidecar's time under its env name (a comparison whose results files
        were not found beside it), else None."""
        from sqlalchemy import select

        when = ingest.parse_when(env.get("captured_at"))
        if when is None or not env.get("env_name"):
            return None
        with self.reading() as conn:
            found = conn.execute(
                select(runs.c.id).where(runs.c.run_at == when, runs.c.env_name == str(env["env_name"]))
            ).all()
        return int(found[0].id) if len(found) == 1 else None


def recorded_calibration(rec: Any, what: str) -> tuple[Any, dict[str, Any], dict[str, Any]] | None:
    """(table, metadata, record) of the calibration a sidecar or a comparison's metadata records (with its figures),
    checked before anything is stored (one line naming ``what``); None for none (or a comparison that names only
    a file: written before the record)."""
    if rec is None or (isinstance(rec, dict) and rec.get("rows") is None and not rec.get("columns")):
        return None
    from harness.compare.calibration import record_table

    table, meta = record_table(rec, what)
    return table, meta, rec


def keep_calibration(conn: Any, table: Any, meta: dict[str, Any], rec: dict[str, Any]) -> int:
    """The id of the stored calibration a record names (by the SHA-256 of its file; else by its file, where that is
    still at its recorded path and unchanged: one stored before the SHA-256 was kept), storing it from the record
    when it is not stored yet. In the caller's transaction."""
    from sqlalchemy import select

    from harness.fsutil import file_sha256

    sha = str(rec.get("sha256") or "") or None
    if sha:
        found = conn.execute(select(calibrations.c.id).where(calibrations.c.sha256 == sha)).scalar()
        if found is not None:
            return int(found)
        p = Path(str(rec.get("path") or ""))
        try:
            same = p.is_file() and file_sha256(p) == sha
        except OSError:
            same = False
        if same:
            found = _existing(conn, calibrations, ingest.content_hash(p.read_bytes(), meta.get("captured_at")))
            if found is not None:
                conn.execute(calibrations.update().where(calibrations.c.id == found).values(sha256=sha))
                return found
    text = json.dumps([rec.get("columns"), rec.get("rows")], default=str)
    key = ingest.recorded_calibration_key(sha or hashlib.sha256(text.encode()).hexdigest(), meta.get("captured_at"))
    found = _existing(conn, calibrations, key)
    if found is not None:
        return found
    path = Path(str(rec.get("path") or "calibration.csv"))
    row = ingest.calibration_record(table, meta, path, key, added_by=who(), sha256=sha)
    cid = int(conn.execute(calibrations.insert().values(row)).inserted_primary_key[0])
    insert_rows(conn, calibration_cases, ingest.calibration_rows(table, cid))
    return cid


def _existing(conn: Any, table: Any, digest: str) -> int | None:
    from sqlalchemy import select

    row = conn.execute(select(table.c.id).where(table.c.content_hash == digest)).first()
    return None if row is None else int(row.id)


def _same_run(found: Path, env: dict[str, Any]) -> bool:
    """Whether the results file found for a comparison side is the one compared: its sidecar was captured at the
    time the comparison recorded (a file measured again since is another run)."""
    from harness.results.load import load_env

    try:
        mine = load_env(found)
    except HarnessError:
        return False
    recorded = env.get("captured_at")
    return not recorded or mine.get("captured_at") == recorded


def _run_summary(r: dict[str, Any]) -> str:
    parts = [f"{r['rows']} rows", r["env_name"]]
    if r["triton_version"]:
        parts.append(f"Triton {r['triton_version']}")
    if r["gpu_name"]:
        parts.append(r["gpu_name"])
    if r["run_at"]:
        parts.append(r["run_at"].strftime("%Y-%m-%d %H:%M"))
    return ", ".join(parts)


def _comparison_summary(r: dict[str, Any]) -> str:
    stacks = f"Triton {r['golden_triton'] or '?'} vs {r['tot_triton'] or '?'}"
    kind = " (A/A)" if r["same_triton"] else ""
    return f"{r['cases']} cases, {stacks}{kind}, {r['regressions']} regressions"

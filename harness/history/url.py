"""Where the history is: ``--db``, else ``$HARNESS_DB``, else a per-user SQLite file. A file path or
``sqlite:///FILE`` is SQLite; ``postgresql://USER:PASSWORD@HOST:PORT/DB`` is PostgreSQL (through psycopg).

Credentials never reach any output: a location is shown as ``postgresql://***@HOST:PORT/DB`` (no user, password
or query), and driver messages are scrubbed of them (:func:`Location.scrub`)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import HarnessError

ENV_VAR = "HARNESS_DB"
#: URL schemes harness stores to, and the SQLAlchemy driver each gets
SCHEMES = {"sqlite": "sqlite", "postgresql": "postgresql+psycopg", "postgres": "postgresql+psycopg"}
#: query parameters of a URL that may hold credentials: scrubbed from every message
SECRET_QUERY = ("password", "sslpassword", "user", "passfile", "sslkey")


def default_path() -> Path:
    """The per-user database: ``$XDG_DATA_HOME/harness/history.sqlite`` (``~/.local/share/...``)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "harness" / "history.sqlite"


@dataclass(frozen=True)
class Location:
    """A resolved database: the SQLAlchemy URL (never printed), what messages show, and what they must not."""

    url: str
    shown: str
    path: Path | None = None  # the SQLite file
    secrets: tuple[str, ...] = field(default=(), repr=False)

    @property
    def sqlite(self) -> bool:
        return self.path is not None

    def scrub(self, message: str) -> str:
        """``message`` on one line with every credential of the URL replaced by ``***``."""
        text = " ".join(str(message).split())
        for secret in sorted(self.secrets, key=len, reverse=True):
            if len(secret) >= 3:
                text = text.replace(secret, "***")
            else:  # a very short one only where it stands alone, quoted or as a word
                text = re.sub(rf"(?<![\w]){re.escape(secret)}(?![\w])", "***", text)
        return text

    def __repr__(self) -> str:  # a traceback's locals or a debugger never show the URL
        return f"Location({self.shown!r})"


def resolve(db: str | os.PathLike[str] | None) -> Location:
    """The location named by ``db``, else by ``$HARNESS_DB``, else the per-user default file."""
    origin = "--db"
    if db is None or str(db) == "":
        db, origin = os.environ.get(ENV_VAR) or None, f"${ENV_VAR}"
    if db is None:
        return _file(default_path())
    text = str(db).strip()
    if "://" not in text:
        return _file(Path(text).expanduser())
    return _url(text, origin)


def _file(path: Path) -> Location:
    return Location(url=f"sqlite:///{path}", shown=str(path), path=path)


def _url(text: str, origin: str) -> Location:
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    scheme = text.split("://", 1)[0]
    backend = scheme.split("+", 1)[0].lower()
    if backend not in SCHEMES:
        raise HarnessError(
            f"{origin}: unsupported database {backend!r}: give a file path, sqlite:///FILE or "
            "postgresql://USER@HOST:PORT/DB"
        )
    try:
        url = make_url(text)
        port = url.port  # parsed lazily by some versions: an error here is a bad URL too
    except (ArgumentError, ValueError, TypeError):
        raise HarnessError(f"{origin}: not a valid {backend} URL (expected {backend}://USER@HOST:PORT/DB)") from None
    userinfo = re.match(r"[^:/]+://([^@/]*)@", text)  # as typed (percent-encoded), besides as decoded
    raw = userinfo.group(1).split(":", 1) if userinfo else []
    query = [str(url.query.get(k)) for k in SECRET_QUERY if url.query.get(k)]
    secrets = tuple(s for s in (url.username, url.password, *raw, *query) if s)
    if backend == "sqlite":
        if not url.database or url.database == ":memory:":
            raise HarnessError(f"{origin}: sqlite URL without a file (expected sqlite:///FILE)")
        return _file(Path(url.database).expanduser())
    if not url.database:
        raise HarnessError(f"{origin}: {backend} URL without a database name (expected {backend}://HOST:PORT/DB)")
    driver = url.drivername if "+" in url.drivername else SCHEMES[backend]
    who = "***@" if url.username or url.password else ""
    shown = f"{backend}://{who}{url.host or 'localhost'}{f':{port}' if port else ''}/{url.database}"
    full = url.set(drivername=driver)
    rendered = full.render_as_string(hide_password=False)
    return Location(url=rendered, shown=shown, secrets=(text, rendered, *secrets))

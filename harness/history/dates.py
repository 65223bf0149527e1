"""Dates and times as users type them (``2026-11-22``, ``2026-11-22T10:20``, ``2026-11-22 10:20Z``), as the naive
UTC the database holds. Pure."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from harness.errors import HarnessError


def _parse(text: str, option: str) -> tuple[datetime, bool]:
    """(the time, whether only a date was given)."""
    raw = text.strip()
    try:
        when = datetime.fromisoformat(raw.replace("Z", "+00:00").replace(" ", "T", 1))
    except ValueError:
        raise HarnessError(f"{option} {raw!r}: expected a date or time, e.g. 2026-11-22 or 2026-11-22T10:20") from None
    if when.tzinfo is not None:
        when = when.astimezone(timezone.utc).replace(tzinfo=None)
    return when, len(raw) <= 10


def since(text: str, option: str = "--since") -> datetime:
    """The start of a range: the time given, or the start of the day."""
    return _parse(text, option)[0]


def until(text: str, option: str = "--until") -> datetime:
    """The (exclusive) end of a range: a date includes its whole day; a time, that instant."""
    when, date_only = _parse(text, option)
    return when + (timedelta(days=1) if date_only else timedelta(microseconds=1))


def at(text: str, option: str = "--at") -> datetime:
    """A moment (an annotation's): the time given, or midnight UTC of the day."""
    return _parse(text, option)[0]


def parse_point(text: str, option: str = "--from/--to") -> datetime:
    """The end of a point in time for "the latest comparison by then"."""
    return until(text, option)

"""Dates and times as users type them, as the naive UTC the database holds."""

from __future__ import annotations

from datetime import datetime

import pytest

from harness.errors import HarnessError
from harness.history import dates


def test_dates_and_times():
    assert dates.since("2026-11-22") == datetime(2026, 11, 22)
    assert dates.until("2026-11-22") == datetime(2026, 11, 23)  # a date includes its whole day
    assert dates.until("2026-11-22T10:20") == datetime(2026, 11, 22, 10, 20, 0, 1)
    assert dates.at("2026-11-22 10:20Z") == datetime(2026, 11, 22, 10, 20)
    assert dates.at("2026-11-22T12:20+02:00") == datetime(2026, 11, 22, 10, 20)


def test_bad_dates_are_one_line():
    with pytest.raises(HarnessError, match=r"--since 'yesterday': expected a date or time"):
        dates.since("yesterday")

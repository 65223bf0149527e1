"""Tests of the worker: its modules driven in process, under Triton's CPU interpreter."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.worker.session import Session
from tests.conftest import ROOT


def interp_session(timing: str) -> Iterator[Session]:
    """A worker Session of this repository under Triton's CPU interpreter (set before the worker imports Triton),
    for a module-scoped fixture to yield from."""
    mp = pytest.MonkeyPatch()
    mp.setenv("TRITON_INTERPRET", "1")
    yield Session(str(ROOT), timing, 0.5)
    mp.undo()

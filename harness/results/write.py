"""Writing results files: whole, or a row at a time as cases finish (each row fsync'ed)."""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.results import integrity
from harness.results.schema import COLUMNS, SIGNIFICANT


def format_row(row: Mapping[str, Any]) -> dict[str, str]:
    """One result dict → CSV cells in :data:`COLUMNS` order (floats with enough digits to round-trip µs)."""
    out: dict[str, str] = {}
    for col in COLUMNS:
        v = row.get(col)
        if v is None or (isinstance(v, float) and math.isnan(v)):
            out[col] = ""
        elif isinstance(v, float):
            out[col] = f"{v:.6g}" if col in SIGNIFICANT else f"{v:.4f}"
        elif isinstance(v, (list, dict)):
            out[col] = json.dumps(v, separators=(",", ":"))
        else:
            out[col] = str(v)
    return out


def write_results(path: str | os.PathLike[str], rows: Iterable[Mapping[str, Any]]) -> None:
    """Write a whole results file (header + rows)."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(COLUMNS))
        w.writeheader()
        for r in rows:
            w.writerow(format_row(r))


class ResultsAppender:
    """Append rows as cases finish; each row is flushed and fsync'ed, so a killed run keeps every finished row."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        new = not self.path.exists() or self.path.stat().st_size == 0
        if not new:
            header = self.path.read_text(encoding="utf-8-sig").splitlines()[0]
            if [h.strip() for h in next(csv.reader([header]))] != list(COLUMNS):
                raise HarnessError(
                    f"{self.path}: line 1: header differs from this harness's columns; "
                    f"write to a new file or drop --resume"
                )
            integrity.repair_tail(self.path)  # a torn last line (the process died mid-write): dropped
        self._fh = open(self.path, "a", newline="", encoding="utf-8")  # noqa: SIM115
        self._w = csv.DictWriter(self._fh, fieldnames=list(COLUMNS))
        self.rows = 0  # appended by this writer
        if new:
            self._w.writeheader()
            self._sync()

    def _sync(self) -> None:
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def append(self, row: Mapping[str, Any]) -> None:
        self._w.writerow(format_row(row))
        self._sync()
        self.rows += 1

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> ResultsAppender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

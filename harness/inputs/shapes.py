"""The points of ``zip: FILE``: shapes kept where a team keeps them (a CSV of one point a row under a header of
parameter names, or a JSON list of objects), relative to the suite, ``${VAR}`` expanded; numbers and booleans read
as such. The points are checked as any zip's by suite.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.fsutil import read_text_file


def zip_file(value: str, where: str, base: Path) -> list[dict[str, Any]]:
    """The points of ``zip: FILE``: a CSV file (a header of parameter names, one point a row) or a JSON file (a
    list of objects), relative to the suite: shapes kept where a team keeps them (a model's layer shapes, a
    benchmark script's list written out). Numbers are read as numbers; the parameters are checked as any zip's."""
    import os

    from harness.envs.schema import expand

    label = f"{where}: zip: {value}"
    path = base / os.path.expanduser(expand(value, label, os.environ))  # ${AITER_CHECKOUT}/op_tests/shapes.csv
    if path.suffix.lower() not in (".csv", ".json"):
        raise HarnessError(f"{label}: expected a .csv or .json file of points")
    text = read_text_file(path, f"{label}: no such file ({path})", f"{label}: cannot read it")
    if path.suffix.lower() == ".json":
        try:
            points = json.loads(text)
        except json.JSONDecodeError as err:
            raise HarnessError(f"{label}: line {err.lineno}: not valid JSON: {err.msg}") from None
        return points if isinstance(points, list) else [points]
    return _csv_points(text, label)


def _csv_points(text: str, label: str) -> list[dict[str, Any]]:
    from harness.csvrows import rows as csv_rows

    rows = list(csv_rows(text, lambda row: not any(c.strip() for c in row)))  # a line of blank cells is no point
    if not rows:
        raise HarnessError(f"{label}: empty: expected a header of parameter names, then one point a row")
    header = [h.strip() for h in rows[0][1]]
    points = []
    for n, row in rows[1:]:
        if len(row) != len(header):
            raise HarnessError(f"{label}: line {n}: {len(row)} values for the header's {len(header)} names")
        cells = [c.strip() for c in row]
        empty = [h for h, c in zip(header, cells) if not c]
        if empty:
            raise HarnessError(f"{label}: line {n}: no value for {empty[0]!r}")
        points.append({h: _number(c) for h, c in zip(header, cells)})
    return points


#: a CSV cell's booleans, as YAML, JSON and Python (a benchmark script's list written out) spell them
BOOLS = {"true": True, "false": False}


def _number(text: str) -> Any:
    if text.lower() in BOOLS:
        return BOOLS[text.lower()]
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text

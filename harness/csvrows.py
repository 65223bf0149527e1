"""CSV text walked a row at a time with the file line each row starts on (a quoted cell may span lines; a bare
carriage return ends a line, as in pandas' reader): how every reader of a CSV file a user hands harness names a
bad row, results files (results/load.py) and a suite's points (inputs/shapes.py) alike. Standard library only."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterator


def rows(text: str, skip: Callable[[list[str]], bool]) -> Iterator[tuple[int, list[str]]]:
    """(first file line, cells) of each row of ``text`` but those ``skip`` leaves out (blank ones: each reader
    says which). Python's reader refuses no text of a str, once no cell can be longer than its field limit."""
    if csv.field_size_limit() < len(text):  # a cell of over 128 KiB (an error's text) is a cell, not an error
        csv.field_size_limit(len(text))
    reader = csv.reader(io.StringIO(text, newline=""))
    start = 1
    for row in reader:
        if not skip(row):
            yield start, row
        start = reader.line_num + 1

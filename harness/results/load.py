"""The one loader of results files: every stage reads results through :func:`load_results`, so every stage
rejects the same bad input with the same one-line message (``file: line N: what is wrong``).

Two readers make a frame, one set of checks holds it to the contract (checks.py): Arrow reads a big file
(arrowframe.py: no Python object a cell, the file decoded only if a check fails and its line is wanted), pandas'
C reader a small one, and any file Arrow declines, whose fault it names (a ragged row, bytes not UTF-8)."""

from __future__ import annotations

import csv
import io
import json
import os
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness import csvrows
from harness.errors import HarnessError
from harness.results import arrowcsv, arrowframe, checks, integrity
from harness.results.schema import NUMBERS, SCHEMA_VERSION, SIDECAR_FIELDS, TEXT_COLUMNS, sidecar_path


def _read_bytes(path: Path) -> bytes:
    if not path.exists():
        raise HarnessError(f"{path}: no such file")
    if path.is_dir():
        raise HarnessError(f"{path}: is a directory, expected a results CSV file")
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise HarnessError(f"{path}: cannot read: {err.strerror}") from None
    if not raw[:65536].strip() and not raw.strip():
        raise HarnessError(f"{path}: file is empty, expected a CSV header and rows")
    if b"\x00" in raw[:4096]:
        raise HarnessError(f"{path}: looks binary, expected a UTF-8 CSV file")
    return raw


def _decode(raw: bytes, path: Path) -> str:
    try:
        return raw.decode("utf-8-sig")  # tolerate a BOM written by spreadsheet tools
    except UnicodeDecodeError as err:
        raise HarnessError(f"{path}: byte {err.start}: not UTF-8 text") from None


def _read_text(path: Path) -> str:
    return _decode(_read_bytes(path), path)


def records(text: str) -> Iterator[tuple[int, list[str]]]:
    """(first file line, cells) of each CSV row, the header first, as pandas' C reader reads them: lines of
    nothing but spaces and tabs skipped; a bare carriage return ends a line, as it does there."""
    return csvrows.rows(text, _blank)


def _blank(row: list[str]) -> bool:
    """A line pandas' C reader skips: empty, or nothing but spaces and tabs."""
    return not row or (len(row) == 1 and bool(row[0]) and not row[0].strip(" \t"))


def _rows(text: str) -> Iterator[tuple[int, list[str]]]:
    """:func:`records` after the header."""
    rows = records(text)
    next(rows, None)
    yield from rows


def _line_numbers(text: str, nrows: int) -> np.ndarray:
    """1-based file line of each data row (differs from index+2 where quoted fields hold newlines, or where blank
    lines are skipped)."""
    if text.rstrip("\r\n").count("\n") > nrows:
        starts = [start for start, _ in _rows(text)]
        if len(starts) == nrows:
            return np.asarray(starts, dtype=np.int64)
    return np.arange(2, nrows + 2, dtype=np.int64)


def _counted(text: str, ncols: int) -> tuple[list[int], str]:
    """(each row's first line, up to the first row whose cell count differs from the header's; 'line N: K cells but
    the header has M; ' for that row, or ''). pandas' reader fills a short row's missing cells in silently (a cell
    lost, and the next cells moved into the wrong columns): this pass is how a short row is found, and its lines
    are the rows' lines. A last row the file does not end is left to integrity.check, which says it was cut."""
    starts: list[int] = []
    rows = _rows(text)
    for start, row in rows:
        if len(row) != ncols and (text.endswith("\n") or next(rows, None) is not None):
            return starts, f"line {start}: {len(row)} cell{'s' * (len(row) != 1)} but the header has {ncols}; "
        starts.append(start)
    return starts, ""


def _ragged_line(text: str, ncols: int) -> str:
    """:func:`_counted`'s message alone."""
    return _counted(text, ncols)[1]


def _open_quote_line(text: str) -> str:
    """'line N: a quote opened here is never closed; ' for the row whose quoted cell runs to the end of the file
    (the last row Python's reader makes, which takes the rest of the file into that cell)."""
    last = None
    for start, _ in _rows(text):
        last = start
    return f"line {last}: a quote opened here is never closed; " if last is not None else ""


NA_VALUES = arrowcsv.NA_VALUES
#: files above this many characters are read by Arrow (arrowframe.py); pandas' C reader reads smaller ones, and any
#: Arrow declines
ARROW_CHARS = 1_000_000
#: held while the C reader parses under the warnings filter that makes its ParserWarning an error (_read_frame)
_PARSER_WARNINGS = threading.Lock()


def _read_frame(text: str, path: Path, ncols: int) -> pd.DataFrame:
    """pandas' C reader, which also gives the precise message for a malformed file."""
    kw: dict[str, Any] = dict(dtype={c: str for c in TEXT_COLUMNS}, keep_default_na=False, na_values=NA_VALUES)
    try:
        # the C reader drops a long row's extra cells with a warning only: made an error here. The warnings filter
        # is the process's, and another thread's load (compare reads both files at once) restoring it mid-read let
        # such a row through, truncated: one load at a time holds it
        with _PARSER_WARNINGS, warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)
            return pd.read_csv(io.StringIO(text), index_col=False, low_memory=False, **kw)  # one type a column
    except pd.errors.EmptyDataError:
        raise HarnessError(f"{path}: file is empty, expected a CSV header and rows") from None
    except (pd.errors.ParserError, pd.errors.ParserWarning) as err:
        said = str(err).strip().splitlines()[-1]
        where = _open_quote_line(text) if "EOF inside string" in said else _ragged_line(text, ncols)
        raise HarnessError(f"{path}: {where}not a well-formed CSV file ({said})") from None


class _LazyLines:
    """Row → file line, computed only when an error needs it (scanning 150 MB for newlines costs ~0.3 s; a file
    Arrow read is only then decoded: ``text`` gives its text)."""

    def __init__(self, text: str | Callable[[], str], nrows: int, starts: list[int] | None = None):
        self._text, self._n = text, nrows
        # the C reader's path counted them already (_counted), where it counted as many rows as pandas read
        self._lines = np.asarray(starts, dtype=np.int64) if starts is not None and len(starts) == nrows else None

    def __getitem__(self, idx):  # noqa: ANN001 - int or boolean mask, as numpy takes
        if self._lines is None:
            self._lines = _line_numbers(self._body(), self._n)
        return self._lines[idx]

    def _body(self) -> str:
        return self._text if isinstance(self._text, str) else self._text()

    def written(self, idx: int, column: str) -> str | None:
        """Row ``idx``'s cell of ``column`` as the file writes it, spaces stripped ("1e-400", where a reader's
        number shows 0); None where it cannot be found. The rows are walked as every reader here walks them
        (csvrows: a bare carriage return ends a line too), up to that row's line."""
        try:
            line, found = int(self[idx]), records(self._body())
            names = [n.strip() for n in next(found)[1]]
            row = next(cells for start, cells in found if start == line)
        except (ValueError, StopIteration, csv.Error, HarnessError):
            return None
        k = names.index(column) if column in names else len(row)
        return row[k].strip(" \t") if k < len(row) else None


def parse_results(
    text: str, path: Path, *, unique_keys: Callable[[], pd.DataFrame | None] | None = None
) -> pd.DataFrame:
    """CSV text read by pandas' C reader and checked against the contract (checks.py): a typed frame, version 1
    files upgraded to version 2's columns. ``path`` is only for messages."""
    return _parsed(text, path, unique_keys)[0]


def _parsed(
    text: str, path: Path, unique_keys: Callable[[], pd.DataFrame | None] | None
) -> tuple[pd.DataFrame, _LazyLines]:
    df, starts = _frame(text, path)
    lines = _LazyLines(text, len(df), starts)
    return checks.check(df, path, lines, unique_keys), lines


def _frame(text: str, path: Path) -> tuple[pd.DataFrame, list[int]]:
    """pandas' frame of the text, its columns named as stripped, and each row's first line."""
    first = _header_line(text)
    if "\r" in first.rstrip("\r"):
        raise HarnessError(
            f"{path}: line 1: its lines end in a bare carriage return (\\r), not \\n or \\r\\n: convert it (e.g. "
            "`tr '\\r' '\\n'`)"
        )
    try:
        header = next(csv.reader([first.rstrip("\r")]), [])
    except csv.Error as err:
        raise HarnessError(f"{path}: line 1: not a well-formed CSV header ({err})") from None
    names = [h.strip() for h in header]
    _spreadsheet_header(names, path)
    dupcols = sorted({c for c in names if names.count(c) > 1})
    if dupcols == [""]:
        raise HarnessError(f"{path}: line 1: {names.count('')} columns have no name (trailing commas, as a "
                           "spreadsheet may add): remove them")  # fmt: skip
    if dupcols:
        raise HarnessError(f"{path}: line 1: column '{dupcols[0]}' appears more than once in the header")
    df = _read_frame(text, path, len(names))
    starts, ragged = _counted(text, len(names))
    if ragged:
        raise HarnessError(f"{path}: {ragged}not a well-formed CSV file")
    df = _words_as_written(df, text)
    df.columns = [str(c).strip() for c in df.columns]
    return df, starts


def _spreadsheet_header(names: list[str], path: Path) -> None:
    """One line for a header as a spreadsheet's export may write it: another separator, or Excel's 'sep=' line."""
    if names and names[0].lower().startswith("sep="):
        raise HarnessError(f"{path}: line 1: a spreadsheet's 'sep=' line: remove it (the header comes first)")
    seps = [sep for sep in (";", "\t", "|") if len(names) == 1 and sep in names[0]]
    if seps:
        raise HarnessError(f"{path}: line 1: the header is one cell split by {seps[0]!r}: a results file is "
                           "comma-separated (a spreadsheet's export setting)")  # fmt: skip


def _words_as_written(df: pd.DataFrame, text: str) -> pd.DataFrame:
    """pandas reads a column of True/False words as booleans, which numpy counts as 1 and 0: the contract's number
    columns of any such word are read again as text, so that the checks refuse the word as written."""
    words = [c for c in df.columns if str(c).strip() in NUMBERS and _holds_bools(df[c])]
    if words:
        kw: dict[str, Any] = dict(dtype=str, keep_default_na=False, na_values=NA_VALUES, index_col=False)
        as_text = pd.read_csv(io.StringIO(text), usecols=words, **kw)
        df = df.assign(**{c: as_text[c].to_numpy() for c in words})
    return df


def _holds_bools(col: pd.Series) -> bool:
    if pd.api.types.is_bool_dtype(col.dtype):
        return True
    return col.dtype == object and bool(col.map(lambda v: isinstance(v, (bool, np.bool_))).any())


def _header_line(text: str) -> str:
    """The header's line (the first that is not blank, as pandas reads it), without a copy of the rest."""
    start = 0
    while True:
        end = text.find("\n", start)
        line = text[start : end if end >= 0 else len(text)]
        if end < 0 or line.strip(" \t\r"):
            return line
        start = end + 1


def params_of(cell: Any) -> dict[str, Any]:
    """One row's ``params`` as a dict ({} when empty or unreadable)."""
    try:
        found = json.loads(cell) if isinstance(cell, str) and cell.strip() else {}
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def load_results(
    path: str | os.PathLike[str], *, unique_keys: Callable[[], pd.DataFrame | None] | None = None
) -> pd.DataFrame:
    """Read and validate one results CSV; raise :class:`HarnessError` (one line) on any contract violation.

    The frame carries ``attrs['env']``: the sidecar metadata (``{}`` when there is none). ``unique_keys``: gives
    another results frame, already loaded, or None; a file that lists the same cases in the same order needs no
    check of its own that none is listed twice (unique.py; the checks and their messages are the same).
    """
    p = Path(path)
    df = _read_by_arrow(p)
    if df is not None:
        lines = _LazyLines(lambda: _read_text(p), len(df))
        df = checks.check(df, p, lines, unique_keys)
    else:  # small, or declined by Arrow: the C reader reads it, and names the line of a malformed one
        df, lines = _parsed(_read_text(p), p, unique_keys)
    df.attrs["env"] = load_env(p)
    integrity.check(p, df.attrs["env"], len(df), sidecar_path(p))
    integrity.rows_belong(p, df, df.attrs["env"], sidecar_path(p), lines)
    return df


def _read_by_arrow(path: Path) -> pd.DataFrame | None:
    """arrowframe's unchecked frame of a file of over ARROW_CHARS characters; None for any other, or any file it
    cannot open (the C reader's path says why). A file of over 4 x ARROW_CHARS bytes holds more than ARROW_CHARS
    characters whatever its text (UTF-8 takes 4 bytes at most for one): Arrow reads it itself, in blocks, without
    a copy in memory; a smaller one is read here, so that its characters are counted."""
    try:
        size = path.stat().st_size if path.is_file() else 0
        if size <= ARROW_CHARS:
            return None
        source = path if size > 4 * ARROW_CHARS else path.read_bytes()
    except OSError:
        return None
    return arrowframe.read(source, min_chars=ARROW_CHARS + 1)


#: what each of SIDECAR_FIELDS' words means in JSON, and how a message says it
_JSON = {
    "object": (dict, "a JSON object"),
    "list": (list, "a list"),
    "text": (str, "text"),
    "integer": (int, "a whole number"),
}


def _check_fields(env: dict[str, Any], side: Path) -> None:
    """One line for the first field of SIDECAR_FIELDS that holds another JSON type (true is no number)."""
    for field, kind in SIDECAR_FIELDS.items():
        value = env.get(field)
        want, said = _JSON[kind]
        if value is not None and (not isinstance(value, want) or isinstance(value, bool)):
            raise HarnessError(
                f"{side}: {field} is {json.dumps(value)[:40]}, expected {said}: not as harness writes it"
            )


def load_env(results: str | os.PathLike[str]) -> dict[str, Any]:
    """The sidecar of a results file, or ``{}``; a sidecar that exists but is broken is an error."""
    side = sidecar_path(results)
    if not side.exists():
        return {}
    try:
        env = json.loads(side.read_text(encoding="utf-8-sig"))  # a BOM, as an editor may write, as the CSV's
    except (OSError, UnicodeDecodeError, ValueError) as err:  # ValueError: JSON's, and an integer of 4,300 digits
        raise HarnessError(f"{side}: not valid JSON: {err}") from None
    except RecursionError:
        raise HarnessError(f"{side}: not valid JSON: nested too deep") from None
    if not isinstance(env, dict):
        raise HarnessError(f"{side}: expected a JSON object of run metadata")
    _check_fields(env, side)
    version = env.get("schema_version", SCHEMA_VERSION)
    if version > SCHEMA_VERSION:
        raise HarnessError(
            f"{side}: schema_version {version} is newer than this harness understands "
            f"({SCHEMA_VERSION}); upgrade harness"
        )
    return env

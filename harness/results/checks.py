"""The contract every results frame is held to, written once, whichever reader made the frame (load.py: Arrow's
for big files, pandas' C reader for small ones and for any Arrow declines). Each check is a whole-column pass,
Arrow's compute on text and numpy's on numbers, and says nothing while the file is clean; the first row that
fails one is named, ``file: line N: column 'c' what is wrong``, and only then is the file's text scanned for its
line. Pure: a frame in, the checked frame out, no I/O (``lines`` maps rows to lines).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.errors import HarnessError
from harness.results import arrowcsv, unique, v1
from harness.results.arrowframe import arrow_strings, blank, empty_for_null, text
from harness.results.schema import MAX_WORLD_SIZE, NUMBER_COLUMNS, REQUIRED, STATUSES, TEXT_COLUMNS, TIMED_STATUSES

NA_VALUES = arrowcsv.NA_VALUES
#: what Python's str.strip() removes (every ``c.isspace()``; tests/results/test_readers.py checks the list): a
#: cell is stripped alike whichever reader read it and whichever pandas holds it
WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000"
)


#: a missing text cell: empty, or a word both readers read as missing (a kernel named "nan" is one)
EMPTY = f"is empty (or {'/'.join(NA_VALUES[1:])}: read as missing)"


def check(
    df: pd.DataFrame, path: Path, lines: Any, unique_keys: Callable[[], pd.DataFrame | None] | None = None
) -> pd.DataFrame:
    """``df`` checked against the contract and typed (a version 1 file upgraded to version 2's columns), or a
    :class:`HarnessError` naming the first bad row. ``path``: for messages only; ``unique_keys``: see
    unique.unique."""
    _check_columns(df, path)
    _check_text(df, path, lines)
    _check_time(df, path, lines)
    if v1.is_v1(df):
        v1.check_shapes(df, path, lines, numeric, first_bad)
        df = v1.upgrade(df)
    else:
        _check_v2(df, path, lines)
    for col in NUMBER_COLUMNS:
        if col in df.columns and df[col].dtype != np.float64:
            df[col] = numeric(path, lines, df[col], col, what="is not a number:")
    _check_unique(df, path, lines, unique_keys)
    df.attrs["path"] = str(path)
    return df


def _check_columns(df: pd.DataFrame, path: Path) -> None:
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        found = ", ".join(df.columns[:8]) + (", ..." if len(df.columns) > 8 else "")
        raise HarnessError(f"{path}: line 1: missing required column '{missing[0]}' (found: {found})")
    if df.empty:
        raise HarnessError(f"{path}: has a header but no rows")


def first_bad(
    path: Path, lines: Any, mask: np.ndarray, what: str, values: pd.Series | None = None, column: str | None = None
) -> None:
    """Nothing where ``mask`` is all False; else the one-line error naming its first row's line and value."""
    if not mask.any():
        return
    idx = int(np.flatnonzero(mask)[0])
    more = int(mask.sum()) - 1
    shown = ""
    if values is not None:
        v = values.iloc[idx]
        shown = f" {v!r}" if isinstance(v, str) else f" {_written(lines, idx, column) or _number(v)}"
    col = f" column '{column}'" if column else ""
    tail = f" (and {more} more rows)" if more else ""
    raise HarnessError(f"{path}: line {lines[idx]}:{col} {what}{shown}{tail}")


def _written(lines: Any, idx: int, column: str | None) -> str | None:
    """A number's cell as the file writes it (a reader's float shows 1e-400 as 0, 2**53 + 1 as 2**53), where the
    loader's lines can find it."""
    find = getattr(lines, "written", None)
    return find(idx, column) if find is not None and column else None


def _number(v: Any) -> str:
    """A number as a message shows it, whichever reader parsed it (0 read as an integer by one, 0.0 by the other)."""
    try:
        f = float(v)
    except (TypeError, ValueError, OverflowError):
        return str(v)
    return str(int(f)) if f.is_integer() and abs(f) < 2**53 else repr(f)


def numeric(
    path: Path, lines: Any, col: pd.Series, name: str, *, what: str, rows: np.ndarray | None = None
) -> np.ndarray:
    """A column as float64. The reader already did the work unless some cell is not a number (then ``rows``: the
    rows whose cells must be numbers, None: all)."""
    if pd.api.types.is_numeric_dtype(col.dtype) and not pd.api.types.is_bool_dtype(col.dtype):  # True is no time
        return col.to_numpy(dtype=np.float64, na_value=np.nan)
    raw = stripped(col)
    na = raw.str.lower().isin(NA_VALUES).to_numpy()
    vals = pd.to_numeric(raw.where(~na), errors="coerce").to_numpy(dtype=np.float64)
    bad = np.isnan(vals) & ~na
    if rows is not None:
        bad &= rows
    first_bad(path, lines, bad, what, raw, name)
    return vals


def arrow(col: pd.Series) -> Any:
    """A text column's cells as Arrow's large strings, "" for a missing one (pandas 3's text: without a copy)."""
    import pyarrow as pa

    if _in_arrow(col):
        arr = pa.array(col.array)
        if arr.type != pa.large_string():
            arr = arr.cast(pa.large_string())
        return empty_for_null(arr) if arr.null_count else arr
    return pa.array(col.astype(object).where(col.notna(), "").astype(str).to_numpy(dtype=object), pa.large_string())


def _in_arrow(col: pd.Series) -> bool:
    """A text column whose cells Arrow holds (pandas 3's text)."""
    return isinstance(col.dtype, pd.StringDtype) and col.dtype.storage == "pyarrow"


def series(arr: Any, like: pd.Series) -> pd.Series:
    """Arrow's text as a column of ``like``'s frame: pandas 3's text, or Python strings where pandas keeps those."""
    import pyarrow as pa

    if arrow_strings():
        arr = arr if isinstance(arr, pa.ChunkedArray) else pa.chunked_array([arr])
        return pd.Series(text(arr), index=like.index, copy=False)
    return pd.Series(arr.to_numpy(zero_copy_only=False), index=like.index, dtype=object)


def stripped(col: pd.Series) -> pd.Series:
    """Each cell as text ("" for a missing one) without Python's surrounding whitespace: ``col`` itself where
    nothing is to strip (a runner's files)."""
    import pyarrow.compute as pc

    arr = arrow(col)
    trimmed = pc.utf8_trim(arr, characters=WHITESPACE)
    if pc.all(pc.equal(trimmed, arr)).as_py() and _same_cells(col, arr):
        return col
    return series(trimmed, col)


def _same_cells(col: pd.Series, arr: Any) -> bool:
    """``col`` is already the text ``arr`` holds: Arrow's, with no missing cell."""
    return _in_arrow(col) and _missing(col) == 0


def _mask(arr: Any) -> np.ndarray:
    return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=bool)


def _check_text(df: pd.DataFrame, path: Path, lines: Any) -> None:
    import pyarrow as pa
    import pyarrow.compute as pc

    for col in ("kernel", "case_id", "status"):
        df[col] = stripped(df[col])
        empty = _mask(pc.equal(pc.binary_length(arrow(df[col])), 0))
        first_bad(path, lines, empty, EMPTY, column=col)
    status = arrow(df["status"])
    known = pc.is_in(status, value_set=pa.array(STATUSES))
    if not pc.all(known).as_py():  # "OK" is "ok"
        status = pc.utf8_lower(status)
        known = pc.is_in(status, value_set=pa.array(STATUSES))
        what = f"unknown status (expected one of {'|'.join(STATUSES)}):"
        first_bad(path, lines, ~_mask(known), what, df["status"], "status")
        df["status"] = series(status, df["status"])
    for col in TEXT_COLUMNS[3:]:
        if col in df.columns:
            df[col] = _filled(df[col])


def _filled(col: pd.Series) -> pd.Series:
    """A text column with "" for each missing cell: the column of no cell shared by all that have none."""
    missing = _missing(col)
    if missing == 0:
        return col
    if missing == len(col) and arrow_strings():
        return blank(len(col)).set_axis(col.index)
    return col.fillna("")


def _missing(col: pd.Series) -> int:
    """How many cells of a text column are missing (Arrow's count where it holds the text)."""
    import pyarrow as pa

    if _in_arrow(col):
        return pa.array(col.array).null_count
    return int(col.isna().sum())


def _timed_rows(df: pd.DataFrame) -> np.ndarray:
    """The rows whose status carries a time (checked statuses: lower case)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    return _mask(pc.is_in(arrow(df["status"]), value_set=pa.array(TIMED_STATUSES)))


def _check_time(df: pd.DataFrame, path: Path, lines: Any) -> None:
    timed = _timed_rows(df)
    time = numeric(path, lines, df["time_us"], "time_us", rows=timed, what="time is not a number:")
    missing = "time is missing or NaN on a row whose status is ok"
    first_bad(path, lines, timed & np.isnan(time), missing, column="time_us")
    first_bad(path, lines, timed & np.isinf(time), "time is infinite:", pd.Series(time), "time_us")
    first_bad(path, lines, timed & (time <= 0), "time must be positive, got", pd.Series(time), "time_us")
    df["time_us"] = np.where(timed, time, np.nan)


def _check_v2(df: pd.DataFrame, path: Path, lines: Any) -> None:
    """``params`` holds a JSON object (checked by its braces: parsing a million cells is left to whoever needs
    them), ``world_size`` a positive integer, at most MAX_WORLD_SIZE."""
    import pyarrow.compute as pc

    if "params" in df.columns:
        p = arrow(df["params"])
        if not _objects(p).all():  # a runner's cells are braced as they are: only others are stripped first
            bad = ~_objects(pc.utf8_trim(p, characters=WHITESPACE))
            first_bad(path, lines, bad, "is not a JSON object of parameters:", df["params"], "params")
    if "world_size" in df.columns:
        ws = numeric(path, lines, df["world_size"], "world_size", what="is not a positive integer:")
        known = ~np.isnan(ws)
        with np.errstate(invalid="ignore"):  # inf % 1 is NaN: refused as not an integer
            bad = known & ((ws % 1 != 0) | (ws < 1))
        first_bad(path, lines, bad, "is not a positive integer:", df["world_size"], "world_size")
        huge = known & (ws > MAX_WORLD_SIZE)
        what = f"is more GPUs than any world size (at most {MAX_WORLD_SIZE:,}):"
        first_bad(path, lines, huge, what, df["world_size"], "world_size")
        df["world_size"] = pd.array(np.where(known, ws, 1).astype(np.int64), dtype="Int64")


def _objects(params: Any) -> np.ndarray:
    """Which ``params`` cells are empty or braced as a JSON object is."""
    import pyarrow.compute as pc

    braced = pc.and_(pc.starts_with(params, "{"), pc.ends_with(params, "}"))
    return _mask(pc.or_(pc.equal(pc.binary_length(params), 0), braced))


def _check_unique(
    df: pd.DataFrame, path: Path, lines: Any, unique_keys: Callable[[], pd.DataFrame | None] | None
) -> None:
    if unique.unique(arrow(df["kernel"]), arrow(df["case_id"]), unique_keys):
        return
    key = unique.case_key(df["kernel"], df["case_id"])
    first = int(np.flatnonzero(pd.Series(key).duplicated(keep=False).to_numpy())[0])
    where = lines[key == key[first]]
    k, c = df["kernel"].iloc[first], df["case_id"].iloc[first]
    raise HarnessError(
        f"{path}: line {where[1]}: duplicate (kernel, case_id) = ({k}, {c}), first seen on line {where[0]}"
    )

"""A clean results file's frame straight from Arrow: the loader's checks as whole-column Arrow and numpy
operations, with no Python object per cell. It can only say yes: the first cell it would have to look at closer
(a failed check, a type it does not expect, text pandas would strip) makes it give up (None), and load.py's pandas
path reads the file again and names the line. Whatever it accepts, that path accepts too, as the same frame
(tests/results/test_fastread.py runs both on the same files).

Big files only (load.py decides): they are the ones pandas reads with pyarrow's CSV reader too, so both read the
cells alike. Pure: bytes in, a frame out, no I/O.
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.results import arrowcsv
from harness.results.schema import MAX_WORLD_SIZE, NUMBER_COLUMNS, REQUIRED, STATUSES, TEXT_COLUMNS, TIMED_STATUSES
from harness.results.v1 import MAX_DIM, SHAPE

#: what Python's str.strip() removes (every ``c.isspace()``; tests/results/test_fastread.py checks the list)
WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000"
)


#: the columns whose cells must be numbers (where present)
NUMBERS = (*NUMBER_COLUMNS, *SHAPE, "time_us", "world_size")


def arrow_strings() -> bool:
    """pandas 3: text in Arrow (its ``str``), so a frame built from Arrow columns is the one pandas' reader makes,
    and copy-on-write, so columns may share their values."""
    dtype = pd.Series([""]).dtype
    pandas3 = int(pd.__version__.split(".")[0]) >= 3
    return pandas3 and isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow"


def header(raw: bytes) -> list[str] | None:
    """The header row's cells, as pandas names the columns (stripped later, as load.py does); None where the
    first line is not UTF-8 or does not end within ``raw``'s first 64 KiB, or a NUL byte makes the file look
    binary (load.py refuses it)."""
    if b"\x00" in raw[:4096]:
        return None
    end = raw.find(b"\n", 0, 65536)
    if end < 0 and len(raw) > 65536:
        return None
    try:
        line = raw[: end if end >= 0 else len(raw)].decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError:
        return None
    return next(csv.reader([line]), [])


def utf8(raw: bytes) -> bool:
    """The whole file is UTF-8: ASCII at memory speed, else Arrow's validation of one string over the bytes."""
    if raw.isascii():
        return True
    import pyarrow as pa

    offsets = pa.py_buffer(np.array([0, len(raw)], dtype=np.int64))
    try:
        pa.Array.from_buffers(pa.large_string(), 1, [None, offsets, pa.py_buffer(raw)]).validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def chars(raw: bytes) -> int:
    """How many characters the UTF-8 bytes decode to, a byte-order mark left out (as load.py decodes them)."""
    if raw.isascii():
        return len(raw)
    continuation = np.count_nonzero((np.frombuffer(raw, dtype=np.uint8) & 0xC0) == 0x80)
    return len(raw) - continuation - raw.startswith(b"\xef\xbb\xbf")


def read(
    source: bytes | Path, min_chars: int = 0, unique_keys: Callable[[], pd.DataFrame | None] | None = None
) -> pd.DataFrame | None:
    """The checked, typed frame of a results file (before a version 1 file is upgraded), or None; None too for a
    file of fewer than ``min_chars`` characters. ``source``: the file's bytes, or its path (Arrow then reads it
    in blocks, and its UTF-8 needs no pass of its own: every cell lands in a column Arrow checks, text, or is a
    number or a missing-value word; the caller knows it holds ``min_chars``). ``unique_keys``: gives a frame
    whose (kernel, case_id) are known to be unique (another file, loaded), or None: where this file has the
    same ones, row by row, they are unique too, with no hashing (see :func:`_unique`)."""
    if not arrow_strings():
        return None
    if isinstance(source, Path):
        try:
            with open(source, "rb") as fh:
                names = header(fh.read(65536))
        except OSError:
            return None
    elif utf8(source) and chars(source) >= min_chars:
        names = header(source)
        source = source.removeprefix(b"\xef\xbb\xbf")
    else:
        return None
    if names is None or [h.strip() for h in names] != names or len(set(names)) != len(names) or "" in names:
        return None  # names pandas would change (stripped, made unique, "Unnamed: 3")
    if any(c not in names for c in REQUIRED):
        return None
    table = _table(source)
    if table is None or table.num_rows == 0 or table.column_names != names:
        return None
    cols = dict(zip(names, table.columns, strict=True))
    return _frame(cols, unique_keys) if _types_ok(cols) else None


def _table(source: bytes | Path) -> Any:
    """Arrow's table of the file (None where it refuses it): the one `harness compare` started reading early, if it
    did (arrowcsv.prefetch), else read now."""
    if isinstance(source, Path):
        table = arrowcsv.take(source)
        if table is not arrowcsv.NOT_STARTED:
            return table
    return arrowcsv.read_table(source)


def _types_ok(cols: dict[str, Any]) -> bool:
    """Every column has a type this path converts exactly as pandas does: numbers (or nothing) where the contract
    wants numbers, text where it wants text; an unknown column may also hold text."""
    import pyarrow as pa

    numeric = (pa.null(), pa.int64(), pa.float64())
    for name, col in cols.items():
        if name in TEXT_COLUMNS or col.type in numeric:
            continue
        if name in NUMBERS or not _is_text(col):
            return False
    return True


def _is_text(col: Any) -> bool:
    import pyarrow as pa

    return col.type in (pa.string(), pa.large_string())


def _frame(cols: dict[str, Any], unique_keys: Callable[[], pd.DataFrame | None] | None = None) -> pd.DataFrame | None:
    import pyarrow as pa
    import pyarrow.compute as pc

    for name in ("kernel", "case_id", "status"):
        col = cols[name]
        if col.null_count or not pc.all(pc.equal(pc.utf8_trim(col, characters=WHITESPACE), col)).as_py():
            return None  # empty, or pandas would strip it
    if not pc.all(pc.is_in(cols["status"], value_set=pa.array(STATUSES))).as_py():
        return None
    timed = pc.is_in(cols["status"], value_set=pa.array(TIMED_STATUSES)).to_numpy(zero_copy_only=False)
    time = _floats(cols["time_us"])
    with np.errstate(invalid="ignore"):
        if (timed & ~(np.isfinite(time) & (time > 0))).any():
            return None
    v1 = "params" not in cols and any(c in cols for c in SHAPE)
    shared = {"": blank(len(time)), "nan": pd.Series(np.full(len(time), np.nan), copy=False)}
    out: dict[str, Any] = {"time_us": np.where(timed, time, np.nan)}
    for name, col in cols.items():
        if name != "time_us":
            out[name] = _column(name, col, v1, shared)
            if out[name] is None:
                return None
    out = {name: out[name] for name in cols}
    if not _unique(out["kernel"], out["case_id"], unique_keys):
        return None
    return pd.DataFrame(out, copy=False)  # one block per column, as read: no copy into 2-D blocks


def _column(name: str, col: Any, v1: bool, shared: dict[str, pd.Series]) -> Any:
    """One column as the pandas path leaves it after its checks; None where a cell fails one. ``shared``: the
    column of every empty cell, as text ("") and as a number ("nan"), one for all the columns without a value
    (pandas copies a shared column before it writes into it)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if name in TEXT_COLUMNS:
        if name == "params" and col.null_count < len(col):
            braced = pc.and_(pc.starts_with(col, "{"), pc.ends_with(col, "}"))
            if not pc.all(pc.or_kleene(pc.is_null(col), braced)).as_py():
                return None
        if col.null_count == len(col):  # a column nobody filled in (most of them)
            return shared[""]
        if name in ("kernel", "case_id"):  # later taken from row by row (joins, worst cases): one chunk, not ~170
            col = pa.chunked_array([col.combine_chunks()])
        return _text(pc.fill_null(col, "") if col.null_count else col)
    if name == "world_size":
        if col.type == pa.null():  # nobody filled it in (most files): one GPU a case, with no pass over NaNs
            return pd.array(np.ones(len(col), dtype=np.int64), dtype="Int64")
        ws = _floats(col)
        known = ~np.isnan(ws)
        with np.errstate(invalid="ignore"):
            if (known & ((ws % 1 != 0) | (ws < 1) | (ws > MAX_WORLD_SIZE))).any():
                return None
        return pd.array(np.where(known, ws, 1).astype(np.int64), dtype="Int64")
    if v1 and name in SHAPE:  # v1.check_shapes: non-negative integers, typed as nullable ints
        vals = _floats(col)
        known = ~np.isnan(vals)
        with np.errstate(invalid="ignore"):
            if (known & ((vals % 1 != 0) | (vals < 0) | (vals > MAX_DIM))).any():
                return None
        shape = pd.array(np.where(known, vals, 0).astype(np.int64), dtype="Int64")
        shape[~known] = pd.NA
        return shape
    if col.type == pa.null():
        return shared["nan"]
    if name in NUMBER_COLUMNS:
        return _floats(col)
    if _is_text(col):
        return _text(col)
    return col.to_numpy() if col.null_count == 0 else _floats(col)


def blank(n: int) -> pd.Series:
    """n empty strings, without a Python object or a byte of text (pandas 3; pandas 2 keeps text as objects).
    Arrow arrays are immutable (pandas replaces one it sets a cell of), so the columns without a cell can share
    one."""
    if not arrow_strings():
        return pd.Series([""] * n, dtype=object)
    import pyarrow as pa

    offsets = pa.py_buffer(np.zeros(n + 1, dtype=np.int64))
    empty = pa.Array.from_buffers(pa.large_string(), n, [None, offsets, pa.py_buffer(b"")])
    return pd.Series(_text(pa.chunked_array([empty])), copy=False)


def _text(col: Any) -> pd.api.extensions.ExtensionArray:
    import pyarrow as pa

    if col.type != pa.large_string():
        col = col.cast(pa.large_string())
    return pd.StringDtype("pyarrow", na_value=np.nan).__from_arrow__(col)


def _floats(col: Any) -> np.ndarray:
    import pyarrow as pa

    if col.type == pa.null():
        return np.full(len(col), np.nan)
    return np.asarray(col.to_numpy(), dtype=np.float64)  # ints with nulls come as floats, NaN for the nulls


def _unique(kernel: Any, case_id: Any, unique_keys: Callable[[], pd.DataFrame | None] | None = None) -> bool:
    """No (kernel, case_id) twice (``kernel``, ``case_id``: the frame's text columns). Where ``unique_keys`` gives
    a frame of the same cases in the same order, whose pairs are unique, so are these (golden and TOT of one
    suite, the usual comparison: two equality passes, ~5 ms, instead of hashing a million case_ids, ~0.15 s).
    Usually every case_id is distinct on its own: one hash count settles it."""
    import pyarrow.compute as pc

    kernel, case_id = _arrow(kernel), _arrow(case_id)
    known = unique_keys() if unique_keys is not None else None
    if (
        known is not None
        and len(known) == len(case_id)
        and _same_text(known["kernel"], kernel)
        and _same_text(known["case_id"], case_id)
    ):
        return True
    if _distinct(case_id):
        return True
    k = pc.dictionary_encode(kernel)
    c = pc.dictionary_encode(case_id)
    key = k.indices.to_numpy().astype(np.int64) * len(c.dictionary) + c.indices.to_numpy()
    return not pd.Series(key).duplicated().any()


#: a multiplier of the 64-bit hash that mixes a value's words (the golden ratio's, as Fibonacci hashing's)
MIX = np.uint64(0x9E3779B97F4A7C15)


def _distinct(texts: Any) -> bool:
    """No value of a text column (Arrow's, one array, none missing) twice. Short ASCII values (case ids: at most 32
    bytes) are padded with NULs to one width and each hashed from its 8-byte words into one 64-bit number (~20 ms a
    million), whose uniqueness numpy's hash table counts (~45 ms) instead of Arrow's table of the strings (~120 ms).
    Equal values hash alike, so no two hashes alike proves no two values alike; two alike (a duplicate, a
    collision, or values that differ only by trailing NULs) leave it to Arrow's exact count."""
    import pyarrow as pa
    import pyarrow.compute as pc

    widest = pc.max(pc.binary_length(texts)).as_py() or 0
    width = -(-widest // 8) * 8
    if 8 <= width <= 32 and pc.all(pc.string_is_ascii(texts)).as_py():
        fixed = pc.ascii_rpad(texts, width, padding="\x00").cast(pa.large_binary()).cast(pa.binary(width))
        words = np.frombuffer(fixed.buffers()[1], dtype=np.uint64, count=len(texts) * (width // 8))
        words = words.reshape(len(texts), width // 8)
        hashed = words[:, 0].copy()
        for k in range(1, width // 8):
            hashed *= MIX
            hashed ^= words[:, k]
        if not pd.Series(hashed).duplicated().any():
            return True
    return len(pc.unique(texts)) == len(texts)


def _arrow(col: Any) -> Any:
    """A text column (Series, pandas' Arrow-backed array, or Arrow's) as Arrow's, without a copy."""
    import pyarrow as pa

    return pa.array(col.array if isinstance(col, pd.Series) else col)


def _same_text(a: pd.Series, b: Any) -> bool:
    """Two text columns hold the same strings, row by row, none missing (``b``: Arrow's)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        x = _arrow(a)
        if x.type != b.type or x.null_count or b.null_count:
            return False
        return bool(pc.all(pc.equal(x, b)).as_py())
    except (TypeError, ValueError, pa.ArrowException):  # not text (object columns: another pandas' frame)
        return False

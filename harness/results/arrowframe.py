"""A big results file's frame straight from Arrow's table, as pandas' own reader would make it, with no Python
object per cell: text in Arrow (pandas 3's ``str``), numbers as numpy arrays, the columns nobody filled in sharing
one. It checks nothing: load.py checks every frame, whichever reader made it (checks.py). It only declines (None)
a file it cannot make that frame of (header names pandas would change, a type the contract has no use for, a
table Arrow refuses): pandas' C reader reads those, and explains a malformed one. Pure: bytes in, a frame out.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.results import arrowcsv
from harness.results.schema import REQUIRED, TEXT_COLUMNS


def arrow_strings() -> bool:
    """pandas 3: text in Arrow (its ``str``), so a frame built from Arrow columns is the one pandas' reader makes,
    and copy-on-write, so columns may share their values."""
    dtype = pd.Series([""]).dtype
    pandas3 = int(pd.__version__.split(".")[0]) >= 3
    return pandas3 and isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow"


def header(raw: bytes) -> list[str] | None:
    """The header row's cells, as pandas names the columns (stripped later, as load.py does); None where the
    first line is not UTF-8, does not end within ``raw``'s first 64 KiB or not in a newline, or a NUL byte makes
    the file look binary (load.py refuses it)."""
    if b"\x00" in raw[:4096]:
        return None
    end = raw.find(b"\n", 0, 65536)
    if end < 0 and len(raw) > 65536:
        return None
    try:
        line = raw[: end if end >= 0 else len(raw)].decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError:
        return None
    try:
        return next(csv.reader([line]), [])
    except csv.Error:  # a bare carriage return: the C reader says so
        return None


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


def read(source: bytes | Path, min_chars: int = 0) -> pd.DataFrame | None:
    """The unchecked frame of a results file, or None (module docstring); None too for a file of fewer than
    ``min_chars`` characters. ``source``: the file's bytes, or its path (Arrow then reads it in blocks, and its
    UTF-8 needs no pass of its own: every cell lands in a column Arrow checks, text, or is a number or a
    missing-value word; the caller knows it holds ``min_chars``)."""
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
        return None  # the C reader reads the header and says which is missing, without Arrow's pass
    table = _table(source)
    if table is None or table.num_rows == 0 or table.column_names != names:
        return None
    cols = dict(zip(names, table.columns, strict=True))
    if not _types_ok(cols) or _nan_spelt(cols) or _open_quote_at_end(source):
        return None
    shared = {"": blank(table.num_rows), "nan": pd.Series(np.full(table.num_rows, np.nan), copy=False)}
    out = {name: _column(name, col, shared) for name, col in cols.items()}
    return pd.DataFrame(out, copy=False)  # one block per column, as read: no copy into 2-D blocks


def _table(source: bytes | Path) -> Any:
    """Arrow's table of the file (None where it refuses it): the one `harness compare` started reading early, if it
    did (arrowcsv.prefetch), else read now."""
    if isinstance(source, Path):
        table = arrowcsv.take(source)
        if table is not arrowcsv.NOT_STARTED:
            return table
    return arrowcsv.read_table(source)


def _types_ok(cols: dict[str, Any]) -> bool:
    """Every column has a type pandas' reader would give it too: numbers (or nothing) or text where the contract
    wants numbers (checks.py reads the text), text where it wants text; an unknown column numbers or text."""
    import pyarrow as pa

    numeric = (pa.null(), pa.int64(), pa.float64())
    return all(name in TEXT_COLUMNS or col.type in numeric or _is_text(col) for name, col in cols.items())


def _nan_spelt(cols: dict[str, Any]) -> bool:
    """Some number is a NaN not spelt as a missing value ("+nan", "nan(1)"): Arrow's reader takes those for NaN,
    pandas' for text, which the checks refuse. The C reader reads the file, so that both refuse it alike."""
    import pyarrow as pa
    import pyarrow.compute as pc

    return any(col.type == pa.float64() and pc.any(pc.is_nan(col)).as_py() for col in cols.values())


def _open_quote_at_end(source: bytes | Path) -> bool:
    """The last line holds an odd number of quotes: perhaps a quoted cell never closed, which Arrow's reader ends
    at the end of the file where pandas' refuses the file (or the end of a quoted cell that spans lines, or a quote
    in an unquoted cell: the C reader tells them apart). A last line of over 64 KiB counts as one too."""
    if isinstance(source, Path):
        try:
            with open(source, "rb") as fh:
                size = fh.seek(0, 2)
                fh.seek(max(0, size - 65536))
                tail = fh.read()
        except OSError:
            return True
    else:
        tail = source[-65536:]
    body = tail.rstrip(b"\r\n")
    end = body.rfind(b"\n")
    if end < 0 and len(tail) == 65536:
        return True
    return body[end + 1 :].count(b'"') % 2 == 1


def _is_text(col: Any) -> bool:
    import pyarrow as pa

    return col.type in (pa.string(), pa.large_string())


def _column(name: str, col: Any, shared: dict[str, pd.Series]) -> Any:
    """One column as pandas' reader leaves it, but that the contract's text columns have "" for a missing cell,
    as the checks would make them. ``shared``: the column of every empty cell, as text ("") and as a number
    ("nan"), one for all the columns without a value (pandas copies a shared column before it writes into it)."""
    import pyarrow as pa

    if name in TEXT_COLUMNS:
        if col.null_count == len(col):  # a column nobody filled in (most of them)
            return shared[""]
        if name in ("kernel", "case_id"):  # later taken from row by row (joins, worst cases): one chunk, not ~170
            col = pa.chunked_array([col.combine_chunks()])
        return text(empty_for_null(col) if col.null_count else col)
    if col.type == pa.null() or (col.null_count == len(col) and col.type == pa.float64()):
        return shared["nan"]
    if _is_text(col):
        return text(col)
    return col.to_numpy() if col.null_count == 0 else _floats(col)


def empty_for_null(col: Any) -> Any:
    """A text array or column with "" for each missing cell, as ``fill_null(col, "")`` gives it, without a copy of
    its text where every missing cell is empty (as Arrow's reader leaves them): the same buffers, without their
    validity."""
    import pyarrow as pa
    import pyarrow.compute as pc

    chunked = isinstance(col, pa.ChunkedArray)
    if col.type != pa.large_string():
        return pc.fill_null(col, "")
    chunks = []
    for chunk in col.chunks if chunked else [col]:
        if chunk.null_count == 0:
            chunks.append(chunk)
            continue
        if np.diff(offsets(chunk))[~chunk.is_valid().to_numpy(zero_copy_only=False)].any():
            return pc.fill_null(col, "")  # a missing cell that spans bytes: Arrow's copy
        _, spans, data = chunk.buffers()
        chunks.append(pa.LargeStringArray.from_buffers(len(chunk), spans, data, offset=chunk.offset))
    return pa.chunked_array(chunks, type=col.type) if chunked else chunks[0]


def offsets(arr: Any) -> np.ndarray:
    """An Arrow text array's offsets (large: int64), as numpy: without a copy for large strings."""
    import pyarrow as pa

    width = 8 if arr.type == pa.large_string() else 4
    got = np.frombuffer(arr.buffers()[1], dtype=np.int64 if width == 8 else np.int32, count=len(arr) + 1,
                        offset=arr.offset * width)  # fmt: skip
    return got.astype(np.int64, copy=False)


def blank(n: int) -> pd.Series:
    """n empty strings, without a Python object or a byte of text (pandas 3; pandas 2 keeps text as objects).
    Arrow arrays are immutable (pandas replaces one it sets a cell of), so the columns without a cell can share
    one."""
    if not arrow_strings():
        return pd.Series([""] * n, dtype=object)
    import pyarrow as pa

    offsets = pa.py_buffer(np.zeros(n + 1, dtype=np.int64))
    empty = pa.Array.from_buffers(pa.large_string(), n, [None, offsets, pa.py_buffer(b"")])
    return pd.Series(text(pa.chunked_array([empty])), copy=False)


def text(col: Any) -> pd.api.extensions.ExtensionArray:
    """Arrow's text as pandas 3's ``str`` array, without a copy."""
    import pyarrow as pa

    if col.type != pa.large_string():
        col = col.cast(pa.large_string())
    return pd.StringDtype("pyarrow", na_value=np.nan).__from_arrow__(col)


def _floats(col: Any) -> np.ndarray:
    import pyarrow as pa

    if col.type == pa.null():
        return np.full(len(col), np.nan)
    return np.asarray(col.to_numpy(), dtype=np.float64)  # ints with nulls come as floats, NaN for the nulls

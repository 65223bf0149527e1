"""The one loader of results files: every stage reads results through :func:`load_results`, so every stage
rejects the same bad input with the same one-line message (``file: line N: what is wrong``)."""

from __future__ import annotations

import csv
import io
import json
import os
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.errors import HarnessError
from harness.results import arrowcsv, fastread, integrity, v1
from harness.results.cells import text
from harness.results.schema import (
    MAX_WORLD_SIZE,
    NUMBER_COLUMNS,
    REQUIRED,
    SCHEMA_VERSION,
    STATUSES,
    TEXT_COLUMNS,
    TIMED_STATUSES,
    sidecar_path,
)


def case_key(kernel: pd.Series, case_id: pd.Series, *others: tuple[pd.Series, pd.Series]) -> np.ndarray:
    """One int64 per (kernel, case_id): cheaper to join and deduplicate than pairs of strings.

    With ``others``, the codes are made over all frames together so keys are comparable across them.
    """
    ks = pd.concat([kernel, *[o[0] for o in others]], ignore_index=True)
    cs = pd.concat([case_id, *[o[1] for o in others]], ignore_index=True)
    kc, _ = pd.factorize(ks)
    cc, uc = pd.factorize(cs)
    return kc.astype(np.int64) * max(len(uc), 1) + cc.astype(np.int64)


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


def _line_numbers(text: str, nrows: int) -> np.ndarray:
    """1-based file line of each data row (differs from index+2 only when quoted fields hold newlines)."""
    if '"' in text and text.rstrip("\r\n").count("\n") > nrows:
        reader = csv.reader(io.StringIO(text))
        next(reader, None)
        starts, prev = [], reader.line_num
        for _ in reader:
            starts.append(prev + 1)
            prev = reader.line_num
        if len(starts) == nrows:
            return np.asarray(starts, dtype=np.int64)
    return np.arange(2, nrows + 2, dtype=np.int64)


NA_VALUES = arrowcsv.NA_VALUES
#: files above this many characters are read by pandas' pyarrow engine (the C reader below it)
ARROW_CHARS = 1_000_000
#: held while the C reader parses under the warnings filter that makes its ParserWarning an error (_read_frame)
_PARSER_WARNINGS = threading.Lock()


def _text(col: pd.Series) -> pd.Series:
    return text(col).str.strip()


def _numeric(
    path: Path, lines: np.ndarray, col: pd.Series, name: str, *, what: str, rows: np.ndarray | None = None
) -> np.ndarray:
    """A column as float64. The CSV parser already did the work unless some cell is not a number."""
    if pd.api.types.is_numeric_dtype(col.dtype):
        return col.to_numpy(dtype=np.float64, na_value=np.nan)
    raw = _text(col)
    vals = pd.to_numeric(raw.where(~raw.str.lower().isin(NA_VALUES)), errors="coerce").to_numpy(dtype=np.float64)
    bad = np.isnan(vals) & ~raw.str.lower().isin(NA_VALUES).to_numpy()
    if rows is not None:
        bad &= rows
    _first_bad(path, lines, bad, what, raw, name)
    return vals


def _read_frame(text: str, path: Path, ncols: int, raw: bytes | None = None) -> pd.DataFrame:
    """pandas' pyarrow reader (multithreaded, ~4x faster on big files) when it is there and the file is
    clean; the C reader otherwise, which also gives the precise message for a malformed file."""
    kw: dict[str, Any] = dict(dtype={c: str for c in TEXT_COLUMNS}, keep_default_na=False, na_values=NA_VALUES)
    if len(text) > ARROW_CHARS:
        try:
            import pyarrow  # noqa: F401

            data = raw.removeprefix(b"\xef\xbb\xbf") if raw is not None else text.encode("utf-8")
            return pd.read_csv(io.BytesIO(data), engine="pyarrow", **kw)
        except ImportError:
            pass
        except Exception:  # noqa: BLE001 - any pyarrow complaint: let the C reader explain it
            pass
    try:
        # the C reader drops a long row's extra cells with a warning only: made an error here. The warnings filter
        # is the process's, and another thread's load (compare reads both files at once) restoring it mid-read let
        # such a row through, truncated: one load at a time holds it
        with _PARSER_WARNINGS, warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)
            return pd.read_csv(io.StringIO(text), index_col=False, **kw)
    except pd.errors.EmptyDataError:
        raise HarnessError(f"{path}: file is empty, expected a CSV header and rows") from None
    except (pd.errors.ParserError, pd.errors.ParserWarning) as err:
        raise HarnessError(
            f"{path}: {_ragged_line(text, ncols)}not a well-formed CSV file ({str(err).strip().splitlines()[-1]})"
        ) from None


def _ragged_line(text: str, ncols: int) -> str:
    """'line N: ' of the first row whose cell count differs from the header's (error path only)."""
    reader = csv.reader(io.StringIO(text))
    next(reader, None)
    start = reader.line_num + 1
    for row in reader:
        if row and len(row) != ncols:
            return f"line {start}: {len(row)} cells but the header has {ncols}; "
        start = reader.line_num + 1
    return ""


class _LazyLines:
    """Row → file line, computed only when an error needs it (scanning 150 MB for newlines costs ~0.3 s)."""

    def __init__(self, text: str, nrows: int):
        self._text, self._n, self._lines = text, nrows, None

    def __getitem__(self, idx):  # noqa: ANN001 - int or boolean mask, as numpy takes
        if self._lines is None:
            self._lines = _line_numbers(self._text, self._n)
        return self._lines[idx]


def _first_bad(
    path: Path,
    lines: np.ndarray,
    mask: np.ndarray,
    what: str,
    values: pd.Series | None = None,
    column: str | None = None,
) -> None:
    if not mask.any():
        return
    idx = int(np.flatnonzero(mask)[0])
    more = int(mask.sum()) - 1
    shown = ""
    if values is not None:
        v = values.iloc[idx]
        shown = f" {v!r}" if isinstance(v, str) else f" {v}"
    col = f" column '{column}'" if column else ""
    tail = f" (and {more} more rows)" if more else ""
    raise HarnessError(f"{path}: line {lines[idx]}:{col} {what}{shown}{tail}")


def parse_results(text: str, path: Path, raw: bytes | None = None) -> pd.DataFrame:
    """Validate CSV text against the contract and return a typed frame (version 1 files upgraded to version 2's
    columns). ``path`` is only for messages; ``raw``: the file's bytes, when at hand (not encoded again)."""
    df = _frame(text, path, raw)
    lines = _LazyLines(text, len(df))
    _check_text(df, path, lines)
    _check_time(df, path, lines)
    if v1.is_v1(df):
        v1.check_shapes(df, path, lines, _numeric, _first_bad)
        df = v1.upgrade(df)
    else:
        _check_v2(df, path, lines)
    for col in NUMBER_COLUMNS:
        if col in df.columns:
            df[col] = _numeric(path, lines, df[col], col, what="is not a number:")
    _check_unique(df, path, lines)
    df.attrs["path"] = str(path)
    return df


def _frame(text: str, path: Path, raw: bytes | None = None) -> pd.DataFrame:
    end = text.find("\n")
    header = next(csv.reader(io.StringIO(text[: end if end >= 0 else len(text)])), [])  # not a copy of the rest
    names = [h.strip() for h in header]
    dupcols = sorted({c for c in names if names.count(c) > 1})
    if dupcols:
        raise HarnessError(f"{path}: line 1: column '{dupcols[0]}' appears more than once in the header")
    df = _read_frame(text, path, len(names), raw)
    df.columns = [str(c).strip() for c in df.columns]
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        found = ", ".join(df.columns[:8]) + (", ..." if len(df.columns) > 8 else "")
        raise HarnessError(f"{path}: line 1: missing required column '{missing[0]}' (found: {found})")
    if df.empty:
        raise HarnessError(f"{path}: has a header but no rows")
    return df


def _check_text(df: pd.DataFrame, path: Path, lines: Any) -> None:
    for col in ("kernel", "case_id", "status"):
        df[col] = _text(df[col])
        _first_bad(path, lines, (df[col] == "").to_numpy(), "is empty", column=col)
    status = df["status"].str.lower()
    bad_status = ~status.isin(STATUSES).to_numpy()
    _first_bad(
        path, lines, bad_status, f"unknown status (expected one of {'|'.join(STATUSES)}):", df["status"], "status"
    )
    df["status"] = status
    for col in TEXT_COLUMNS[3:]:
        if col in df.columns:
            df[col] = df[col].fillna("")


def _check_time(df: pd.DataFrame, path: Path, lines: Any) -> None:
    timed = df["status"].isin(TIMED_STATUSES).to_numpy()
    time = _numeric(path, lines, df["time_us"], "time_us", rows=timed, what="time is not a number:")
    _first_bad(
        path, lines, timed & np.isnan(time), "time is missing or NaN on a row whose status is ok", column="time_us"
    )
    _first_bad(path, lines, timed & np.isinf(time), "time is infinite:", pd.Series(time), "time_us")
    _first_bad(path, lines, timed & (time <= 0), "time must be positive, got", pd.Series(time), "time_us")
    df["time_us"] = np.where(timed, time, np.nan)


def _check_v2(df: pd.DataFrame, path: Path, lines: Any) -> None:
    """``params`` holds a JSON object (checked by its braces: parsing a million cells is left to whoever needs
    them), ``world_size`` a positive integer, at most MAX_WORLD_SIZE."""
    if "params" in df.columns:
        p = df["params"].astype(str).str.strip()
        bad = ~((p == "") | (p.str.startswith("{") & p.str.endswith("}"))).to_numpy()
        _first_bad(path, lines, bad, "is not a JSON object of parameters:", df["params"], "params")
    if "world_size" in df.columns:
        ws = _numeric(path, lines, df["world_size"], "world_size", what="is not a positive integer:")
        known = ~np.isnan(ws)
        with np.errstate(invalid="ignore"):  # inf % 1 is NaN: refused as not an integer
            bad = known & ((ws % 1 != 0) | (ws < 1))
        _first_bad(path, lines, bad, "is not a positive integer:", df["world_size"], "world_size")
        huge = known & (ws > MAX_WORLD_SIZE)
        what = f"is more GPUs than any world size (at most {MAX_WORLD_SIZE:,}):"
        _first_bad(path, lines, huge, what, df["world_size"], "world_size")
        df["world_size"] = pd.array(np.where(known, ws, 1).astype(np.int64), dtype="Int64")


def _check_unique(df: pd.DataFrame, path: Path, lines: Any) -> None:
    key = case_key(df["kernel"], df["case_id"])
    dup = pd.Series(key).duplicated(keep=False).to_numpy()
    if dup.any():
        first = int(np.flatnonzero(dup)[0])
        where = lines[key == key[first]]
        k, c = df["kernel"].iloc[first], df["case_id"].iloc[first]
        raise HarnessError(
            f"{path}: line {where[1]}: duplicate (kernel, case_id) = ({k}, {c}), first seen on line {where[0]}"
        )


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
    check of its own that none is listed twice (fastread; the checks and their messages are the same).
    """
    p = Path(path)
    df = _read_clean(p, unique_keys)
    if df is None:  # small, or something to explain: the pandas path names the line
        raw = _read_bytes(p)
        df = parse_results(_decode(raw, p), p, raw)
    df.attrs["env"] = load_env(p)
    integrity.check(p, df.attrs["env"], len(df), sidecar_path(p))
    integrity.rows_belong(p, df, df.attrs["env"], sidecar_path(p))
    return df


def _read_clean(path: Path, unique_keys: Callable[[], pd.DataFrame | None] | None = None) -> pd.DataFrame | None:
    """fastread's frame of a file pandas would read with pyarrow too (so both read every cell alike); None for
    any other, or any file it cannot open (the pandas path says why). A file of over 4 x ARROW_CHARS bytes holds
    more than ARROW_CHARS characters whatever its text (UTF-8 takes 4 bytes at most for one): Arrow reads it
    itself, in blocks, without a copy in memory; a smaller one is read here, so that its characters are counted."""
    try:
        size = path.stat().st_size if path.is_file() else 0
        if size <= ARROW_CHARS:
            return None
        source = path if size > 4 * ARROW_CHARS else path.read_bytes()
    except OSError:
        return None
    df = fastread.read(source, min_chars=ARROW_CHARS + 1, unique_keys=unique_keys)
    if df is not None:
        df = v1.upgrade(df) if v1.is_v1(df) else df
        df.attrs["path"] = str(path)
    return df


def load_env(results: str | os.PathLike[str]) -> dict[str, Any]:
    """The sidecar of a results file, or ``{}``; a sidecar that exists but is broken is an error."""
    side = sidecar_path(results)
    if not side.exists():
        return {}
    try:
        env = json.loads(side.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise HarnessError(f"{side}: not valid JSON: {err}") from None
    if not isinstance(env, dict):
        raise HarnessError(f"{side}: expected a JSON object of run metadata")
    version = env.get("schema_version", SCHEMA_VERSION)
    if isinstance(version, int) and version > SCHEMA_VERSION:
        raise HarnessError(
            f"{side}: schema_version {version} is newer than this harness understands "
            f"({SCHEMA_VERSION}); upgrade harness"
        )
    return env

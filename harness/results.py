"""The results-file contract: one CSV row per (kernel, case), plus a ``<results>.env.json`` sidecar.

Every stage reads results through :func:`load_results`, so every stage rejects the same bad input
with the same one-line message (``file: line N: what is wrong``). See docs/results-format.md.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.errors import HarnessError

SCHEMA_VERSION = 1

STATUSES = ("ok", "compile_error", "runtime_error", "timeout", "incorrect", "unstable", "skipped")
#: statuses whose row carries a usable time (``unstable``: the median of 5 disagreeing reps)
TIMED_STATUSES = ("ok", "unstable")
REQUIRED = ("kernel", "case_id", "time_us", "status")
SHAPE_COLUMNS = ("B", "M", "N", "K", "dtype")
INT_SHAPES = ("B", "M", "N", "K")
OPTIONAL = (
    "config",
    "config_source",
    "reps",
    "rep_times_us",
    "spread_pct",
    "dispatch_us",
    "tflops",
    "gbps",
    "compile_s",
    "rel_err",
    "timing",
    "sm_clock_mhz",
    "rep_clocks_mhz",
    "throttle",
    "gpu_temp_c",
    "error",
    "artifacts",
)
#: the column order the runner writes
COLUMNS = REQUIRED[:2] + SHAPE_COLUMNS + REQUIRED[2:] + OPTIONAL
TEXT_COLUMNS = (
    "kernel",
    "case_id",
    "status",
    "dtype",
    "config",
    "config_source",
    "rep_times_us",
    "dispatch_us",
    "timing",
    "rep_clocks_mhz",
    "throttle",
    "error",
    "artifacts",
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


def sidecar_path(results: str | os.PathLike[str]) -> Path:
    """``results.csv`` → ``results.csv.env.json``."""
    p = Path(results)
    return p.with_name(p.name + ".env.json")


def _read_text(path: Path) -> str:
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
    try:
        return raw.decode("utf-8-sig")  # tolerate a BOM written by spreadsheet tools
    except UnicodeDecodeError as err:
        raise HarnessError(f"{path}: byte {err.start}: not UTF-8 text") from None


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


NA_VALUES = ["", "nan", "NaN", "NAN", "-nan"]


def _text(col: pd.Series) -> pd.Series:
    col = col.fillna("").astype(str)
    return col.str.strip()


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


def _read_frame(text: str, path: Path, ncols: int) -> pd.DataFrame:
    """pandas' pyarrow reader (multithreaded, ~4x faster on big files) when it is there and the file is
    clean; the C reader otherwise, which also gives the precise message for a malformed file."""
    kw: dict[str, Any] = dict(dtype={c: str for c in TEXT_COLUMNS}, keep_default_na=False, na_values=NA_VALUES)
    if len(text) > 1_000_000:
        try:
            import pyarrow  # noqa: F401

            return pd.read_csv(io.BytesIO(text.encode("utf-8")), engine="pyarrow", **kw)
        except ImportError:
            pass
        except Exception:  # noqa: BLE001 - any pyarrow complaint: let the C reader explain it
            pass
    try:
        with warnings.catch_warnings():
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


def parse_results(text: str, path: Path) -> pd.DataFrame:
    """Validate CSV text against the contract and return a typed frame. ``path`` is only for messages."""
    header = next(csv.reader(io.StringIO(text.split("\n", 1)[0])), [])
    names = [h.strip() for h in header]
    dupcols = sorted({c for c in names if names.count(c) > 1})
    if dupcols:
        raise HarnessError(f"{path}: line 1: column '{dupcols[0]}' appears more than once in the header")
    df = _read_frame(text, path, len(names))
    df.columns = [str(c).strip() for c in df.columns]
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        found = ", ".join(df.columns[:8]) + (", ..." if len(df.columns) > 8 else "")
        raise HarnessError(f"{path}: line 1: missing required column '{missing[0]}' (found: {found})")
    if df.empty:
        raise HarnessError(f"{path}: has a header but no rows")
    lines = _LazyLines(text, len(df))

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

    timed = df["status"].isin(TIMED_STATUSES).to_numpy()
    time = _numeric(path, lines, df["time_us"], "time_us", rows=timed, what="time is not a number:")
    _first_bad(
        path, lines, timed & np.isnan(time), "time is missing or NaN on a row whose status is ok", column="time_us"
    )
    _first_bad(path, lines, timed & np.isinf(time), "time is infinite:", pd.Series(time), "time_us")
    _first_bad(path, lines, timed & (time <= 0), "time must be positive, got", pd.Series(time), "time_us")
    df["time_us"] = np.where(timed, time, np.nan)

    for col in INT_SHAPES:
        if col in df.columns:
            vals = _numeric(path, lines, df[col], col, what="is not a non-negative integer:")
            known = ~np.isnan(vals)
            bad = known & ((vals % 1 != 0) | (vals < 0) | np.isinf(vals))
            _first_bad(path, lines, bad, "is not a non-negative integer:", df[col], col)
            df[col] = pd.array(np.where(known, vals, 0).astype(np.int64), dtype="Int64")
            df.loc[~known, col] = pd.NA
    for col in ("reps", "spread_pct", "tflops", "gbps", "compile_s", "rel_err", "sm_clock_mhz", "gpu_temp_c"):
        if col in df.columns:
            df[col] = _numeric(path, lines, df[col], col, what="is not a number:")

    key = case_key(df["kernel"], df["case_id"])
    dup = pd.Series(key).duplicated(keep=False).to_numpy()
    if dup.any():
        first = int(np.flatnonzero(dup)[0])
        where = lines[key == key[first]]
        k, c = df["kernel"].iloc[first], df["case_id"].iloc[first]
        raise HarnessError(
            f"{path}: line {where[1]}: duplicate (kernel, case_id) = ({k}, {c}), first seen on line {where[0]}"
        )
    df.attrs["path"] = str(path)
    return df


def artifacts_dir(results: str | os.PathLike[str], env: dict[str, Any] | None = None) -> Path:
    """The folder ``harness run --artifacts`` keeps a results file's compiled kernels in: the sidecar's
    ``artifacts_dir`` when it names one, else ``<stem>.artifacts`` beside the results file."""
    p = Path(results)
    name = (env or {}).get("artifacts_dir") or (p.stem + ".artifacts")
    return p.with_name(name)


def load_results(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read and validate one results CSV; raise :class:`HarnessError` (one line) on any contract violation.

    The frame carries ``attrs['env']``: the sidecar metadata (``{}`` when there is none).
    """
    p = Path(path)
    df = parse_results(_read_text(p), p)
    df.attrs["env"] = load_env(p)
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


def format_row(row: Mapping[str, Any]) -> dict[str, str]:
    """One result dict → CSV cells in :data:`COLUMNS` order (floats with enough digits to round-trip µs)."""
    out: dict[str, str] = {}
    for col in COLUMNS:
        v = row.get(col)
        if v is None or (isinstance(v, float) and math.isnan(v)):
            out[col] = ""
        elif isinstance(v, float):
            out[col] = f"{v:.6g}" if col in ("spread_pct", "tflops", "gbps", "rel_err") else f"{v:.4f}"
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
            self._repair_tail()
        self._fh = open(self.path, "a", newline="", encoding="utf-8")  # noqa: SIM115
        self._w = csv.DictWriter(self._fh, fieldnames=list(COLUMNS))
        if new:
            self._w.writeheader()
            self._sync()

    def _repair_tail(self) -> None:
        """Drop a torn last line (the process died mid-write) so the file stays valid CSV."""
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            cut = data.rfind(b"\n") + 1
            with open(self.path, "r+b") as fh:
                fh.truncate(cut)

    def _sync(self) -> None:
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def append(self, row: Mapping[str, Any]) -> None:
        self._w.writerow(format_row(row))
        self._sync()

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> ResultsAppender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

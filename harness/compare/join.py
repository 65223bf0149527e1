"""Two results frames joined case by case for compare: each output row's golden and TOT row, their statuses as
small ints, the columns taken at those rows without a Python object per cell, and the columns that describe a
case (golden's, else TOT's; one case_id naming two cases refused)."""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from harness.errors import HarnessError
from harness.results.arrowframe import arrow_strings, blank, empty_for_null, offsets, text
from harness.results.load import params_of
from harness.results.schema import STATUSES
from harness.results.unique import case_key


def col(
    df: pd.DataFrame, name: str, rows: np.ndarray | None, fill: object = "", *, copy: bool = True
) -> pd.Series | np.ndarray:
    """``df[name]`` taken at ``rows`` (-1 = no row → ``fill``; None: every row, in order, the usual same-suite
    case: nothing to take). Floats come back as numpy (with ``copy=False`` and ``rows`` None, where the caller only
    reads them, possibly the frame's own array: no fresh pages for it); text stays in pandas' (arrow-backed) string
    arrays, whose ``take`` is cheap, unlike object arrays."""
    n = len(df) if rows is None else len(rows)
    if fill != "":
        if name not in df.columns:
            return np.full(n, np.nan)
        if rows is None:
            return df[name].to_numpy(dtype=np.float64, na_value=np.nan, copy=copy)
        vals = df[name].to_numpy(dtype=np.float64, na_value=np.nan)
        return pd.api.extensions.take(vals, rows, allow_fill=True, fill_value=np.nan)  # one pass, a new array
    if name not in df.columns:
        return blank(n)
    col = df[name].astype("str")
    if rows is None:
        return col.reset_index(drop=True).fillna("")  # no copy
    taken = col.array.take(rows, allow_fill=True)
    if arrow_strings():  # "str" is Arrow's text
        import pyarrow as pa

        return pd.Series(text(empty_for_null(pa.array(taken))), copy=False)  # "" for no row, its text not copied
    return pd.Series(taken).fillna("")


def status_codes(df: pd.DataFrame, rows: np.ndarray | None) -> np.ndarray:
    """Index into STATUSES of each taken row's status (``rows`` None: every row in order); -1 where there is no
    row."""
    try:
        import pyarrow as pa
        import pyarrow.compute as pc

        arr = pa.array(df["status"].astype("str").array)
        found = pc.index_in(arr, value_set=pa.array(list(STATUSES)))
        codes = pc.fill_null(found, -1).to_numpy().astype(np.int8)
    except ImportError:
        codes = pd.Categorical(df["status"], categories=list(STATUSES)).codes.astype(np.int8)
    if rows is None:
        return codes
    return np.where(rows >= 0, codes[np.where(rows >= 0, rows, 0)], -1).astype(np.int8)


def same_cases_same_order(golden: pd.DataFrame, tot: pd.DataFrame) -> bool:
    if len(golden) != len(tot):
        return False
    return all(
        bool((golden[c].reset_index(drop=True) == tot[c].reset_index(drop=True)).all()) for c in ("case_id", "kernel")
    )


@dataclass
class Joined:
    """Two results frames joined: for every output row its golden row and TOT row (-1: none), and the statuses as
    small ints (-1: no row)."""

    golden: pd.DataFrame
    tot: pd.DataFrame
    gi: np.ndarray
    ti: np.ndarray
    gsc: np.ndarray
    tsc: np.ndarray
    #: gi and ti where they take something, None where they are every row of that frame, in order (row i is row i)
    g_rows: np.ndarray | None = None
    t_rows: np.ndarray | None = None
    #: each frame's rep-time column, parsed once (reps.Column) for the interval and the notes; None: no rep times
    rep_columns: dict[str, Any] = field(default_factory=dict)

    #: each frame's rep-process column, parsed once (procs.Labels) for the confirmation; None: no labels
    label_columns: dict[str, Any] = field(default_factory=dict)

    def reps(self, side: str) -> Any:
        """reps.Column of golden's (``side`` 'golden') or TOT's rep times; None where its file has none."""
        if side not in self.rep_columns:
            self.rep_columns[side] = rep_column(self.golden if side == "golden" else self.tot)
        return self.rep_columns[side]

    def labels(self, side: str) -> Any:
        """procs.Labels of golden's or TOT's rep processes; None where its file labels none."""
        if side not in self.label_columns:
            self.label_columns[side] = rep_column(self.golden if side == "golden" else self.tot, "rep_procs")
        return self.label_columns[side]


def rep_column(df: pd.DataFrame, name: str = "rep_times_us") -> Any:
    """reps.Column of a results frame's rep times (parsed once, for the interval and the notes), or procs.Labels
    of its rep processes (``name`` 'rep_procs'); None where no cell holds any."""
    if not holds(df, name):
        return None
    from harness.verdict.procs import Labels
    from harness.verdict.reps import Column

    return (Labels if name == "rep_procs" else Column)(arrow_column(df[name]))


def join(golden: pd.DataFrame, tot: pd.DataFrame, golden_name: str, tot_name: str) -> tuple[Joined, list[str]]:
    g_all = t_all = same_cases_same_order(golden, tot)
    if g_all:  # the usual case (one suite, both stacks): row i is row i, no hashing
        gi = ti = np.arange(len(golden))
    else:
        keys = case_key(golden["kernel"], golden["case_id"], (tot["kernel"], tot["case_id"]))
        gk, tk = keys[: len(golden)], keys[len(golden) :]
        t_of_g = pd.Index(tk).get_indexer(gk)  # TOT row of each golden row, -1 if none
        only_t = np.flatnonzero(~np.isin(tk, gk))
        gi = np.concatenate([np.arange(len(golden)), np.full(len(only_t), -1)])
        ti = np.concatenate([t_of_g, only_t])
        g_all = len(only_t) == 0  # TOT's cases are golden's, in another order, or fewer
    common = int(((gi >= 0) & (ti >= 0)).sum())
    if common == 0:
        raise HarnessError(
            f"{golden_name} and {tot_name} have no (kernel, case_id) in common "
            f"({len(golden)} vs {len(tot)} cases): are they results of the same suite?"
        )
    warnings = []
    if common < 0.5 * max(len(golden), len(tot)):
        warnings.append(f"only {common} of {len(golden)} golden / {len(tot)} TOT cases are in both files")
    g_rows, t_rows = (None if g_all else gi), (None if t_all else ti)
    gsc, tsc = status_codes(golden, g_rows), status_codes(tot, t_rows)
    return Joined(golden, tot, gi, ti, gsc, tsc, g_rows, t_rows), warnings


def every_row(rows: np.ndarray, column: Any) -> bool:
    from harness.verdict.reps import in_order

    return len(rows) == len(column.arr) and in_order(rows)


def arrow_column(col: pd.Series) -> Any:
    """A text column as Arrow large strings (nulls: empty cells), without a Python string each."""
    import pyarrow as pa

    col = col.astype("str")  # as col reads it
    to_arrow = getattr(col.array, "__arrow_array__", None)
    arr = to_arrow() if to_arrow is not None else pa.array(col.astype(object).where(col.notna(), None).tolist())
    return arr if pa.types.is_large_string(arr.type) else arr.cast(pa.large_string())


def holds(df: pd.DataFrame, name: str) -> bool:
    """Whether the frame has the text column ``name`` and some cell of it holds a character."""
    return name in df.columns and holds_text(df[name])


def holds_text(col: pd.Series) -> bool:
    """Whether any cell of a text column holds a character: for Arrow's text, from each chunk's offsets alone
    (a column nobody filled in, as most files' rep times, is not taken row by row only to find that out)."""
    to_arrow = getattr(col.array, "__arrow_array__", None)
    if to_arrow is not None:
        import pyarrow as pa

        chunks = to_arrow()
        chunks = getattr(chunks, "chunks", [chunks])
        if all(pa.types.is_string(c.type) or pa.types.is_large_string(c.type) for c in chunks):
            return any(_chunk_holds_text(c) for c in chunks)
    return bool(col.astype("str").str.len().any())


def _chunk_holds_text(chunk: Any) -> bool:
    """Whether a cell of an Arrow text array holds a byte: from its offsets, where no cell is missing (a missing
    one may still span bytes, which are not its text)."""
    if not len(chunk):
        return False
    if chunk.null_count == 0:
        return bool(offsets(chunk)[-1] > offsets(chunk)[0])
    import pyarrow.compute as pc

    return bool(pc.any(pc.greater(pc.binary_length(chunk), 0)).as_py())


def status_column(codes: np.ndarray) -> pd.Categorical:
    return pd.Categorical.from_codes(np.where(codes < 0, len(STATUSES), codes), categories=[*STATUSES, ""])


def case_columns(j: Joined, golden_name: str, tot_name: str) -> dict[str, Any]:
    """What names and describes each case: golden's values, else TOT's (refusing a case described two ways)."""
    cols: dict[str, Any] = {}
    for c in ("kernel", "case_id"):
        mine = col(j.golden, c, j.g_rows)
        cols[c] = mine if (j.gi >= 0).all() else mine.where(j.gi >= 0, col(j.tot, c, j.t_rows))
    for c in ("params", "dtype", "peak"):
        cols[c] = same_case_column(j.golden, j.tot, j.g_rows, j.t_rows, c, cols, golden_name, tot_name)
    for c in ("flops", "bytes"):  # a property of the case: golden's, else TOT's
        gv, tv = col(j.golden, c, j.g_rows, np.nan, copy=False), col(j.tot, c, j.t_rows, np.nan, copy=False)
        cols[c] = np.where(np.isnan(gv), tv, gv)
    return cols


def same_case_column(
    golden: pd.DataFrame,
    tot: pd.DataFrame,
    gi: np.ndarray | None,
    ti: np.ndarray | None,
    c: str,
    cols: dict[str, Any],
    golden_name: str,
    tot_name: str,
) -> pd.Series:
    """A column that describes the case (its parameters, dtype, roof): golden's value, else TOT's. Where both
    have one and they differ, the same (kernel, case_id) names two different cases: refused. Parameters are
    compared key by key where the texts differ (a version 1 file knows only B, M, N, K). A column one file leaves
    empty is the other's, with nothing to compare (no text taken of the empty one)."""
    if not holds(tot, c):
        return col(golden, c, gi)
    if not holds(golden, c):
        return col(tot, c, ti)
    gv, tv = col(golden, c, gi), col(tot, c, ti)
    g_empty = (gv == "").to_numpy()
    differ = np.flatnonzero(~g_empty & (tv != "").to_numpy() & (gv != tv).to_numpy())
    for i in differ:
        if c == "params":
            g, t = params_of(gv.iloc[i]), params_of(tv.iloc[i])
            clash = sorted(k for k in set(g) & set(t) if g[k] != t[k])
            if not clash:
                continue
            what = f"parameter {clash[0]} is {g[clash[0]]!r} in {golden_name} but {t[clash[0]]!r} in {tot_name}"
        else:
            what = f"column '{c}' is {gv.iloc[i]} in {golden_name} but {tv.iloc[i]} in {tot_name}"
        raise HarnessError(f"case ({cols['kernel'][i]}, {cols['case_id'][i]}): {what}; same case_id, different case")
    if g_empty.all():
        return tv
    return gv.where(~g_empty, tv) if g_empty.any() else gv


def frame_of(load: Future[pd.DataFrame]) -> Callable[[], pd.DataFrame | None]:
    """The frame of a load under way, once loaded; None where it failed (whoever waits for it says why)."""

    def frame() -> pd.DataFrame | None:
        try:
            return load.result()
        except Exception:  # raised again where compare_files takes the result
            return None

    return frame


def reps_started(load: Future[pd.DataFrame], labels: bool = True) -> tuple[Any, Any]:
    """rep_column of a frame under way, its rep times and (``labels``: the other file may label its reps too)
    its processes, each parse started once it is loaded; None where it failed to load (the load's error is
    raised where compare_files takes it) or holds none."""
    frame = frame_of(load)()
    names = ("rep_times_us", "rep_procs") if labels else ("rep_times_us",)
    found = [rep_column(frame, name) if frame is not None else None for name in names]
    started = [c.start() if c is not None else None for c in found]
    return started[0], started[1] if labels else None


def names_column(path: str | os.PathLike[str], name: str) -> bool:
    """Whether a results file's header may name ``name`` (True where it cannot be read: its load says why)."""
    from harness.results.arrowframe import header

    try:
        with open(path, "rb") as fh:
            names = header(fh.read(65536))
    except OSError:
        return True
    return names is None or name in (n.strip() for n in names)

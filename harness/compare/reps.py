"""Rep-time cells ("[12.5,12.51,12.49]") parsed with Arrow, a million at a time, with the answers of the Python
parsers they replace: confidence.rep_stats' (for the interval) and notes.overlap_note's json (for the rep-range
note).

A cell a runner writes is *plain*: a JSON list of one or more numbers in JSON's own grammar (no sign, at most 20
digits a part), ", " or "," between them, each parsing to a positive finite float. On such a cell numpy's
``fromstring``, Python's ``float`` and ``json``, and Arrow's cast (all correctly rounded) give the same floats,
so Arrow parses them. Every other filled cell (an empty list, spaces, a cell cut short, NaN, a negative or zero
time, text) is *odd*: it is handed to the Python code that read every cell before, with the same context, so it
is read as it always was; files hold none or a few."""

from __future__ import annotations

from typing import Any

import numpy as np

_NUM = r"(?:0|[1-9][0-9]{0,19})(?:\.[0-9]{1,20})?(?:[eE][+-]?[0-9]{1,3})?"
#: a plain cell (module docstring), but for the value check that follows the parse
PLAIN = rf"^\[{_NUM}(?:, ?{_NUM})*\]$"


def is_arrow(texts: Any) -> bool:
    """Whether ``texts`` is an Arrow array (or chunked array) of text, the kind :func:`parse_plain` reads."""
    try:
        import pyarrow as pa
    except ImportError:
        return False
    return isinstance(texts, (pa.Array, pa.ChunkedArray))


def parse_plain(arr: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(filled, plain, count, values) of an Arrow text array (nulls are empty cells): which cells hold text, which
    are plain (module docstring), each plain cell's number of values (0 elsewhere) and their values, flat, in
    order."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(arr)
    filled = pc.fill_null(pc.greater(pc.binary_length(arr), 0), False).to_numpy(zero_copy_only=False)
    plain = pc.fill_null(pc.match_substring_regex(arr, PLAIN), False).to_numpy(zero_copy_only=False)
    count = np.zeros(n, dtype=np.int64)
    if not plain.any():
        return filled, plain, count, np.zeros(0)
    lists = pc.split_pattern(pc.utf8_slice_codeunits(arr.filter(pa.array(plain)), 1, -1), ",")
    values = pc.cast(pc.utf8_ltrim(pc.list_flatten(lists), " "), pa.float64()).to_numpy(zero_copy_only=False)
    per = pc.list_value_length(lists).to_numpy(zero_copy_only=False).astype(np.int64)
    bad_value = ~((values > 0) & np.isfinite(values))  # zero, an underflow, 1e999: the Python readers decide
    if bad_value.any():
        bad_cell = np.bincount(np.repeat(np.arange(len(per)), per)[bad_value], minlength=len(per)) > 0
        values = values[~np.repeat(bad_cell, per)]
        rows = np.flatnonzero(plain)
        plain[rows[bad_cell]] = False
        per = per[~bad_cell]
    count[plain] = per
    return filled, plain, count, values


def rep_stats_arrow(arr: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """confidence.rep_stats of an Arrow text array, cell for cell the same counts, means and deviations.

    rep_stats parses all filled cells in one ``np.fromstring`` (rows separated by -1) and, where that fails
    anywhere, every cell again with ``float`` (then a cell holding a non-positive time counts no rep). Which of
    the two it takes matters only for odd cells, so only they are tried: with ``fromstring`` in the context they
    had (after a row's -1 separator, or first), then as the fallback did."""
    from harness.compare import confidence as C

    filled, plain, count, values = parse_plain(arr)
    odd = np.flatnonzero(filled & ~plain)
    if len(odd):
        cells = arr.take(odd).to_pylist()
        first = np.flatnonzero(filled)[0]
        lead = "" if first == odd[0] else "1,-1,"  # a plain cell before the first odd one: its -1 separator
        rows = _fast_rows(lead + ",-1,".join(cells).replace("[", "").replace("]", "") + ",-1", len(cells), lead)
        if rows is None:
            rows = [C.slow_values(c) for c in cells]
        count[odd] = [len(r) for r in rows]
        mine = np.repeat(plain, count)  # each value's place: a plain cell's, in order, or an odd one's
        flat = np.empty(len(mine))
        flat[mine] = values
        flat[~mine] = [x for r in rows for x in r]
        values = flat
    return C._moments(values, np.repeat(np.arange(len(count)), count), count)


def _fast_rows(text: str, n: int, lead: str) -> list[list[float]] | None:
    """The values of each of ``n`` cells as rep_stats' one-pass parse reads them (``text``: their joined text),
    None where that parse fails (rep_stats then reads every cell with ``float``)."""
    from harness.compare.confidence import _parse

    try:
        flat = _parse(text)
    except ValueError:
        return None
    ends = np.flatnonzero(flat == -1.0)
    skip = 1 if lead else 0
    if len(ends) != n + skip:
        return None
    starts = np.concatenate(([0], ends[:-1] + 1))
    return [flat[s:e].tolist() for s, e in zip(starts[skip:], ends[skip:], strict=True)]


def overlapping(g: Any, t: Any, regression: np.ndarray) -> np.ndarray:
    """Rows of two Arrow text arrays (golden's and TOT's rep times of the same flagged cases) for which
    notes.overlap_note may write a note: both plain with 2+ reps whose ranges overlap, or either odd (overlap_note
    reads those itself). False only where overlap_note would say nothing."""
    gf, gp, gn, gv = parse_plain(g)
    tf, tp, tn, tv = parse_plain(t)
    both = gp & tp & (gn >= 2) & (tn >= 2)
    gmin, gmax = _range(gv, gn)
    tmin, tmax = _range(tv, tn)
    slow_min = np.where(regression, tmin, gmin)
    fast_max = np.where(regression, gmax, tmax)
    with np.errstate(invalid="ignore"):
        overlap = both & ~(slow_min > fast_max)
    return overlap | (gf & ~gp) | (tf & ~tp)


def _range(values: np.ndarray, count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each cell's smallest and largest value (NaN for a cell without any)."""
    lo, hi = np.full(len(count), np.nan), np.full(len(count), np.nan)
    has = count > 0
    if has.any():
        starts = np.concatenate(([0], np.cumsum(count)[:-1]))[has]
        lo[has] = np.minimum.reduceat(values, starts)
        hi[has] = np.maximum.reduceat(values, starts)
    return lo, hi

"""The one reader of the lists a results row holds: its rep times ("[12.5,12.51,12.49]") and the worker process
of each rep (``rep_procs``, "[0,0,1]"), for the interval (confidence.rep_stats), the confirmation (confirm.Side)
and the rep-range note alike: rep times here, rep processes in procs.py through the same reader of plain lists.
No other module parses them.

A cell a runner writes is *plain*: a JSON list of one or more numbers in JSON's own grammar (no sign, at most 20
digits a part), ", " or "," between them, each parsing to a float over 0 and under 1e100 (rep processes: whole
numbers of at most 18 digits). Arrow reads plain cells, a million at a time: on such a cell Python's ``float``
and ``json`` and Arrow's cast (all correctly rounded) give the same numbers. Every other filled cell is *odd*
(spaces inside, a cell cut short, an empty list, NaN, a zero, negative or infinite time, text); files hold none
or a few, and each is read by one rule, :func:`odd_values` (procs.odd_ints): a JSON list of numbers that are
all good times gives them, any other cell no reps at all, whatever the other cells of the file hold.

A column is parsed once, whole, into per-cell figures (count, mean and deviation as _moments takes
them, smallest and largest rep); each question (the cases near a limit, the flagged ones) then picks its rows.
A plain cell's figures are its own, whichever other cells are asked about with it, and their arithmetic cannot
overflow."""

from __future__ import annotations

from typing import Any

import numpy as np

from harness.verdict.listbytes import numbers_of

_NUM = r"(?:0|[1-9][0-9]{0,19})(?:\.[0-9]{1,20})?(?:[eE][+-]?[0-9]{1,3})?"
#: a plain cell (module docstring), but for the value check that follows the parse
PLAIN = rf"^\[{_NUM}(?:, ?{_NUM})*\]$"


class _Once:
    """A text column (Arrow, whole) parsed once, on a thread of its own once started (Arrow and numpy work without
    the GIL): ``parsed()`` waits for that parse, or parses now."""

    def __init__(self, arr: Any) -> None:
        self.arr = arr
        self._parsed: tuple[np.ndarray, ...] | None = None
        self._future: Any = None

    def start(self) -> Any:
        if self._parsed is None and self._future is None:
            from concurrent.futures import ThreadPoolExecutor

            pool = ThreadPoolExecutor(1)
            self._future = pool.submit(self._parse)
            pool.shutdown(wait=False)
        return self

    def parsed(self) -> tuple[np.ndarray, ...]:
        if self._parsed is None:
            self._parsed = self._future.result() if self._future is not None else self._parse()
        return self._parsed

    def _parse(self) -> tuple[np.ndarray, ...]:
        raise NotImplementedError


class Column(_Once):
    """A text column of rep times, parsed once for every question asked of its cells."""

    def __init__(self, arr: Any) -> None:
        super().__init__(arr)
        self._values = np.zeros(0)
        self._lengths: np.ndarray | None = None

    def lengths(self) -> np.ndarray:
        """Each cell's length in bytes, up to 3 (0: empty; over 2 where its characters are, as they are where it is
        ASCII): all that is asked of them, a byte a cell."""
        if self._lengths is None:
            import pyarrow.compute as pc

            got = pc.fill_null(pc.binary_length(self.arr), 0).to_numpy(zero_copy_only=False)
            self._lengths = np.minimum(got, 3).astype(np.int8)
        return self._lengths

    def parsed(self) -> tuple[np.ndarray, ...]:
        """(filled, plain, count, mean, sd, lo, hi) per cell: :func:`parse_plain`'s first three, then each plain
        cell's mean and sample deviation (as _moments takes them) and its smallest and largest value
        (NaN where there are none)."""
        return super().parsed()

    def _parse(self) -> tuple[np.ndarray, ...]:
        filled = self.lengths() > 0
        n = len(filled)
        plain, count = np.zeros(n, dtype=bool), np.zeros(n, dtype=np.int64)
        mean, sd, lo, hi = (np.full(n, np.nan) for _ in range(4))
        kept = []
        at = 0
        for batch in _batches(self.arr):  # a batch at a time: its temporaries stay small, their pages reused
            end = at + len(batch)
            _, plain[at:end], count[at:end], values = parse_plain(batch, filled[at:end])
            mean[at:end], sd[at:end], lo[at:end], hi[at:end] = figures(values, count[at:end])
            kept.append(values)
            at = end
        self._values = np.concatenate(kept) if kept else np.zeros(0)
        return filled, plain, count, mean, sd, lo, hi

    def flat(self) -> tuple[np.ndarray, np.ndarray]:
        """(count, values): each plain cell's number of reps (0 for every other cell) and the plain cells' reps,
        flat, in the column's order (what confirm.Side takes its labelled reps from)."""
        count = self.parsed()[2]
        return count, self._values

    def at(self, rows: np.ndarray | None) -> Cells:
        return Cells(self, rows)


#: rows parsed at a time (Column.parsed)
BATCH = 65536


def _batches(arr: Any) -> Any:
    """``arr`` (an Arrow array or chunked array) as arrays of about BATCH rows, in order: small chunks joined,
    a large array sliced (no copy)."""
    import pyarrow as pa

    pending: list[Any] = []
    rows = 0
    for chunk in arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]:
        if len(chunk) >= BATCH:
            if pending:
                yield pa.concat_arrays(pending)
                pending, rows = [], 0
            for at in range(0, len(chunk), BATCH):
                yield chunk.slice(at, BATCH)
            continue
        pending.append(chunk)
        rows += len(chunk)
        if rows >= BATCH:
            yield pa.concat_arrays(pending)
            pending, rows = [], 0
    if pending:
        yield pa.concat_arrays(pending)


class Cells:
    """The cells of a :class:`Column` at ``rows`` (-1: no row, an empty cell; None: every row, in order): what
    compare hands confidence.rep_stats instead of a Python string a cell."""

    def __init__(self, column: Column, rows: np.ndarray | None) -> None:
        self.column, self.rows = column, rows

    def __len__(self) -> int:
        return len(self.column.arr) if self.rows is None else len(self.rows)

    def parsed(self, fields: tuple[int, ...] = (0, 1, 2, 3, 4, 5, 6)) -> tuple[np.ndarray, ...]:
        """Column.parsed of these cells (no row: an empty cell); only ``fields`` of it, in their order. Every row,
        in order: the column's own arrays (only read)."""
        full = self.column.parsed()
        r = self.rows
        if r is None:
            return tuple(full[f] for f in fields)
        there = r >= 0
        at = np.where(there, r, 0)
        empty = (False, False, 0, np.nan, np.nan, np.nan, np.nan)
        return tuple(full[f][at] if there.all() else np.where(there, full[f][at], empty[f]) for f in fields)

    def stats_where(self, near: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """confidence.rep_stats of the cells at ``near`` (a mask of these cells), at their places in arrays of
        all these cells (count 0, NaN elsewhere), without taking the cells out and putting their figures back
        (and, for every cell of a column in order, the column's own arrays, only read). An odd cell's reps are
        :func:`odd_values`' (none where it holds no list of good times); their moments are _moments' own."""
        filled, plain, count, mean, sd = self.parsed((0, 1, 2, 3, 4))
        if not near.all():
            filled = filled & near
            count, mean, sd = np.where(near, count, 0), np.where(near, mean, np.nan), np.where(near, sd, np.nan)
        odd = np.flatnonzero(filled & ~plain)
        if len(odd):
            count, mean, sd = count.copy(), mean.copy(), sd.copy()
            count[odd], mean[odd], sd[odd] = stats_of([odd_values(c) or [] for c in self.texts(odd)])
        return count, mean, sd

    def texts(self, which: np.ndarray) -> list[str]:
        """The cells at positions ``which`` (of these cells; each one filled) as Python strings."""
        return texts_at(self.column.arr, which if self.rows is None else self.rows[which])

    def lists(self, which: np.ndarray) -> list[list[float] | None]:
        """The reps of the cells at positions ``which`` (of these cells; each one filled): a plain cell's as Arrow
        read them, an odd one's :func:`odd_values` (None where it holds no list of good times)."""
        rows = which if self.rows is None else self.rows[which]
        count, values = self.column.flat()
        plain = self.column.parsed()[1][rows]
        starts = starts_of(count)
        odd = iter(texts_at(self.column.arr, rows[~plain]))
        return [
            values[starts[r] : starts[r] + count[r]].tolist() if p else odd_values(next(odd))
            for r, p in zip(rows.tolist(), plain.tolist(), strict=True)
        ]

    def lengths(self) -> np.ndarray:
        """Each cell's length in bytes, up to 3 (0: empty or no row)."""
        full = self.column.lengths()
        if self.rows is None:
            return full
        return np.where(self.rows >= 0, full[np.where(self.rows >= 0, self.rows, 0)], 0)


def texts_at(arr: Any, rows: np.ndarray) -> list[str]:
    """The cells of an Arrow text array at ``rows`` (each one filled) as Python strings."""
    import pyarrow as pa

    if not isinstance(arr, pa.ChunkedArray):
        return arr.take(pa.array(rows, type=pa.int64())).to_pylist()
    # a chunked array's take joins its chunks first (the whole column, for a few cells): each chunk's own
    ends = np.cumsum([len(c) for c in arr.chunks])
    chunk = np.searchsorted(ends, rows, side="right")
    out: list[str] = [""] * len(rows)
    for c in np.unique(chunk):
        at = np.flatnonzero(chunk == c)
        local = rows[at] - (ends[c - 1] if c else 0)
        for k, v in zip(at, arr.chunk(int(c)).take(pa.array(local, type=pa.int64())).to_pylist(), strict=True):
            out[k] = v
    return out


def parse_plain(arr: Any, filled: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(filled, plain, count, values) of an Arrow text array (nulls are empty cells): which cells hold text (where
    not given), which are plain (module docstring), each plain cell's number of values (0 elsewhere) and their
    values, flat, in order."""
    import pyarrow as pa

    filled, plain, per, values = _plain_lists(arr, PLAIN, pa.float64(), filled)
    bad_value = ~((values > 0) & (values < 1e100))  # zero, an underflow, 1e999: the one rule decides
    if bad_value.any():
        bad_cell = np.bincount(np.repeat(np.arange(len(per)), per)[bad_value], minlength=len(per)) > 0
        values = values[~np.repeat(bad_cell, per)]
        rows = np.flatnonzero(plain)
        plain[rows[bad_cell]] = False
        per = per[~bad_cell]
    count = np.zeros(len(arr), dtype=np.int64)
    count[plain] = per
    return filled, plain, count, values


def _plain_lists(
    arr: Any, pattern: str, kind: Any, filled: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(filled, plain, per, values): which cells hold text (where not given), which match ``pattern``, the number
    of values in each of those, and their values cast to ``kind`` by Arrow, flat, in order."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if filled is None:
        filled = pc.fill_null(pc.greater(pc.binary_length(arr), 0), False).to_numpy(zero_copy_only=False)
    plain = pc.fill_null(pc.match_substring_regex(arr, pattern), False).to_numpy(zero_copy_only=False)
    none = np.zeros(0, dtype=kind.to_pandas_dtype())
    if not plain.any():
        return filled, plain, np.zeros(0, dtype=np.int64), none
    per, numbers = numbers_of(arr, plain)
    try:
        values = pc.cast(numbers, kind).to_numpy(zero_copy_only=False)
    except pa.ArrowInvalid:  # not expected of a plain cell; if ever: every cell odd, read by the one rule
        return filled, np.zeros(len(arr), dtype=bool), np.zeros(0, dtype=np.int64), none
    return filled, plain, per, values


def starts_of(count: np.ndarray) -> np.ndarray:
    """Where each cell's values begin in the flat values of cells of ``count`` values each."""
    starts = np.zeros(len(count), dtype=np.int64)
    np.cumsum(count[:-1], out=starts[1:])
    return starts


def cells_of(texts: Any) -> Cells | None:
    """``texts`` as :class:`Cells` where it is Arrow text or Cells already; None for anything else (an array of
    Python strings: :func:`text_array` makes it Arrow's)."""
    import pyarrow as pa

    if isinstance(texts, Cells):
        return texts
    return Column(texts).at(None) if isinstance(texts, (pa.Array, pa.ChunkedArray)) else None


def rep_stats_arrow(cells: Cells) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """confidence.rep_stats of these cells, cell for cell the same counts, means and deviations
    (:meth:`Cells.stats_where`, every cell)."""
    count, mean, sd = cells.stats_where(np.ones(len(cells), dtype=bool))
    return count.copy(), mean.copy(), sd.copy()  # the caller's own, as rep_stats' always were


#: rep_stats' moments are taken a column of reps at a time for cells of at most this many reps
_FEW = 8


def figures(values: np.ndarray, count: np.ndarray) -> tuple[np.ndarray, ...]:
    """(mean, sample standard deviation, smallest, largest) of each cell's ``count`` values (``values``: flat, in
    order, each over 0 and under 1e100; NaN for a cell without any), the first two bit for bit
    _moments' (a sum is the same additions in the same order, from 0.0) without its per-value row
    numbers: cells of k <= 8 reps, k columns of one value a cell; cells of more reps by _moments itself."""
    n = len(count)
    mean, sd, lo, hi = (np.full(n, np.nan) for _ in range(4))
    starts = starts_of(count)
    other = count > _FEW
    for k in np.flatnonzero(np.bincount(count[~other], minlength=1)[1:]) + 1:
        rows = np.flatnonzero((count == k) & ~other)
        at = starts[rows]
        total = np.zeros(len(rows))
        least = most = None
        for j in range(k):
            v = values[at + j]
            total += v
            least, most = (v, v) if least is None else (np.minimum(least, v), np.maximum(most, v))
        m = total / k
        mean[rows], lo[rows], hi[rows] = m, least, most
        if k > 1:
            dev = np.zeros(len(rows))
            for j in range(k):
                dev += (values[at + j] - m) ** 2
            sd[rows] = np.sqrt(dev / (k - 1))
    if other.any():
        rows = np.flatnonzero(other)
        c = count[rows]
        mine = values[np.repeat(other, count)]
        _, mean[rows], sd[rows] = _moments(mine, np.repeat(np.arange(len(rows)), c), c)
        lo[rows], hi[rows] = _range(mine, c)
    return mean, sd, lo, hi


def stats_of(rows: list[list[float]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(count, mean, sample deviation) of each cell's values, given as Python lists: :func:`_moments`'."""
    count = np.array([len(r) for r in rows], dtype=np.int64)
    flat = np.array([x for r in rows for x in r], dtype=np.float64)
    return _moments(flat, np.repeat(np.arange(len(rows)), count), count)


def _moments(values: np.ndarray, rows: np.ndarray, count: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = len(count)
    mean, sd = np.full(n, np.nan), np.full(n, np.nan)
    has, two = count > 0, count > 1
    sums = np.bincount(rows, weights=values, minlength=n)
    mean[has] = sums[has] / count[has]
    dev = np.bincount(rows, weights=(values - mean[rows]) ** 2, minlength=n)
    sd[two] = np.sqrt(dev[two] / (count[two] - 1))
    return count, mean, sd


def overlapping(g: Cells, t: Cells, regression: np.ndarray) -> np.ndarray:
    """Rows of golden's and TOT's rep times of the same flagged cases for which notes.overlap_note may write a
    note: both plain with 2+ reps whose ranges overlap, or either odd (Cells.lists reads those by the one rule).
    False only where overlap_note would say nothing."""
    gf, gp, gn, gmin, gmax = g.parsed((0, 1, 2, 5, 6))
    tf, tp, tn, tmin, tmax = t.parsed((0, 1, 2, 5, 6))
    both = gp & tp & (gn >= 2) & (tn >= 2)
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


# the Python cells of the stages that hand no Arrow column (resolution, referee, a test's strings)


def text_array(cells: Any) -> Any:
    """Cells as an Arrow text array: an Arrow array as it is, a pandas Series' Arrow array without a copy, and
    any other sequence cell by cell, every value that is not a string an empty cell (as the Python readers
    read one)."""
    import pyarrow as pa

    if isinstance(cells, (pa.Array, pa.ChunkedArray)):
        return cells
    if isinstance(cells, Cells):
        raise TypeError("Cells hold their column: take it from them")
    values = [c if isinstance(c, str) else None for c in (cells.tolist() if hasattr(cells, "tolist") else cells)]
    try:
        return pa.array(values, type=pa.large_string())
    except UnicodeEncodeError:  # a lone surrogate: no list of numbers, read as one that holds none
        return pa.array([c if c is None or _encodes(c) else "\ufffd" for c in values], type=pa.large_string())


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def in_order(rows: np.ndarray) -> bool:
    """Whether ``rows`` takes every cell, in order (row i is cell i)."""
    return len(rows) == 0 or (rows[0] == 0 and bool((np.diff(rows) == 1).all()))


def gather(count: np.ndarray, values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The values of the cells at ``rows`` (each one's ``count`` of the flat ``values``), cell after cell."""
    starts = starts_of(count)
    k = count[rows]
    total = int(k.sum())
    if total == 0:
        return values[:0]
    offsets = np.repeat(starts[rows] - (np.cumsum(k) - k), k)
    return values[offsets + np.arange(total)]


def odd_values(cell: Any) -> list[float] | None:
    """An odd cell's reps, by the one rule every reader of rep times follows, whatever the other cells hold: a
    JSON list of one or more numbers, each over 0 and under 1e100 (as a plain cell's), as floats; None for any
    other cell (an empty list, a cell cut short, a zero, negative, NaN or infinite time, ``true``, text): no reps
    there, never a guess at some of them."""
    found = _json_list(cell)
    if not found or not all(_number(x) and 0 < x < 1e100 for x in found):
        return None
    return [float(x) for x in found]


def _json_list(cell: Any) -> list | None:
    import json

    try:
        found = json.loads(cell)
    except (ValueError, TypeError):  # not JSON, not text, or an integer of more digits than Python reads
        return None
    return found if isinstance(found, list) else None


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)

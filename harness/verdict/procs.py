"""The worker process of each rep (``rep_procs``, "[0,0,1]"), read by reps.py's reader of plain lists: a JSON
list of whole numbers >= 0 that fit an int64, one a rep, as a runner writes it; any other filled cell is odd, and
:func:`odd_ints` decides what it holds. A run writes one list for every case of a pass, so a column of a million
cells holds a few distinct ones: each is read once (:func:`distinct_int_lists`). Pure: Arrow and numpy."""

from __future__ import annotations

from typing import Any

import numpy as np

from harness.verdict.reps import _batches, _json_list, _Once, _plain_lists, gather

_INT = r"(?:0|[1-9][0-9]{0,17})"
#: a plain list of whole numbers >= 0 that fit an int64 ("[0,0,1,5]"), as a runner writes ``rep_procs``
PLAIN_INTS = rf"^\[{_INT}(?:, ?{_INT})*\]$"


#: (each cell's distinct cell, -1 for a missing one; the distinct cells' counts; their values, flat)
Distinct = tuple[np.ndarray, np.ndarray, np.ndarray]


class Labels(_Once):
    """A text column of rep processes (``rep_procs``): :func:`int_lists` of it, each distinct cell read once.
    ``parsed()`` gives its first three arrays (filled, plain, count), :meth:`values` the fourth."""

    def __init__(self, arr: Any) -> None:
        super().__init__(arr)
        self._distinct: Distinct | None = None
        self._values: np.ndarray | None = None

    def _parse(self) -> tuple[np.ndarray, ...]:
        (filled, plain, count, self._values), self._distinct = _distinct_int_lists(self.arr)
        return filled, plain, count

    def distinct(self) -> Distinct | None:
        """(the distinct cell of each cell, -1 for a missing one; each distinct cell's count and values, as
        :func:`int_lists` gives them) where the column was read a distinct cell at a time, else None."""
        self.parsed()
        return self._distinct

    def values(self) -> np.ndarray:
        """The plain cells' values, flat, in order: gathered from the distinct cells' the first time asked (most
        comparisons never ask: procs alike are judged from the distinct cells, alike.py)."""
        plain = self.parsed()[1]
        if self._values is None:  # read a distinct cell at a time (else int_lists gave them)
            index, count_d, values_d = self._distinct
            self._values = gather(count_d, values_d, index[plain])
        return self._values


def int_lists(arr: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(filled, plain, count, values) of a text array of lists of whole numbers: which cells hold text, which
    are plain (PLAIN_INTS), each plain cell's number of values (0 elsewhere) and their values (int64), flat, in
    order. Every other filled cell is odd: its reader decides what it holds (confirm._pair)."""
    import pyarrow as pa

    parts = []
    for batch in _batches(arr):
        filled, plain, per, values = _plain_lists(batch, PLAIN_INTS, pa.int64())
        count = np.zeros(len(batch), dtype=np.int64)
        count[plain] = per
        parts.append((filled, plain, count, values))
    if not parts:
        return np.zeros(0, bool), np.zeros(0, bool), np.zeros(0, np.int64), np.zeros(0, np.int64)
    return tuple(np.concatenate(p) for p in zip(*parts, strict=True))  # type: ignore[return-value]


#: a column is read a distinct cell at a time where it holds at most one distinct cell in this many (a run writes
#: one list of processes for every case of a pass: a million cells, a few distinct ones)
DISTINCT_EVERY = 4


def distinct_int_lists(arr: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`int_lists` of ``arr``, the same arrays, from its distinct cells: each read once (Arrow's dictionary
    of the column), every cell then given its own's figures and values; a column of mostly distinct cells is
    read cell by cell."""
    labels = Labels(arr)
    return (*labels.parsed(), labels.values())


def _distinct_int_lists(arr: Any) -> tuple[tuple[Any, ...], Distinct | None]:
    """(:func:`distinct_int_lists`, but for the values where read from the distinct cells: None, Labels.values
    gathers them; the :data:`Distinct` it was read from, or None where it read cell by cell)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if len(arr) == 0:
        return int_lists(arr), None
    coded = pc.dictionary_encode(arr)
    chunks = coded.chunks if isinstance(coded, pa.ChunkedArray) else [coded]
    if not chunks or not 0 < len(chunks[0].dictionary) * DISTINCT_EVERY <= len(arr):  # none, or most distinct
        return int_lists(arr), None
    # one dictionary for every chunk (Arrow's encoding of a chunked column shares its memo)
    index = np.concatenate([pc.fill_null(c.indices, -1).to_numpy(zero_copy_only=False) for c in chunks])
    filled_d, plain_d, count_d, values_d = int_lists(chunks[0].dictionary)
    there = index >= 0
    at = np.where(there, index, 0)
    filled, plain = there & filled_d[at], there & plain_d[at]
    count = np.where(plain, count_d[at], 0)
    return (filled, plain, count, None), (index, count_d, values_d)


def odd_ints(cell: Any) -> list[int] | None:
    """An odd cell of rep processes: a JSON list of one or more whole numbers >= 0 that fit an int64; None for
    any other."""
    found = _json_list(cell)
    if not found or not all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 2**63 for x in found):
        return None
    return found

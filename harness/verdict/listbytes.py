"""The numbers of plain list cells (reps.py: "[12.5,12.51,12.49]", "[0,0,1]") cut from the cells' bytes: what
splitting each cell at its commas and trimming its brackets gives, without an Arrow string a part (a million cells
of three reps each made 3,000,000 of them, three times over, in a second of a compare). Pure: Arrow and numpy."""

from __future__ import annotations

from typing import Any

import numpy as np

from harness.results.arrowframe import offsets

#: the bytes a number of a plain cell is made of; its other bytes ("[", "]", ",", " ") only part them
_NUMBER_BYTE = np.zeros(256, dtype=bool)
_NUMBER_BYTE[np.frombuffer(b"0123456789.eE+-", dtype=np.uint8)] = True


def numbers_of(arr: Any, plain: np.ndarray) -> tuple[np.ndarray, Any]:
    """(per, numbers): the number of numbers in each plain cell of ``arr`` (one Arrow text array) and their text,
    flat, in order, as one Arrow text array: the plain cells' bytes with every byte between numbers left out
    (what splitting each cell at its commas and trimming its brackets gives, without an Arrow string a part)."""
    import pyarrow as pa

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if arr.type not in (pa.string(), pa.large_string()):
        arr = arr.cast(pa.large_string())
    if (np.diff(offsets(arr))[~plain] > 0).any():  # odd cells hold bytes: the plain ones alone
        arr = arr.filter(pa.array(plain))
        plain = np.ones(len(arr), dtype=bool)
    at = offsets(arr)
    lo, hi = int(at[0]), int(at[-1])
    data = np.frombuffer(arr.buffers()[2], dtype=np.uint8, count=hi - lo, offset=lo)
    number = _NUMBER_BYTE[data]
    edge = np.diff(number.view(np.int8), prepend=np.int8(0), append=np.int8(0))
    starts, ends = np.flatnonzero(edge == 1), np.flatnonzero(edge == -1)
    # the other cells hold no bytes: the plain ones lie end to end, each from its offset to the next one's
    bounds = np.append(at[:-1][plain], hi) - lo
    per = np.diff(np.searchsorted(starts, bounds)).astype(np.int64)
    packed = np.zeros(len(starts) + 1, dtype=np.int64)
    np.cumsum(ends - starts, out=packed[1:])
    numbers = pa.LargeStringArray.from_buffers(len(starts), pa.py_buffer(packed), pa.py_buffer(data[number]))
    return per, numbers

"""No (kernel, case_id) twice in a results file, and one int64 key per pair for joins: the loader's costliest
question on a million rows, answered without hashing a million strings where it can be. Pure."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

#: a multiplier of the 64-bit hash that mixes a value's words (the golden ratio's, as Fibonacci hashing's)
MIX = np.uint64(0x9E3779B97F4A7C15)


def case_key(kernel: pd.Series, case_id: pd.Series, *others: tuple[pd.Series, pd.Series]) -> np.ndarray:
    """One int64 per (kernel, case_id): cheaper to join and deduplicate than pairs of strings.

    With ``others``, the codes are made over all frames together so keys are comparable across them.
    """
    ks = pd.concat([kernel, *[o[0] for o in others]], ignore_index=True)
    cs = pd.concat([case_id, *[o[1] for o in others]], ignore_index=True)
    kc, _ = pd.factorize(ks)
    cc, uc = pd.factorize(cs)
    return kc.astype(np.int64) * max(len(uc), 1) + cc.astype(np.int64)


def unique(kernel: Any, case_id: Any, unique_keys: Callable[[], pd.DataFrame | None] | None = None) -> bool:
    """No (kernel, case_id) twice (``kernel``, ``case_id``: Arrow's text, none missing). Where ``unique_keys``
    gives a frame of the same cases in the same order, whose pairs are unique (another file, loaded), so are
    these (golden and TOT of one suite, the usual comparison: two equality passes, ~5 ms, instead of hashing a
    million case_ids, ~0.15 s). Usually every case_id is distinct on its own: one hash count settles it."""
    import pyarrow.compute as pc

    kernel, case_id = one_array(kernel), one_array(case_id)
    known = unique_keys() if unique_keys is not None else None
    if (
        known is not None
        and len(known) == len(case_id)
        and _same_text(known["kernel"], kernel)
        and _same_text(known["case_id"], case_id)
    ):
        return True
    if distinct(case_id):
        return True
    k = pc.dictionary_encode(kernel)
    c = pc.dictionary_encode(case_id)
    key = k.indices.to_numpy().astype(np.int64) * len(c.dictionary) + c.indices.to_numpy()
    return not pd.Series(key).duplicated().any()


def distinct(texts: Any) -> bool:
    """No value of a text column (Arrow's, none missing) twice. Short ASCII values (case ids: at most 32 bytes)
    are padded with NULs to one width and each hashed from its 8-byte words into one 64-bit number (~20 ms a
    million), whose uniqueness numpy's hash table counts (~45 ms) instead of Arrow's table of the strings (~120
    ms). Equal values hash alike, so no two hashes alike proves no two values alike; two alike (a duplicate, a
    collision, or values that differ only by trailing NULs) leave it to Arrow's exact count."""
    import pyarrow as pa
    import pyarrow.compute as pc

    texts = one_array(texts)
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


def one_array(arr: Any) -> Any:
    """Arrow's array of a column: a chunked array's one chunk as it is, several joined."""
    import pyarrow as pa

    if not isinstance(arr, pa.ChunkedArray):
        return arr
    return arr.chunk(0) if arr.num_chunks == 1 else arr.combine_chunks()


def _same_text(a: pd.Series, b: Any) -> bool:
    """A frame's text column holds the same strings as ``b`` (Arrow's), row by row, none missing."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        x = one_array(pa.array(a.array))
        if x.type != b.type or x.null_count or b.null_count:
            return False
        return bool(pc.all(pc.equal(x, b)).as_py())
    except (TypeError, ValueError, pa.ArrowException):  # not text (object columns: another pandas' frame)
        return False

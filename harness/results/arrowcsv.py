"""Arrow's CSV reader as the loader uses it on big results files, and the same read started early: `harness compare`
starts both files' reads before it imports pandas and the compare stage, so Arrow's threads parse while the
interpreter imports; arrowframe takes the table when the loader gets there, and checks.py checks it as any other.
Needs pyarrow only (no pandas, no numpy of its own)."""

from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from harness.results.schema import NUMBERS, TEXT_COLUMNS

NA_VALUES = ["", "nan", "NaN", "NAN", "-nan"]
#: files the loader reads by path (load.py: over 4 x ARROW_CHARS bytes); smaller ones it reads from their bytes
PATH_BYTES = 4_000_000
#: a read's answer when none was started (its table may be None: Arrow refused the file)
NOT_STARTED = object()
#: path -> (the file's identity when the read started, the read)
_started: dict[Path, tuple[tuple[int, ...], Future]] = {}


def read_table(source: bytes | Path) -> Any:
    """pyarrow's CSV reader with the options pandas gives it for load.py's pyarrow engine (text columns as text,
    the same missing-value spellings), large strings as pandas keeps them; None where it refuses the file."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    # the number columns as floats: Arrow reads "0x21" as 33 in a column it takes for integers, and refuses it in a
    # column of floats, as pandas' reader does (the file then goes to pandas' reader, which names the cell)
    types = {**{c: pa.large_string() for c in TEXT_COLUMNS}, **{c: pa.float64() for c in NUMBERS}}
    opts = pacsv.ConvertOptions(column_types=types, null_values=NA_VALUES, strings_can_be_null=True)
    data = str(source) if isinstance(source, Path) else pa.BufferReader(source)
    try:
        return pacsv.read_csv(data, convert_options=opts)
    except (pa.ArrowException, OSError):
        return None


def _identity(path: Path) -> tuple[int, ...] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def prefetch(*paths: Path) -> None:
    """Start reading the files the loader will read by path, one after the other on a thread of their own (Arrow
    parses without the GIL, on all cores): the loader checks the first while the second is read, and the second
    read reuses the memory the first one's parsing freed (two at once touched ~100,000 more pages, ~0.4 s more
    CPU on two 1M-row files). Only a head start: whatever goes wrong is left to the loader to find and say."""
    import pyarrow.csv  # noqa: F401 - imported here, not by the thread while pandas imports it

    pool = ThreadPoolExecutor(1, thread_name_prefix="arrowcsv")
    for path in paths:
        ident = _identity(path)
        if ident is None or ident[2] <= PATH_BYTES or not Path(path).is_file():
            continue
        _started[Path(path)] = (ident, pool.submit(read_table, Path(path)))
    pool.shutdown(wait=False)  # its thread ends with the last read


def take(path: Path) -> Any:
    """The table of ``path``'s read started by :func:`prefetch` (None: Arrow refused it), once; NOT_STARTED where
    none was, or the file changed since."""
    found = _started.pop(Path(path), None)
    if found is None:
        return NOT_STARTED
    ident, read = found
    table = read.result()
    return table if _identity(path) == ident else NOT_STARTED

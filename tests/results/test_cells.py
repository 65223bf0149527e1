"""harness/results/cells.py: one cell as a number, cells as text, a row's present cells joined."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from harness.results.cells import joined, missing, number, text


def test_number():
    assert number("1.5") == 1.5 and number(2) == 2.0
    assert [number(v) for v in ("", "x", None, math.nan, math.inf, "-inf")] == [None] * 6


def test_missing():
    assert all(missing(v) for v in (None, math.nan, np.nan, pd.NA, pd.NaT))
    assert not any(missing(v) for v in ("", 0, [], {}, (None,), "nan"))


def test_text_writes_missing_cells_empty_on_any_pandas():
    col = pd.Series([1.0, np.nan, 3.5])
    assert text(col).tolist() == ["1.0", "", "3.5"]
    assert text(pd.Series(["a", None, np.nan], dtype=object)).tolist() == ["a", "", ""]


def test_joined_skips_missing_cells():
    f = pd.DataFrame({"M": [1, 2], "N": [np.nan, 4.0], "dtype": ["bf16", None], "eps": [0.5, None]}, index=[7, 9])
    s = joined(f)
    assert s.tolist() == ["1 bf16 0.5", "2 4"] and list(s.index) == [7, 9]
    assert joined(pd.DataFrame(index=[1, 2])).tolist() == ["", ""]

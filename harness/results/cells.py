"""Reading cells of a results or comparison table that may be empty, text, NaN or a number. Text goes through
here because pandas 3's ``astype(str)`` keeps a missing cell missing (NaN) where pandas 2 wrote "nan"."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd


def number(v: Any) -> float | None:
    """The cell as a finite float; None for an empty, non-numeric, NaN or infinite cell."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def missing(v: Any) -> bool:
    """None, NaN or pandas' NA/NaT (a list or dict cell is a value, never missing)."""
    if isinstance(v, (list, tuple, dict)):
        return False
    return v is None or bool(pd.isna(v))


def text(col: pd.Series) -> pd.Series:
    """Each cell as text, "" for a missing one. A column of strings stays one (pandas' arrow-backed strings: no
    Python object per cell, ~0.5 s less per million rows); any other is converted cell by cell."""
    if isinstance(col.dtype, pd.StringDtype):
        return col.fillna("").astype(str)
    return col.astype(object).where(col.notna(), "").astype(str)


def joined(frame: pd.DataFrame, sep: str = " ") -> pd.Series:
    """Each row's present cells as text, joined (a case's shape from its parameters: "2048 8192 bf16")."""
    if frame.empty or not len(frame.columns):
        return pd.Series("", index=frame.index, dtype=object)
    rows = [sep.join(_shown(v) for v in row if not missing(v)) for row in frame.itertuples(index=False)]
    return pd.Series(rows, index=frame.index, dtype=object)


def _shown(v: Any) -> str:
    # an integer parameter in a column with missing cells comes back as a float: show it as the integer it was
    return str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)

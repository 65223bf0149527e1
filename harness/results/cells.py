"""Reading one cell of a results or comparison table that may be empty, text, NaN or a number."""

from __future__ import annotations

import math
from typing import Any


def number(v: Any) -> float | None:
    """The cell as a finite float; None for an empty, non-numeric, NaN or infinite cell."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None

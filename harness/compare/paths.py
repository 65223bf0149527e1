"""Where a comparison's files go: names only, no pandas (the compare command checks its outputs before it imports
the compare stage)."""

from __future__ import annotations

import os
from pathlib import Path


def meta_path(out: str | os.PathLike[str]) -> Path:
    """``compare.csv`` → ``compare.csv.meta.json``."""
    p = Path(out)
    return p.with_name(p.name + ".meta.json")

"""Markdown tables, written one way everywhere (bisect, retune and explain pages): a cell's pipes are escaped
and its line breaks become spaces, so a message or a config never breaks a row."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any


def md_table(head: Sequence[str], rows: Iterable[Sequence[Any]], right: Iterable[int] = ()) -> list[str]:
    """The table's lines; the columns whose index is in ``right`` are right-aligned (numbers)."""
    right = set(right)
    out = [
        "| " + " | ".join(head) + " |",
        "|" + "|".join("---:" if i in right else "---" for i in range(len(head))) + "|",
    ]
    out += ["| " + " | ".join(_cell(c) for c in r) + " |" for r in rows]
    return out


def _cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")

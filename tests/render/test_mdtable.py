"""harness/render/mdtable.py: the one markdown table writer."""

from __future__ import annotations

from harness.render.mdtable import md_table


def test_alignment_and_cells_that_would_break_a_row():
    lines = md_table(["case", "µs", "why"], [["a/b", 1.5, "x | y\nz"], ["c", None, ""]], right={1})
    assert lines == [
        "| case | µs | why |",
        "|---|---:|---|",
        "| a/b | 1.5 | x \\| y z |",
        "| c | None |  |",
    ]

"""csvrows.rows: the one walk of a CSV file's rows with the line each starts on (results files, a suite's points)."""

from __future__ import annotations

from harness.csvrows import rows


def never(row: list[str]) -> bool:
    return False


def test_each_row_starts_on_its_own_line_past_quoted_newlines_and_skipped_rows():
    text = 'a,b\n"x\ny",1\n\n,\nz,"2"\r\nw,3\rv,4'
    got = list(rows(text, lambda row: not any(c.strip() for c in row)))
    assert got == [(1, ["a", "b"]), (2, ["x\ny", "1"]), (6, ["z", "2"]), (7, ["w", "3"]), (8, ["v", "4"])]
    assert [line for line, _ in rows(text, never)] == [1, 2, 4, 5, 6, 7, 8]


def test_a_cell_past_the_field_limit_is_a_cell():
    big = "E" * 200_000
    assert list(rows(f"a\n{big}\n", never)) == [(1, ["a"]), (2, [big])]

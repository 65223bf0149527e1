"""PR-comment markdown: layout, the hidden marker, truncation under GitHub's limit."""

from __future__ import annotations

import pandas as pd

from harness.compare.compare import compare_files
from harness.render.markdown import GITHUB_LIMIT, MARKER, render_markdown
from tests.conftest import DATA

G, T = DATA / "golden.csv", DATA / "tot.csv"


def test_markdown_layout():
    cmp = compare_files(G, T)
    md = render_markdown(cmp)
    assert md.startswith(MARKER + "\n")
    assert "1 regression, 1 TOT failure" in md
    assert md.index("### Regressions and TOT failures") < md.index("<details><summary>All other cases")
    assert "| bf16 | b | bf16 | 11.60 | 12.30 | +6.0 |  | 12.16 | **regression** |" in md
    assert "1.005 x golden + 0.5 us" in md


def test_markdown_truncates_under_github_limit():
    n = 5000
    t = pd.DataFrame(
        {
            "kernel": ["k"] * n,
            "case_id": [f"case_{i:05d}_long_name" for i in range(n)],
            "golden_us": 10.0,
            "tot_us": [20.0 if i % 2 else 10.0 for i in range(n)],
        }
    )
    from harness.compare.compare import Comparison, compare_frames
    from harness.verdict.rule import Rule

    g = t.rename(columns={"golden_us": "time_us"}).drop(columns="tot_us").assign(status="ok")
    tt = t.rename(columns={"tot_us": "time_us"}).drop(columns="golden_us").assign(status="ok")
    table, _ = compare_frames(g, tt, Rule())
    md = render_markdown(Comparison(table=table, rule=Rule()), artifact="artifact compare.csv")
    assert len(md) <= GITHUB_LIMIT
    assert "Truncated to fit GitHub's 65,536-character comment limit" in md
    assert "artifact compare.csv" in md
    assert md.startswith(MARKER)


def test_markdown_exact_output():
    """The whole comment for the fixture comparison, byte for byte (tests/data/compare-fixture.md)."""
    md = render_markdown(compare_files(G, T), artifact="compare.csv")
    assert md == (DATA / "compare-fixture.md").read_text(encoding="utf-8")

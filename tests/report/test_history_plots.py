"""The report's history section (`harness report --history DB`): a history-only page and a comparison's page with
its kernels' history, checked in a real headless browser like the rest of the report."""

from __future__ import annotations

import re
import shutil

import pytest

from harness.report.report import write_report
from tests.conftest import DATA
from tests.history.files import nightlies
from tests.report.test_report import _check_page, browser  # noqa: F401 - the browser fixture

pytestmark = pytest.mark.slow  # a real browser, a history of seven nights

H100 = DATA / "h100-triton-3.6.0-vs-3.9.0"


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("history")
    path = str(tmp / "h.sqlite")
    nightlies(tmp, path, nights=7)
    from datetime import datetime

    from harness.history.store import History

    with History.open(path, write=True) as h:
        h.annotate("Triton 3.10.0 nightly", datetime(2026, 11, 13), kind="bump")
    return path


def test_history_only_report(browser, db, tmp_path):  # noqa: F811
    index = write_report([], tmp_path / "r", history=db)
    html = index.read_text()
    names = sorted(p.name for p in (tmp_path / "r").glob("*.png"))
    assert names == ["history-regressions.png", "history-trend-0.png", "history-trend-1.png"]
    assert "<title>Kernel history</title>" in html and "14 runs" in html and "7 comparisons" in html
    nav = re.findall(r'<a href="#([^"]+)">([^<]+)</a>', re.search(r"<nav>(.*?)</nav>", html).group(1))
    assert nav == [("history", "History"), ("history-trends", "Trends"), ("history-changes", "Change points")]
    # the one change point: gemm M1024 under TOT, from the Triton 3.10.0 run on, judged a regression by the rule
    steps = html[html.index('id="history-steps"') :]
    assert steps.count('<tr class="regression">') == 1 and "3.9.0 → 3.10.0" in steps and "M1024_N512" in steps
    assert "Triton 3.10.0 nightly" in html  # the annotation's table
    _check_page(browser, index)


def test_a_comparison_report_with_its_kernels_history(db, tmp_path):
    for name in (
        "compare.csv",
        "compare.csv.meta.json",
        "golden.csv",
        "golden.csv.env.json",
        "tot.csv",
        "tot.csv.env.json",
    ):
        shutil.copy(H100 / name, tmp_path / name)
    index = write_report([], tmp_path / "r", compare_csv=tmp_path / "compare.csv", history=db)
    html = index.read_text()
    # the database holds gemm and rmsnorm only: none of the comparison's batched GEMMs have a history
    assert "0 runs (no runs), 0 comparisons" in html and "No golden-vs-TOT comparison stored." in html
    assert html.index('id="compare"') < html.index('id="history"') < html.index('id="roofline"')

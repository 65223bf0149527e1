"""Version 1 results (every committed report before 2026-11-24: batched GEMMs, B/M/N/K columns) load as version 2
and compare exactly as they did: the committed H100 comparison is reproduced verdict for verdict."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from harness.compare.compare import compare_files
from harness.compare.store import load_compare
from harness.results.load import load_results
from tests.conftest import REPORTS_DIR, ROOT, needs_reports

H100 = REPORTS_DIR / "h100-triton-3.6.0-vs-3.9.0"
pytestmark = needs_reports
REPORTS = sorted(p for p in REPORTS_DIR.rglob("*.csv") if (p.parent / (p.name + ".env.json")).exists())


def test_a_version_1_file_gets_parameters_and_exact_flops():
    df = load_results(H100 / "golden.csv")
    assert df.attrs["schema_version"] == 1 and "B" not in df.columns
    row = df.iloc[0]
    p = json.loads(row["params"])
    assert p == {"B": 128, "K": 128, "M": 16, "N": 512}
    assert row["flops"] == 2.0 * 128 * 16 * 512 * 128 and row["peak"] == "bf16" and row["world_size"] == 1
    # bytes come from the recorded rate: whole bytes, within the rate's 6 digits
    exact = 2.0 * 128 * (16 * 128 + 512 * 128 + 16 * 512)
    assert abs(row["bytes"] - exact) / exact < 1e-5


@pytest.mark.parametrize("path", REPORTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_committed_results_file_loads(path):
    df = load_results(path)
    assert len(df) and df["params"].str.startswith("{").all() and (df["flops"].dropna() > 0).all()


@pytest.mark.parametrize("name", ["compare.csv", "compare-aa.csv"])
def test_the_committed_h100_comparisons_are_reproduced(name):
    old = load_compare(H100 / name)
    meta = json.loads((H100 / (name + ".meta.json")).read_text())
    g, t = (H100 / meta[s]["path"].split("/")[-1] for s in ("golden", "tot"))
    new = compare_files(g, t)
    a = old.table.set_index(["kernel", "case_id"]).sort_index()
    b = new.table.set_index(["kernel", "case_id"]).sort_index()
    assert list(a.index) == list(b.index)
    assert (a["verdict"].astype(str) == b["verdict"].astype(str)).all()
    for col in ("golden_us", "tot_us", "delta_pct", "limit_us"):
        assert np.allclose(a[col], b[col].round(4), equal_nan=True, atol=1e-3), col
    assert old.counts() == new.counts()
    assert (a["params"] == b["params"]).all()  # the version 1 compare file's shape columns, upgraded the same way


def test_a_version_1_compare_file_gets_parameters():
    table = load_compare(H100 / "compare.csv").table
    assert {"params", "flops", "peak"} <= set(table.columns) and "B" not in table.columns
    assert pd.Series(table["params"]).str.startswith('{"B":').all()

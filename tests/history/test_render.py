"""History's tables at 80 columns: a long case id folds, the columns beside it (the times) stay whole."""

from __future__ import annotations

import io

import pandas as pd
from rich.console import Console

from harness.history.render import Col, print_table


def test_a_long_case_id_folds_and_the_times_beside_it_stay_whole():
    df = pd.DataFrame({
        "run_id": [2, 12], "run_at": ["26-11-28 12:44"] * 2, "stack": ["tot@3.9.0"] * 2,
        "kernel": ["gemm_all_scatter", "torch_gemm_all_gather"],
        "case_id": ["M256_N8192_K28672_fp16_W2", "M1024_N8192_K28672_fp16_W2"],
        "status": ["ok", "ok"], "time_us": [90.4321, 1289.93],
    })  # fmt: skip
    cols = [Col("run_id", "run", justify="right"), Col("run_at", "when"), Col("stack"), Col("kernel"),
            Col("case_id", fold=True), Col("status"), Col("time_us", "µs", ".2f", "right")]  # fmt: skip
    out = io.StringIO()
    print_table(Console(file=out, width=80, color_system=None), df, cols, "2 rows")
    lines = out.getvalue().splitlines()
    assert max(len(ln) for ln in lines) <= 80
    assert next(ln for ln in lines if ln.startswith("run")).split()[-1] == "µs"  # the heading whole
    text = out.getvalue()
    assert "90.43" in text and "1289.93" in text  # the times whole, the case id folded instead
    assert "M256_N8192_K28672_fp16_" in text

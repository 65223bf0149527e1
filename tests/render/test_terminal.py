"""The terminal renderers at 80 columns (what CI logs get): exact output, no kernel name or case id ever cut."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pytest
from rich.console import Console

from harness.compare.compare import compare_files
from harness.compare.store import load_compare
from harness.render.terminal import case_lines, failed_row_lines, kernel_keys, print_comparison
from tests.conftest import DATA, HEADER

LONG = "batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant"
GOLDEN = (
    f"{LONG},B16_M4096_N7168_K512,16,4096,7168,512,fp8,58490.1,ok,,\n"
    f"{LONG},B16_M8192_N7168_K512,16,8192,7168,512,fp8,116000.0,ok,,\n"
    "batched_gemm_afp4wfp4,B2_M16_N32_K128,2,16,32,128,fp4,,skipped,,needs Triton >= 3.9 (tl.dot_scaled)\n"
    "batched_gemm_bf16,B2_M16_N32_K64,2,16,32,64,fp16,12.5,ok,,\n"
    "batched_gemm_bf16,B2_M40_N32_K64,2,40,32,64,fp16,12.5,ok,,\n"
)
TOT = (
    f"{LONG},B16_M4096_N7168_K512,16,4096,7168,512,fp8,64021.2,ok,,\n"
    f"{LONG},B16_M8192_N7168_K512,16,8192,7168,512,fp8,,skipped,,unsupported\n"
    "batched_gemm_afp4wfp4,B2_M16_N32_K128,2,16,32,128,fp4,30.0,ok,,\n"
    'batched_gemm_bf16,B2_M16_N32_K64,2,16,32,64,fp16,,runtime_error,,"ValueError: boom (user.py:12 in helper; '
    "caused by KeyError: 'x')\nTraceback (most recent call last):\n  ...\"\n"
    "batched_gemm_bf16,B2_M40_N32_K64,2,40,32,64,fp16,12.4,ok,,\n"
)

EXPECTED = """\
golden  no metadata (no .env.json sidecar)
TOT     no metadata (no .env.json sidecar)
rule    ignore golden < 4 us; regression iff tot > 1.005 x golden + 0.5 us;
improvement iff golden > 1.005 x tot + 0.5 us
kernels
  k1 = batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant
  k2 = batched_gemm_afp4wfp4
  k3 = batched_gemm_bf16
5 cases
verdict            cases
────────────────────────────────
regression             1  blocks
failed_in_tot          1  blocks
skipped_in_tot         1
ok                     1
skipped_in_golden      1
1 regression, 1 TOT failure; 1 skipped under TOT (not blocking); 1 skipped under
golden
2 verdicts without an interval: under 2 readable reps a stack (unknown)
per kernel
kernel cases regr TOT fail TOT skip ok gold skip
────────────────────────────────────────────────
k1         2    1                 1
k2         1                                   1
k3         2             1           1
worst 1 of 1 regressions (times in µs)
kernel  case_id                 golden       TOT    Δ%     limit
────────────────────────────────────────────────────────────────
k1      B16_M4096_N7168_K512  58490.10  64021.20  +9.5  58783.05
TOT failures, timed under golden (1):
  k3 B2_M16_N32_K64: TOT runtime_error: ValueError: boom (user.py:12 in helper;
  caused by KeyError: 'x')
skipped under TOT, timed under golden: not blocking (1):
  k1 B16_M8192_N7168_K512: TOT skipped: unsupported
"""


def render(cmp, width: int = 80, **kw) -> str:
    buf = io.StringIO()
    con = Console(file=buf, width=width, highlight=False, emoji=False, soft_wrap=False, color_system=None)
    print_comparison(cmp, con, **kw)
    # rich pads table rows to the table's width: trailing blanks are not part of what a reader sees
    return "\n".join(line.rstrip() for line in buf.getvalue().splitlines()) + "\n"


@pytest.fixture
def cmp(write):
    return compare_files(write("g.csv", HEADER + GOLDEN), write("t.csv", HEADER + TOT))


def test_compare_summary_at_80_columns_is_exact(cmp):
    assert render(cmp) == EXPECTED


def test_no_line_is_wider_than_80_and_nothing_ends_in_an_ellipsis(cmp):
    out = render(cmp)
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "…" not in out and LONG in out


def test_kernel_names_stay_whole_where_they_fit():
    assert kernel_keys(["batched_gemm_bf16", "a8w8"], 200) == {"a8w8": "a8w8", "batched_gemm_bf16": "batched_gemm_bf16"}
    # one name too long for 80 columns: every kernel gets a key, sorted by name, so a table never mixes the two
    assert kernel_keys(["batched_gemm_bf16", "a8w8"], 80) == {"a8w8": "k1", "batched_gemm_bf16": "k2"}


def test_a_case_id_wider_than_its_column_wraps_instead_of_being_cut(write):
    long_id = "B16_M4096_N7168_K512_" + "x" * 70 + "_END"
    g = write("g.csv", HEADER + f"k,{long_id},1,1,1,1,fp16,100.0,ok,,\n")
    t = write("t.csv", HEADER + f"k,{long_id},1,1,1,1,fp16,200.0,ok,,\n")
    out = render(compare_files(g, t))
    assert "…" not in out and max(len(line) for line in out.splitlines()) <= 80
    table = out[out.index("worst 1 of 1") :].splitlines()[3:]  # the rows under the heading rule
    folded = "".join(line.split()[1] if i == 0 else line.split()[0] for i, line in enumerate(table) if line.strip())
    assert folded.startswith(long_id), folded


def test_the_committed_h100_comparison_fits_80_columns():
    path = DATA / "h100-triton-3.6.0-vs-3.9.0" / "compare.csv"
    out = render(load_compare(path), worst=30)
    assert "…" not in out and max(len(line) for line in out.splitlines()) <= 80
    for name in pd.read_csv(path)["kernel"].unique():
        assert f"= {name}\n" in out, f"{name} is not in the legend"
    table = load_compare(path).table
    for case_id in table.loc[table["verdict"] == "regression", "case_id"]:
        assert f" {case_id} " in out, case_id


def test_case_lists_say_how_many_more():
    labels, texts = [f"k c{i}" for i in range(13)], [f"error {i}" for i in range(13)]
    assert case_lines(labels, texts, first=3) == ["k c0: error 0", "k c1: error 1", "k c2: error 2", "... and 10 more"]
    assert case_lines(["k a"], [""]) == ["k a"]


def test_failed_rows_of_a_run_list_the_first_line_of_each_error():
    rows = [("k", f"c{i}", "runtime_error", f"ValueError: bad {i}\n  File x.py, line 3") for i in range(12)]
    rows = [("k", "ok1", "ok", ""), ("k", "u", "unstable", ""), ("k", "s", "skipped", "needs Triton >= 3.9"), *rows]
    df = pd.DataFrame(rows, columns=["kernel", "case_id", "status", "error"])
    assert failed_row_lines(df) == [
        "k/s: skipped: needs Triton >= 3.9",
        *[f"k/c{i}: runtime_error: ValueError: bad {i}" for i in range(9)],
        "... and 3 more",
    ]


def test_run_summary_lists_failed_cases_under_the_counts(write):
    from harness.render.terminal import print_failed

    out = write(
        "r.csv",
        HEADER
        + f"{LONG},B2_M16_N32_K256,2,16,32,256,fp8,5.0,ok,,\n"
        + "batched_gemm_afp4wfp4,B2_M16_N32_K128,2,16,32,128,fp4,,skipped,,needs Triton >= 3.9 (tl.dot_scaled)\n"
        + f'{LONG},B2_M40_N32_K256,2,40,32,256,fp8,,compile_error,,"CompilationError: at 12:4 (user.py:40)\n..."\n',
    )
    buf = io.StringIO()
    con = Console(file=buf, width=80, highlight=False, emoji=False, color_system=None)
    print_failed(con, Path(out), {"ok": 1, "skipped": 1, "compile_error": 1})
    text = buf.getvalue()
    lines = [line.rstrip() for line in text.splitlines()]
    first = next(i for i, line in enumerate(lines) if line.startswith("  batched"))
    heading = " ".join(lines[:first])
    assert heading == f"{out}: 2 cases not timed (the first line of each error; all of it in the CSV's error column):"
    assert lines[first:] == [
        "  batched_gemm_afp4wfp4/B2_M16_N32_K128: skipped: needs Triton >= 3.9",
        "  (tl.dot_scaled)",
        # no space to wrap at: the label folds at the edge, whole
        "  batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant/B2_M40",
        "  _N32_K256: compile_error: CompilationError: at 12:4 (user.py:40)",
    ]
    assert "…" not in text
    one = io.StringIO()
    lone = write("one.csv", HEADER + "k,M4,,4,,,fp16,,skipped,,needs Triton >= 3.9\n")
    print_failed(Console(file=one, width=200), Path(lone), {"skipped": 1})
    assert f"{lone}: 1 case not timed (" in one.getvalue()
    quiet = io.StringIO()
    print_failed(Console(file=quiet, width=80), Path(out), {"ok": 3})
    assert quiet.getvalue() == "", "nothing failed: nothing listed"


def test_every_verdict_has_a_style_and_a_heading():
    from harness.render.terminal import SHORT, STYLE
    from harness.verdict.rule import VERDICTS

    assert set(STYLE) == set(VERDICTS) == set(SHORT)

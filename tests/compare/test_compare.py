"""Compare: joins, verdicts, ordering, markdown, the CLI's exit codes and one-line errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.compare.compare import compare_files, worst_first
from harness.errors import HarnessError
from harness.render.markdown import MARKER
from tests.conftest import DATA, HEADER, cli

G, T = DATA / "golden.csv", DATA / "tot.csv"


def test_every_verdict_on_fixture():
    cmp = compare_files(G, T)
    v = dict(zip(cmp.table["kernel"] + "/" + cmp.table["case_id"], cmp.table["verdict"]))
    assert v == {
        "bf16/a": "ok",
        "bf16/b": "regression",
        "bf16/c": "improvement",
        "bf16/d": "ignored",
        "a8w8/a": "failed_in_tot",
        "a8w8/b": "ok",
        "a8w8/c": "failed_in_golden",
        "a8w8/d": "failed_in_both",
        "a8w8/e": "missing_in_tot",
        "a8w8/g": "new_in_tot",
        "a8w8/f": "ok",
    }
    assert cmp.blocking == 2
    # worst first, for display
    ordered = cmp.table.iloc[worst_first(cmp.table)]
    assert list(ordered["verdict"][:3]) == ["regression", "failed_in_tot", "missing_in_tot"]
    assert list(cmp.table["case_id"][:4]) == ["a", "b", "c", "d"]  # the table itself keeps golden's order
    row = cmp.table.set_index(["kernel", "case_id"]).loc[("bf16", "b")]
    assert row["limit_us"] == pytest.approx(1.005 * 11.6 + 0.5)
    assert row["delta_us"] == pytest.approx(0.7)
    assert row["delta_pct"] == pytest.approx(100 * 0.7 / 11.6)
    assert json.loads(row["params"])["M"] == 128  # a version 1 file's shape columns, as version 2 parameters


def test_unstable_fail_mode():
    cmp = compare_files(G, T, unstable="fail")
    v = cmp.table.set_index(["kernel", "case_id"])["verdict"]
    assert v[("a8w8", "f")] == "failed_in_tot"


def test_rule_parameters_apply():
    from harness.verdict.rule import Rule

    cmp = compare_files(G, T, Rule(rel=1.10, abs_us=0.0, min_golden_us=0.0))
    v = cmp.table.set_index(["kernel", "case_id"])["verdict"]
    assert v[("bf16", "b")] == "ok"  # +6% < 10%
    assert v[("bf16", "d")] == "regression"  # no floor any more


def test_no_common_cases(write):
    a = write("a.csv", HEADER + "k,a,1,1,1,1,bf16,5,ok,,\n")
    b = write("b.csv", HEADER + "other,z,1,1,1,1,bf16,5,ok,,\n")
    with pytest.raises(HarnessError, match="no \\(kernel, case_id\\) in common"):
        compare_files(a, b)


def test_same_case_id_different_shape(write):
    a = write("a.csv", HEADER + "k,a,1,16,1,1,bf16,5,ok,,\n")
    b = write("b.csv", HEADER + "k,a,1,32,1,1,bf16,5,ok,,\n")
    with pytest.raises(HarnessError, match="parameter M is 16 in .* but 32"):
        compare_files(a, b)


def test_partial_overlap_warns(write):
    a = write("a.csv", HEADER + "".join(f"k,{i},1,1,1,1,bf16,5,ok,,\n" for i in range(10)))
    b = write(
        "b.csv", HEADER + "k,0,1,1,1,1,bf16,5,ok,,\n" + "".join(f"k,x{i},1,1,1,1,bf16,5,ok,,\n" for i in range(9))
    )
    cmp = compare_files(a, b)
    assert cmp.warnings and "only 1 of 10" in cmp.warnings[0]


def test_cli_exit_codes(tmp_path, capsys):
    code, out, err = cli(capsys, "compare", G, T, "--out", tmp_path / "c.csv", "--markdown", tmp_path / "c.md")
    assert code == 0, err
    assert "regression" in out and (tmp_path / "c.md").read_text().startswith(MARKER)
    assert cli(capsys, "compare", G, T, "--fail-on-regression")[0] == 1
    shutil.copy(G, tmp_path / "g2.csv")
    assert cli(capsys, "compare", G, tmp_path / "g2.csv", "--fail-on-regression")[0] == 0
    code, _, err = cli(capsys, "compare", G, G, "--fail-on-regression")  # a typo in a CI gate is no pass
    assert code == 2 and "GOLDEN and TOT are one file" in err


@pytest.mark.parametrize(
    "args, expect",
    [
        (("compare", "missing.csv", G), "missing.csv: no such file"),
        (("compare", DATA, G), "is a directory"),
        (("compare", G, T, "--rel", "0.5"), "rel must be >= 1"),
        (("compare", G, T, "--unstable", "maybe"), "--unstable"),
    ],
)
def test_cli_bad_input_is_one_line_exit_2(args, expect, capsys):
    code, _, err = cli(capsys, *args)
    assert code == 2
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and expect in lines[0], err
    assert "Traceback" not in err


def test_cli_bad_csv_row(write, capsys):
    bad = write("bad.csv", HEADER + "k,a,1,1,1,1,bf16,abc,ok,,\n")
    code, _, err = cli(capsys, "compare", G, bad)
    assert code == 2
    assert err.strip() == f"harness: error: {bad}: line 2: column 'time_us' time is not a number: 'abc'"


def test_overlap_note_reaches_the_table(write):
    cols = "kernel,case_id,B,M,N,K,dtype,time_us,status,rep_times_us\n"
    g = write(
        "g.csv",
        cols + 'k,a,1,1,1,1,bf16,100.0,ok,"[99.0,100.0,101.0]"\nk,b,1,1,1,1,bf16,100.0,ok,"[100.0,100.1,100.2]"\n',
    )
    t = write(
        "t.csv",
        cols + 'k,a,1,1,1,1,bf16,110.0,ok,"[100.5,110.0,111.0]"\nk,b,1,1,1,1,bf16,110.0,ok,"[110.0,110.1,110.2]"\n',
    )
    table = compare_files(g, t).table.set_index("case_id")
    assert list(table["verdict"]) == ["regression", "regression"]
    assert table.loc["a", "note"].startswith("rep ranges overlap") and table.loc["b", "note"] == ""


def test_clock_note_reaches_the_table(write):
    cols = "kernel,case_id,B,M,N,K,dtype,time_us,status,sm_clock_mhz\n"
    g = write(
        "g.csv",
        cols + "k,a,1,1,1,1,bf16,1000.0,ok,1980\nk,b,1,1,1,1,bf16,1000.0,ok,1980\nk,c,1,1,1,1,bf16,1000.0,ok,\n",
    )
    t = write(
        "t.csv",
        cols + "k,a,1,1,1,1,bf16,1030.0,ok,1920\nk,b,1,1,1,1,bf16,1030.0,ok,1980\nk,c,1,1,1,1,bf16,1030.0,ok,1900\n",
    )
    table = compare_files(g, t).table.set_index("case_id")
    assert list(table["verdict"]) == ["regression"] * 3
    assert table.loc["a", "note"] == "NVML SM clock 1980 -> 1920 MHz (-3.0 %)"
    assert table.loc["b", "note"] == "" and table.loc["c", "note"] == "", "no clock on one side: no note"


SKIPS_G = (
    "k,both_ok,1,1,1,1,fp16,10.0,ok,,\n"
    "k,lost,1,1,1,1,fp16,10.0,ok,,\n"
    "k,gained,1,1,1,1,fp16,,skipped,,needs Triton >= 3.9 (tl.dot_scaled)\n"
    "k,never,1,1,1,1,fp16,,skipped,,needs Triton >= 3.9 (tl.dot_scaled)\n"
    "k,mixed,1,1,1,1,fp16,,skipped,,needs Triton >= 3.9 (tl.dot_scaled)\n"
)
SKIPS_T = (
    "k,both_ok,1,1,1,1,fp16,10.0,ok,,\n"
    "k,lost,1,1,1,1,fp16,,skipped,,unsupported on this stack\n"
    "k,gained,1,1,1,1,fp16,10.0,ok,,\n"
    "k,never,1,1,1,1,fp16,,skipped,,unsupported on this stack\n"
    "k,mixed,1,1,1,1,fp16,,runtime_error,,ValueError: boom\n"
)


def test_skipped_cases_get_skip_verdicts_not_failures(write):
    cmp = compare_files(write("g.csv", HEADER + SKIPS_G), write("t.csv", HEADER + SKIPS_T))
    t = cmp.table.set_index("case_id")
    assert t["verdict"].to_dict() == {
        "both_ok": "ok",
        "lost": "skipped_in_tot",
        "gained": "skipped_in_golden",
        "never": "skipped_in_both",
        "mixed": "failed_in_both",
    }
    counts = cmp.counts()
    assert counts["skipped_in_tot"] == counts["skipped_in_golden"] == counts["skipped_in_both"] == 1
    assert counts["failed_in_golden"] == counts["failed_in_tot"] == 0
    assert cmp.blocking == 0, "skipped_in_tot does not block --fail-on-regression"
    assert t.loc["lost", "note"] == "TOT skipped: unsupported on this stack"
    # neither side timed: the note names both statuses
    assert (
        t.loc["mixed", "note"]
        == "TOT runtime_error: ValueError: boom; golden skipped: needs Triton >= 3.9 (tl.dot_scaled)"
    )


def test_skipped_in_tot_alone_passes_the_gate_but_is_listed(write, capsys):
    from harness.cli import main

    g, t = write("g.csv", HEADER + SKIPS_G), write("t.csv", HEADER + SKIPS_T)
    with pytest.raises(SystemExit) as ex:
        main(["compare", str(g), str(t), "--fail-on-regression"])
    assert ex.value.code == 0
    out = capsys.readouterr().out
    assert "skipped_in_tot" in out and "lost" in out


def test_an_unstable_rows_note_gives_the_guards_reason(tmp_path):
    """A multi-GPU case the guard made unstable says why (its error), not only 'unstable reps'; a single-GPU
    unstable row without an error keeps the short note."""
    import pandas as pd

    g, t = pd.read_csv(G), pd.read_csv(T)
    first = t.index[(t["kernel"] == "bf16") & (t["case_id"] == "a")][0]
    t["error"] = t["error"].astype(object)
    t.loc[first, "status"] = "unstable"
    t.loc[first, "error"] = "ranks disagree: skew 6.0 % > 5 % (rank_times_us)"
    g.to_csv(tmp_path / "g.csv", index=False)
    t.to_csv(tmp_path / "t.csv", index=False)
    table = compare_files(tmp_path / "g.csv", tmp_path / "t.csv").table.set_index(["kernel", "case_id"])
    assert table.loc[("bf16", "a"), "note"] == "TOT unstable: ranks disagree: skew 6.0 % > 5 % (rank_times_us)"
    assert table.loc[("a8w8", "f"), "note"] == "unstable reps"


def _without_validity(arr):
    """Every cell of an Arrow text array missing, its offsets and bytes kept (a hand-built or sliced frame)."""
    import numpy as np
    import pyarrow as pa

    none = pa.py_buffer(np.zeros(1, dtype=np.uint8))
    return pa.Array.from_buffers(arr.type, len(arr), [none, *arr.buffers()[1:]], null_count=len(arr))


def test_holds_text_reads_arrow_offsets_as_the_strings_would():
    import pandas as pd
    import pyarrow as pa

    from harness.compare.join import holds_text as _holds_text
    from harness.results.arrowframe import blank
    from harness.results.arrowframe import text as _text

    def arrow(*chunks: pa.Array) -> pd.Series:
        return pd.Series(_text(pa.chunked_array(chunks, type=pa.large_string())))

    cases = {
        "blank": blank(5),
        "one cell": pd.Series(["", "a"], dtype="str"),
        "empty cells": pd.Series(["", ""], dtype="str"),
        "missing": pd.Series(["", None], dtype="str"),
        "objects": pd.Series(["", "x"], dtype=object),
        "no rows": pd.Series([], dtype="str"),
        "sliced past the text": arrow(
            pa.array(["", ""], pa.large_string()), pa.array(["ab", ""], pa.large_string()).slice(1)
        ),
        "sliced onto the text": arrow(pa.array(["", "ab", ""], pa.large_string()).slice(1, 1)),
        "missing cells over bytes": arrow(_without_validity(pa.array(["ab", "cd"], pa.large_string()))),
        "one cell among missing ones": arrow(pa.array([None, "x", None], pa.large_string())),
    }
    for name, col in cases.items():
        assert _holds_text(col) == bool(col.fillna("").astype(str).str.len().any()), name


def test_a_time_the_multi_gpu_guard_refused_is_never_a_confident_verdict(tmp_path):
    """verdict/groupcheck: ranks that disagree measured something other than the op, so compare may show the
    difference but never claims it (no confident flag, nothing that blocks); the stability rule's `unstable`
    (five reps that disagree) is judged like any other time."""
    head = "kernel,case_id,time_us,status,rep_times_us,error\n"
    (tmp_path / "g.csv").write_text(head + 'k,a,100.0,ok,"[100.0,100.1,99.9]",\nk,b,100.0,ok,"[100.0,100.1,99.9]",\n')

    def tot(error: str) -> Path:
        p = tmp_path / "t.csv"
        p.write_text(
            head + f'k,a,120.0,unstable,"[120.0,120.1,119.9]","{error}"\nk,b,120.0,ok,"[120.0,120.1,119.9]",\n'
        )
        return p

    cmp = compare_files(tmp_path / "g.csv", tot("ranks disagree: skew 40.0 % > 5 %, 9.00 µs > 2 µs (rank_times_us)"))
    table = cmp.table.set_index("case_id")
    assert table.loc["b", ["verdict", "confidence"]].tolist() == ["regression", "confident"]
    assert table.loc["a", ["verdict", "confidence"]].tolist() == ["regression", "ambiguous"]
    assert table.loc["a", "note"].startswith("TOT unstable: ranks disagree")
    again = compare_files(tmp_path / "g.csv", tot("no pair of 5 within 5%")).table.set_index("case_id")
    assert again.loc["a", "confidence"] == "confident"  # the stability rule's unstable: judged as before


def test_a_row_with_a_cell_too_many_is_refused_when_both_files_load_at_once(tmp_path):
    """An unquoted comma in a cell makes a row one cell longer than the header. pandas' C reader drops the extra
    cell with a warning only, and compare reads golden and TOT on two threads at once, where a warnings filter
    (the process's) cannot make that an error: the loader counts the cells itself."""
    head = "kernel,case_id,time_us,status,rep_times_us,error\n"
    (tmp_path / "g.csv").write_text(head + 'k,a,100.0,ok,"[100.0]",\nk,b,100.0,ok,"[100.0]",\n')
    (tmp_path / "t.csv").write_text(head + 'k,a,120.0,unstable,"[120.0]",skew 40 % > 5 %, 9 µs > 2 µs\nk,b,1,ok,,\n')
    for _ in range(5):  # the race was there on some runs, not all
        with pytest.raises(HarnessError, match=r"t\.csv: line 2: 7 cells but the header has 6; not a well-formed"):
            compare_files(tmp_path / "g.csv", tmp_path / "t.csv")


def test_a_time_the_profiler_could_not_vouch_for_is_no_verdict(write):
    """Status instrument (worker/clocks.py: the events around the launches disagreed with the profiler's records):
    no time, so no regression or ok; it fails the gate as a TOT failure does, and the note says it was the
    profiler, not the kernel."""
    why = "timing: the events around each launch read 42.6 µs more than the profiler's 4.0 µs (bound 21.0)"
    t = write("t.csv", HEADER + "k,a,1,1,1,1,fp16,,instrument,," + why + "\nk,b,1,1,1,1,fp16,10.0,ok,,\n")
    g = write("g.csv", HEADER + "k,a,1,1,1,1,fp16,10.0,ok,,\nk,b,1,1,1,1,fp16,10.0,ok,,\n")
    cmp = compare_files(g, t)
    table = cmp.table.set_index("case_id")
    assert table["verdict"].to_dict() == {"a": "failed_in_tot", "b": "ok"} and cmp.blocking == 1
    assert table.loc["a", "note"] == "TOT instrument: " + why


def test_columns_taken_at_rows_are_the_cells_with_empty_for_no_row():
    """join.col at rows (-1: no row) gives each cell, "" where there is no row, as pandas' take and fillna gave
    them (the text not copied for the empty cells); case_columns takes a column one file leaves empty from the
    other without comparing it, and still refuses a case described two ways."""
    import numpy as np
    import pandas as pd
    import pytest

    from harness.compare import join as J
    from harness.errors import HarnessError

    golden = pd.DataFrame({"kernel": ["k"] * 4, "case_id": list("abcd"), "params": ['{"M":1}', "", '{"M":3}', ""],
                           "dtype": ["bf16"] * 4, "peak": [None, "x", "", None], "status": ["ok"] * 4})  # fmt: skip
    golden = golden.astype({c: "str" for c in golden.columns})
    tot = golden.iloc[[3, 0, 2]].reset_index(drop=True).assign(peak="")  # shuffled, "b" missing, peak empty
    rows = np.array([1, -1, 2, 0, -1])
    for df in (golden, tot):
        for name in ("params", "peak", "case_id"):
            got = J.col(df, name, rows)
            want = pd.Series(df[name].astype("str").array.take(rows, allow_fill=True)).fillna("")
            assert got.dtype == want.dtype and got.tolist() == want.tolist()
    j, _ = J.join(golden, tot, "g", "t")
    cols = J.case_columns(j, "g", "t")
    assert cols["peak"].tolist() == ["", "x", "", ""] and cols["params"].tolist() == ['{"M":1}', "", '{"M":3}', ""]
    with pytest.raises(HarnessError, match="dtype"):
        J.case_columns(J.join(golden, tot.assign(dtype="fp16"), "g", "t")[0], "g", "t")

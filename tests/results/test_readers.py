"""One loader, two readers: Arrow reads big files (arrowframe.py), pandas' C reader small ones and whatever Arrow
declines, and checks.py holds every frame to the contract whichever made it. Here both read the same small files:
each file gives the same frame, or the same one-line message, by either; Arrow declines only a file it cannot make
pandas' frame of (a header pandas would rename, a type the contract has no use for, a malformed file)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import HarnessError
from harness.results import arrowframe, checks, load, unique
from harness.results.schema import COLUMNS, NUMBERS
from tests.conftest import HEADER

V2 = ",".join(COLUMNS) + "\n"
REST = "," * (len(COLUMNS) - 7)


def v2_row(kernel="k", case="a", params='"{""M"": 16}"', world="1", status="ok", time="5.5", rest=REST) -> str:
    return f"{kernel},{case},{params},bf16,{world},{status},{time}{rest}\n"


DECLINED = "declined"
#: the tests of Arrow's reader itself: it reads only under pandas 3 (under pandas 2 the C reader reads every file)
needs_arrow = pytest.mark.skipif(not arrowframe.arrow_strings(), reason="Arrow's reader needs pandas 3's strings")


@pytest.fixture(params=["path", "bytes"])
def both(request, tmp_path, monkeypatch):
    """both(text) -> (Arrow's outcome, the C reader's), each the checked frame or its one-line message; Arrow's is
    DECLINED where it leaves the file to the C reader. Arrow is given the file's path (as for a big file) or its
    bytes (a file of 1-4 MB)."""
    if not arrowframe.arrow_strings():
        pytest.skip("Arrow's reader needs pandas 3's Arrow strings")

    def outcome(read):
        try:
            return read()
        except HarnessError as err:
            return str(err)

    def run(text: str | bytes) -> tuple[pd.DataFrame | str, pd.DataFrame | str]:
        raw = text.encode() if isinstance(text, str) else text
        p = tmp_path / "r.csv"
        p.write_bytes(raw)
        monkeypatch.setattr(load, "ARROW_CHARS", 0 if request.param == "path" else len(raw) // 2)
        frame = load._read_by_arrow(p)
        lines = load._LazyLines(lambda: load._read_text(p), 0 if frame is None else len(frame))
        fast = DECLINED if frame is None else outcome(lambda: checks.check(frame, p, lines))
        slow = outcome(lambda: load.parse_results(load._read_text(p), p))
        return fast, slow

    return run


def same(text: str | bytes, both) -> pd.DataFrame:
    fast, slow = both(text)
    assert isinstance(fast, pd.DataFrame), fast
    assert isinstance(slow, pd.DataFrame), slow
    pd.testing.assert_frame_equal(fast, slow, check_exact=True)
    assert fast.attrs == slow.attrs
    return fast


def test_whitespace_is_what_python_strips():
    assert set(checks.WHITESPACE) == {chr(i) for i in range(0x110000) if chr(i).isspace()}


GOOD = {
    "v2": V2 + v2_row() + v2_row(case="b", status="compile_error", time="", params="") + v2_row(case="c", world=""),
    "v1": HEADER + "k,a,128,16,512,128,bf16,5.8,ok,,\nk,b,128,32,512,128,bf16,,compile_error,,boom\n",
    "v1_missing_shape": HEADER + "k,a,128,,512,128,bf16,5.8,ok,,\n",
    "unstable": V2 + v2_row(status="unstable", time="7"),
    "nan_spellings": V2 + v2_row(status="skipped", time="NaN") + v2_row(case="b", status="timeout", time="-nan"),
    "int_times": V2 + v2_row(time="5") + v2_row(case="b", time="7"),
    "same_case_two_kernels": V2 + v2_row() + v2_row(kernel="k2"),
    "extra_columns": "kernel,case_id,time_us,status,note,count,empty\nk,a,5,ok,hi,3,\nk,b,6,ok,,4,\n",
    "text_nan_is_blank": V2 + v2_row(rest=REST + "nan"),
    "quoted_config": V2 + v2_row(rest=',"{""BLOCK_SIZE_M"": 64}"' + "," * (len(COLUMNS) - 8)),
    "bom": "\ufeff" + V2 + v2_row(),
    "crlf": (V2 + v2_row() + v2_row(case="b")).replace("\n", "\r\n"),
    "unicode": V2 + v2_row(case="ü-µs", params='"{""name"": ""gemm µ""}"'),
    "inner_spaces_kept": V2 + v2_row(case="a b"),
    "no_world_sizes": V2 + v2_row(world="") + v2_row(case="b", world=""),
}


@pytest.mark.parametrize("name", GOOD)
def test_clean_files_read_the_same(name, both):
    same(GOOD[name], both)


BAD = {
    "header_only": V2,
    "missing_column": "kernel,case_id,status\nk,a,ok\n",
    "duplicate_header": "kernel,case_id,time_us,status,status\nk,a,5,ok,ok\n",
    "header_spaces": "kernel, case_id,time_us,status\nk,a,5,ok\n",
    "non_numeric_time": V2 + v2_row(time="fast"),
    "negative_time": V2 + v2_row() + v2_row(case="b", time="-3.5"),
    "zero_time": V2 + v2_row(time="0"),
    "nan_time": V2 + v2_row(time="nan"),
    "inf_time": V2 + v2_row(time="inf"),
    "missing_time": V2 + v2_row(time=""),
    "unknown_status": V2 + v2_row(status="passed"),
    "duplicate_case": V2 + v2_row() + v2_row(case="b") + v2_row(time="6"),
    "empty_kernel": V2 + v2_row(kernel=""),
    "nan_case": V2 + v2_row(case="nan"),
    "tab_case": V2 + v2_row(case="a\t"),
    "python_only_space": V2 + v2_row(case="a\x1c"),
    "unicode_space": V2 + v2_row(case="\u3000a"),
    "params_not_json": V2 + v2_row(params="M=16"),
    "world_zero": V2 + v2_row(world="0"),
    "world_fraction": V2 + v2_row(world="1.5"),
    "world_text": V2 + v2_row(world="two"),
    "world_huge": V2 + v2_row(world="1e300"),
    "world_over_max": V2 + v2_row(world="1048577"),
    "number_text": V2 + v2_row(rest=",,,x" + "," * (len(COLUMNS) - 10)),
    "bad_shape": HEADER + "k,a,1,sixteen,1,1,bf16,5,ok,,\n",
    "fractional_shape": HEADER + "k,a,1,16.5,1,1,bf16,5,ok,,\n",
    "negative_shape": HEADER + "k,a,1,-16,1,1,bf16,5,ok,,\n",
    "ragged": V2 + v2_row(rest=REST + ",extra"),
    "not_utf8": (V2 + v2_row(case="caf\xe9")).encode("latin-1"),
    "bool_column": "kernel,case_id,time_us,status,flag\nk,a,5,ok,true\n",
    "nul_byte": V2 + v2_row(case="a\x00b"),
    "not_utf8_in_a_text_column": (V2 + v2_row(rest=",caf\xe9" + "," * (len(COLUMNS) - 8))).encode("latin-1"),
    "not_utf8_in_an_extra_column": "kernel,case_id,time_us,status,note\nk,a,5,ok,caf\xe9\n".encode("latin-1"),
    "not_utf8_in_the_header": "kernel,case_id,time_us,status,caf\xe9\nk,a,5,ok,x\n".encode("latin-1"),
}


#: files one reader or the other declines to read (a header pandas would rename, a malformed file, a type the
#: contract has no use for, bytes that are not UTF-8): the C reader reads them, and names the fault
DECLINED_BY_ARROW = {
    "non_numeric_time",
    "world_text",
    "number_text",
    "bad_shape",
    "duplicate_header",
    "header_spaces",
    "missing_column",
    "ragged",
    "not_utf8",
    "bool_column",
    "nul_byte",
    "not_utf8_in_a_text_column",
    "not_utf8_in_an_extra_column",
    "not_utf8_in_the_header",
    "header_only",
}


#: of those, the files the loader accepts once tidied (names and cells stripped), or as they are (a column the
#: contract does not know)
ACCEPTED = {"header_spaces", "tab_case", "python_only_space", "unicode_space", "bool_column"}


#: files a stranger wrote, each the C reader's message for it (Arrow declines every one but the blank line's)
STRANGERS = {
    "bare_carriage_returns": ((V2 + v2_row()).replace("\n", "\r"), "line 1: its lines end in a bare carriage return"),
    "short_row": (V2 + v2_row(rest=REST[:-3]) + v2_row(case="b"), "line 2: 28 cells but the header has 31; not a"),
    "short_row_last": (V2 + v2_row() + v2_row(case="b", rest=""), "line 3: 7 cells but the header has 31"),
    "true_time": (V2 + v2_row(time="True") + v2_row(case="b", time="TRUE"), "time is not a number: 'True' (and 1"),
    "true_world_size": (V2 + v2_row(world="TRUE"), "line 2: column 'world_size' is not a positive integer: 'TRUE'"),
    "true_reps": (V2 + v2_row(rest=",,,True" + "," * (len(COLUMNS) - 10)), "column 'reps' is not a number: 'True'"),
    "plus_nan_number": (V2 + v2_row(rest=REST[:10] + "+nan" + REST[10:]), "is not a number: '+nan'"),
    "plus_nan_time": (V2 + v2_row(time="+nan"), "line 2: column 'time_us' time is not a number: '+nan'"),
    "nan_paren_world_size": (V2 + v2_row(world="nan(1)"), "column 'world_size' is not a positive integer: 'nan(1)'"),
    "quote_open_at_the_end": (V2 + v2_row() + v2_row(case="b", rest=REST[:-1] + '"oops'), "line 3: a quote opened"),
    "quote_open_mid_file": (V2 + v2_row(case='"a') + v2_row(case="b"), "line 2: 30 cells but the header has 31"),
    "blank_line_then_bad": (V2 + v2_row() + "\n" + v2_row(case="b", status="bogus"), "line 4: column 'status'"),
    "tabs_line_then_bad": (V2 + " \t\n" + v2_row(status="bogus"), "line 3: column 'status' unknown status"),
    "blank_before_header": ("\n" + V2 + v2_row(status="bogus"), "line 3: column 'status' unknown status"),
    "world_size_plus_zero": (V2 + v2_row(world="+0"), "column 'world_size' is not a positive integer: +0"),
    # a number shown as the file writes it, not as a reader's float holds it
    "time_underflows": (V2 + v2_row(time="1e-400"), "line 2: column 'time_us' time must be positive, got 1e-400"),
    "world_size_past_2_53": (V2 + v2_row(world="9007199254740993"), "at most 1,048,576): 9007199254740993"),
    "time_underflows_after_a_bare_cr": (  # a bare carriage return ends a line: the cell shown is the bad row's
        V2 + v2_row().replace("\n", "\r") + v2_row(case="b", time="1e-400") + v2_row(case="c", time="9"),
        "line 3: column 'time_us' time must be positive, got 1e-400",
    ),
    "long_cell_then_bad": (V2 + v2_row(rest=REST[:-1] + "E" * 200_000 + ",") + v2_row(case="b", status="x"), "line 3:"),
    "semicolons": (V2.replace(",", ";") + v2_row().replace(",", ";"), "line 1: the header is one cell split by ';'"),
    "excel_sep_line": ("sep=,\n" + V2 + v2_row(), "line 1: a spreadsheet's 'sep=' line: remove it"),
    "trailing_commas": (V2.replace("\n", ",,\n") + v2_row().replace("\n", ",,\n"), "line 1: 2 columns have no name"),
    "kernel_nan": (V2 + v2_row(kernel="nan"), "line 2: column 'kernel' is empty (or nan/NaN/NAN/-nan: read as"),
}
#: of those, the files Arrow reads itself (and must refuse alike)
READ_BY_ARROW = {"blank_line_then_bad", "world_size_plus_zero", "kernel_nan", "long_cell_then_bad", "time_underflows",
                 "world_size_past_2_53", "time_underflows_after_a_bare_cr"}  # fmt: skip


@pytest.mark.parametrize("name", STRANGERS)
def test_a_strangers_mistake_is_refused_alike_naming_its_line(name, both):
    text, message = STRANGERS[name]
    fast, slow = both(text)
    assert isinstance(slow, str) and message in slow, slow
    assert fast == (slow if name in READ_BY_ARROW else DECLINED)


def _word_in_a_number_column(text: str) -> bool:
    """Some cell of a number column is neither empty, a missing-value word nor a number (Arrow, reading the column
    as floats, refuses the file: the C reader reads it)."""
    import csv
    import io

    rows = list(csv.reader(io.StringIO(text, newline="")))
    numbers = [i for i, name in enumerate(rows[0]) if name in NUMBERS]
    for row in rows[1:]:
        for i in numbers:
            cell = row[i] if i < len(row) else ""
            if cell not in checks.NA_VALUES:
                try:
                    float(cell)
                except ValueError:
                    return True
    return False


@pytest.mark.parametrize("name", BAD)
def test_a_bad_file_gets_the_same_message_from_either_reader(name, both):
    fast, slow = both(BAD[name])
    if name in DECLINED_BY_ARROW:
        assert fast == DECLINED
    elif name in ACCEPTED:
        pd.testing.assert_frame_equal(fast, slow, check_exact=True)
    else:
        assert fast == slow
    if name in ACCEPTED:
        assert isinstance(slow, pd.DataFrame)
    else:
        assert isinstance(slow, str) and slow.startswith(f"{load.Path(slow.split(':')[0])}: ")


#: clean files whose cells the checks tidy (text to strip or to lower, words in a number column)
TIDIED = {
    "upper_status": V2 + v2_row(status="OK"),
    "padded_kernel": V2 + v2_row(kernel=" k"),
    "params_padded": V2 + v2_row(params='" {}"'),
    "padded_time": V2 + v2_row(time=" 2"),
}


@pytest.mark.parametrize("name", TIDIED)
def test_clean_files_the_checks_tidy_read_the_same(name, both):
    df = same(TIDIED[name], both)
    assert df["kernel"].iloc[0] == "k" and df["status"].iloc[0] in ("ok", "timeout") and df["case_id"].iloc[0] == "a"


def test_a_word_where_a_failed_row_has_no_time_is_read_by_the_c_reader(both):
    fast, slow = both(V2 + v2_row(status="timeout", time="n/a") + v2_row(case="b"))
    assert fast == DECLINED  # Arrow reads time_us as floats: it refuses the word, which the contract allows here
    assert isinstance(slow, pd.DataFrame) and slow["time_us"].isna().tolist() == [True, False]


def test_hex_in_a_column_of_integers_is_not_a_number(both):
    # Arrow reads "0x21" as 33 in a column it takes for integers: big files took 0x21 us for a time
    text = V2 + v2_row(time="39") + v2_row(case="b", time="0x21")
    fast, slow = both(text)
    assert fast == DECLINED and "line 3: column 'time_us' time is not a number: '0x21'" in slow


@pytest.mark.parametrize("arrow", [True, False], ids=["pandas3", "pandas2"])
def test_blank_is_empty_text(monkeypatch, arrow):
    if arrow and not arrowframe.arrow_strings():
        pytest.skip("pandas 3's Arrow strings: not this pandas")
    monkeypatch.setattr(arrowframe, "arrow_strings", lambda: arrow)
    col = arrowframe.blank(3)
    assert col.tolist() == ["", "", ""] and col.index.tolist() == [0, 1, 2]


def test_columns_without_a_value_share_it_until_one_is_written(both):
    df = same(GOOD["v2"], both)
    df.loc[0, "flops"] = 5.0
    df.loc[0, "error"] = "boom"
    assert df["flops"].iloc[0] == 5.0 and df["bytes"].isna().all() and df["gbps"].isna().all()
    assert df["error"].iloc[0] == "boom" and (df["artifacts"] == "").all() and (df["gpu"] == "").all()


#: a 1.2 MB file read from its bytes (ARROW_CHARS as shipped), and from its path (above 4 x ARROW_CHARS bytes)
SIZES = {"bytes": load.ARROW_CHARS, "path": 200_000}


@needs_arrow
@pytest.mark.parametrize("arrow_chars", SIZES.values(), ids=SIZES.keys())
def test_load_results_reads_a_big_file_fast_and_the_same(tmp_path, monkeypatch, arrow_chars):
    monkeypatch.setattr(load, "ARROW_CHARS", arrow_chars)
    rows = "".join(v2_row(case=f"c{i}", time=f"{1 + i % 7}.25") for i in range(20_000))
    p = tmp_path / "big.csv"
    p.write_text(V2 + rows)
    assert p.stat().st_size > arrow_chars
    slow = load.parse_results(p.read_text(), p)
    calls = []
    monkeypatch.setattr(load, "parse_results", lambda *a, **k: calls.append(a))
    df = load.load_results(p)
    assert not calls and df.attrs["env"] == {}
    pd.testing.assert_frame_equal(df, slow, check_exact=True)


@pytest.mark.parametrize("arrow_chars", SIZES.values(), ids=SIZES.keys())
def test_a_big_file_with_a_mistake_still_names_its_line(tmp_path, monkeypatch, arrow_chars):
    monkeypatch.setattr(load, "ARROW_CHARS", arrow_chars)
    rows = [v2_row(case=f"c{i}", time="3") for i in range(20_000)]
    rows[7000] = v2_row(case="c7000", time="-1")
    p = tmp_path / "big.csv"
    p.write_text(V2 + "".join(rows))
    with pytest.raises(HarnessError, match=r"line 7002: column 'time_us' time must be positive"):
        load.load_results(p)


@pytest.mark.parametrize("arrow_chars", SIZES.values(), ids=SIZES.keys())
def test_a_big_file_that_cannot_be_read_is_one_line(tmp_path, monkeypatch, arrow_chars):
    import pathlib

    monkeypatch.setattr(load, "ARROW_CHARS", arrow_chars)
    p = tmp_path / "big.csv"
    p.write_text(V2 + "".join(v2_row(case=f"c{i}") for i in range(20_000)))

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(pathlib.Path, "read_bytes", refuse)
    monkeypatch.setattr(arrowframe, "open", refuse, raising=False)  # arrowframe's own look at the header
    monkeypatch.setattr(arrowframe, "_table", refuse)  # never reached: Arrow would be refused the same
    with pytest.raises(HarnessError, match=r"big.csv: cannot read: Permission denied"):
        load.load_results(p)


@needs_arrow
@pytest.mark.parametrize("arrow_chars", SIZES.values(), ids=SIZES.keys())
def test_a_file_of_anothers_unique_cases_skips_the_hashing_and_nothing_else(tmp_path, monkeypatch, arrow_chars):
    monkeypatch.setattr(load, "ARROW_CHARS", arrow_chars)
    rows = [v2_row(case=f"c{i}", time=f"{1 + i % 7}.5") for i in range(20_000)]
    golden, tot, dup = tmp_path / "golden.csv", tmp_path / "tot.csv", tmp_path / "dup.csv"
    golden.write_text(V2 + "".join(rows))
    tot.write_text(V2 + "".join(rows).replace(",5.5,", ",6.5,"))
    dup.write_text(V2 + "".join(rows[:-1] + [rows[3]]))  # the same length and kernels, one case twice
    g = load.load_results(golden)
    hashed, distinct = [], unique.distinct
    monkeypatch.setattr(unique, "distinct", lambda *a: hashed.append(a) or distinct(*a))
    t = load.load_results(tot, unique_keys=lambda: g)
    assert not hashed  # golden's cases, golden's order: unique without a look
    pd.testing.assert_frame_equal(t, load.load_results(tot), check_exact=True)
    assert hashed  # on its own, the file is hashed
    for keys in (lambda: g, lambda: None, lambda: g.iloc[:10], lambda: g.assign(kernel="x")):
        with pytest.raises(
            HarnessError, match=r"line 20001: duplicate \(kernel, case_id\) = \(k, c3\), first seen on line 5"
        ):
            load.load_results(dup, unique_keys=keys)


#: cells of clean rows (any mix loads), and the cells that may replace one of them (most are refused)
CLEAN = {
    "kernel": st.sampled_from(["k", "k2", "gemm_bf16"]),
    "params": st.sampled_from(["", '"{""M"": 1}"', "{}", '"{""M"": 2, ""N"": 8}"']),
    "world": st.sampled_from(["", "1", "2", "1.0"]),
    "status": st.sampled_from(["ok", "unstable", "compile_error", "skipped"]),
    "time": st.sampled_from(["5", "5.5", "1e3", "0.0001", "123456.789"]),
}
TRICKY = {
    "kernel": ["", " k", "nan", "K", "k\x1f"],
    "case": ["a", "a ", "", "NaN", "ü", "c0"],
    "params": [" {}", "x", "{", "nan"],
    "world": ["0", "1.5", "x", "-nan", "inf", "1e300"],
    "status": ["OK", "bad", "", " ok"],
    "time": ["", "nan", "inf", "0", "-1", "x", " 2", "-nan"],
}


@st.composite
def files(draw) -> str:
    rows = draw(st.lists(st.fixed_dictionaries(CLEAN), min_size=1, max_size=6))
    for i, r in enumerate(rows):
        r["case"] = f"c{i}"
        if r["status"] not in ("ok", "unstable"):
            r["time"] = draw(st.sampled_from(["", "nan", r["time"]]))
    if draw(st.booleans()):
        field = draw(st.sampled_from(sorted(TRICKY)))
        rows[draw(st.integers(0, len(rows) - 1))][field] = draw(st.sampled_from(TRICKY[field]))
    return V2 + "".join(v2_row(**r) for r in rows)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files())
def test_fuzz_either_reader_gives_the_same_frame_or_message(both, text):
    fast, slow = both(text)
    # a runner's columns, UTF-8: Arrow reads every such file but one with a word in a number column
    assert not isinstance(fast, str) or fast != DECLINED or _word_in_a_number_column(text)
    if isinstance(fast, str) and fast == DECLINED:
        return  # the C reader's answer is the loader's
    if isinstance(slow, str):
        assert fast == slow
    else:
        pd.testing.assert_frame_equal(fast, slow, check_exact=True)


@pytest.mark.parametrize(
    "values",
    [
        ["a", "b"],
        ["a", "a"],
        ["a", "a\x00"],  # alike once padded: Arrow's exact count says they differ
        ["case1" * 2, "case2" * 2, "case1" * 2],
        ["B128_M16_N512_K128", "B128_M32_N512_K128"],
        ["x" * 32, "y" * 32],
        ["x" * 33, "x" * 33],  # too wide to pad: Arrow's count
        ["ü", "u"],
        ["ü", "ü"],  # not ASCII: Arrow's count
        ["a" * 8, "a" * 7],
        ["12345678", "12345678"],
    ],
)
def test_distinct_is_arrows_count_of_unique_values(values):
    import pyarrow as pa
    import pyarrow.compute as pc

    many = pa.array(values + [f"c{i}" for i in range(1000)], pa.large_string())
    for arr in (pa.array(values, pa.large_string()), many):
        assert unique.distinct(arr) == (len(pc.unique(arr)) == len(arr))


def test_missing_text_cells_become_empty_without_a_copy_of_the_text():
    """arrowframe.empty_for_null: "" for each missing cell, as fill_null gives it, from the same data buffer (and
    fill_null's own answer where a missing cell spans bytes, as Arrow's reader never leaves one)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from harness.results.arrowframe import empty_for_null

    col = pa.chunked_array([pa.array(["[1,2]", None, "x"], pa.large_string()).slice(1),
                            pa.array(["a", None], pa.large_string())])  # fmt: skip
    got = empty_for_null(col)
    assert got.null_count == 0 and got.to_pylist() == pc.fill_null(col, "").to_pylist() == ["", "x", "a", ""]
    assert got.chunk(0).buffers()[2].address == col.chunk(0).buffers()[2].address  # the text is not copied
    offsets = pa.py_buffer(np.array([0, 2, 4], dtype=np.int64).tobytes())
    spans = pa.LargeStringArray.from_buffers(2, offsets, pa.py_buffer(b"abcd"), pa.py_buffer(bytes([0b01])), 1)
    assert empty_for_null(pa.chunked_array([spans])).to_pylist() == ["ab", ""]
    one = empty_for_null(pa.array(["a", None], pa.large_string()))  # an array, as checks.arrow hands one
    assert isinstance(one, pa.Array) and one.null_count == 0 and one.to_pylist() == ["a", ""]

"""The results-file contract: every kind of bad input gives one line naming the file and the row or column."""

from __future__ import annotations

import json
import math

import pytest

from harness.errors import HarnessError
from harness.results.load import load_results, parse_results
from harness.results.schema import COLUMNS
from harness.results.write import ResultsAppender, write_results
from tests.conftest import HEADER

GOOD = HEADER + "bf16,a,128,16,512,128,bf16,5.8,ok,,\nbf16,b,128,32,512,128,bf16,,compile_error,,boom\n"


def err_of(path) -> str:
    with pytest.raises(HarnessError) as ei:
        load_results(path)
    msg = str(ei.value)
    assert "\n" not in msg, "errors are one line"
    assert str(path) in msg, "errors name the file"
    return msg


def test_good_file_parses(write):
    df = load_results(write("r.csv", GOOD))
    assert list(df["case_id"]) == ["a", "b"]
    assert df["time_us"].iloc[0] == pytest.approx(5.8)
    assert math.isnan(df["time_us"].iloc[1])  # failed rows carry no time
    assert json.loads(df["params"].iloc[1]) == {"B": 128, "K": 128, "M": 32, "N": 512}  # version 1, upgraded on read
    assert df.attrs["env"] == {}


@pytest.mark.parametrize(
    "name, content, expect",
    [
        ("empty", "", "file is empty"),
        ("blank", "\n\n  \n", "file is empty"),
        ("header_only", HEADER, "header but no rows"),
        ("missing_col", "kernel,case_id,status\nk,a,ok\n", "missing required column 'time_us'"),
        (
            "non_numeric",
            HEADER + "k,a,1,1,1,1,bf16,fast,ok,,\n",
            "line 2: column 'time_us' time is not a number: 'fast'",
        ),
        (
            "negative",
            HEADER + "k,a,1,1,1,1,bf16,5,ok,,\nk,b,1,1,1,1,bf16,-3.5,ok,,\n",
            "line 3: column 'time_us' time must be positive",
        ),
        ("zero", HEADER + "k,a,1,1,1,1,bf16,0,ok,,\n", "time must be positive"),
        ("nan", HEADER + "k,a,1,1,1,1,bf16,nan,ok,,\n", "line 2: column 'time_us' time is missing or NaN"),
        ("inf", HEADER + "k,a,1,1,1,1,bf16,inf,ok,,\n", "line 2: column 'time_us' time is infinite"),
        ("neg_inf", HEADER + "k,a,1,1,1,1,bf16,-inf,ok,,\n", "time is infinite"),
        ("missing_time_ok", HEADER + "k,a,1,1,1,1,bf16,,ok,,\n", "time is missing or NaN on a row whose status is ok"),
        ("unknown_status", HEADER + "k,a,1,1,1,1,bf16,5,passed,,\n", "line 2: column 'status' unknown status"),
        (
            "duplicate",
            HEADER + "k,a,1,1,1,1,bf16,5,ok,,\nk,b,1,1,1,1,bf16,5,ok,,\nk,a,1,1,1,1,bf16,6,ok,,\n",
            "line 4: duplicate (kernel, case_id) = (k, a), first seen on line 2",
        ),
        ("empty_kernel", HEADER + ",a,1,1,1,1,bf16,5,ok,,\n", "line 2: column 'kernel' is empty"),
        ("bad_shape", HEADER + "k,a,1,sixteen,1,1,bf16,5,ok,,\n", "line 2: column 'M' is not a non-negative integer"),
        ("fractional_shape", HEADER + "k,a,1,16.5,1,1,bf16,5,ok,,\n", "column 'M' is not a non-negative integer"),
        # 1e300 passed as an integer (1e300 % 1 is 0) and wrapped round to a negative int64 size
        ("huge_shape", HEADER + "k,a,1,1e300,1,1,bf16,5,ok,,\n", "line 2: column 'M' is larger than any dimension"),
        ("past_2_53", HEADER + "k,a,1,16,1,9007199254740994,bf16,5,ok,,\n", "column 'K' is larger than any dimension"),
        # read as a float, 2**53 + 1 is 2**53: it was accepted as another number (shown as written)
        (
            "just_past_2_53",
            HEADER + "k,a,1,16,1,9007199254740993,bf16,5,ok,,\n",
            "9,007,199,254,740,991): 9007199254740993",
        ),
        ("ragged", HEADER + "k,a,1,1,1,1,bf16,5,ok,,,,,extra,cells\n", "not a well-formed CSV"),
        ("dup_header", "kernel,case_id,time_us,status,status\nk,a,5,ok,ok\n", "column 'status' appears more than once"),
        ("json", '{"kernel": "k"}\n', "missing required column"),
    ],
)
def test_bad_input_one_line(write, name, content, expect):
    msg = err_of(write(f"{name}.csv", content))
    assert expect in msg


def v2_file(*worlds: str) -> str:
    """A version 2 file, one ok row per world size given."""
    rest = "," * (len(COLUMNS) - 7)
    return ",".join(COLUMNS) + "\n" + "".join(f"k,c{i},,bf16,{w},ok,5{rest}\n" for i, w in enumerate(worlds))


@pytest.mark.parametrize(
    "world, expect",
    [
        ("1e300", "is more GPUs than any world size (at most 1,048,576): 1e300"),
        ("1048577", "is more GPUs than any world size (at most 1,048,576): 1048577"),
        ("9.3e18", "is more GPUs than any world size"),  # past int64: it used to wrap round to a negative
        ("inf", "is not a positive integer: inf"),
        ("2.5", "is not a positive integer: 2.5"),
        ("0", "is not a positive integer: 0"),
    ],
)
def test_absurd_world_size_refused(write, world, expect):
    msg = err_of(write("ws.csv", v2_file("2", world)))
    assert f"line 3: column 'world_size' {expect}" in msg


def test_largest_world_size_loads(write):
    df = load_results(write("ws.csv", v2_file("1048576", "", "1.0")))
    assert df["world_size"].tolist() == [1_048_576, 1, 1]


def test_missing_file(tmp_path):
    assert "no such file" in err_of(tmp_path / "nope.csv")


def test_directory(tmp_path):
    assert "is a directory" in err_of(tmp_path)


def test_binary(write):
    assert "looks binary" in err_of(write("b.csv", b"\x00\x01\x02kernel"))


def test_not_utf8(write):
    assert "not UTF-8" in err_of(write("latin.csv", (HEADER + "k,caf\xe9,1,1,1,1,bf16,5,ok,,\n").encode("latin-1")))


def test_bom_is_accepted(write):
    df = load_results(write("bom.csv", "\ufeff" + GOOD))
    assert list(df.columns)[0] == "kernel"
    assert len(df) == 2


def test_crlf_is_accepted(write):
    df = load_results(write("crlf.csv", GOOD.replace("\n", "\r\n")))
    assert df["status"].tolist() == ["ok", "compile_error"]
    assert df["error"].iloc[1] == "boom"


def test_quoted_fields_with_commas_and_newlines(write):
    text = HEADER + (
        'k,a,1,1,1,1,bf16,5,ok,"{""BLOCK_SIZE_M"": 64, ""num_warps"": 4}",\n'
        'k,b,1,1,1,1,bf16,,runtime_error,,"illegal address, at line 3\nsecond line"\n'
        "k,c,1,1,1,1,bf16,-1,ok,,\n"
    )
    p = write("q.csv", text)
    with pytest.raises(HarnessError) as ei:
        load_results(p)
    # the third data row starts on line 5 because row b's error spans two lines
    assert "line 5:" in str(ei.value)
    df = load_results(write("q2.csv", text.replace(",-1,ok", ",7,ok")))
    assert df["config"].iloc[0] == '{"BLOCK_SIZE_M": 64, "num_warps": 4}'
    assert "illegal address, at line 3" in df["error"].iloc[1]


def test_status_case_and_whitespace_normalized(write):
    df = load_results(write("s.csv", HEADER + "k , a ,1,1,1,1,bf16, 5.0 ,OK,,\n"))
    assert df["status"].iloc[0] == "ok" and df["kernel"].iloc[0] == "k"
    assert df["time_us"].iloc[0] == 5.0


def test_failed_rows_may_hold_garbage_time(write):
    df = load_results(write("f.csv", HEADER + "k,a,1,1,1,1,bf16,n/a,compile_error,,x\n"))
    assert math.isnan(df["time_us"].iloc[0])


def test_broken_sidecar(write):
    p = write("r.csv", GOOD)
    write("r.csv.env.json", "{not json")
    assert "not valid JSON" in str(pytest.raises(HarnessError, load_results, p).value)


def test_newer_schema_refused(write):
    p = write("r.csv", GOOD)
    write("r.csv.env.json", '{"schema_version": 99}')
    assert "newer than this harness" in str(pytest.raises(HarnessError, load_results, p).value)


@pytest.mark.parametrize(
    ("sidecar", "message"),
    [
        ('{"gpus": 5}', "r.csv.env.json: gpus is 5, expected a list: not as harness writes it"),  # was a TypeError
        ('{"schema_version": "3"}', 'schema_version is "3", expected a whole number'),  # was read as no version
        ('{"schema_version": 2.5}', "schema_version is 2.5, expected a whole number"),
        ('{"gpu": "H100"}', 'gpu is "H100", expected a JSON object'),
        ('{"timing": true}', "timing is true, expected text"),
        ("[" * 100_000 + "]" * 100_000, "not valid JSON: nested too deep"),  # was a RecursionError
        ('{"x": ' + "9" * 5000 + "}", "not valid JSON: Exceeds the limit"),  # was a ValueError
        ('{"integrity": {"rows": "3", "bytes": 10}}', 'integrity is {"rows": "3", "bytes": 10}, expected {"rows"'),
        ('{"integrity": "x"}', 'integrity is "x", expected a JSON object'),  # was skipped: the file not checked
    ],
)
def test_a_sidecar_of_other_types_is_one_line(write, sidecar, message):
    p = write("r.csv", GOOD)
    write("r.csv.env.json", sidecar)
    assert message in str(pytest.raises(HarnessError, load_results, p).value)


def test_a_sidecar_an_editor_saved_with_a_bom_is_read(write):
    p = write("r.csv", GOOD)
    (p.parent / "r.csv.env.json").write_bytes(b'\xef\xbb\xbf{"schema_version": 2, "integrity": null}')
    assert load_results(p).attrs["env"]["schema_version"] == 2


def test_write_then_load_round_trip(tmp_path):
    rows = [
        {
            "kernel": "k",
            "case_id": f"c{i}",
            "B": 2,
            "M": 16,
            "N": 32,
            "K": 64,
            "dtype": "fp16",
            "time_us": 1.5 + i,
            "status": "ok",
            "config": {"BLOCK_SIZE_M": 16},
            "rep_times_us": [1.5, 1.6],
            "reps": 3,
            "error": "a, b",
        }
        for i in range(3)
    ]
    p = tmp_path / "w.csv"
    write_results(p, rows)
    df = load_results(p)
    assert df["time_us"].tolist() == [1.5, 2.5, 3.5]
    assert df["config"].iloc[0] == '{"BLOCK_SIZE_M":16}'


def test_appender_survives_torn_tail(tmp_path):
    p = tmp_path / "a.csv"
    with ResultsAppender(p) as a:
        a.append({"kernel": "k", "case_id": "c0", "time_us": 1.0, "status": "ok"})
    with open(p, "a") as fh:  # a process killed mid-write leaves half a row
        fh.write("k,c1,1,2")
    with ResultsAppender(p) as a:
        a.append({"kernel": "k", "case_id": "c2", "time_us": 2.0, "status": "ok"})
    df = load_results(p)
    assert df["case_id"].tolist() == ["c0", "c2"]


def test_appender_refuses_foreign_header(write):
    p = write("x.csv", "a,b\n1,2\n")
    with pytest.raises(HarnessError, match="header differs"):
        ResultsAppender(p)


def test_parse_large_is_vectorized():
    n = 20000
    rest = "," * (len(COLUMNS) - 7)
    rows = "".join(f'k,c{i},"{{""M"":{i}}}",bf16,1,ok,{1 + i % 7}.5{rest}\n' for i in range(n))
    text = ",".join(COLUMNS) + "\n" + rows
    df = parse_results(text, __import__("pathlib").Path("mem.csv"))
    assert len(df) == n

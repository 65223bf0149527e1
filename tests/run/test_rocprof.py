"""rocprofv3 kernel-trace parsing and attribution, on files in the real header formats (current, older, rocpd)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.run.rocprof import parse_kernel_trace, rep_times
from tests.conftest import DATA


@pytest.mark.parametrize("name", ["kernel_trace_current.csv", "kernel_trace_old.csv", "rocpd_kernel_trace.csv"])
def test_markers_attribute_reps_to_cases(name):
    d = parse_kernel_trace((DATA / "rocprof" / name).read_text(), name)
    assert d[0].name.startswith("__amd_rocclr")
    reps = rep_times(d, n=3, prefixes=("_batched_gemm", "_splitk_reduce"))
    assert set(reps) == {(0, 0), (0, 1), (1, 0), (1, 1)}
    times, per = reps[(0, 1)]
    assert times == [10.1, 10.1, 10.1]
    times, per = reps[(1, 0)]
    assert times == [23.0, 23.0, 23.0]  # split-K: the op is the sum of its two dispatches
    assert set(per) == {"0:_batched_gemm_bf16_kernel_BLOCK_SIZE_M_64_BLOCK_SIZE_N_128", "1:_splitk_reduce_kernel"}


def test_prefix_filter_drops_foreign_kernels():
    d = parse_kernel_trace((DATA / "rocprof" / "kernel_trace_current.csv").read_text())
    times, _ = rep_times(d, n=3, prefixes=("_batched_gemm",))[(1, 0)]
    assert times == [20.0, 20.0, 20.0]


def test_not_a_trace():
    with pytest.raises(HarnessError, match="missing column 'kernel_name'"):
        parse_kernel_trace('"Name","Calls"\n"k","1"\n', "kernel_stats.csv")


# --- hardening (issue 21 item 12): fixtures in the real rocprofv3 formats, see tests/data/rocprof/README.md ---

CUT = DATA / "rocprof" / "sdk_current_cut_off.csv"
OLDER = DATA / "rocprof" / "sdk_older_complete.csv"
OP = ("_batched_gemm",)


def test_timestamps_above_2_53_are_exact_integers():
    d = parse_kernel_trace(OLDER.read_text(), OLDER.name)
    assert d[0].start_ns == 2**53 + 1 and isinstance(d[0].start_ns, int)
    # 10001 ns between two odd timestamps above 2**53: through float it would read 10002 or 10000
    assert rep_times(d, n=2, prefixes=OP) == {
        (0, 0): ([10.001, 10.001], {"0:_batched_gemm_bf16_kernel_BLOCK_SIZE_M_64_BLOCK_SIZE_N_128": 10.001}),
        (0, 1): ([10.001, 10.001], {"0:_batched_gemm_bf16_kernel_BLOCK_SIZE_M_64_BLOCK_SIZE_N_128": 10.001}),
    }


def test_a_last_row_cut_off_mid_write_is_dropped_not_negative():
    d = parse_kernel_trace(CUT.read_text(), CUT.name)
    assert len(d) == len(CUT.read_text().splitlines()) - 2  # header and the cut row
    assert all(x.end_ns >= x.start_ns for x in d)
    reps = rep_times(d, n=2, prefixes=OP)
    assert set(reps) == {(0, 0)}  # rep 2 lost its end marker: no time for it, rather than a wrong one
    assert reps[(0, 0)][0] == [10.001, 10.001]


def _complete_lines() -> list[str]:
    return OLDER.read_text().splitlines()


@pytest.mark.parametrize(
    "cut",
    [
        lambda row: ",".join(row.split(",")[:12]),  # fewer fields, newline written
        lambda row: ",".join(f if i != 10 else "" for i, f in enumerate(row.split(","))),  # no end timestamp
        lambda row: ",".join(f if i != 10 else f[:8] for i, f in enumerate(row.split(","))),  # end < start
    ],
    ids=["short", "empty-end", "end-before-start"],
)
def test_other_cut_off_last_rows_are_dropped(cut):
    lines = _complete_lines()
    text = "\n".join(lines[:-1] + [cut(lines[-1])]) + "\n"
    d = parse_kernel_trace(text)
    assert len(d) == len(lines) - 2 and all(x.end_ns >= x.start_ns for x in d)


@pytest.mark.parametrize(
    "field,value,message",
    [
        (10, "9007199254740990", "end_timestamp 9007199254740990 is before start_timestamp"),
        (9, "9.007199254740993e15", "start_timestamp '9.007199254740993e15' is not a whole number"),
        (10, "", "no end_timestamp"),
        (16, "1_000", "grid_size_x '1_000' is not a whole number"),
        (9, "-5", "start_timestamp '-5' is not a whole number"),
    ],
)
def test_an_inconsistent_row_before_the_last_is_refused(field, value, message):
    lines = _complete_lines()
    row = lines[3].split(",")
    row[field] = value
    lines[3] = ",".join(row)
    with pytest.raises(HarnessError, match=f"t.csv: line 4: {message}"):
        parse_kernel_trace("\n".join(lines) + "\n", "t.csv")


def test_a_short_row_before_the_last_is_refused():
    lines = _complete_lines()
    lines[2] = ",".join(lines[2].split(",")[:10])
    with pytest.raises(HarnessError, match="line 3: 10 fields, the header has 19"):
        parse_kernel_trace("\n".join(lines) + "\n", "t.csv")


def test_a_window_with_the_wrong_launch_count_fails_only_its_rep():
    d = parse_kernel_trace(OLDER.read_text())
    problems: dict = {}
    reps = rep_times(d, n=3, prefixes=OP, problems=problems)
    assert reps == {} and set(problems) == {(0, 0), (0, 1)} and "expected 3" in problems[(0, 0)]
    with pytest.raises(HarnessError, match="case 0 rep 0: profiler saw 2 op invocations"):
        rep_times(d, n=3, prefixes=OP)


def test_a_bad_trace_fails_its_reps_not_the_run(tmp_path):
    from harness.run.rocprof import read_traces

    good, bad, unreadable = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    for d in (good, bad, unreadable):
        d.mkdir()
    (good / "1_kernel_trace.csv").write_text(OLDER.read_text())
    (bad / "2_kernel_trace.csv").write_text('"Name","Calls"\n"k","1"\n')
    (unreadable / "3_kernel_trace.csv").mkdir()  # rglob finds it; reading it fails
    found, errors = read_traces([good, bad, unreadable], n=2)
    assert set(found) == {(0, 0), (0, 1)} and found[(0, 0)][0] == [10.001, 10.001]
    assert len(errors) == 2 and "missing column 'kernel_name'" in errors[0] and "unreadable" in errors[1]
    found, errors = read_traces([good], n=3)  # wrong launch count: each rep gets its reason
    assert errors == [] and all(isinstance(v, str) and "expected 3" in v for v in found.values())


def test_rocprofv3_is_called_with_the_long_output_format_option(tmp_path, monkeypatch):
    from harness.run import workers as runner

    monkeypatch.setattr(runner.shutil, "which", lambda name: f"/opt/rocm/bin/{name}")
    cmd = runner.wrap_command("rocprofv3", tmp_path)
    assert cmd[:4] == ["/opt/rocm/bin/rocprofv3", "--kernel-trace", "--output-format", "csv"] and "-f" not in cmd
    out = Path(cmd[cmd.index("-d") + 1])
    assert out.is_dir() and out.parent == tmp_path and out.name.startswith("rocprofv3-")  # a new folder a start
    assert runner.wrap_command("cupti", tmp_path) is None and runner.wrap_command("auto", tmp_path) is None


def test_empty_and_bom_traces():
    with pytest.raises(HarnessError, match="empty kernel trace"):
        parse_kernel_trace("", "k.csv")
    assert len(parse_kernel_trace("\ufeff" + OLDER.read_text())) == len(_complete_lines()) - 1


def test_a_complete_last_row_without_a_final_newline_is_kept():
    """The trace is read after rocprofv3 has exited, so a missing newline alone is no sign of a cut: dropping that
    row would lose the last rep's end marker on every trace written so (rocprofiler-sdk's
    docs/data/kernel_trace_truncated.csv ends without one)."""
    text = OLDER.read_text()
    full = parse_kernel_trace(text, OLDER.name)
    assert parse_kernel_trace(text.rstrip("\r\n"), OLDER.name) == full
    assert set(rep_times(full, n=2, prefixes=OP)) == {(0, 0), (0, 1)}

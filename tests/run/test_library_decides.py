"""The library decides, harness records (issue 44 item 1): a kernel whose ``launch`` calls the library's entry
as its users do, with the ``chosen_config`` hook, runs the library's own choice; every row records it, and where
harness's reading of the library's files (a ConfigLookup beside it) previews another, the run says so by name.
For real on the CPU interpreter, with a stand-in library that picks its block size from its own table
(tests/data/declib)."""

from __future__ import annotations

import sys

import pandas as pd

from harness.worker.session import preview_differences
from tests.conftest import DATA, cli


def test_preview_differences_name_each_key():
    assert preview_differences({"BLOCK": 64, "num_warps": 4}, {"BLOCK": 64}) == ""
    assert preview_differences({"BLOCK": 256}, {"BLOCK": 128, "NUM_BUFFERS": 2}) == (
        "BLOCK 256 vs 128, NUM_BUFFERS (not in the preview)"
    )


def test_suite_show_says_the_library_decides_and_shows_the_preview(capsys):
    code, out, _ = cli(capsys, "suite", "show", DATA / "declib.yaml", "--arch", "interp")
    lines = dict(line.split("  ", 1) for line in out.splitlines())
    assert code == 0 and lines["declib_scale M2_N64"].startswith("the library decides at run time")
    assert lines["declib_scale_previewed M2_N200"].startswith("preview: interp-SCALE.json:any (the library decides")


def test_every_row_records_the_library_s_choice_and_a_differing_preview_is_named(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HARNESS_TEST_PYTHON", sys.executable)
    out = tmp_path / "r.csv"
    code, _, err = cli(capsys, "run", "--env", DATA / "cpu-env.yaml", "--suite", DATA / "declib.yaml", "--out", out)
    assert code == 0, err
    df = pd.read_csv(out).set_index(["kernel", "case_id"])
    assert set(df["status"]) <= {"ok", "unstable"}  # correct under each choice
    for kernel in ("declib_scale", "declib_scale_previewed"):
        assert df.loc[(kernel, "M2_N64"), "config"] == '{"BLOCK":64,"num_warps":1}'
        assert df.loc[(kernel, "M2_N200"), "config"] == '{"BLOCK":128,"num_warps":2}'  # the table's, not the file's
        assert df.loc[(kernel, "M2_N200"), "config_source"].startswith("library: declib.TABLE (row 200)")
    assert df.loc[("declib_scale_previewed", "M2_N200"), "config_source"].endswith(
        "; harness's preview (interp-SCALE.json:any) differs: BLOCK 256 vs 128"
    )
    assert "harness's preview" not in df.loc[("declib_scale_previewed", "M2_N64"), "config_source"]
    warned = [line for line in err.splitlines() if line.startswith("warning:")]
    assert warned and "1 case ran another config than harness's preview" in " ".join(err.split())


def test_without_a_chosen_config_the_worker_records_what_the_entry_launched(tmp_path, capsys, monkeypatch):
    """No function written (a library plugged in with no wrapper): the launches of one call after the first, the
    kernel's constexpr arguments and launch options, are the config recorded."""
    monkeypatch.setenv("HARNESS_TEST_PYTHON", sys.executable)
    out = tmp_path / "r.csv"
    code, _, err = cli(capsys, "run", "--env", DATA / "cpu-env.yaml", "--suite", DATA / "declib.yaml", "--out", out,
                       "--kernel", "declib_scale_recorded", "--kernel", "declib_scale_cached")  # fmt: skip
    assert code == 0, err
    # the cached one launches through Triton's JIT on its first call only, as FlagGems' LibEntry does (whose
    # configs an H100 run recorded as none while the worker recorded a later call)
    for kernel in ("declib_scale_recorded", "declib_scale_cached"):
        df = pd.read_csv(out).set_index(["kernel", "case_id"]).loc[kernel]
        assert df.loc["M2_N64", "config"] == '{"BLOCK":64,"num_warps":1}', kernel
        assert df.loc["M2_N200", "config"] == '{"BLOCK":128,"num_warps":2}', kernel
        assert set(df["config_source"]) == {"library: Triton launch of _scale"}


def test_a_library_op_with_no_wrapper_file_through_the_entry_kernels(tmp_path, capsys, monkeypatch):
    """harness's entry kernels call the function a suite names (``entry: module.function``) as its users do: a
    Triton library's op records the kernel it launched and its config, torch's ops (no Triton launch) say none."""
    monkeypatch.setenv("HARNESS_TEST_PYTHON", sys.executable)
    out = tmp_path / "r.csv"
    code, _, err = cli(capsys, "run", "--env", DATA / "cpu-env.yaml", "--suite", DATA / "entries.yaml", "--out", out)
    assert code == 0, err
    df = pd.read_csv(out).set_index("kernel")
    assert set(df["status"]) <= {"ok", "unstable"}, df[["status", "error"]]
    silu = df.loc["entry_silu_and_mul"]
    assert silu["case_id"] == "M4_N256_fp32_declib.silu_and_mul" and silu["config"] == '{"BLOCK":256,"num_warps":4}'
    assert silu["config_source"] == "library: Triton launch of _silu_and_mul"
    assert df.loc["entry_mm", "config_source"] == "library (it did not say which config)"

"""harness.outdir: an output folder is refused when it is, lies inside or holds an input, holds files harness did
not write, was written by another command, or cannot be made; else it is made and marked as harness's own."""

from __future__ import annotations

import json
import os

import pytest

from harness.errors import HarnessError
from harness.outdir import MARKER, overlap, prepare_out_dir, written_by


def test_overlap_equal_inside_holding(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    assert overlap(tmp_path / "a", tmp_path / "a" / ".") == "is"
    assert overlap(tmp_path / "a" / "b" / "c", tmp_path / "a") == "lies inside"
    assert overlap(tmp_path, tmp_path / "a" / "x.csv") == "holds"
    assert overlap(tmp_path / "a", tmp_path / "ab") == ""  # a name's prefix is not a parent


def test_overlap_follows_links(tmp_path):
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    assert overlap(tmp_path / "link", tmp_path / "real") == "is"


def test_a_new_folder_is_made_and_marked(tmp_path):
    out = prepare_out_dir("--out", tmp_path / "x" / "y", "retune")
    assert out.is_dir() and written_by(out) == "harness retune"
    assert json.loads((out / MARKER).read_text()) == {"written_by": "harness retune"}
    assert prepare_out_dir("--out", out, "retune") == out  # its own folder again: a resume


def test_check_only_makes_nothing(tmp_path):
    prepare_out_dir("--out", tmp_path / "x", "report", create=False)
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: d.write_text("x"), "is a file, expected a folder"),
        (lambda d: (d.mkdir(), (d / "keep.txt").write_text("x")), r"holds files harness did not write \(keep.txt\)"),
        (
            lambda d: (d.mkdir(), (d / MARKER).write_text('{"written_by": "harness bisect"}')),
            r"was written by `harness bisect`, not `harness report`",
        ),
    ],
)
def test_refusals_leave_what_is_there(tmp_path, make, message):
    d = tmp_path / "out"
    make(d)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    with pytest.raises(HarnessError, match=message):
        prepare_out_dir("--out", d, "report")
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_an_older_harness_folder_is_recognised_by_its_own_files(tmp_path):
    d = tmp_path / "report"
    d.mkdir()
    (d / "index.html").write_text("<html>")
    assert prepare_out_dir("--out", d, "report", own=("index.html",)) == d
    assert written_by(d) == "harness report"


def test_an_input_in_or_over_the_folder_is_refused(tmp_path):
    src = tmp_path / "results" / "compare.csv"
    src.parent.mkdir()
    src.write_text("x")
    with pytest.raises(HarnessError, match=r"--out .*results holds the input .*compare.csv: refusing to write there"):
        prepare_out_dir("--out", tmp_path / "results", "explain", inputs=[src])
    with pytest.raises(HarnessError, match=r"lies inside the input"):
        prepare_out_dir("--out", tmp_path / "results" / "sub", "explain", inputs=[tmp_path / "results"])
    with pytest.raises(HarnessError, match=r"is the input"):
        prepare_out_dir("--out", src, "explain", inputs=[src])
    assert not (tmp_path / "results" / "sub").exists()


def test_a_folder_under_a_file_is_one_line(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(HarnessError, match=r"--out .*f/o: .*f is a file, not a folder"):
        prepare_out_dir("--out", tmp_path / "f" / "o", "retune")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_an_unwritable_folder_is_one_line(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(HarnessError, match="cannot create the folder|not writable"):
            prepare_out_dir("--out", ro / "o", "retune")
    finally:
        ro.chmod(0o700)

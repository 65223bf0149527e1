"""Compare files written and read back; files of older versions still load."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from harness.compare.compare import compare_files
from harness.compare.store import load_compare, write_compare
from harness.errors import HarnessError
from tests.conftest import DATA, REPORTS_DIR

G, T = DATA / "golden.csv", DATA / "tot.csv"


def test_write_and_reload(tmp_path):
    cmp = compare_files(G, T)
    out = write_compare(cmp, tmp_path / "c.csv")
    meta = json.loads((tmp_path / "c.csv.meta.json").read_text())
    assert meta["rule"] == {"rel": 1.005, "abs_us": 0.5, "min_golden_us": 4.0}
    assert meta["counts"]["regression"] == 1
    back = load_compare(out)
    assert back.counts() == cmp.counts()
    cols = list(pd.read_csv(out).columns)
    for c in (
        "kernel",
        "case_id",
        "params",
        "dtype",
        "golden_us",
        "tot_us",
        "delta_us",
        "delta_pct",
        "limit_us",
        "verdict",
        "flops",
        "peak",
    ):
        assert c in cols


def test_a_big_table_written_in_two_halves_is_the_same_bytes(tmp_path, monkeypatch):
    from harness.compare import store

    table = compare_files(G, T).table

    def written(name: str) -> bytes:
        store.write_csv(table, tmp_path / name)
        return (tmp_path / name).read_bytes()

    whole = written("whole.csv")
    monkeypatch.setattr(store, "SPLIT_ROWS", 2)
    assert len(table) > 2 and written("halves.csv") == whole

    def no_copy_file_range(*args):  # another OS, an old kernel, two file systems: the halves copied by Python
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr(store.os, "copy_file_range", no_copy_file_range)
    assert written("copied.csv") == whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copied.csv", "halves.csv", "whole.csv"]  # no tail left


def test_old_compare_files_load_and_their_skips_are_relabelled(tmp_path):
    # files written before the skip verdicts called a skipped side failed_in_*
    old = tmp_path / "old.csv"
    old.write_text(
        "kernel,case_id,golden_us,tot_us,verdict,golden_status,tot_status,note\n"
        "k,a,,10.0,failed_in_golden,skipped,ok,golden skipped: needs Triton >= 3.9\n"
        "k,b,10.0,,failed_in_tot,ok,skipped,TOT skipped: x\n"
        "k,c,,,failed_in_both,skipped,skipped,\n"
        "k,d,,,failed_in_both,skipped,timeout,\n"
        "k,e,,10.0,failed_in_golden,compile_error,ok,\n"
        "k,f,10.0,10.1,ok,ok,ok,\n"
    )
    v = load_compare(old).table.set_index("case_id")["verdict"].to_dict()
    assert v == {
        "a": "skipped_in_golden",
        "b": "skipped_in_tot",
        "c": "skipped_in_both",
        "d": "failed_in_both",
        "e": "failed_in_golden",
        "f": "ok",
    }


@pytest.mark.parametrize("path", sorted(REPORTS_DIR.glob("*/compare*.csv")), ids=lambda p: p.parent.name + "/" + p.name)
def test_committed_compare_files_still_load(path):
    cmp = load_compare(path)
    assert sum(cmp.counts().values()) == len(cmp.table) > 0
    assert list(cmp.table["verdict"]) == list(pd.read_csv(path)["verdict"]), "no skip in them: nothing relabelled"


def test_unknown_verdict_in_a_compare_file_is_one_line(tmp_path):
    p = tmp_path / "c.csv"
    p.write_text("kernel,case_id,golden_us,tot_us,verdict\nk,a,1,1,skiped_in_tot\n")
    with pytest.raises(HarnessError, match=r"line 2: unknown verdict 'skiped_in_tot'"):
        load_compare(p)

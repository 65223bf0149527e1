"""The early read `harness compare` starts (arrowcsv.prefetch): the loader takes its table, once, as if it had read
the file itself, and reads the file again when it changed in between."""

from __future__ import annotations

import pandas as pd
import pytest

from harness.errors import HarnessError
from harness.results import arrowcsv, arrowframe, load
from harness.results.schema import COLUMNS

V2 = ",".join(COLUMNS) + "\n"
REST = "," * (len(COLUMNS) - 7)


def rows(*times: str) -> str:
    return V2 + "".join(f"k,c{i},,bf16,1,ok,{t}{REST}\n" for i, t in enumerate(times))


@pytest.fixture
def by_path(monkeypatch):
    """Small files read as big ones are: by Arrow, from their path."""
    if not arrowframe.arrow_strings():
        pytest.skip("Arrow's reader needs pandas 3's Arrow strings")
    monkeypatch.setattr(load, "ARROW_CHARS", 0)
    monkeypatch.setattr(arrowcsv, "PATH_BYTES", 0)


def test_the_loader_reads_by_path_what_prefetch_reads():
    assert arrowcsv.PATH_BYTES == 4 * load.ARROW_CHARS


def test_the_loader_takes_the_early_read_once(tmp_path, by_path):
    p = tmp_path / "r.csv"
    p.write_text(rows("5", "6"))
    arrowcsv.prefetch(p)
    assert p in arrowcsv._started
    early = load.load_results(p)
    assert p not in arrowcsv._started  # taken, not kept
    pd.testing.assert_frame_equal(early, load.load_results(p), check_exact=True)


def test_a_file_changed_since_is_read_again(tmp_path, by_path):
    p = tmp_path / "r.csv"
    p.write_text(rows("5", "6"))
    arrowcsv.prefetch(p)
    arrowcsv._started[p][1].result()
    p.write_text(rows("7", "8", "9"))
    assert load.load_results(p)["time_us"].tolist() == [7.0, 8.0, 9.0]


def test_a_refused_file_is_still_explained_by_the_loader(tmp_path, by_path):
    p = tmp_path / "r.csv"
    p.write_text(rows("5", "-1"))
    arrowcsv.prefetch(p)
    with pytest.raises(HarnessError, match=r"r.csv: line 3: column 'time_us' time must be positive"):
        load.load_results(p)


def test_small_and_missing_files_are_left_to_the_loader(tmp_path):
    small = tmp_path / "small.csv"
    small.write_text(rows("5"))
    arrowcsv.prefetch(small, tmp_path / "missing.csv", tmp_path)
    assert not arrowcsv._started
    assert arrowcsv.take(small) is arrowcsv.NOT_STARTED

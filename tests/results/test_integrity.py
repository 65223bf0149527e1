"""Files that prove they are whole (results/integrity.py): a results or compare file cut in a row, cut short or
appended to is refused in one line by every reader; a run that died mid-write resumes by measuring the cut case
again; a file edited on purpose is vouched for by removing its record."""

from __future__ import annotations

import json
import sys

import pytest

from harness.compare.compare import compare_files
from harness.compare.store import load_compare, write_compare
from harness.errors import HarnessError
from harness.results.load import load_results
from harness.results.schema import sidecar_path
from harness.results.write import write_results
from tests.conftest import DATA, cli


def _results(path, times: dict[str, float], record: bool = True):
    rows = [{"kernel": "k", "case_id": c, "params": json.dumps({"c": c}), "status": "ok", "time_us": t, "reps": 3,
             "rep_times_us": [t, t, t]} for c, t in times.items()]  # fmt: skip
    write_results(path, rows)
    side = {"env_name": "golden"}
    if record:
        from harness.results import integrity

        side[integrity.KEY] = integrity.record(path, len(rows))
    sidecar_path(path).write_text(json.dumps(side))
    return path


def test_a_file_cut_in_its_last_row_is_refused_naming_the_line(tmp_path):
    p = _results(tmp_path / "g.csv", {"a": 12345.678, "b": 23456.789})
    data = p.read_bytes()
    at = data.rindex(b",ok,23456") + len(b",ok,")
    p.write_bytes(data[: at + 3])  # time_us cut to 3 of its digits, as a full disk leaves it
    with pytest.raises(HarnessError, match=r"g\.csv: line 3: ends in the middle of a row"):
        load_results(p)


@pytest.mark.parametrize("how", ["cut", "appended"])
def test_a_file_that_is_not_the_one_its_writer_finished_is_refused(tmp_path, how):
    p = _results(tmp_path / "g.csv", {"a": 10.0, "b": 20.0, "c": 30.0})
    lines = p.read_text().splitlines(keepends=True)
    p.write_text("".join(lines[:-1]) if how == "cut" else "".join(lines) + lines[-1].replace(",c,", ",d,"))
    with pytest.raises(HarnessError, match=r"holds [24] rows .* but its sidecar records 3 rows"):
        load_results(p)


def test_a_file_edited_on_purpose_is_vouched_for_by_removing_its_record(tmp_path, capsys):
    g = _results(tmp_path / "g.csv", {"a": 10.0, "b": 20.0, "c": 30.0})
    t = _results(tmp_path / "t.csv", {"a": 10.0, "b": 20.0, "c": 30.0})
    g.write_text("".join(g.read_text().splitlines(keepends=True)[:-1]))  # filtered: case c dropped
    code, _, err = cli(capsys, "compare", g, t)
    assert code == 2 and err.count("\n") == 1 and 'remove "integrity" from g.csv.env.json' in err
    side = json.loads(sidecar_path(g).read_text())
    del side["integrity"]
    sidecar_path(g).write_text(json.dumps(side))
    assert compare_files(g, t).counts()["ok"] == 2


def test_files_without_a_sidecar_are_read_as_they_stand(tmp_path):
    p = tmp_path / "hand.csv"
    p.write_text("kernel,case_id,time_us,status\nk,a,10.0,ok")  # written by hand, no final newline
    assert len(load_results(p)) == 1


def test_a_compare_file_cut_short_is_refused(tmp_path):
    g = _results(tmp_path / "g.csv", {"a": 10.0, "b": 20.0})
    t = _results(tmp_path / "t.csv", {"a": 10.0, "b": 30.0})
    out = write_compare(compare_files(g, t), tmp_path / "c.csv")
    assert len(load_compare(out).table) == 2
    out.write_text(out.read_text()[:-20])
    with pytest.raises(HarnessError, match=r"c\.csv: line 3: ends in the middle of a row"):
        load_compare(out)


@pytest.mark.slow
def test_a_run_killed_mid_write_resumes_and_measures_the_cut_case_again(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HARNESS_TEST_PYTHON", sys.executable)
    out = tmp_path / "r.csv"
    args = ["run", "--env", DATA / "cpu-env.yaml", "--suite", "examples/softmax.yaml", "--out", out, "--launches",
            "1", "--reps", "1", "--filter", "M4_N1"]  # fmt: skip
    assert cli(capsys, *args)[0] == 0
    whole = load_results(out)
    assert json.loads(sidecar_path(out).read_text())["integrity"]["rows"] == len(whole) == 2
    data = out.read_bytes()
    out.write_bytes(data[:-7])  # the last row torn, as a killed run leaves it (and its record is of the whole)
    side = json.loads(sidecar_path(out).read_text())
    del side["integrity"]  # a killed run never wrote one
    sidecar_path(out).write_text(json.dumps(side))
    (tmp_path / "r.csv.journal.jsonl").unlink()  # nothing to replay: the case must be timed again
    code, said, _ = cli(capsys, *args, "--resume")
    again = load_results(out)
    assert code == 0 and len(again) == 2 and set(again["case_id"]) == set(whole["case_id"])
    assert json.loads(sidecar_path(out).read_text())["integrity"]["rows"] == 2


def test_a_copy_without_its_sidecar_cut_in_a_row_is_refused_all_the_same(tmp_path):
    p = _results(tmp_path / "g.csv", {"a": 12345.678, "b": 23456.789})
    sidecar_path(p).unlink()
    data = p.read_bytes()
    p.write_bytes(data[: data.rindex(b",ok,23456") + len(b",ok,") + 3])
    with pytest.raises(HarnessError, match=r"line 3: ends in the middle of a row \(fewer cells than the header"):
        load_results(p)


def test_a_row_timed_by_another_method_is_refused(tmp_path):
    """A stranger's test appended a row of a CPU run (wallclock) to an H200 results file (cupti): compare read it
    as one more case. A row whose timing is not its run's is one line naming it."""
    import shutil

    from harness.errors import HarnessError
    from harness.results.load import load_results
    from tests.conftest import DATA

    src = DATA / "aiter-h200-aa" / "golden.csv"
    shutil.copy(src, tmp_path / "g.csv")
    shutil.copy(str(src) + ".env.json", tmp_path / "g.csv.env.json")
    text = (tmp_path / "g.csv").read_text().splitlines()
    header = text[0].split(",")
    assert "timing" in header
    load_results(tmp_path / "g.csv")
    import csv
    import io

    rows = list(csv.reader(io.StringIO("\n".join(text))))
    rows[3][header.index("timing")] = "wallclock"
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    (tmp_path / "g.csv").write_text(buf.getvalue())
    with pytest.raises(HarnessError, match=r"line 4: timed by wallclock, but its run timed by cupti"):
        load_results(tmp_path / "g.csv")
    (tmp_path / "g.csv").write_text(buf.getvalue().replace("\n", "\n\n", 2))  # blank lines: the line is the file's
    with pytest.raises(HarnessError, match=r"line 6: timed by wallclock, but its run timed by cupti"):
        load_results(tmp_path / "g.csv")

"""`harness compare --record` checks the history database before comparing: an unsupported scheme, or an output
over the database, is one line and exit 2 with nothing written."""

from __future__ import annotations

import pytest

from harness.cli import main
from tests.conftest import DATA


def refused(capsys, *args) -> str:
    with pytest.raises(SystemExit) as ex:
        main(["compare", str(DATA / "golden.csv"), str(DATA / "tot.csv"), *map(str, args)])
    err = capsys.readouterr().err
    assert ex.value.code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_an_unsupported_database_is_refused_before_comparing(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HARNESS_DB", "mongodb://h/db")
    assert "--record: $HARNESS_DB: unsupported database 'mongodb'" in refused(
        capsys, "--out", tmp_path / "c.csv", "--record"
    )
    assert not (tmp_path / "c.csv").exists()


def test_an_output_over_the_database_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HARNESS_DB", str(tmp_path / "h.sqlite"))
    err = refused(capsys, "--markdown", tmp_path / "h.sqlite", "--record")
    assert "h.sqlite is the history database" in err


def test_other_suites_or_shards_are_named():
    from harness.compare.notes import part_differences

    assert part_differences({"suite": "/a/suites/ci.yaml"}, {"suite": "/b/suites/ci.yaml"}) == []
    assert part_differences({"suite": "suites/ci.yaml"}, {"suite": "suites/library.yaml"}) == [
        "golden ran suite ci.yaml but TOT ran library.yaml: only the cases of both are compared"
    ]
    (w,) = part_differences({"shard": "1/4"}, {"shard": "2/4"})
    assert w.startswith("golden is shard 1/4 but TOT is shard 2/4: compare the merged files")
    assert part_differences({"shard": "2/4"}, {"shard": "2/4"}) == []
    assert "TOT is shard (none)" in part_differences({"shard": "2/4"}, {})[0]


def test_outputs_replace_only_what_compare_wrote(tmp_path, capsys):
    """--out and --markdown overwrite an earlier comparison (the usual rerun), never another file: a results file,
    the user's notes, a suite; --out and --markdown naming one file is refused too. Nothing is written."""
    results = tmp_path / "sm.csv"
    results.write_text((DATA / "golden.csv").read_text())
    notes = tmp_path / "notes.md"
    notes.write_text("# my notes\n")
    err = refused(capsys, "--out", results)
    assert err.strip() == f"harness: error: --out {results}: exists and is not a comparison (harness compare's CSV): " \
        "refusing to overwrite it (move it, or choose another path)"  # fmt: skip
    assert "exists and is not harness compare's markdown" in refused(capsys, "--markdown", notes)
    assert "is where --out writes" in refused(capsys, "--out", tmp_path / "z.csv", "--markdown", tmp_path / "z.csv")
    assert results.read_text() == (DATA / "golden.csv").read_text() and notes.read_text() == "# my notes\n"
    out, md = tmp_path / "c.csv", tmp_path / "c.md"
    for _ in range(2):  # a comparison, then the same comparison again over it
        with pytest.raises(SystemExit) as ex:
            main(["compare", str(DATA / "golden.csv"), str(DATA / "tot.csv"), "--out", str(out), "--markdown", str(md)])
        assert ex.value.code == 0
    assert out.read_text().lstrip('"').startswith("kernel") and md.read_text().startswith("<!-- harness:perf-compare")

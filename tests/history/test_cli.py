"""`harness history` end to end on a real SQLite file (tests/history/test_postgres.py: on PostgreSQL), and the
`--record` of `harness compare` and `harness run`."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pandas as pd
import pytest

from harness.history.store import History
from tests.conftest import DATA, ROOT, cli
from tests.history.files import nightlies

H100 = DATA / "h100-triton-3.6.0-vs-3.9.0"


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cli")
    path = str(tmp / "h.sqlite")
    nightlies(tmp, path)
    return path


def test_add_says_what_each_file_became(tmp_path, capsys):
    db = tmp_path / "h.sqlite"
    rc, out, _ = cli(
        capsys, "history", "add", "--db", db, "--tag", "h100", H100 / "compare.csv", H100 / "golden-aa.csv"
    )
    assert rc == 0
    lines = out.splitlines()
    assert [line.split(":")[0] for line in lines] == ["run 1 added", "run 2 added", "comparison 1 added", "run 3 added"]
    assert "120 cases, Triton 3.6.0 vs 3.9.0, 30 regressions" in lines[2]
    rc, out, _ = cli(capsys, "history", "add", "--db", db, "--tag", "nightly", H100 / "golden.csv")
    assert rc == 0 and out.startswith("run 1 already stored: ") and out.rstrip().endswith("; tags +nightly)")


def test_a_bad_file_among_good_ones_stores_nothing(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("kernel,case_id,time_us,status\ngemm,M16,-1,ok\n")
    db = tmp_path / "h.sqlite"
    rc, out, err = cli(capsys, "history", "add", "--db", db, H100 / "golden.csv", bad)
    assert (
        rc == 2
        and out == ""
        and err == f"harness: error: {bad}: line 2: column 'time_us' time must be positive, got -1\n"
    )
    assert not db.exists()


def test_list_and_show(db, capsys):
    rc, out, _ = cli(capsys, "history", "list", "--db", db)
    assert rc == 0 and "12 runs" in out and "6 comparisons" in out and "tot@3.10.0" in out
    assert max(len(line) for line in out.splitlines()) <= 80
    rc, out, _ = cli(
        capsys, "history", "show", "--db", db, "--kernel", "gemm", "--param", "M=1024", "--stack", "tot", "--csv"
    )
    df = pd.read_csv(io.StringIO(out))
    assert rc == 0 and len(df) == 6 and set(df["case_id"]) == {"M1024_N512"}
    assert df["time_us"].round(2).tolist() == [50.0, 50.05, 50.1, 60.0, 60.06, 60.12]
    assert df["run_at"].iloc[0] == "2026-11-10T02:30:00Z"
    rc, out, _ = cli(capsys, "history", "show", "--db", db, "--triton", "3.10.0", "--limit", "2")
    assert rc == 0 and "9 rows (the newest 2 of 9: --limit, --csv)" in out


def test_trend_of_a_case_shows_the_step_and_the_verdicts(db, capsys):
    rc, out, _ = cli(capsys, "history", "trend", "gemm", "--db", db, "--case", "M1024_N512")
    assert rc == 0
    tot = out[out.index("tot on H100 80GB HBM3") :]
    step_line = next(line for line in tot.splitlines() if "+20.0%" in line)
    assert "3.10.0" in step_line and "regression (#4)" in step_line
    rc, out, _ = cli(capsys, "history", "trend", "gemm", "--db", db, "--case", "M1024_N512", "--by", "triton", "--csv")
    df = pd.read_csv(io.StringIO(out))
    tot = df[df["env_name"] == "tot"].set_index("triton_version")
    assert tot.loc["3.9.0", "runs"] == 3 and tot.loc["3.10.0", "time_us"] == pytest.approx(60.06)


def test_trend_of_a_kernel(db, capsys):
    rc, out, _ = cli(capsys, "history", "trend", "gemm", "--db", db, "--csv")
    df = pd.read_csv(io.StringIO(out))
    assert rc == 0 and len(df) == 12 and (df["cases"] == 2).all()
    rc, out, _ = cli(capsys, "history", "trend", "gemm", "--db", db, "--stack", "tot")
    assert rc == 0 and "golden on" not in out and "tot on H100 80GB HBM3" in out


def test_regressions_over_time_and_between_two_points(db, capsys):
    rc, out, _ = cli(capsys, "history", "regressions", "--db", db, "--csv")
    df = pd.read_csv(io.StringIO(out))
    assert rc == 0 and df.groupby("comparison_id")["regressions"].sum().tolist() == [0, 0, 0, 1, 1, 1]
    rc, out, _ = cli(capsys, "history", "regressions", "--db", db)
    assert rc == 0 and "(the newest 5; 1 earlier: --csv)" in out
    rc, out, _ = cli(capsys, "history", "regressions", "--db", db, "--from", "2026-11-12", "--to", "#4")
    assert rc == 0 and "1 new, 0 fixed, 0 changed" in out and "M1024_N512" in out


def test_changepoints_beside_the_verdicts(db, capsys):
    rc, out, _ = cli(capsys, "history", "changepoints", "--db", db, "--csv")
    df = pd.read_csv(io.StringIO(out))
    assert rc == 0 and len(df) == 1
    s = df.iloc[0]
    assert (s.case_id, s.env_name, s.triton_before, s.triton_after, s.by_rule) == (
        "M1024_N512",
        "tot",
        "3.9.0",
        "3.10.0",
        "regression",
    )
    assert s.verdicts == "regression (#4)" and s.step_pct == pytest.approx(20.0, abs=0.2)
    rc, out, _ = cli(capsys, "history", "changepoints", "--db", db, "--min-points", "7")
    assert rc == 0 and out.startswith("0 change points in 0 case series of >= 7 runs")


def test_annotations(tmp_path, capsys):
    db = tmp_path / "h.sqlite"
    nightlies(tmp_path, str(db))
    rc, out, _ = cli(capsys, "history", "annotate", "--db", db, "--run", "8", "--kind", "bisect", "Triton bump: 3.10.0")
    assert rc == 0 and out == "annotation 1: 2026-11-13 02:30 bisect: Triton bump: 3.10.0\n"
    rc, out, _ = cli(capsys, "history", "annotate", "--db", db, "--at", "2026-11-11", "--gpu", "MI300", "driver update")
    assert rc == 0
    rc, out, _ = cli(capsys, "history", "annotations", "--db", db, "--gpu", "H100")
    assert rc == 0 and "1 annotations" in out and "Triton bump" in out and "driver update" not in out
    rc, out, _ = cli(capsys, "history", "trend", "gemm", "--db", db, "--case", "M1024_N512")
    assert "bisect: Triton bump: 3.10.0" in out


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["show", "--param", "M"], "--param 'M': expected NAME=VALUE"),
        (["show", "--since", "last week"], "--since 'last week': expected a date or time"),
        (["show", "--tag", "a b"], "--tag 'a b': a tag is letters, digits"),
        (["trend", "gemm", "--by", "day"], "--by 'day': expected 'run' or 'triton'"),
        (["annotate", "x"], "annotate: give --at DATE or --run ID"),
        (["annotate", "x", "--run", "99"], "no run 99"),
        (["show", "--kernel", "nope"], "no stored row matches the filters"),
        (["regressions", "--from", "77"], "no comparison 77"),
    ],
)
def test_bad_input_is_one_line(db, capsys, args, says):
    rc, out, err = cli(capsys, "history", *args, "--db", db)
    assert rc == 2 and out == "" and err.count("\n") == 1 and says in err


def test_reading_a_database_that_is_not_there(tmp_path, capsys):
    rc, _, err = cli(capsys, "history", "list", "--db", tmp_path / "none.sqlite")
    assert (
        rc == 2
        and err
        == f"harness: error: {tmp_path / 'none.sqlite'}: no history database here yet (harness history add FILES creates it)\n"
    )


def test_compare_record(tmp_path, capsys, monkeypatch):
    db = tmp_path / "team.sqlite"
    monkeypatch.setenv("HARNESS_DB", str(db))
    rc, _, err = cli(capsys, "compare", DATA / "golden.csv", DATA / "tot.csv", "--record")
    assert rc == 0, err
    assert [line.split(":")[0] for line in err.splitlines() if line.startswith("history:")] == [
        "history",
        "history",
        "history",
    ]
    out = tmp_path / "c.csv"
    rc, _, err = cli(capsys, "compare", DATA / "golden.csv", DATA / "tot.csv", "--out", out, "--record")
    assert rc == 0 and "history: comparison 1 already stored: " in err  # the same bytes as without --out
    with History.open(db, write=False) as h, h.reading() as conn:
        from harness.history import queries as q

        runs, comps = q.runs_frame(conn), q.comparisons_frame(conn)
    assert len(runs) == 2 and len(comps) == 1 and runs["git_commit"].notna().all()


def test_compare_record_to_a_server_that_is_not_there(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HARNESS_DB", "postgresql://bob:Pa55-word@127.0.0.1:1/db")
    rc, out, err = cli(
        capsys, "compare", DATA / "golden.csv", DATA / "tot.csv", "--out", tmp_path / "c.csv", "--record"
    )
    assert rc == 2 and "Pa55" not in out + err and "bob" not in out + err
    assert err.splitlines()[-1].startswith("harness: error: --record: postgresql://***@127.0.0.1:1/db: ")
    assert err.splitlines()[-1].endswith(f"(the files are kept: harness history add {tmp_path / 'c.csv'})")
    assert (tmp_path / "c.csv").exists()


@pytest.mark.slow
def test_run_record(tmp_path):
    suite = tmp_path / "s.yaml"
    suite.write_text("name: s\nentries:\n  - kernel: rmsnorm\n    M: 5\n    N: 64\n    dtype: fp32\n")
    env = {
        **os.environ,
        "HARNESS_TEST_PYTHON": sys.executable,
        "PYTHONPATH": str(ROOT),
        "HARNESS_DB": str(tmp_path / "h.sqlite"),
    }
    args = [sys.executable, "-m", "harness", "run", "--env", DATA / "cpu-env.yaml", "--suite", suite]
    args += ["--out", tmp_path / "o.csv", "--reps", "1", "--launches", "1", "--record"]
    r = subprocess.run(list(map(str, args)), env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert f"history: run 1 added: {tmp_path / 'o.csv'} (1 rows, cpu" in r.stderr
    with History.open(tmp_path / "h.sqlite", write=False) as h, h.reading() as conn:
        from harness.history import queries as q

        rows = q.results_frame(conn, q.Filter())
    assert rows["kernel"].tolist() == ["rmsnorm"] and rows["status"].tolist() == ["ok"]


def test_out_never_replaces_a_file_history_did_not_write(db, tmp_path, capsys):
    """`history show --out B` over another database, a results CSV or a user's text: one line, exit 2, the file
    unchanged; the same export again replaces its own file."""
    import shutil

    other = tmp_path / "B.sqlite"
    shutil.copy(db, other)
    results = tmp_path / "golden.csv"
    shutil.copy(H100 / "golden.csv", results)
    note = tmp_path / "notes.txt"
    note.write_text("mine\n")
    for victim in (other, results, note):
        before = victim.read_bytes()
        rc, _, err = cli(capsys, "history", "show", "--db", db, "--kernel", "gemm", "--out", victim)
        assert rc == 2 and err.count("\n") == 1 and "refusing to overwrite it" in err, err
        assert victim.read_bytes() == before
    mine = tmp_path / "export.csv"
    for _ in range(2):  # written, then replaced: it is this export
        rc, out, _ = cli(capsys, "history", "show", "--db", db, "--kernel", "gemm", "--out", mine)
        assert rc == 0 and out.startswith("wrote ")


def test_trend_names_what_changed_beside_a_step(tmp_path, capsys):
    """A series whose kernel was edited between two runs, and whose next run had another Triton: the trend says so
    on the run where each happened (results/identity.SERIES), so a step is not read as noise or the compiler."""
    import json

    from tests.history.files import results_file

    db = tmp_path / "h.sqlite"
    paths = []
    for i, (t, code, triton) in enumerate([(50.0, "a", "3.6.0"), (50.1, "a", "3.6.0"), (60.0, "b", "3.6.0"),
                                           (60.2, "b", "3.7.0")]):  # fmt: skip
        p = results_file(tmp_path, f"r{i}.csv", {("gemm", "M1024_N512"): t, ("softmax", "M8_N512"): 5.0},
                         triton=triton, when=f"2026-11-2{i}T10:00:00Z")  # fmt: skip
        side = json.loads(p.with_name(p.name + ".env.json").read_text())
        side["kernel_content"] = {"gemm": code * 64, "softmax": "s" * 64}
        p.with_name(p.name + ".env.json").write_text(json.dumps(side))
        paths.append(p)
    assert cli(capsys, "history", "add", "--db", db, *paths)[0] == 0
    rc, out, _ = cli(capsys, "history", "trend", "gemm", "--db", db, "--case", "M1024_N512", "--csv")
    df = pd.read_csv(io.StringIO(out), keep_default_na=False)
    assert rc == 0 and df["changed"].tolist() == ["", "", "kernel code", "triton.version"]
    rc, out, _ = cli(capsys, "history", "trend", "softmax", "--db", db, "--case", "M8_N512", "--csv")
    assert pd.read_csv(io.StringIO(out), keep_default_na=False)["changed"].tolist() == ["", "", "", "triton.version"]
    rc, out, _ = cli(capsys, "history", "trend", "gemm", "--db", db, "--case", "M1024_N512")
    assert "kernel code" in out and max(len(line) for line in out.splitlines()) <= 80

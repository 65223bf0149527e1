"""`harness calibrate` end to end on the CPU interpreter: a baseline run sizes the slowdowns, an interleaved run
of golden, A/A and golden slowed by an injected busy wait per repeat; the table compare then uses."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from tests.conftest import DATA, ROOT, cli

ENV = {**os.environ, "HARNESS_TEST_PYTHON": sys.executable, "PYTHONPATH": str(ROOT), "COLUMNS": "80"}
SUITE = "name: s\ndefaults: {dtype: fp16}\nentries:\n  - kernel: batched_gemm_bf16\n    B: 1\n    N: 32\n    K: 64\n    M: [16]\n"
DELAY_US = 100_000  # far above the interpreter's own time of this case (~10 ms): it shows whatever the noise


def harness(*args, timeout=600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *map(str, args)], capture_output=True, text=True,
                          env=ENV, cwd=ROOT, timeout=timeout)  # fmt: skip


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cal")
    suite = tmp / "s.yaml"
    suite.write_text(SUITE)
    out = tmp / "out"
    args = ("calibrate", suite, "--env", DATA / "cpu-env.yaml", "--out", out, "--repeats", "1", "--launches", "2")
    r = harness(*args, "--slowdown", f"{DELAY_US}us", "--slowdown", "limit")
    assert r.returncode == 0, r.stderr
    return tmp, out, args, r


@pytest.mark.slow
def test_the_injected_slowdown_is_inside_the_timed_window(calibrated):
    tmp, out, _, r = calibrated
    rep = out / "runs" / "repeat-1"
    golden, slow = (pd.read_csv(rep / f"{n}.csv").iloc[0] for n in ("golden", f"slow-{DELAY_US}us"))
    assert {golden.status, slow.status} <= {"ok", "unstable"}  # the interpreter on a shared machine is noisy
    assert slow.time_us >= DELAY_US > golden.time_us  # every launch waited D after the op, on the clock timed
    base = pd.read_csv(out / "runs" / "baseline.csv").iloc[0]
    delays = json.loads((out / "delays-limit.json").read_text())
    assert delays == {f"batched_gemm_bf16/{base.case_id}": pytest.approx(0.005 * base.time_us + 0.5, abs=1e-3)}


@pytest.mark.slow
def test_the_table_per_case(calibrated):
    tmp, out, _, r = calibrated
    t = pd.read_csv(out / "calibration.csv")
    assert len(t) == 1 and t.loc[0, "repeats"] == 1
    row = t.iloc[0]
    assert row.caught.startswith(f"{DELAY_US}us:") and ";limit:" in row.caught
    assert row.aa_fp_rate == row.aa_flags / row.repeats
    assert bool(row.resolves) == (pd.notna(row.resolution_pct) and row.resolution_pct <= row.limit_pct)
    assert row.limit_pct == pytest.approx(0.5 + 50.0 / row.golden_us)
    meta = json.loads((out / "calibration.csv.meta.json").read_text())
    assert meta["slowdowns"] == [f"{DELAY_US}us", "limit"] and meta["rule"]["rel"] == 1.005
    assert "1 cases:" in r.stdout and "calibration.csv" in r.stdout


@pytest.fixture
def in_process(monkeypatch):
    """The environment the subprocesses above get, for commands run in this process (tests.conftest.cli)."""
    for name in ("HARNESS_TEST_PYTHON", "COLUMNS"):
        monkeypatch.setenv(name, ENV[name])
    monkeypatch.chdir(ROOT)


@pytest.mark.slow
def test_compare_uses_the_calibration(calibrated, capsys, in_process):
    tmp, out, _, _ = calibrated
    rep = out / "runs" / "repeat-1"
    cmp_csv = tmp / "compare.csv"
    code, _, err = cli(capsys, "compare", rep / "golden.csv", rep / f"slow-{DELAY_US}us.csv", "--out", cmp_csv,
                       "--calibration", out / "calibration.csv")  # fmt: skip
    assert code == 0, err
    row = pd.read_csv(cmp_csv).iloc[0]
    cal = pd.read_csv(out / "calibration.csv").iloc[0]
    assert row.verdict == "regression"  # 10 × slower
    if bool(cal.resolves):
        assert row.confidence == "confident" and "cannot resolve" not in str(row.note)
    else:  # the interpreter's noise cannot resolve the rule's 0.5 %: it says so, and the flag is not sure
        assert row.confidence == "ambiguous" and f"noise {cal.noise_pct:.1f} %: this case cannot resolve" in row.note
    meta = json.loads((tmp / "compare.csv.meta.json").read_text())
    assert meta["calibration"]["path"] == str((out / "calibration.csv").resolve())
    assert (meta["calibration"]["source"], meta["calibration"]["calibrated"]) == ("--calibration", 1)


@pytest.mark.slow
def test_resume_and_refusals(calibrated, capsys, monkeypatch, in_process):
    tmp, out, args, _ = calibrated
    before = (out / "runs" / "repeat-1" / "golden.csv").read_bytes()
    code, _, err = cli(capsys, *args, "--slowdown", f"{DELAY_US}us", "--slowdown", "limit")
    assert code == 2 and "holds a calibration already; pass --resume" in err
    assert len(err.strip().splitlines()) == 1
    db = tmp / "h.sqlite"
    monkeypatch.setenv("HARNESS_DB", str(db))
    code, _, err = cli(capsys, *args, "--slowdown", f"{DELAY_US}us", "--slowdown", "limit", "--resume", "--record")
    assert code == 0, err
    assert (out / "runs" / "repeat-1" / "golden.csv").read_bytes() == before  # nothing measured again
    assert "history: calibration 1 added" in err
    code, got, _ = cli(capsys, "history", "calibration", "--db", db, "--csv")
    assert code == 0 and pd.read_csv(io.StringIO(got))["repeats"].tolist() == [1]
    code, _, err = cli(capsys, *args, "--slowdown", "fast")
    assert code == 2 and "--slowdown 'fast': expected a positive slowdown" in err
    code, _, err = cli(capsys, "compare", DATA / "golden.csv", DATA / "tot.csv", "--calibration", tmp / "nope.csv")
    assert code == 2 and err.strip().endswith(f"--calibration {tmp / 'nope.csv'}: no such file")

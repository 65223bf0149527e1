"""`harness run --calibration FILE`: checked before anything runs (a file that is not a calibration, or holds
none of the selected cases: one line, exit 2), checked against the worker's GPU once it reports (another model:
refused before a rep; another GPU of the model: one warning), and kept in every sidecar for compare."""

from __future__ import annotations

import json
import sys

import pandas as pd
import pytest

from harness.compare.calibration import CALIBRATION_COLUMNS, file_sha256, write_calibration
from harness.errors import HarnessError
from harness.inputs.suite import load_suite
from tests.conftest import DATA, cli

SUITE = "name: s\ndefaults: {dtype: fp16}\nentries:\n  - kernel: batched_gemm_bf16\n    B: 1\n    N: 32\n    K: 64\n    M: [16]\n"
CASE = ("batched_gemm_bf16", "B1_M16_N32_K64_fp16")
H100 = {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-1"}


def write_cal(path, cases=(CASE,), gpu=None):
    """A calibration of ``cases``, every one coarse (noise 3 %: cannot resolve the rule's slack)."""
    rows = [
        dict(
            kernel=k,
            case_id=c,
            golden_us=50.0,
            repeats=1,
            aa_flags=0,
            aa_confident_flags=0,
            aa_fp_rate=0.0,
            noise_pct=3.0,
            resolution_pct=float("nan"),
            resolution_us=float("nan"),
            limit_pct=1.5,
            resolves=False,
            caught="limit:0/1",
        )  # fmt: skip
        for k, c in cases
    ]
    meta = {"captured_at": "2026-11-25T10:00:00Z", "env": "cpu", "gpu": gpu or {}, "slowdowns": ["limit"]}
    write_calibration(pd.DataFrame(rows, columns=list(CALIBRATION_COLUMNS)), meta, path)
    return path


@pytest.fixture
def setup(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_TEST_PYTHON", sys.executable)
    monkeypatch.setenv("COLUMNS", "400")
    suite = tmp_path / "s.yaml"
    suite.write_text(SUITE)
    return tmp_path, suite


def test_a_bad_calibration_is_one_line_before_anything_runs(setup, capsys):
    tmp, suite = setup
    run = ("run", "--env", DATA / "cpu-env.yaml", "--suite", suite, "--out", tmp / "o.csv", "--calibration")
    rc, _, err = cli(capsys, *run, tmp / "nope.csv")
    assert rc == 2 and err.strip() == f"harness: error: --calibration {tmp / 'nope.csv'}: no such file"
    other = write_cal(tmp / "other.csv", cases=[("softmax", "N1024")])
    rc, _, err = cli(capsys, *run, other)
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert f"--calibration {other}: calibrates none of the 1 cases selected from {suite} (it holds 1" in err
    assert not (tmp / "o.csv").exists() and not (tmp / "o.csv.env.json").exists()


def test_the_worker_check_refuses_another_model_and_warns_once_for_another_gpu(setup, capsys):
    from harness.compare.calibration import run_calibration
    from harness.render.terminal import warn

    tmp, suite = setup
    cal = write_cal(tmp / "cal.csv", gpu=H100)
    records, check = run_calibration(cal, load_suite(suite), str(suite), warn)
    rec = records["calibration"]
    assert rec["sha256"] == file_sha256(cal) and rec["columns"][:2] == ["kernel", "case_id"] and len(rec["rows"]) == 1
    check({"gpu": H100})
    with pytest.raises(HarnessError, match="calibrated on NVIDIA H100 80GB HBM3 but this run measures on NVIDIA H200"):
        check({"gpu": {"name": "NVIDIA H200", "uuid": "GPU-1"}})
    check({"gpu": {**H100, "uuid": "GPU-2"}})
    check({"gpu": {**H100, "uuid": "GPU-2"}})  # the second env of an interleaved run: said once
    err = capsys.readouterr().err
    assert err.count("warning:") == 1 and "(GPU-1) than this run measures on (GPU-2)" in err


@pytest.mark.slow
def test_a_run_keeps_the_calibration_in_every_sidecar_and_compare_uses_it(setup, capsys):
    tmp, suite = setup
    cal = write_cal(tmp / "cal" / "calibration.csv")
    a, b = tmp / "a.csv", tmp / "b.csv"
    cpu = DATA / "cpu-env.yaml"
    args = ["run", "--env", cpu, "--suite", suite, "--out", a, "--with-env", cpu, "--with-out", b, "--launches", "1"]
    rc, _, err = cli(capsys, *args, "--no-remeasure", "--calibration", cal)
    assert rc == 0, err
    for out in (a, b):
        side = json.loads(out.with_name(out.name + ".env.json").read_text())["calibration"]
        assert side["sha256"] == file_sha256(cal) and side["path"] == str(cal.resolve())
    cal.unlink()  # what compare needs travels in the sidecars
    rc, stdout, err = cli(capsys, "compare", a, b, "--out", tmp / "c.csv")
    assert rc == 0, err
    meta = json.loads((tmp / "c.csv.meta.json").read_text())["calibration"]
    assert (meta["source"], meta["calibrated"], meta["cannot_resolve"]) == ("golden's and TOT's sidecars", 1, 1)
    assert "cannot resolve" in pd.read_csv(tmp / "c.csv")["note"].iloc[0]
    # a calibration of another GPU model: refused once the worker says which GPU it has, before any rep
    h100 = write_cal(tmp / "h100.csv", gpu=H100)
    rc, _, err = cli(capsys, "run", "--env", cpu, "--suite", suite, "--out", tmp / "x.csv", "--calibration", h100)
    assert rc == 2 and "calibrated on NVIDIA H100 80GB HBM3 but this run measures on CPU interpreter" in err
    errors = [ln for ln in err.splitlines() if "error" in ln]  # the progress bar's last frame aside
    assert len(errors) == 1 and errors[0].startswith("harness: error: ") and "Traceback" not in err, err
    assert not (tmp / "x.csv").exists() or not (tmp / "x.csv").read_text().strip()

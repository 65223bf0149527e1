"""A calibration travels with the results (issue 32 item 3): `harness run --calibration` keeps it in each
sidecar (path, SHA-256, metadata and every case's figures), compare judges with it unless told otherwise
(--calibration wins, --no-calibration ignores it), says which it used, and refuses one of another GPU model or of
none of the compared cases."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.compare.calibration import (
    calibration_record,
    check_cases,
    check_gpu,
    load_calibration,
    record_table,
    write_calibration,
)
from harness.compare.store import load_compare
from harness.errors import HarnessError
from harness.verdict.resolution import judge_pair, summarize
from harness.verdict.rule import Rule
from tests.calibrate.test_resolution import results
from tests.conftest import cli

H100 = {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-1"}
QUIET, NOISY = [100.0, 100.1, 99.9], [100.0, 103.0, 97.0]


def write_cal(path, noisy_resolves: bool = False, gpu: dict | None = None, kernel: str = "k"):
    """A calibration of two cases (the pure pipeline on fixed reps): quiet catches the limit; noisy does not,
    unless ``noisy_resolves`` (then its reps are as quiet as quiet's)."""
    noisy = QUIET if noisy_resolves else NOISY
    golden = results({"quiet": QUIET, "noisy": noisy}).assign(kernel=kernel)
    same = judge_pair(golden, golden.copy(), Rule())
    slowed = results({"quiet": [x + 1 for x in QUIET], "noisy": [x + 1 for x in noisy]}).assign(kernel=kernel)
    slow = judge_pair(golden, slowed, Rule())
    idx = pd.MultiIndex.from_tuples([(kernel, "quiet"), (kernel, "noisy")], names=["kernel", "case_id"])
    table = summarize([same], {"limit": [slow]}, {"limit": pd.Series([1.0, 1.0], index=idx)}, Rule())
    meta = {
        "captured_at": "2026-11-25T10:00:00Z",
        "env": "golden",
        "suite": "suites/s.yaml",
        "triton": {"version": "3.6.0"},
        "gpu": gpu if gpu is not None else H100,
        "slowdowns": ["limit"],
        "repeats": 1,
        "rule": {"rel": 1.005, "abs_us": 0.5, "min_golden_us": 4.0},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    write_calibration(table, meta, path)
    return path


def write_results(path, times: dict[str, list[float]], env: dict) -> None:
    rows = ["kernel,case_id,params,status,time_us,reps,rep_times_us"]
    for case, reps in times.items():
        rows.append(f'k,{case},{{}},ok,{np.mean(reps):.4f},{len(reps)},"{json.dumps(reps)}"')
    path.write_text("\n".join(rows) + "\n")
    path.with_name(path.name + ".env.json").write_text(json.dumps({"env_name": path.stem, "gpu": H100, **env}))


@pytest.fixture(autouse=True)
def wide(monkeypatch):
    """A console wide enough that no path is folded across lines."""
    monkeypatch.setenv("COLUMNS", "400")


def write_pair(tmp_path: Path, golden_env: Callable[[dict], dict], tot_env: Callable[[dict], dict]):
    """golden and TOT (5 % slower: regressions) beside a calibration file; each sidecar gets ``*_env(record)``, the
    calibration's record at hand; returns (g, t, cal)."""
    cal = write_cal(tmp_path / "cal" / "calibration.csv")
    rec = calibration_record(*load_calibration(cal), cal)
    g, t = tmp_path / "g.csv", tmp_path / "t.csv"
    write_results(g, {"quiet": QUIET, "noisy": NOISY}, golden_env(rec))
    write_results(t, {"quiet": [x * 1.05 for x in QUIET], "noisy": [x * 1.05 for x in NOISY]}, tot_env(rec))
    return g, t, cal


@pytest.fixture
def pair(tmp_path):
    """golden and TOT whose TOT sidecar alone records the calibration; returns (g, t, cal)."""
    return write_pair(tmp_path, lambda rec: {}, lambda rec: {"calibration": rec})


def test_the_record_round_trips_without_the_file(tmp_path):
    cal = write_cal(tmp_path / "calibration.csv")
    table, meta = load_calibration(cal)
    rec = json.loads(json.dumps(calibration_record(table, meta, cal)))  # as a sidecar holds it
    assert rec["sha256"] == hashlib.sha256(cal.read_bytes()).hexdigest() and rec["path"] == str(cal.resolve())
    cal.unlink()
    back, back_meta = record_table(rec, "s.env.json: calibration")
    assert back_meta == meta and list(back.columns) == list(table.columns)
    pd.testing.assert_frame_equal(back, table, check_dtype=False)
    assert back["resolves"].tolist() == [True, False] and np.isnan(back.loc[1, "resolution_pct"])


@pytest.mark.parametrize(
    ("record", "says"),
    [
        ("x", "not a calibration record (expected an object, got str)"),
        ({"columns": ["kernel"]}, "no 'columns' and 'rows' lists"),
        ({"columns": ["kernel", "case_id"], "rows": [["k"]]}, "row 1 has 1 values for 2 columns"),
        ({"columns": ["kernel", "case_id"], "rows": [["k", "a"]]}, "not a calibration file (no column noise_pct"),
    ],
)
def test_a_malformed_record_is_one_line_naming_where(record, says):
    with pytest.raises(HarnessError, match="^t.csv.env.json: calibration: ") as err:
        record_table(record, "t.csv.env.json: calibration")
    assert says in str(err.value) and "\n" not in str(err.value)


def test_gpu_and_case_checks():
    meta = {"gpu": H100}
    assert check_gpu(meta, meta, "C", "TOT ran on") == "" and check_gpu({}, meta, "C", "TOT ran on") == ""
    with pytest.raises(HarnessError, match="C: calibrated on NVIDIA H100 80GB HBM3 but TOT ran on NVIDIA H200"):
        check_gpu(meta, {"gpu": {"name": "NVIDIA H200", "uuid": "GPU-1"}}, "C", "TOT ran on")
    w = check_gpu(meta, {"gpu": {**H100, "uuid": "GPU-2"}}, "C", "TOT ran on")
    assert (
        w
        == "C: calibrated on another NVIDIA H100 80GB HBM3 (GPU-1) than TOT ran on (GPU-2): its figures are that GPU's"
    )
    no_model = check_gpu(meta, {"gpu": {"uuid": "GPU-2"}}, "C", "TOT ran on")  # no model named: the UUIDs still tell
    assert no_model.startswith("C: calibrated on another")
    cal = pd.DataFrame({"kernel": ["k", "k"], "case_id": ["a", "b"]})
    assert check_cases(cal, ["k", "k", "j"], ["a", "c", "a"], "C", "compared") == 1
    with pytest.raises(HarnessError, match=r"C: calibrates none of the 2 cases compared \(it holds 2, e.g. k/a\)"):
        check_cases(cal, ["j", "j"], ["a", "b"], "C", "compared")


def test_the_gpu_check_reads_uuids_as_compare_does():
    """The calibration's GPU check reads a sidecar as other_gpu and --aa do: a UUID that torch did not give is read
    from nvidia-smi's ``before`` state (it used to be skipped, so another GPU passed unsaid), and [N/A] is unknown
    (it used to be a UUID: [N/A] vs a real one warned of another GPU, [N/A] vs [N/A] matched)."""
    meta = {"gpu": {**H100, "uuid": "1"}}  # torch's form: no GPU- prefix
    smi_only = {"gpu": {"name": H100["name"], "before": {"uuid": "GPU-2"}}}
    assert check_gpu(meta, smi_only, "C", "TOT ran on").startswith("C: calibrated on another NVIDIA H100")
    assert check_gpu(meta, {"gpu": {"name": H100["name"], "before": {"uuid": "GPU-1"}}}, "C", "TOT ran on") == ""
    unknown = {"gpu": {**H100, "uuid": "[N/A]", "before": {"uuid": "[N/A]"}}}
    assert check_gpu(meta, unknown, "C", "TOT ran on") == "" and check_gpu(unknown, meta, "C", "TOT ran on") == ""
    h200 = {"gpu": {"name": "NVIDIA H200", "uuid": "[N/A]"}}
    with pytest.raises(HarnessError, match="calibrated on NVIDIA H100 80GB HBM3 but TOT ran on NVIDIA H200"):
        check_gpu(unknown, h200, "C", "TOT ran on")  # an unknown UUID: the model still tells
    assert check_gpu({"gpu": {"name": "[N/A]", "uuid": "1"}}, h200, "C", "TOT ran on") == ""


def test_compare_warns_of_another_gpu_named_by_nvidia_smi_alone(tmp_path, capsys):
    g, t, _ = write_pair(tmp_path, lambda rec: {}, lambda rec: {"calibration": rec})
    side = t.with_name("t.csv.env.json")
    env = json.loads(side.read_text())
    env["gpu"] = {"name": H100["name"], "before": {"uuid": "GPU-2"}}
    side.write_text(json.dumps(env))
    rc, _, err = cli(capsys, "compare", g, t)
    assert rc == 0, err
    assert "calibrated on another NVIDIA H100 80GB HBM3 (GPU-1) than TOT ran on (GPU-2)" in " ".join(err.split())
    env["gpu"] = {**H100, "uuid": "[N/A]"}
    side.write_text(json.dumps(env))
    rc, _, err = cli(capsys, "compare", g, t)
    assert rc == 0 and "calibrated on another" not in err, err


def test_compare_judges_with_the_calibration_a_sidecar_records(pair, tmp_path, capsys):
    g, t, cal = pair
    out, md = tmp_path / "c.csv", tmp_path / "c.md"
    cal.unlink()  # the sidecar holds the figures: the file is not needed any more
    rc, stdout, err = cli(capsys, "compare", g, t, "--out", out, "--markdown", md)
    assert rc == 0, err
    rows = pd.read_csv(out).set_index("case_id")
    assert rows.loc["noisy", "verdict"] == "regression" and rows.loc["noisy", "confidence"] == "ambiguous"
    assert "this case cannot resolve" in rows.loc["noisy", "note"] and "cannot resolve" not in str(
        rows.loc["quiet", "note"]
    )
    line = f"{cal.resolve()} (TOT's sidecar): 2 of 2 cases calibrated, 1 cannot resolve the rule"
    assert f"calibration {line}" in " ".join(stdout.split())
    assert f"Calibration: {line}." in md.read_text()
    meta = json.loads((tmp_path / "c.csv.meta.json").read_text())["calibration"]
    assert (meta["source"], meta["calibrated"], meta["cannot_resolve"]) == ("TOT's sidecar", 2, 1)
    assert meta["rows"] and meta["sha256"]  # the figures travel on with the comparison (history stores them)
    back = load_compare(out)
    assert back.calibration["source"] == "TOT's sidecar" and back.calibration["path"] == str(cal.resolve())


def test_an_explicit_calibration_wins_and_no_calibration_ignores_them(pair, tmp_path, capsys):
    g, t, cal = pair
    other = write_cal(tmp_path / "other" / "calibration.csv", noisy_resolves=True)
    out = tmp_path / "c.csv"
    rc, stdout, err = cli(capsys, "compare", g, t, "--out", out, "--calibration", other)
    assert rc == 0, err
    meta = json.loads((tmp_path / "c.csv.meta.json").read_text())["calibration"]
    assert meta["source"] == "--calibration" and meta["instead_of"] == str(cal.resolve())
    assert meta["cannot_resolve"] == 0 and "cannot resolve" not in pd.read_csv(out)["note"].fillna("").str.cat()
    assert f"(--calibration, not the sidecars' {cal.resolve()})" in " ".join(stdout.split())
    rc, stdout, err = cli(capsys, "compare", g, t, "--out", out, "--no-calibration")
    assert rc == 0 and "calibration" not in json.loads((tmp_path / "c.csv.meta.json").read_text())
    assert "calibration" not in stdout.split()
    rc, _, err = cli(capsys, "compare", g, t, "--calibration", other, "--no-calibration")
    assert rc == 2 and err.strip() == "harness: error: --calibration and --no-calibration: give one"


def test_a_calibration_of_another_gpu_model_or_suite_is_refused(tmp_path, capsys):
    g, t = tmp_path / "g.csv", tmp_path / "t.csv"
    for gpu, kernel, says in (
        ({"name": "NVIDIA H200", "uuid": "GPU-9"}, "k", "calibrated on NVIDIA H200 but TOT ran on NVIDIA H100"),
        (H100, "j", "calibrates none of the 2 cases compared (it holds 2, e.g. j/noisy): a calibration of another"),
    ):
        cal = write_cal(tmp_path / kernel / "calibration.csv", gpu=gpu, kernel=kernel)
        rec = calibration_record(*load_calibration(cal), cal)
        write_results(g, {"quiet": QUIET, "noisy": NOISY}, {"calibration": rec})
        write_results(t, {"quiet": QUIET, "noisy": NOISY}, {})
        rc, _, err = cli(capsys, "compare", g, t)
        assert rc == 2 and len(err.strip().splitlines()) == 1, err
        assert f"{cal.resolve()} (from golden's sidecar): {says}" in err
        rc, _, err = cli(capsys, "compare", g, t, "--calibration", cal)  # the same refusal for a file given
        assert rc == 2 and f"--calibration {cal.resolve()}: {says}" in err
        rc, _, err = cli(capsys, "compare", g, t, "--no-calibration")
        assert rc == 0, err


def test_another_gpu_of_the_model_and_two_different_records_are_warnings(tmp_path, capsys):
    g, t = tmp_path / "g.csv", tmp_path / "t.csv"
    mine = write_cal(tmp_path / "a" / "calibration.csv", gpu={**H100, "uuid": "GPU-7"})
    theirs = write_cal(tmp_path / "b" / "calibration.csv", noisy_resolves=True)
    write_results(
        g, {"quiet": QUIET, "noisy": NOISY}, {"calibration": calibration_record(*load_calibration(mine), mine)}
    )
    write_results(
        t, {"quiet": QUIET, "noisy": NOISY}, {"calibration": calibration_record(*load_calibration(theirs), theirs)}
    )
    rc, stdout, err = cli(capsys, "compare", g, t)
    assert rc == 0, err
    warnings = [w for w in err.splitlines() if w.startswith("warning:")]
    flat = " ".join(err.split())
    assert "sidecars record different calibrations" in flat and "used golden's; pass --calibration to choose" in flat
    assert "calibrated on another NVIDIA H100 80GB HBM3 (GPU-7) than TOT ran on (GPU-1)" in flat
    assert len(warnings) == 2
    assert f"{mine.resolve()} (golden's sidecar)" in " ".join(stdout.split())


def test_a_comparison_written_before_the_record_still_loads(pair, tmp_path, capsys):
    g, t, cal = pair
    out = tmp_path / "c.csv"
    assert cli(capsys, "compare", g, t, "--out", out, "--no-calibration")[0] == 0
    meta_path = tmp_path / "c.csv.meta.json"
    meta_path.write_text(json.dumps({**json.loads(meta_path.read_text()), "calibration": str(cal)}))
    assert load_compare(out).calibration == {"path": str(cal), "source": "--calibration"}


def test_a_malformed_recorded_calibration_is_one_line_unless_passed_over(pair, tmp_path, capsys):
    g, t, cal = pair
    side = t.with_name("t.csv.env.json")
    env = json.loads(side.read_text())
    env["calibration"]["columns"] = "kernel"
    side.write_text(json.dumps(env))
    rc, _, err = cli(capsys, "compare", g, t)
    assert (
        rc == 2
        and err.strip()
        == f"harness: error: {side}: calibration: not a calibration record (no 'columns' and 'rows' lists)"
    )
    assert cli(capsys, "compare", g, t, "--no-calibration")[0] == 0
    rc, stdout, err = cli(capsys, "compare", g, t, "--calibration", cal)  # a file given: the record is not read
    assert rc == 0 and "(--calibration)" in stdout, err

"""Outputs are protected and options are sane (issue 21): OUT is locked by a run, compare never writes over
its inputs, --resume refuses changed options, numeric options are range-checked, and a comparison refuses what it
cannot stand behind (nothing compared, one Triton under both names, two physical GPUs)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.compare.compare import compare_files
from harness.compare.notes import nothing_compared, other_gpu, same_triton
from harness.errors import HarnessError
from harness.render.markdown import render_markdown
from harness.results.schema import sidecar_path
from harness.run.locks import lock_output, lock_path, resume_conflict
from tests.conftest import DATA, HEADER, ROOT, cli

G, T = DATA / "golden.csv", DATA / "tot.csv"
HOLD = "import sys, time; from harness.run.locks import lock_output\nwith lock_output(sys.argv[1]):\n"
HOLD += "    print('held', flush=True); time.sleep(120)\n"


def one_error_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


@pytest.fixture
def holder(tmp_path):
    """hold(path): another process holding the lock on path until the test ends (or it is killed)."""
    procs: list[subprocess.Popen] = []

    def hold(out: Path) -> subprocess.Popen:
        p = subprocess.Popen(
            [sys.executable, "-c", HOLD, str(out)], cwd=ROOT, stdout=subprocess.PIPE, text=True, env=os.environ
        )
        assert p.stdout.readline().strip() == "held"
        procs.append(p)
        return p

    yield hold
    for p in procs:
        p.kill()
        p.wait()


def run_args(out: Path, *more: object) -> list[object]:
    return ["run", "--env", DATA / "cpu-env.yaml", "--suite", DATA / "slow.yaml", "--out", out, *more]


# ------------------------------------------------------------------------------------------------ the lock
def test_a_second_run_on_a_locked_out_is_refused_naming_the_holder(tmp_path, holder, capsys, monkeypatch):
    monkeypatch.setenv("HARNESS_TEST_PYTHON", sys.executable)
    out = tmp_path / "r.csv"
    p = holder(out)
    code, _, err = cli(capsys, *run_args(out, "--launches", "1"))
    line = one_error_line(err)
    assert code == 2 and f"pid {p.pid} on " in line and "another harness run is writing it" in line
    assert not out.exists(), "nothing was written"
    code, _, err = cli(capsys, *run_args(out, "--launches", "1", "--resume"))  # a run and a --resume
    assert code == 2 and f"pid {p.pid}" in one_error_line(err)


def test_a_locked_with_out_is_refused_before_anything_is_written(tmp_path, holder, capsys, monkeypatch):
    monkeypatch.setenv("HARNESS_TEST_PYTHON", sys.executable)
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    p = holder(b)
    code, _, err = cli(capsys, *run_args(a, "--with-env", DATA / "cpu-env.yaml", "--with-out", b))
    line = one_error_line(err)
    assert code == 2 and str(b) in line and f"pid {p.pid}" in line
    assert not a.exists() and not lock_path(a).exists(), "OUT's own lock was given back"


def test_a_killed_holder_leaves_no_lock_that_blocks(tmp_path, holder):
    out = tmp_path / "k.csv"
    p = holder(out)
    with pytest.raises(HarnessError, match=f"pid {p.pid}"), lock_output(out):
        pass
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert lock_path(out).exists(), "SIGKILL left the file behind"
    with lock_output(out) as lk:  # ... but not the lock: the kernel dropped it with the process
        assert f"pid {os.getpid()}" in lk.read_text()
    assert not lock_path(out).exists(), "a clean release removes the file"


def test_two_locks_in_one_process_conflict_and_a_release_frees(tmp_path):
    out = tmp_path / "x.csv"
    with lock_output(out), pytest.raises(HarnessError, match="another harness run is writing it"), lock_output(out):
        pass
    with lock_output(out):
        pass


def test_run_unwritable_outputs_are_one_line_naming_the_option(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HARNESS_TEST_PYTHON", sys.executable)
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, _, err = cli(capsys, *run_args(blocker / "r.csv"))
    assert code == 2 and f"--out {blocker / 'r.csv'}: {blocker} is a file, not a folder" in one_error_line(err)
    code, _, err = cli(capsys, *run_args(tmp_path))
    assert code == 2 and f"--out {tmp_path}: is a directory" in one_error_line(err)
    more = ("--with-env", DATA / "cpu-env.yaml", "--with-out", blocker / "w.csv")
    code, _, err = cli(capsys, *run_args(tmp_path / "a.csv", *more))
    assert code == 2 and one_error_line(err).startswith(f"harness: error: --with-out {blocker / 'w.csv'}: ")
    assert not (tmp_path / "a.csv").exists() and not lock_path(tmp_path / "a.csv").exists()


def test_interleaved_outputs_must_differ(tmp_path):
    from harness.run.options import RunOptions
    from harness.run.outputs import lock_outputs

    both = lock_outputs([(None, tmp_path / "a.csv"), (None, tmp_path / "." / "a.csv")], RunOptions())
    with pytest.raises(HarnessError, match="one output file each"), both:
        pass


# ------------------------------------------------------------------------------------------------ resume
OPTS = {"env": "golden", "triton": "3.6.0", "launches": "auto", "launch_gap": "auto", "shuffle_placement": True}


def test_resume_with_the_same_options_is_accepted():
    resume_conflict(dict(OPTS), dict(OPTS), "r.csv")


@pytest.mark.parametrize(
    "key, new, shown",
    [
        ("launches", 5, "--launches 5 but the file was measured with auto"),
        ("launch_gap", "0.0", "--launch-gap 0.0 but the file was measured with auto"),
        ("shuffle_placement", False, "--shuffle-placement off but the file was measured with on"),
        ("triton", "3.9.0", "triton version 3.9.0 but the file was measured with 3.6.0"),
        ("reps", 5, "--reps 5 but the file was measured with (not set)"),
    ],
)
def test_resume_with_a_changed_option_is_refused_naming_both_values(key, new, shown):
    with pytest.raises(HarnessError) as ex:
        resume_conflict(OPTS, {**OPTS, key: new}, "r.csv")
    assert str(ex.value).startswith("r.csv: --resume with ") and shown in str(ex.value)


def test_resume_of_a_file_that_records_no_options_is_refused():
    with pytest.raises(HarnessError, match="does not record the options"):
        resume_conflict(None, OPTS, "r.csv")


def test_recorded_options_come_from_the_journal_else_the_sidecar(tmp_path):
    from harness.run.options import recorded_options

    journal, side = tmp_path / "r.csv.journal.jsonl", tmp_path / "r.csv.env.json"
    assert recorded_options(journal, side) is None
    side.write_text(json.dumps({"run_options": {"launches": 2}}))
    assert recorded_options(journal, side) == {"launches": 2}
    journal.write_text(json.dumps({"kind": "start", "options": {"launches": 3}}) + "\n{torn")
    assert recorded_options(journal, side) == {"launches": 3}
    journal.write_text(json.dumps({"kind": "start", "fingerprint": {"env": "x"}}) + "\n")  # an older harness
    side.write_text("{}")
    assert recorded_options(journal, side) is None


# ------------------------------------------------------------------------------------------------ numeric options
@pytest.mark.parametrize(
    "args, expect",
    [
        (("--timeout", "0"), "--timeout 0"),
        (("--timeout", "-1"), "--timeout -1"),
        (("--timeout", "nan"), "--timeout nan"),
        (("--launches", "0"), "--launches"),
        (("--launches", "-5"), "--launches"),
        (("--reps", "0"), "--reps"),
        (("--compile-jobs", "-1"), "--compile-jobs"),
        (("--launch-gap", "-1"), "--launch-gap '-1'"),
        (("--launch-gap", "inf"), "--launch-gap 'inf'"),
    ],
)
def test_run_refuses_out_of_range_numbers(tmp_path, capsys, monkeypatch, args, expect):
    monkeypatch.setenv("HARNESS_TEST_PYTHON", sys.executable)
    code, _, err = cli(capsys, *run_args(tmp_path / "o.csv", *args))
    assert code == 2 and expect in one_error_line(err)
    assert not (tmp_path / "o.csv").exists()


@pytest.mark.parametrize(
    "args, expect",
    [
        (("compare", G, T, "--worst", "-1"), "--worst"),
        (("compare", G, T, "--worst", "0"), "--worst"),
        (("explain", "c.csv", "--out", "x", "--limit", "0"), "--limit"),
        (("publish", "github", "c.csv", "--repo", "a/b", "--pr", "0"), "--pr"),
    ],
)
def test_other_commands_refuse_out_of_range_numbers(capsys, args, expect):
    code, _, err = cli(capsys, *args)
    assert code == 2 and expect in one_error_line(err)


# ------------------------------------------------------------------------------------------------ compare outputs
@pytest.fixture
def inputs(tmp_path):
    g, t = tmp_path / "g.csv", tmp_path / "t.csv"
    shutil.copy(G, g)
    shutil.copy(T, t)
    (tmp_path / "link-to-tot.csv").symlink_to(t)
    return g, t


@pytest.mark.parametrize(
    "option, target",
    [
        ("--out", lambda g, t: g),
        ("--out", lambda g, t: t.parent / "link-to-tot.csv"),
        ("--markdown", lambda g, t: t),
        ("--out", lambda g, t: sidecar_path(g)),
    ],
)
def test_compare_never_writes_over_an_input(inputs, capsys, option, target):
    g, t = inputs
    sidecar_path(g).write_text("{}")
    before = {p: p.read_bytes() for p in (g, t, sidecar_path(g))}
    dest = target(g, t)
    code, out, err = cli(capsys, "compare", g, t, option, dest)
    line = one_error_line(err)
    assert code == 2 and f"{option} {dest} is the input" in line and "refusing to overwrite it" in line
    assert out == "", "refused before comparing"
    assert {p: p.read_bytes() for p in before} == before


def test_compare_refuses_markdown_over_its_own_csv(inputs, tmp_path, capsys):
    g, t = inputs
    code, _, err = cli(capsys, "compare", g, t, "--out", tmp_path / "c.csv", "--markdown", tmp_path / "c.csv")
    assert code == 2 and "--markdown" in one_error_line(err) and not (tmp_path / "c.csv").exists()


@pytest.mark.parametrize("option", ["--out", "--markdown"])
def test_compare_unwritable_output_is_one_line(inputs, tmp_path, capsys, option):
    g, t = inputs
    blocker = tmp_path / "file"
    blocker.write_text("a file where a folder should be")
    code, _, err = cli(capsys, "compare", g, t, option, blocker / "c.out")
    assert code == 2 and f"{option} {blocker / 'c.out'}: {blocker} is a file, not a folder" in one_error_line(err)
    code, _, err = cli(capsys, "compare", g, t, option, tmp_path)
    assert code == 2 and "is a directory" in one_error_line(err)


def test_compare_outputs_are_replaced_whole_and_leave_no_temp_files(inputs, tmp_path, capsys):
    g, t = inputs
    out, md = tmp_path / "o" / "c.csv", tmp_path / "o" / "c.md"
    for _ in range(2):  # the second run replaces the first's files
        code, _, _ = cli(capsys, "compare", g, t, "--out", out, "--markdown", md)
        assert code == 0
    assert sorted(p.name for p in out.parent.iterdir()) == ["c.csv", "c.csv.meta.json", "c.md"]
    assert json.loads((out.parent / "c.csv.meta.json").read_text())["counts"]["regression"] == 1


# ------------------------------------------------------------------------------------------------ nothing compared
def test_nothing_compared_when_every_golden_row_failed(write, tmp_path, capsys):
    g = write("g.csv", HEADER + "k,a,1,1,1,1,bf16,,compile_error,,boom\nk,b,1,1,1,1,bf16,,timeout,,\n")
    t = write("t.csv", HEADER + "k,a,1,1,1,1,bf16,50,ok,,\nk,b,1,1,1,1,bf16,60,ok,,\n")
    out, md = tmp_path / "c.csv", tmp_path / "c.md"
    code, stdout, err = cli(capsys, "compare", g, t, "--out", out, "--markdown", md)
    headline = "nothing compared: 0 of 2 cases have a time under both stacks"
    assert code == 2, "even without --fail-on-regression"
    assert headline in one_error_line(err) and headline in stdout and "no regressions" not in stdout
    assert out.exists(), "the comparison is still written"
    text = md.read_text()
    assert "**⚠️ Nothing compared: 0 of 2 cases have a time under both stacks.**" in text
    assert "no regressions" not in text


def test_nothing_compared_when_every_timed_case_is_under_the_floor(write):
    g = write("g.csv", HEADER + "k,a,1,1,1,1,bf16,2,ok,,\nk,b,1,1,1,1,bf16,,timeout,,\n")
    t = write("t.csv", HEADER + "k,a,1,1,1,1,bf16,2,ok,,\nk,b,1,1,1,1,bf16,3,ok,,\n")
    cmp = compare_files(g, t)
    assert (
        cmp.nothing_compared
        == "nothing compared: the 1 of 2 cases with a time under both stacks are all under the 4 us floor"
    )
    assert nothing_compared(compare_files(G, T).table, cmp.rule) == "", "a real comparison has no such headline"


# ------------------------------------------------------------------------------------------------ same Triton
TRITON = {"version": "3.9.0", "path": "/venv/lib/python3.11/site-packages/triton"}


def with_sidecars(g: Path, t: Path, genv: dict, tenv: dict) -> None:
    sidecar_path(g).write_text(json.dumps(genv))
    sidecar_path(t).write_text(json.dumps(tenv))


def test_same_triton_is_only_the_same_version_at_the_same_path():
    assert "same Triton (3.9.0 at /venv" in same_triton({"triton": TRITON}, {"triton": dict(TRITON)})
    assert same_triton({"triton": TRITON}, {"triton": {**TRITON, "path": "/overlay/triton"}}) == ""
    assert same_triton({"triton": TRITON}, {"triton": {**TRITON, "version": "3.6.0"}}) == ""
    assert same_triton({}, {"triton": TRITON}) == "" and same_triton({"triton": {}}, {"triton": {}}) == ""


def test_same_triton_warns_and_fails_the_gate(tmp_path, capsys):
    g, t = tmp_path / "g.csv", tmp_path / "t.csv"
    shutil.copy(G, g)
    shutil.copy(G, t)  # no regression in the table: only the same-Triton check can fail the gate
    with_sidecars(g, t, {"triton": TRITON}, {"triton": TRITON})
    code, _, err = cli(capsys, "compare", g, t, "--markdown", tmp_path / "c.md")
    assert code == 0 and "warning: golden and TOT ran the same Triton" in err
    assert "> ⚠️ **Warning:** golden and TOT ran the same Triton (3.9.0" in (tmp_path / "c.md").read_text()
    code, _, err = cli(capsys, "compare", g, t, "--fail-on-regression")
    last = err.strip().splitlines()[-1]
    assert code == 2 and last.startswith("harness: error: --fail-on-regression: golden and TOT ran the same Triton")


# ------------------------------------------------------------------------------------------------ physical GPU
H200 = {"name": "NVIDIA H200", "uuid": "0a1b2c3d-0000-1111-2222-333344445555"}


def test_other_gpu_compares_uuid_and_host_only_where_both_have_them():
    a = {"host": "node1", "gpu": H200}
    assert other_gpu(a, json.loads(json.dumps(a))) == ""
    # torch's UUID and nvidia-smi's GPU-… form name one GPU
    assert (
        other_gpu(a, {"host": "node1", "gpu": {"name": "NVIDIA H200", "before": {"uuid": "GPU-" + H200["uuid"]}}}) == ""
    )
    b = {"host": "node2", "gpu": {**H200, "uuid": "ffffffff-0000-1111-2222-333344445555"}}
    msg = other_gpu(a, b)
    assert "different physical GPUs: GPU-0a1b2c3d" in msg and "(hosts node1 vs node2)" in msg
    assert "flagged 41 of 120 cases" in msg and "golden vs golden on one GPU flags 0" in msg
    assert "different hosts: node1 vs node2" in other_gpu({"host": "node1"}, {"host": "node2"})
    assert other_gpu({"gpu": {"name": "CPU interpreter (x86_64)"}}, {}) == "", "old files / CPU runs: not compared"
    assert other_gpu({"gpu": {"uuid": "[N/A]"}}, {"gpu": {"uuid": "abc"}}) == ""


def test_different_gpus_warn_and_require_same_gpu_fails(tmp_path, capsys):
    g, t = tmp_path / "g.csv", tmp_path / "t.csv"
    shutil.copy(G, g)
    shutil.copy(T, t)
    with_sidecars(g, t, {"host": "node1", "gpu": H200}, {"host": "node2", "gpu": {**H200, "uuid": "ff"}})
    code, _, err = cli(capsys, "compare", g, t, "--markdown", tmp_path / "c.md")
    assert code == 0 and "warning: golden and TOT ran on different physical GPUs" in err
    assert "must share a GPU" in (tmp_path / "c.md").read_text()
    code, _, err = cli(capsys, "compare", g, t, "--require-same-gpu")
    last = err.strip().splitlines()[-1]
    assert code == 2 and last.startswith("harness: error: --require-same-gpu: golden and TOT ran on different")
    sidecar_path(t).write_text(json.dumps({"host": "node1", "gpu": H200}))
    code, _, _ = cli(capsys, "compare", g, t, "--require-same-gpu")
    assert code == 0


def test_markdown_shows_no_warning_for_one_gpu_and_two_tritons():
    cmp = compare_files(G, T)
    cmp.golden_env = {"host": "n", "gpu": H200, "triton": {**TRITON, "version": "3.6.0"}}
    cmp.tot_env = {"host": "n", "gpu": H200, "triton": TRITON}
    warned = [line for line in render_markdown(cmp).splitlines() if "**Warning:**" in line]
    assert not any("GPU" in w or "same Triton" in w for w in warned), warned  # (only these files' own: unconfirmed)


def test_nvidia_smi_identity_fields_are_read_for_the_workers_gpu(tmp_path, monkeypatch):
    """gpuinfo asks nvidia-smi about the worker's GPU by UUID (index 0 ignores CUDA_VISIBLE_DEVICES)."""
    from harness.run.gpu_state import NVIDIA_FIELDS, gpu_state

    smi = tmp_path / "nvidia-smi"
    values = ["NVIDIA H200", "570.1", "1980", "2619", "1980", "35", "120.5", "0x0", "GPU-abc", "1650123", "00:1B:00.0"]
    assert len(values) == len(NVIDIA_FIELDS)
    smi.write_text(f'#!/bin/sh\necho "$1" > {tmp_path}/args\necho "{", ".join(values)}"\n')
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    state = gpu_state("GPU-abc")
    assert (tmp_path / "args").read_text().strip() == "--id=GPU-abc"
    assert state["uuid"] == "GPU-abc" and state["serial"] == "1650123" and state["pci_bus_id"] == "00:1B:00.0"


def test_worker_reports_uuid_and_pci_location_in_nvidia_smis_form():
    from harness.worker.facts import _pci_bus_id, _uuid_text

    assert _uuid_text("GPU-0a1b") == "0a1b" and _uuid_text("0a1b") == "0a1b" and _uuid_text(None) is None
    props = SimpleNamespace(pci_domain_id=0, pci_bus_id=27, pci_device_id=0)
    assert _pci_bus_id(props) == "00000000:1B:00.0"
    assert _pci_bus_id(SimpleNamespace()) is None


def test_a_held_lock_is_released_when_the_run_raises(tmp_path):
    out = tmp_path / "e.csv"
    with pytest.raises(RuntimeError), lock_output(out):
        raise RuntimeError("the run failed")
    start = time.monotonic()
    with lock_output(out):
        pass
    assert time.monotonic() - start < 1


def test_gpu_state_falls_back_to_the_first_gpu_when_nvidia_smi_does_not_know_the_uuid(tmp_path, monkeypatch):
    from harness.run.gpu_state import NVIDIA_FIELDS, gpu_state

    smi = tmp_path / "nvidia-smi"
    line = ", ".join(["NVIDIA H200"] + ["1"] * (len(NVIDIA_FIELDS) - 1))
    smi.write_text(f'#!/bin/sh\n[ "$1" = "--id=0" ] || exit 6\necho "{line}"\n')
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    assert gpu_state("MIG-unknown")["name"] == "NVIDIA H200"


def test_the_first_gpus_state_stands_in_without_its_identity(tmp_path, monkeypatch):
    """nvidia-smi's index 0 need not be the worker's GPU: its clocks may stand in, its UUID must not (merge,
    history and the calibration check read a sidecar's ``before`` UUID as the worker's)."""
    from harness.run.gpu_state import gpu_state
    from harness.run.sidecar import smi_id

    smi = tmp_path / "nvidia-smi"
    line = "NVIDIA H200, 570.1, 1980, 2619, 1980, 35, 120.5, 0x0, GPU-first, 1650123, 00:1B:00.0"
    smi.write_text(f'#!/bin/sh\n[ "$1" = "--id=0" ] || exit 6\necho "{line}"\n')
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    state = gpu_state(None)
    assert state["name"] == "NVIDIA H200" and state["sm_clock_mhz"] == 1980.0
    assert not {"uuid", "serial", "pci_bus_id"} & set(state)
    assert "uuid" not in gpu_state("GPU-unknown")
    # a torch without UUIDs: the worker's GPU is asked for by its PCI bus id
    assert smi_id({"gpu": {"uuid": None, "pci_bus_id": "00000000:41:00.0"}}) == "00000000:41:00.0"
    assert smi_id({"gpu": {"uuid": "abc"}}) == "GPU-abc" and smi_id({"gpu": {}}) is None

"""Exit codes of the command line: usage errors are one line and exit 2 (with the typer/click that pip installs
today and with the oldest typer that pyproject.toml allows), and a signalled run exits 130 / 143 with its results
intact and resumable."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.cli import main
from harness.results.load import load_results
from tests.conftest import DATA, ROOT

#: the oldest typer (and its click) that pyproject.toml allows; the test command builds this venv
FLOOR_VENV = ROOT / ".venvs" / "typer-floor"

USAGE_ERRORS = [
    ([], "Missing command"),
    (["compare"], "Missing argument"),
    (["compare", "a.csv"], "Missing argument"),
    (["compare", "a.csv", "b.csv", "--bogus"], "No such option"),
    (["compare", "a.csv", "b.csv", "--rel", "abc"], "--rel"),
    (["run"], "Missing option"),
    (["run", "--env", "x", "--suite", "y", "--out", "z", "--reps", "many"], "--reps"),
    (["nosuchcommand"], "No such command"),
    (["env"], "Missing command"),
    (["env", "show"], "Missing argument"),
    (["env", "frobnicate", "x"], "No such command"),
    (["publish"], "Missing command"),
    (["publish", "github", "c.csv"], "Missing option"),
    (["report", "--title"], "requires an argument"),
]


def _one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


@pytest.mark.parametrize(("argv", "says"), USAGE_ERRORS, ids=[" ".join(a) or "(bare)" for a, _ in USAGE_ERRORS])
def test_usage_errors_are_one_line_and_exit_2(argv, says, capsys):
    with pytest.raises(SystemExit) as ex:
        main(argv)
    assert ex.value.code == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("harness: error: harness") and says in line
    assert "--help" in line  # where to look next


def test_help_is_not_an_error(capsys):
    with pytest.raises(SystemExit) as ex:
        main(["compare", "--help"])
    assert ex.value.code == 0
    assert "GOLDEN" in capsys.readouterr().out


def test_bad_input_is_exit_2_not_1(tmp_path, capsys):
    """1 means "regression found": a missing file must never look like one to a CI gate."""
    with pytest.raises(SystemExit) as ex:
        main(["compare", str(tmp_path / "nope.csv"), str(tmp_path / "nope2.csv")])
    assert ex.value.code == 2
    assert "no such file" in _one_line(capsys.readouterr().err)


@pytest.mark.skipif(not (FLOOR_VENV / "bin" / "python").exists(), reason="the test command builds .venvs/typer-floor")
@pytest.mark.parametrize(("argv", "says"), USAGE_ERRORS[:8], ids=[" ".join(a) or "(bare)" for a, _ in USAGE_ERRORS[:8]])
def test_usage_errors_with_the_oldest_typer_allowed(argv, says):
    py = str(FLOOR_VENV / "bin" / "python")
    version = subprocess.run(
        [py, "-c", "import importlib.metadata as m; print(m.version('typer'))"], capture_output=True, text=True
    )
    floor = next(r for r in _pyproject_deps() if r.startswith("typer"))
    assert f">={version.stdout.strip()}" in floor, (floor, version.stdout)  # the venv really is the floor
    r = subprocess.run([py, "-m", "harness", *argv], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 2, r.stderr
    assert says in _one_line(r.stderr)


def _pyproject_deps() -> list[str]:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]


def test_typer_is_pinned_between_tested_bounds():
    typer_req = next(r for r in _pyproject_deps() if r.startswith("typer"))
    assert ">=" in typer_req and "<" in typer_req.replace("<=", "<"), typer_req


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sig", "code", "word"), [(signal.SIGTERM, 143, "terminated"), (signal.SIGINT, 130, "interrupted")]
)
def test_a_signalled_run_exits_with_the_signal_code_and_resumes(tmp_path, sig, code, word):
    out = tmp_path / "slow.csv"
    env = {**os.environ, "HARNESS_TEST_PYTHON": sys.executable, "PYTHONPATH": str(ROOT)}
    args = [sys.executable, "-m", "harness", "run", "--env", DATA / "cpu-env.yaml", "--suite", DATA / "slow.yaml"]
    args += ["--out", out, "--launches", "1"]
    p = subprocess.Popen(
        list(map(str, args)), env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    journal = Path(f"{out}.journal.jsonl")
    deadline = time.time() + 240
    while time.time() < deadline and not (journal.exists() and '"kind": "rep"' in journal.read_text()):
        time.sleep(0.2)
    p.send_signal(sig)
    _, err = p.communicate(timeout=120)
    assert p.returncode == code, err
    assert err.strip().splitlines()[-1] == f"harness: {word}: rerun with --resume"
    assert "Traceback" not in err
    r = subprocess.run(
        list(map(str, [*args, "--resume"])), env=env, cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert sorted(json.loads(p)["M"] for p in load_results(out)["params"]) == [16, 17, 18, 19, 20, 21]


def test_a_bug_in_harness_exits_3_with_its_traceback_never_1(monkeypatch, capsys):
    """1 means "regression found": an internal error must not pass for one (nor for a clean run)."""
    import harness.compare.compare

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(harness.compare.compare, "compare_files", broken)
    with pytest.raises(SystemExit) as ex:
        main(["compare", str(DATA / "golden.csv"), str(DATA / "tot.csv")])
    assert ex.value.code == 3
    err = capsys.readouterr().err
    assert "Traceback" in err and "RuntimeError: boom" in err
    assert err.strip().splitlines()[-1].startswith("harness: internal error")


def test_a_reader_that_closes_the_pipe_does_not_change_the_exit_code_or_the_files(tmp_path):
    """`harness compare … | head -1`: the command still writes every file and exits with what it decided (0, or
    1 for a gated finding), not 1 for a broken pipe, and says nothing about it."""
    md = tmp_path / "c.md"
    for gate, want in (([], 0), (["--fail-on-regression"], 1)):
        md.unlink(missing_ok=True)
        cmd = [sys.executable, "-m", "harness", "compare", str(DATA / "golden.csv"), str(DATA / "tot.csv"),
               "--markdown", str(md), *gate]  # fmt: skip
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
        proc.stdout.readline()
        proc.stdout.close()  # what `head -1` does after its line
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=120) == want and md.read_text().startswith("<!-- harness")
        assert all(line.startswith("warning:") for line in err.splitlines()), err  # the comparison's own, no more


@pytest.mark.parametrize(
    ("args", "code"),
    [([], 0), (["--fail-on-regression"], 1), (["--unstable", "never"], 2)],
    ids=["clean", "gated", "refused"],
)
def test_compare_ends_quickly_with_what_main_gives(tmp_path, capsys, args, code):
    """`python -m harness compare` skips the interpreter's teardown (process.QUICK_EXIT): the same exit code, output
    and files as main() in this process."""
    golden, tot = str(DATA / "golden.csv"), str(DATA / "tot.csv")
    with pytest.raises(SystemExit) as ex:
        main(["compare", golden, tot, "--out", str(tmp_path / "main.csv"), *args])
    here = capsys.readouterr()
    cmd = [sys.executable, "-m", "harness", "compare", golden, tot, "--out", str(tmp_path / "cli.csv"), *args]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert (ex.value.code or 0) == r.returncode == code, r.stderr
    assert r.stdout == here.out and r.stderr == here.err.replace("main.csv", "cli.csv")
    if code != 2:
        assert (tmp_path / "cli.csv").read_bytes() == (tmp_path / "main.csv").read_bytes()


def test_compare_pauses_the_collector_only_for_the_process_first_imports():
    # as a command: collections paused while the compare stage is imported, what it made frozen; main() called
    # again in a process that has pandas already (tests) leaves the collector alone
    code = (
        "import gc, sys\n"
        "from harness.process import imports_kept\n"
        "assert 'pandas' not in sys.modules\n"
        "with imports_kept():\n"
        "    assert not gc.isenabled()\n"
        "    import harness.compare.compare\n"
        "assert gc.isenabled() and gc.get_freeze_count() > 0\n"
        "frozen = gc.get_freeze_count()\n"
        "with imports_kept():\n"
        "    assert gc.isenabled()\n"
        "assert gc.get_freeze_count() == frozen\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr


def test_compare_sets_numpy_up_before_importing_it():
    """No huge pages for numpy's arrays and no OpenBLAS thread (harness.process.quiet_numpy), unless the
    environment says otherwise: set before numpy is imported, when it still reads them."""
    code = (
        "import os, sys; from harness import process; process.quiet_numpy(); import numpy; "
        "core = getattr(numpy, '_core', None) or numpy.core; "  # numpy 2, numpy 1
        "print(core.multiarray._get_madvise_hugepage(), os.environ['OPENBLAS_NUM_THREADS'])"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("NUMPY_MADVISE_HUGEPAGE", "OPENBLAS_NUM_THREADS")}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
    assert run.stdout.split() == ["False", "1"], run.stderr
    env["NUMPY_MADVISE_HUGEPAGE"] = "1"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
    assert run.stdout.split() == ["True", "1"], run.stderr

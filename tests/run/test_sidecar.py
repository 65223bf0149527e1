"""The sidecar a run writes: the stack, the method, and each kernel's SPEC summary (what later stages show)."""

from __future__ import annotations

import json
import subprocess

from harness.envs.spec import load_env_spec
from harness.inputs.suite import load_suite
from harness.results.schema import SCHEMA_VERSION, sidecar_path
from harness.run.options import RunOptions, run_options
from harness.run.sidecar import git_commit, run_sidecar, sidecar_triton, update_sidecar, write_sidecar
from tests.conftest import DATA, ROOT

INFO = {
    "python": {"executable": "/usr/bin/python3", "version": "3.12"},
    "triton": {"version": "3.6.0", "path": "/site/triton"},
    "torch": {"version": "2.11"},
    "knobs": {},
    "backend": "interp",
    "arch": "interp",
    "gpu": {"name": "CPU interpreter"},
}


def test_the_sidecar_records_the_kernels_and_is_updated_in_place(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_TEST_PYTHON", "python3")
    spec = load_env_spec(DATA / "cpu-env.yaml")
    cases = load_suite(ROOT / "examples" / "softmax.yaml")
    opts = RunOptions()
    out = tmp_path / "r.csv"
    meta = run_sidecar(spec, INFO, opts, "wallclock", 3, run_options(spec, opts, "s"), cases, out, "s.yaml")
    assert meta["schema_version"] == SCHEMA_VERSION == 2 and meta["timing"] == "wallclock"
    assert meta["kernels"]["softmax"]["peak"] == "memory" and meta["kernels"]["softmax"]["plot"]["x"] == "N"
    assert meta["kernel_sources"] == {"softmax": str(ROOT / "examples" / "softmax.py")}  # what retune loads
    import hashlib

    code = hashlib.sha256((ROOT / "examples" / "softmax.py").read_bytes()).hexdigest()
    assert meta["kernel_content"] == {"softmax": code}  # what compare and merge tell an edited kernel by
    write_sidecar(out, meta)
    update_sidecar(out, gpu={"after": {"temperature_c": 40}}, precompile={"jobs": 2})
    back = json.loads(sidecar_path(out).read_text())
    assert (
        back["gpu"] == {"name": "CPU interpreter", "after": {"temperature_c": 40}} and back["precompile"]["jobs"] == 2
    )
    assert sidecar_triton(out) == INFO["triton"] and sidecar_triton(tmp_path / "none.csv") == {}


def _git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def test_a_library_checkouts_commit_is_its_own_not_an_enclosing_repositorys(tmp_path):
    """A checkout's commit is its git HEAD; a `git archive` snapshot staged in a folder the enclosing repository
    ignores (harness's .stage/) names its commit in .git_archival.txt, not the enclosing repository's HEAD."""
    outer = tmp_path / "harness"
    (outer / ".stage" / "lib").mkdir(parents=True)
    (outer / ".gitignore").write_text(".stage/\n")
    _git(outer, "init", "-q")
    _git(outer, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x")
    _git(outer, "add", ".gitignore")
    _git(outer, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "y")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=outer, capture_output=True, text=True).stdout.strip()
    staged = outer / ".stage" / "lib"
    assert git_commit(str(outer)) == head  # a checkout of its own
    assert git_commit(str(staged)) is None  # ignored by the repository around it, and no .git_archival.txt
    sha = "e4048607a535ace3a2b51ded31b1c8c2d45c0879"
    (staged / ".git_archival.txt").write_text(f"node: {sha}\nnode-date: 2026-08-22T23:18:01+08:00\n")
    assert git_commit(str(staged)) == sha
    (staged / ".git_archival.txt").write_text("node: $Format:%H$\n")  # never filled in by git archive
    assert git_commit(str(staged)) is None
    assert git_commit(str(tmp_path / "nowhere")) is None

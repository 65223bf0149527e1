"""`harness retune` end to end on the CPU: the two real venvs (Triton 3.6.0 golden, 3.9.0 TOT), the interpreter, and
a user kernel whose speed its config sets by design (tests/data/retune_kernel.py says which config is best under
which stack). One retune is killed in the middle of its search and run again to the end; the tests read what it
left: the search's path, the files (placement, byte-identical copies, notes), the guard's refusals, the cache.

The comparison is made with a 25 % rule (``harness compare --rel 1.25``), which the retune takes from it: under the
interpreter the times are wall-clock milliseconds (the toy's sleeps, 30 to 80 ms a launch), which a busy 2-core
machine stretches by a few ms now and then, and the kernel's configs differ by 60 % or more.
"""

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

import pandas as pd
import pytest

from harness.inputs.suite import load_suite
from harness.kernel_api.configs import resolve
from tests.conftest import DATA, ROOT, cli

pytestmark = pytest.mark.slow
VENVS = [ROOT / ".venvs" / name / "bin" / "python" for name in ("golden", "tot")]
if not all(p.exists() for p in VENVS):
    pytest.skip("run `make test` (or harness env create envs/venv-*.yaml) to build the venvs", allow_module_level=True)

TOY = "interp-RETUNE-TOY"
#: cache lines once the seeds and the first neighbours are timed: the kill comes in the search's next batch
KILL_AFTER = 21


def harness(args, env, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=900, **kw)  # fmt: skip


def lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def reps(journal: Path) -> int:
    return sum('"kind": "rep"' in x for x in journal.read_text().splitlines()) if journal.exists() else 0


def kill_in_the_middle(args: list, env: dict, out: Path) -> dict[str, str]:
    """Start a retune and SIGKILL it (its process group) in the middle of the search's third batch, a few reps
    into it; the runs' journals and results files as they were at the kill."""
    p = subprocess.Popen([sys.executable, "-m", "harness", *map(str, args)], env=env, cwd=ROOT,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    deadline = time.monotonic() + 600
    while lines(out / "cache.jsonl") < KILL_AFTER and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    done = set((out / "runs").glob("search-*.journal.jsonl"))
    cut = None
    while p.poll() is None and time.monotonic() < deadline and (cut is None or reps(cut) < 5):
        cut = next((j for j in (out / "runs").glob("search-*.journal.jsonl") if j not in done), None)
        time.sleep(0.05)
    assert p.poll() is None, "the retune ended before it could be killed"
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    files = [*(out / "runs").glob("search-*.csv"), *(out / "runs").glob("search-*.journal.jsonl")]
    return {"cut": cut.name, **{f.name: f.read_text() for f in files}}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("retune")
    configs = root / "configs"
    shutil.copytree(DATA / "retune_configs", configs)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HARNESS_CONFIG_DIR": str(configs), "COLUMNS": "120"}
    golden, tot, cmp = root / "golden.csv", root / "tot.csv", root / "compare.csv"
    r = harness(["run", "--env", "envs/venv-golden.yaml", "--out", golden, "--with-env", "envs/venv-tot.yaml",
                 "--with-out", tot, "--suite", DATA / "retune.yaml", "--launches", "1"], env)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    r = harness(["compare", golden, tot, "--out", cmp, "--rel", "1.25"], env)
    assert r.returncode == 0, r.stderr[-2000:]
    out = root / "out"
    args = ["retune", cmp, "--env", "envs/venv-tot.yaml", "--golden-env", "envs/venv-golden.yaml", "--out", out,
            "--launches", "1"]  # fmt: skip
    at_kill = kill_in_the_middle(args, env, out)
    killed_cache = (out / "cache.jsonl").read_text()
    r = harness(args, env)
    assert r.returncode == 0, r.stderr[-3000:]
    data = json.loads((out / "retune.json").read_text())
    cache = [json.loads(x) for x in (out / "cache.jsonl").read_text().splitlines()]
    return SimpleNamespace(root=root, configs=configs, env=env, out=out, args=args, data=data, cache=cache,
                           at_kill=at_kill, killed_cache=killed_cache, stdout=r.stdout)  # fmt: skip


def text(run, name: str) -> str:
    return (run.configs / name).read_text()


def slot(run, name: str) -> dict:
    return next(s for s in run.data["slots"] if s["slot"] == name)


def test_the_search_walks_to_the_tot_optimum(run):
    """From the seed BLOCK_N 16, two coordinate moves (16 → 32 → 64); from 32 one; the search converged."""
    any16 = slot(run, f"{TOY}.json:any (N=16)")
    assert [m["config"]["BLOCK_N"] for m in any16["moves"]][:2] == [32, 64]
    assert [m["level"] for m in any16["moves"]][:2] == [1, 1]
    small = slot(run, f"{TOY}.json:M_LEQ_16 (N=16)")
    assert small["moves"][0]["config"]["BLOCK_N"] == 64
    assert all(s["ended"] == "no neighbour is better (converged)" for s in (any16, small))


def test_placement_shared_bucket_and_a_per_shape_file_with_byte_identical_copies(run, monkeypatch):
    """M_LEQ_16 of the default file serves only N=16 M=8, which the change fixes: edited in place. The default's
    `any` also serves N=32, which BLOCK_N 64 slows under TOT: N=16 gets its own file instead, whose other bucket is
    the default's line, byte for byte; the default's `any` and the N=48 file are untouched."""
    original = (DATA / "retune_configs" / f"{TOY}.json").read_text().splitlines()
    default = text(run, f"{TOY}.json").splitlines()
    own = text(run, f"{TOY}-N=16.json").splitlines()
    assert default[:1] + default[3:] == original[:1] + original[2:]  # `any` as it was
    assert default[1].startswith('  "_tuned_for": {"M_LEQ_16": {"triton": "3.9.0"')
    assert json.loads(default[2].rstrip(",").split(": ", 1)[1])["BLOCK_N"] == 64
    assert own[2] == default[2]  # the M_LEQ_16 bucket: a copy of the default's, byte for byte
    assert json.loads(own[3].split(": ", 1)[1])["BLOCK_N"] == 64 and own[3].startswith('  "any": ')
    assert set(json.loads(text(run, f"{TOY}-N=16.json"))["_tuned_for"]) == {"M_LEQ_16", "any"}
    assert text(run, f"{TOY}-N=48.json") == (DATA / "retune_configs" / f"{TOY}-N=48.json").read_text()
    got = {(m, n): resolve("RETUNE-TOY", "interp", m, f"N={n}", directory=run.configs).config["BLOCK_N"]
           for m, n in ((8, 16), (32, 16), (64, 16), (32, 32), (32, 48), (64, 48))}  # fmt: skip
    assert got == {(8, 16): 64, (32, 16): 64, (64, 16): 64, (32, 32): 16, (32, 48): 16, (64, 48): 16}
    monkeypatch.setenv("HARNESS_CONFIG_DIR", str(run.configs))
    assert len(load_suite(DATA / "retune.yaml")) == 6  # the notes pass the suite's config-file checks
    kept = {(c["kind"], c["file"], c["bucket"]) for c in run.data["kept"]}
    assert kept == {("shared", f"{TOY}.json", "M_LEQ_16"), ("per-shape", f"{TOY}-N=16.json", "any")}


def test_the_guard_rejects_the_shared_edit_that_slows_a_neighbour(run):
    guard = [r for r in run.data["rejected"] if r["stage"] == "guard"]
    assert len(guard) == 1 and guard[0]["why"].startswith(f"shared {TOY}.json:any: retune_toy M32_N32: TOT slower")
    per_shape = next(c for c in run.data["kept"] if c["kind"] == "per-shape")
    assert {c["case"] for c in per_shape["cases"]} == {"retune_toy/M32_N16", "retune_toy/M64_N16"}
    assert {c["verdict"] for c in per_shape["cases"]} == {"fixed"}


def test_a_fix_that_slows_golden_is_not_made(run):
    """N=48 M=32: every config that fixes it under TOT is twice as slow under golden: it stays a regression."""
    assert [(x["case"], x["why"]) for x in run.data["left"]] == [
        ("retune_toy/M32_N48", "every config that fixes it under TOT slows golden")
    ]
    golden = [r for r in run.data["rejected"] if r["stage"] == "golden"]
    assert golden and all("retune_toy/M32_N48: golden slower" in r["why"] for r in golden)
    assert all(r["config"]["BLOCK_N"] >= 64 for r in golden)


def test_a_resource_failure_prunes_its_tile(run):
    """BLOCK_N 128 runs out of shared memory under TOT: the first slot to try it fails to compile it, the slots
    that reach BLOCK_N 64 later never compile it."""
    failed = [e for e in run.cache if '"BLOCK_N":128' in e["key"]["config"] and e["key"]["stack"].startswith(
        "triton 3.9.0")]  # fmt: skip
    assert {e["status"] for e in failed} == {"compile_error"} and "out of resource" in failed[0]["error"]
    assert {e["key"]["case_id"] for e in failed} == {"M8_N16"}
    assert run.data["cost"]["pruned"] >= 2


def test_before_after_report_and_diff(run):
    # 4 regressions before, 1 left: the 3 others fixed by kept changes, none merely not regressed when timed again
    assert run.data["kernels"] == [{"kernel": "retune_toy", "cases": 6, "regressions_before": 4, "fixed": 3,
                                    "retimed": 0, "regressions_after": 1, "failed_before": 0,
                                    "failed_after": 0}]  # fmt: skip
    md = (run.out / "retune.md").read_text()
    assert "| retune_toy | 6 | 4 / 6 → 1 / 6 | 3 | 0 | 0 → 0 |" in md and "## Search cost" in md
    diff = (run.out / "retune.diff").read_text()
    folder = str(run.configs).lstrip("/")  # outside the working folder: the diff names it in full
    assert f"+++ b/{folder}/{TOY}-N=16.json" in diff and f"--- a/{folder}/{TOY}.json" in diff and "N=48" not in diff
    undo = subprocess.run(["git", "apply", "-R", "--check", "--directory=/", "--unsafe-paths", "-p1"],
                          input=diff, text=True, capture_output=True, cwd=run.root)  # fmt: skip
    assert undo.returncode == 0, undo.stderr  # the diff is exactly what was written: it un-applies cleanly
    assert "4 / 6 → 1 / 6" in run.stdout and (run.out / "retune.html").exists()
    assert sorted(p.name for p in (run.out / "configs").iterdir()) == [f"{TOY}-N=16.json", f"{TOY}.json"]


def test_a_killed_retune_resumes_without_measuring_anything_twice(run):
    """Rerun after a SIGKILL: the batches finished before the kill come from the cache, the one it cut is resumed
    by the runner's journal (nothing prepared twice, its reps kept), and no (case, config, stack) is timed in two
    runs."""
    assert lines(run.out / "cache.jsonl") > len(run.killed_cache.splitlines()) >= KILL_AFTER
    assert (run.out / "cache.jsonl").read_text().startswith(run.killed_cache)
    files = {k: v for k, v in run.at_kill.items() if k != "cut"}
    for name, before in files.items():  # every file of the killed search: the resumed retune continued it
        after = (run.out / "runs" / name).read_text()
        assert after.startswith(before.rsplit("\n", 1)[0])
    cut = run.out / "runs" / run.at_kill["cut"]  # the batch the kill cut, 5 or more reps in
    entries = [json.loads(x) for x in cut.read_text().splitlines()]
    prepared = [e["key"] for e in entries if e["kind"] == "prepare"]
    assert len(prepared) == len(set(prepared)) and reps(cut) >= 5  # resumed: nothing prepared twice
    kept = [json.loads(x) for x in run.at_kill[run.at_kill["cut"]].splitlines()[:-1]]  # the last may be torn
    assert [e for e in entries if e["kind"] == "rep"][: len([e for e in kept if e["kind"] == "rep"])] == [
        e for e in kept if e["kind"] == "rep"
    ]  # the reps taken before the kill are the resumed batch's first reps
    timed = []
    for f in (run.out / "runs").glob("search-*.csv"):  # search-STACK-HASH.csv
        timed += [(f.name.split("-")[1], c) for c in pd.read_csv(f)["case_id"]]
    assert len(timed) == len(set(timed))
    keys = [json.dumps(e["key"], sort_keys=True) for e in run.cache]
    assert len(keys) == len(set(keys))


def test_a_second_retune_measures_nothing_new(run):
    """Over the files the first wrote: the fixed slots' configs are no regression now (timed before), N=48 is
    refused by the same timings: everything from the cache, no run, nothing written."""
    before = {p.name: p.read_text() for p in run.configs.iterdir()}
    runs = sorted(p.name for p in (run.out / "runs").iterdir())
    r = harness([*run.args, "--dry-run"], run.env)
    assert r.returncode == 0, r.stderr[-2000:]
    data = json.loads((run.out / "retune.json").read_text())
    assert data["cost"]["timed"] == 0 and data["cost"]["runs"] == 0 and data["cost"]["from_cache"] > 0
    assert sorted(p.name for p in (run.out / "runs").iterdir()) == runs
    assert {p.name: p.read_text() for p in run.configs.iterdir()} == before
    assert data["kept"] == [] and [x["case"] for x in data["left"]] == ["retune_toy/M32_N48"]
    assert {s["outcome"] for s in data["slots"]} == {"not regressed", "rejected"}
    assert any("ran other configs than the config files give now" in n for n in data["notes"])


def buckets(text: str) -> dict:
    """A config file's buckets without num_warps, which the toy's speed does not depend on (noise picks it)."""
    return {b: {k: v for k, v in c.items() if k != "num_warps"} for b, c in json.loads(text).items() if b[0] != "_"}


def test_hints_from_another_retune_start_each_search_at_its_best(run, tmp_path):
    """A fresh retune of the shipped files (a fresh cache: nothing timed here yet) with the first retune's timings
    as hints: each slot times the hinted optimum with its seed, moves there in its first step (a level-0 move),
    and ends in fewer search runs with the same files."""
    configs = tmp_path / "configs"
    shutil.copytree(DATA / "retune_configs", configs)
    env = {**run.env, "HARNESS_CONFIG_DIR": str(configs)}
    out = tmp_path / "hinted"
    args = [*run.args[: run.args.index("--out")], "--out", out, "--launches", "1", "--dry-run", "--hints", run.out]
    r = harness(args, env)
    assert r.returncode == 0, r.stderr[-3000:]
    data = json.loads((out / "retune.json").read_text())
    any16 = slot(SimpleNamespace(data=data), f"{TOY}.json:any (N=16)")
    assert any16["hints"] >= 1 and (any16["moves"][0]["level"], any16["moves"][0]["config"]["BLOCK_N"]) == (0, 64)
    assert "(a hint)" in (out / "retune.md").read_text()
    runs = [len(list((o / "runs").glob("search-*.csv"))) for o in (out, run.out)]
    assert runs[0] < runs[1]
    written = {p.name: buckets(p.read_text()) for p in (out / "configs").iterdir()}
    assert written == {name: buckets(text(run, name)) for name in written}  # as the first retune wrote in place
    assert any("hints: " in n for n in data["notes"])


def test_refusals_are_one_line(run, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)  # in process: the env specs are named from the repository, as the retunes above
    monkeypatch.setenv("HARNESS_CONFIG_DIR", str(run.configs))
    code, _, err = cli(capsys, "retune", run.root / "compare.csv", "--env", "envs/venv-tot.yaml", "--golden-env",
                       "envs/venv-golden.yaml", "--out", tmp_path / "o", "--kernel", "retune_tyo")  # fmt: skip
    assert code == 2
    assert err.strip().splitlines() == [
        "harness: error: --kernel 'retune_tyo': no such kernel in "
        f"{run.root / 'compare.csv'} (did you mean 'retune_toy'?)"
    ]
    code, _, err = cli(capsys, "retune", tmp_path / "none.csv", "--env", "x", "--golden-env", "y", "--out",
                       tmp_path / "o")  # fmt: skip
    assert code == 2 and "no such compare file" in err
    for extra, said in (
        (["--hints", tmp_path / "none"], f"--hints {tmp_path / 'none'}: no such file"),
        (["--search-min", "40"], "--search-min 40: expected minutes from 0 to --budget-min"),
    ):
        code, _, err = cli(capsys, *run.args[:-4], "--out", tmp_path / "o", *extra)
        assert code == 2 and err.strip().splitlines() == [f"harness: error: {said}"]

"""A kernel library's checkout through `harness run` and `compare` on the CPU interpreter: the AITER adapter
(examples/aiter) against the stand-in library (tests/data/fake_aiter), configs from the library's own files as on
gfx950, the config that ran recorded; an op the checkout lacks is an import_error; two checkouts of the library
that differ in one kernel line, under one Triton, compared: one suite file, the checkout named by a variable."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.compare.compare import compare_files
from harness.results.load import load_results
from harness.results.schema import sidecar_path
from tests.conftest import DATA, ROOT, cli

FAKE = DATA / "fake_aiter"
ADAPTER = ROOT / "examples" / "aiter" / "batched_gemm.py"
ENV = {**os.environ, "HARNESS_TEST_PYTHON": sys.executable, "PYTHONPATH": str(ROOT), "COLUMNS": "160"}
KERNEL = "aiter/ops/triton/_triton_kernels/gemm/batched/batched_gemm_bf16.py"


def _suite(tmp_path: Path, a8w8: bool = False) -> Path:
    extra = f"  - kernel: {ADAPTER}:A8W8\n    B: 2\n    M: 16\n    N: 64\n    K: 128\n" if a8w8 else ""
    p = tmp_path / ("both.yaml" if a8w8 else "bf16.yaml")
    p.write_text(
        "library: {path: '${FAKE_AITER}', package: aiter, init: false, configs: [aiter/ops/triton/configs]}\n"
        "config_arch: gfx950\n"
        "entries:\n"
        f"  - kernel: {ADAPTER}:Bf16\n    B: 2\n    M: [16, 40]\n    N: 64\n    K: 128\n    dtype: fp16\n" + extra
    )
    return p


def _run(suite: Path, checkout: Path, out: Path) -> subprocess.CompletedProcess:
    args = ["run", "--env", str(DATA / "cpu-env.yaml"), "--suite", str(suite), "--out", str(out)]
    return subprocess.run(
        [sys.executable, "-m", "harness", *args, "--reps", "1", "--launches", "3"],
        env={**ENV, "FAKE_AITER": str(checkout)}, cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


@pytest.fixture(scope="module")
def checkouts(tmp_path_factory):
    """Two checkouts of the stand-in library: main, and a PR whose K loop runs over 1-wide steps of K while still
    advancing by BLOCK_SIZE_K (every extra step loads masked zeros): correct, and tens of times the work, so that
    the two runs, one after the other on a loaded machine, cannot swap places (8-wide steps did, at load 4-5)."""
    root = tmp_path_factory.mktemp("checkouts")
    main, pr = root / "main", root / "pr"
    shutil.copytree(FAKE, main)
    shutil.copytree(FAKE, pr)
    k = pr / KERNEL
    text = k.read_text()
    loop = "for k in range(0, SPLITK_BLOCK_SIZE // BLOCK_SIZE_K):"
    assert text.count(loop) == 1
    k.write_text(text.replace(loop, "for k in range(0, SPLITK_BLOCK_SIZE):"))
    return root, main, pr


def test_the_adapter_runs_the_librarys_kernel_with_its_own_configs(checkouts):
    root, main, _ = checkouts
    out = root / "main.csv"
    r = _run(_suite(root, a8w8=True), main, out)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    df = load_results(out).set_index("case_id")
    bf16 = df[df["kernel"] == "aiter_batched_gemm_bf16"]
    assert (bf16["status"] == "ok").all(), bf16[["status", "error"]]
    src = bf16.loc["B2_M16_N64_K128_fp16", "config_source"]
    assert src == "gemm/gfx950-BATCHED_GEMM-A16W16-N=64-K=128.json:M_LEQ_16 (tuned) (configs of gfx950)"
    ran = json.loads(bf16.loc["B2_M16_N64_K128_fp16", "config"])
    # the library's post-processing ran (split-K fields), the AMD-only launch option never reached the CPU, and
    # the kernel's own constexpr waves_per_eu was kept
    assert ran["SPLITK_BLOCK_SIZE"] == 128 and ran["NUM_KSPLIT"] == 1 and ran["waves_per_eu"] == 2
    assert "matrix_instr_nonkdim" not in ran
    a8w8 = df[df["kernel"] == "aiter_batched_gemm_a8w8"].iloc[0]
    assert a8w8["status"] == "import_error"
    assert a8w8["error"].startswith(
        "cannot import aiter.ops.triton.gemm.batched.batched_gemm_a8w8: ModuleNotFoundError"
    )
    assert "batched_gemm.py:" in a8w8["error"].splitlines()[0]  # the adapter's line that imports it
    side = json.loads(sidecar_path(out).read_text())
    assert side["libraries"]["aiter"]["path"] == str(main)
    look = side["config_lookup"]["aiter_batched_gemm_bf16"]
    assert look == {"folders": [str(main / "aiter/ops/triton/configs")], "layout": "aiter", "config_arch": "gfx950"}


def test_two_checkouts_of_the_library_under_one_triton_compared(checkouts, capsys, monkeypatch):
    root, main, pr = checkouts
    suite = _suite(root)
    r1, r2 = _run(suite, main, root / "a.csv"), _run(suite, pr, root / "b.csv")
    assert r1.returncode == 0 and r2.returncode == 0, (r1.stderr + r2.stderr)[-3000:]
    assert set(load_results(root / "b.csv")["status"]) == {"ok"}  # the PR's kernel is still correct
    cmp = compare_files(root / "a.csv", root / "b.csv")
    assert set(cmp.table["verdict"]) == {"regression"}, cmp.table[["case_id", "verdict"]]
    assert not cmp.same_triton  # one Triton, two checkouts: a comparison, not a stack against itself
    monkeypatch.setenv("COLUMNS", ENV["COLUMNS"])  # the comparison in process, as wide as the runs' terminal
    code, out, err = cli(capsys, "compare", root / "a.csv", root / "b.csv", "--fail-on-regression")
    assert code == 1 and "same Triton" not in err, out + err


def test_a_resume_under_another_config_arch_is_refused():
    from harness.errors import HarnessError
    from harness.run.locks import resume_conflict

    with pytest.raises(HarnessError, match=r"--resume with --config-arch gfx942 but the file was measured with gfx950"):
        resume_conflict({"config_arch": "gfx950"}, {"config_arch": "gfx942"}, "out.csv")


def test_the_librarys_own_lookup_in_the_worker_runs_the_config_harness_resolves(checkouts, monkeypatch):
    """Bf16OwnLookup: the library's own _get_config, called in the worker with its arch question answered as the
    suite's config arch, instead of harness's reading of its files; the same config runs, the source says whose."""
    root, main, _ = checkouts
    suite = _suite(root)
    own = root / "own.yaml"
    own.write_text(suite.read_text().replace(":Bf16\n", ":Bf16OwnLookup\n"))
    r = _run(own, main, root / "own.csv")
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    df = load_results(root / "own.csv").set_index("case_id")
    row = df.loc["B2_M16_N64_K128_fp16"]
    assert row["status"] == "ok", row["error"]
    assert row["config_source"] == "lookup_config: AITER's batched_gemm_bf16._get_config (tuned) (configs of gfx950)"
    ran = json.loads(row["config"])
    assert ran["SPLITK_BLOCK_SIZE"] == 128 and ran["waves_per_eu"] == 2 and "matrix_instr_nonkdim" not in ran
    # harness's reading of the same files picks the same bucket (before the split-K step and the backend's cut)
    from harness.inputs.suite import load_suite
    from harness.run.suiteview import view

    monkeypatch.setenv("FAKE_AITER", str(main))
    (mine,) = [v for v in view(load_suite(suite), "interp") if v.case_id == "B2_M16_N64_K128_fp16"]
    assert mine.source.startswith("gemm/gfx950-BATCHED_GEMM-A16W16-N=64-K=128.json:M_LEQ_16")
    assert {k: v for k, v in mine.config.items() if k != "matrix_instr_nonkdim"}.items() <= ran.items()
    side = json.loads(sidecar_path(root / "own.csv").read_text())
    assert side["config_lookup"]["aiter_batched_gemm_bf16"]["layout"] == "lookup_config"


def test_the_library_decides_through_its_users_entry_and_harness_previews(checkouts):
    """Bf16Decides: AITER's op called as its users call it (config=None): the op's own lookup picks, the row
    records its return (spied, not re-implemented), and harness's reading of the same files, the preview, agrees."""
    root, main, _ = checkouts
    decides = root / "decides.yaml"
    decides.write_text(_suite(root).read_text().replace(":Bf16\n", ":Bf16Decides\n"))
    r = _run(decides, main, root / "decides.csv")
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert "preview" not in r.stderr  # no warning: the preview and the library agree here
    df = load_results(root / "decides.csv").set_index("case_id")
    row = df.loc["B2_M16_N64_K128_fp16"]
    assert row["status"] == "ok", row["error"]
    assert row["config_source"] == "library: AITER's batched_gemm_bf16 op, its triton backend's lookup"
    ran = json.loads(row["config"])
    assert ran["SPLITK_BLOCK_SIZE"] == 128 and ran["NUM_KSPLIT"] == 1  # AITER's post-processing, by AITER

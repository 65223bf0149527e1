"""lab/gpu_validation/aiter_stage.py against a git repository of the stand-in library (tests/data/fake_aiter): it
stages what the adapter imports (followed in the source), the ops' config files and the commit, and nothing else;
the example suite loads against the staged folder."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from harness.inputs.suite import load_suite
from harness.run.sidecar import git_commit
from tests.conftest import DATA, ROOT

SCRIPT = ROOT / "lab" / "gpu_validation" / "aiter_stage.py"


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """The stand-in as a git repository, plus files a stage must leave out: C++ sources, tests, and a module
    nothing imports."""
    root = tmp_path_factory.mktemp("aiter-git")
    shutil.copytree(DATA / "fake_aiter", root, dirs_exist_ok=True)
    (root / "csrc").mkdir()
    (root / "csrc" / "kernel.cu").write_text("// C++\n")
    (root / "op_tests").mkdir()
    (root / "op_tests" / "test_bf16.py").write_text("import aiter\n")
    (root / "aiter" / "ops" / "triton" / "unused.py").write_text("X = 1\n")
    (root / "LICENSE").write_text("MIT\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "stand-in"], cwd=root, check=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True).stdout.strip()
    return root / ".git", head


def test_the_stage_holds_what_the_adapter_imports_and_the_configs(repo, tmp_path):
    git_dir, head = repo
    out = tmp_path / "stage" / "aiter"
    r = subprocess.run(
        [sys.executable, str(SCRIPT), "--git-dir", str(git_dir), "--out", str(out), "--list"],
        capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    files = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()}
    ops = "aiter/ops/triton"
    assert {
        f"{ops}/gemm/batched/batched_gemm_bf16.py",  # the op, and what it imports
        f"{ops}/_triton_kernels/gemm/batched/batched_gemm_bf16.py",
        f"{ops}/utils/gemm_config_utils.py",
        f"{ops}/utils/_triton/arch_info.py",
        f"{ops}/__init__.py",  # the packages on the way (Python runs them)
        f"{ops}/_triton_kernels/gemm/batched/__init__.py",
        f"{ops}/configs/gemm/gfx950-BATCHED_GEMM-A16W16.json",
        f"{ops}/configs/gfx942/triton/gemm/batched_gemm_a16w16/DEFAULT.json",  # the nested layout too
        "LICENSE",
        ".git_archival.txt",
    } <= files
    assert "aiter/__init__.py" not in files  # AITER's loads its C++ ops; the suite says init: false
    assert not any(f.startswith(("csrc/", "op_tests/")) or f.endswith("unused.py") for f in files)
    assert git_commit(str(out)) == head  # recorded in the results as the library's commit
    # the ops the stand-in lacks are named, not an error
    assert "imported but not in the checkout" in r.stdout and "batched_gemm_a8w8" in r.stdout
    assert f"AITER {head[:10]}" in r.stdout


def test_the_example_suite_loads_against_the_staged_folder(repo, tmp_path, monkeypatch):
    git_dir, _ = repo
    out = tmp_path / "aiter"
    subprocess.run([sys.executable, str(SCRIPT), "--git-dir", str(git_dir), "--out", str(out)], check=True)
    monkeypatch.setenv("AITER_CHECKOUT", str(out))
    cases = load_suite(ROOT / "examples" / "aiter" / "cpu.yaml")
    assert [c.library.path for c in cases] == [str(out.resolve())] * len(cases) and len(cases) == 3


def test_a_pr_and_its_parent(repo, tmp_path):
    """--pr REV: REV's parent in OUT/main, REV in OUT/pr, each naming its commit (harness records it per run)."""
    root = tmp_path / "repo"
    shutil.copytree(repo[0].parent, root)  # the module's repository stays as it is
    git_dir = root / ".git"
    kernel = root / "aiter/ops/triton/_triton_kernels/gemm/batched/batched_gemm_bf16.py"
    kernel.write_text(kernel.read_text() + "\n# the PR's change\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "commit", "-q", "-am", "pr"], cwd=root, check=True)
    head = subprocess.run(
        ["git", "rev-parse", "HEAD", "HEAD^"], cwd=root, capture_output=True, text=True
    ).stdout.split()
    out = tmp_path / "aiter-pr"
    cmd = [sys.executable, str(SCRIPT), "--git-dir", str(git_dir), "--pr", head[0], "--out", str(out)]
    subprocess.run(cmd, check=True, capture_output=True)
    assert git_commit(str(out / "pr")) == head[0] and git_commit(str(out / "main")) == head[1]
    rel = kernel.relative_to(root)
    assert (out / "pr" / rel).read_text().endswith("# the PR's change\n")
    assert not (out / "main" / rel).read_text().endswith("# the PR's change\n")


def test_a_missing_git_dir_is_one_line(tmp_path):
    r = subprocess.run(
        [sys.executable, str(SCRIPT), "--git-dir", str(tmp_path / "none"), "--out", str(tmp_path / "o")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert r.returncode == 2 and r.stderr.strip().startswith("aiter_stage: no git directory")


def _sm90_check(suite):
    return subprocess.run(
        [sys.executable, str(ROOT / "lab" / "gpu_validation" / "sm90_compile_check.py"), str(suite)],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
    )  # fmt: skip


def _suite(tmp_path, checkout, extra=""):
    suite = tmp_path / f"{checkout.name}.yaml"
    suite.write_text(
        f"library: {{path: '{checkout}', package: aiter, init: false, configs: [aiter/ops/triton/configs]}}\n"
        "config_arch: gfx950\n"
        "entries:\n"
        f"  - kernel: {ROOT / 'examples' / 'aiter' / 'batched_gemm.py'}:Bf16\n    B: 2\n    M: 16\n    N: 64\n    K: 128\n"
        + extra
    )
    return suite


def test_the_sm90_compile_check_compiles_without_a_gpu_and_names_what_nvidias_launcher_refuses(tmp_path):
    """lab/gpu_validation/sm90_compile_check.py on the CPU: the stand-in library's bf16 through the adapter compiles
    for sm90 (ptxas from the Triton wheel), and a kernel whose launch passes an AMD-only keyword fails as it would
    on an H100, before any device time is spent."""
    bad = tmp_path / "bad.py"
    text = (ROOT / "examples" / "softmax.py").read_text()
    assert 'num_warps=config["num_warps"])' in text
    bad.write_text(text.replace('num_warps=config["num_warps"])', 'num_warps=config["num_warps"], waves_per_eu=2)'))
    r = _sm90_check(_suite(tmp_path, DATA / "fake_aiter", f"  - kernel: {bad}\n    M: 4\n    N: 128\n"))
    lines = r.stdout.splitlines()
    assert r.returncode == 1, r.stdout + r.stderr[-2000:]
    assert lines[0].startswith("ok      aiter_batched_gemm_bf16/B2_M16_N64_K128: gemm/gfx950-BATCHED_GEMM-A16W16")
    assert "_batched_gemm_bf16_kernel" in lines[0] and "KiB shared" in lines[0]
    assert lines[1].startswith("error   softmax/") and "waves_per_eu was specified but unrecognised" in lines[1]
    assert lines[-1].endswith("2 cases, 1 error, 1 ok")


def test_the_adapter_passes_waves_per_eu_on_nvidia_only_to_a_kernel_that_takes_it(tmp_path):
    """AITER's bf16 kernel took no waves_per_eu argument before July 2026: the adapter reads the checkout's own
    kernel, so the same adapter compiles for sm90 against a checkout with the argument and one without."""
    old = tmp_path / "aiter-old"
    shutil.copytree(DATA / "fake_aiter", old)
    kernel = old / "aiter/ops/triton/_triton_kernels/gemm/batched/batched_gemm_bf16.py"
    text = kernel.read_text()
    assert text.count("    waves_per_eu: tl.constexpr,\n") == 1
    kernel.write_text(text.replace("    waves_per_eu: tl.constexpr,\n", ""))
    r = _sm90_check(_suite(tmp_path, old))
    assert r.returncode == 0 and r.stdout.splitlines()[-1].endswith("1 cases, 1 ok"), r.stdout + r.stderr[-2000:]

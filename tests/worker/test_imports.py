"""The worker runs inside every environment's Python: it may import the standard library, torch, triton, the
kernels, the kernel contract (harness.kernel_api, itself standard library only) and its own package, nothing else
(no pandas, yaml, rich or the rest of harness). Checked twice: every
import statement of its source, and what a real worker process has imported after answering every request."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from harness.envs.spec import load_env_spec
from harness.inputs.kernel import load_kernel
from harness.inputs.suite import Case
from harness.run.cases import worker_case
from harness.run.workers import WORKER, WorkerProc
from tests.conftest import DATA, ROOT

WORKER_DIR = ROOT / "harness" / "worker"
CONTRACT_DIR = ROOT / "harness" / "kernel_api"
#: what the worker and the kernels may import of harness: importing it runs harness/__init__.py, which loads the
#: contract and nothing else
CONTRACT = ("harness", "harness.kernel_api")
ALLOWED = {"torch", "triton", "kernels", "harness"}
#: what the driver side uses and the worker must never need
FORBIDDEN = ("pandas", "yaml", "rich", "typer", "click", "matplotlib", "gspread", "pyarrow")


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in a file, relative imports resolved to the package."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append((node.lineno, "harness.worker" if node.level else node.module or ""))
    return found


def test_the_worker_is_run_by_path():
    assert WORKER == WORKER_DIR / "main.py" and WORKER.is_file()


@pytest.mark.parametrize("path", sorted(WORKER_DIR.glob("*.py")), ids=lambda p: p.name)
def test_worker_source_imports_only_the_standard_library_torch_triton_and_kernels(path):
    for line, mod in imports(path):
        top = mod.partition(".")[0]
        assert top in sys.stdlib_module_names or top in ALLOWED, f"{path.name}:{line} imports {mod}"
        if top == "harness":
            assert _contract(mod) or mod.startswith("harness.worker"), f"{path.name}:{line} imports {mod}"


@pytest.mark.parametrize("path", sorted((ROOT / "kernels").glob("*.py")), ids=lambda p: p.name)
def test_kernels_import_only_the_standard_library_torch_and_triton(path):
    for line, mod in imports(path):
        top = mod.partition(".")[0]
        if mod == "harness.worker":  # a relative import inside kernels/ means kernels itself
            continue
        allowed = top in sys.stdlib_module_names or top in {"torch", "triton", "kernels"} or _contract(mod)
        assert allowed, f"{path.name}:{line}: {mod}"


@pytest.mark.parametrize("path", sorted(CONTRACT_DIR.glob("*.py")), ids=lambda p: p.name)
def test_the_contract_imports_only_the_standard_library(path):
    for line, mod in imports(path):
        top = mod.partition(".")[0]
        assert top in sys.stdlib_module_names or mod.startswith("harness.kernel_api"), f"{path.name}:{line}: {mod}"


def test_importing_harness_loads_only_the_contract():
    """What the worker gets by importing its own package: harness/__init__.py, then the contract, nothing else."""
    for line, mod in imports(ROOT / "harness" / "__init__.py"):
        assert _contract(mod), f"__init__.py:{line}: {mod}"


def _contract(mod: str) -> bool:
    return mod in CONTRACT or mod.startswith("harness.kernel_api.")


@pytest.mark.slow
def test_a_real_worker_imports_nothing_else(tmp_path, monkeypatch):
    """Hello, prepare, time, then ask the process what it has imported."""
    monkeypatch.setenv("HARNESS_TEST_PYTHON", sys.executable)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    spec = load_env_spec(DATA / "cpu-env.yaml")
    k = load_kernel("batched_gemm_bf16")
    case = worker_case(Case(k, k.spec.case_params({"B": 1, "M": 16, "N": 32, "K": 64, "dtype": "fp16"}, "t")))
    w = WorkerProc(spec, "wallclock", tmp_path)
    try:
        assert w.request({"op": "hello"}, 300)["status"] == "ok"
        assert w.request({"op": "prepare", "case": case}, 300)["status"] == "ok"
        assert w.request({"op": "time", "case": case, "n": 1}, 300)["status"] == "ok"
        modules = w.request({"op": "modules"}, 60)["modules"]
    finally:
        w.close()
    assert "torch" in modules and "triton" in modules and "kernels.batched_gemm_bf16" in modules
    assert not [m for m in modules if m.partition(".")[0] in FORBIDDEN]
    assert not [m for m in modules if m.startswith("harness.") and not m.startswith(("harness.worker", *CONTRACT))]
    siblings = {p.stem for p in WORKER_DIR.glob("*.py")} - {"__init__"}
    assert not siblings & set(modules), "a worker module imported as a top-level sibling file"

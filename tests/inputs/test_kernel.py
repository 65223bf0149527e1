"""A kernel's SPEC is read from its file without importing it: the shipped kernels, user files, classes in them,
and every way a file can fail to be a kernel (one line naming the file, before anything runs)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.inputs.kernel import load_kernel, registry
from harness.kernel_api.spec import KernelSpec
from tests.conftest import DATA, ROOT

USER = DATA / "user_kernels.py"
SPEC = """
from harness import KernelSpec, Param, dim

SPEC = KernelSpec(name="k", params=(dim("N"),), flops=lambda p: 2.0 * p["N"], bytes=lambda p: 4.0 * p["N"])
"""
BODY = "def make_inputs(p, seed): pass\ndef launch(inputs, config): pass\ndef reference(inputs): pass\n"


def kfile(tmp_path: Path, text: str, name: str = "k.py") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def refused(text: str, base: Path | None, *fragments: str) -> str:
    with pytest.raises(HarnessError) as info:
        load_kernel(text, base)
    msg = str(info.value)
    assert "\n" not in msg, msg
    for f in fragments:
        assert f in msg, msg
    return msg


def test_the_registry_is_every_kernel_module_by_declared_name():
    reg = registry()
    assert "batched_gemm_bf16" in reg and reg["batched_gemm_bf16"].name == "batched_gemm_bf16.py"
    assert all(not f.name.startswith("_") and f.name != "spec.py" for f in reg.values())


def test_the_driver_reads_the_same_spec_the_worker_imports():
    """The SPEC evaluated from source without torch equals the imported module's (same formulas, same values)."""
    pytest.importorskip("torch")
    from harness.worker.cases import load_kernel as import_kernel

    for name in registry():
        k = load_kernel(name)
        imported = import_kernel(k.source, str(ROOT)).SPEC
        assert isinstance(imported, KernelSpec)
        assert imported.summary() == k.spec.summary(), name
        p = k.spec.case_params({q.name: 64 if q.type == "int" else "x.y" for q in k.spec.params if q.required}, "t")
        for fn in ("flops_of", "bytes_of", "peak_of", "dtype_of", "tolerance_of", "world_size_of"):
            assert getattr(imported, fn)(p) == getattr(k.spec, fn)(p), (name, fn)


def test_specs_load_without_torch_or_triton():
    code = (
        "import sys; sys.modules['torch'] = None; sys.modules['triton'] = None\n"
        "from harness.inputs.kernel import registry, load_kernel\n"
        "print(len([load_kernel(n) for n in registry()]))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0 and int(r.stdout) >= 5, r.stderr


def test_a_user_file_and_its_classes(tmp_path):
    k = load_kernel(str(kfile(tmp_path, SPEC + BODY)))
    assert k.name == "k" and k.source == str(tmp_path / "k.py") and k.spec.flops_of({"N": 3}) == 6.0
    crash = load_kernel(f"{USER}:crash")
    assert crash.name == "crash" and crash.source.endswith("user_kernels.py:crash")
    assert crash.spec.config_keys == load_kernel("batched_gemm_bf16").spec.config_keys  # built on the shipped SPEC


def test_a_relative_path_is_relative_to_the_suite(tmp_path):
    kfile(tmp_path, SPEC + BODY, "mine.py")
    assert load_kernel("mine.py", tmp_path).file == tmp_path / "mine.py"
    refused("./mine.py", ROOT, "file", "not found")


def test_a_kernel_name_is_declared_not_its_path(tmp_path):
    """The same file named two ways is one kernel: compare joins on the name."""
    kfile(tmp_path, SPEC + BODY)
    assert load_kernel("k.py", tmp_path).name == load_kernel(str(tmp_path / "k.py")).name == "k"


def test_an_unknown_kernel_is_refused_with_a_close_name():
    refused("batched_gemm_bf61", None, "unknown kernel 'batched_gemm_bf61'", "did you mean 'batched_gemm_bf16'?")


def test_a_missing_kernel_file_is_refused(tmp_path):
    refused("missing_file.py:x", tmp_path, "kernel 'missing_file.py:x'", f"{tmp_path / 'missing_file.py'} not found")


def test_a_kernel_file_that_does_not_parse_is_refused_with_its_line(tmp_path):
    kfile(tmp_path, "def make_inputs(case, seed):\n    return (\n\ndef launch(:\n", "bad.py")
    refused("bad.py", tmp_path, f"{tmp_path / 'bad.py'}: line", "SyntaxError")


def test_a_module_without_a_spec_or_the_functions_is_refused(tmp_path):
    kfile(tmp_path, BODY, "nospec.py")
    refused("nospec.py", tmp_path, "nospec.py: not a kernel: no SPEC", "docs/writing-kernels.md")
    kfile(tmp_path, SPEC + "def make_inputs(p, seed): pass\nlaunch = make_inputs\n", "half.py")
    refused("half.py", tmp_path, "half.py: kernel k lacks reference")


def test_an_object_without_the_interface_is_refused(tmp_path):
    kfile(tmp_path, SPEC + "class half:\n    SPEC = SPEC\n    def make_inputs(p, seed):\n        pass\n")
    refused("k.py:half", tmp_path, "k.py:half: kernel k lacks launch, reference")
    refused("k.py:hallf", tmp_path, "no top-level class 'hallf'", "did you mean 'half'?")
    refused(str(USER), None, "user_kernels.py: not a kernel: no SPEC")  # the module itself declares none


def test_a_hook_must_be_declared_and_defined(tmp_path):
    kfile(tmp_path, SPEC + BODY + "def supported(p):\n    return None\n", "undeclared.py")
    refused("undeclared.py", tmp_path, "defines supported() but its SPEC does not list it in hooks")
    kfile(tmp_path, SPEC.replace("bytes=", 'hooks=("supported",), bytes=') + BODY, "missing.py")
    refused("missing.py", tmp_path, "kernel k lacks supported")


@pytest.mark.parametrize(
    "spec, fragment",
    [
        ('KernelSpec(name="k", params=(Param("N", "integer"),), flops=abs, bytes=abs)', "type 'integer' is not one"),
        ('KernelSpec(name="k", params=(dim("N"), dim("N")), flops=abs, bytes=abs)', "parameter 'N' declared twice"),
        ('KernelSpec(name="k", params=(dim("seed"),), flops=abs, bytes=abs)', "'seed' declared twice"),
        ('KernelSpec(name="k", params=(), flops=1, bytes=abs)', "flops must be a function"),
        ('KernelSpec(name="k", params=(), flops=abs, bytes=abs, peak="tf64")', "peak 'tf64' is not one of"),
        ('KernelSpec(name="k", params=(), flops=abs, bytes=abs, hooks=("warmup",))', "unknown hook 'warmup'"),
        ('KernelSpec(name="k", params=(), flops=abs, bytes=abs, world_size="W")', "parameter 'W', which it does"),
        ('KernelSpec(name="k", params=(), flops=abs, bytes=abs, config=ConfigLookup("F"))', "parameter 'N', which"),
        ('KernelSpec(name="a b", params=(), flops=abs, bytes=abs)', "name 'a b'"),
        ('KernelSpec(name="k", params=(Param("N", "int", 0, min=1),), flops=abs, bytes=abs)', "must be >= 1, got 0"),
        ("dict(name='k')", "SPEC is a dict"),
        ("torch.float16", "SPEC cannot be evaluated without importing the kernel (NameError"),
    ],
)
def test_a_bad_declaration_is_one_line_naming_file_and_line(tmp_path, spec, fragment):
    head = "from harness import ConfigLookup, KernelSpec, Param, dim\nimport torch\n\nSPEC = "
    kfile(tmp_path, head + spec + "\n" + BODY)
    refused("k.py", tmp_path, str(tmp_path / "k.py"), fragment)


def test_a_spec_may_use_the_files_pure_functions_and_constants(tmp_path):
    text = """
    import math
    import torch
    import triton
    from harness import KernelSpec, dim

    GROUP = 32
    DTYPES = {"bf16": torch.bfloat16}  # needs torch: skipped by the driver, unused by SPEC


    def work(p):
        return 2.0 * p["N"] * math.ceil(p["N"] / GROUP)


    @triton.jit
    def _kernel(x):
        pass


    SPEC = KernelSpec(name="k", params=(dim("N"),), flops=work, bytes=lambda p: p["N"] * GROUP)
    """
    k = load_kernel(str(kfile(tmp_path, textwrap.dedent(text) + BODY)))
    assert k.spec.flops_of({"N": 64}) == 256.0 and k.spec.bytes_of({"N": 2}) == 64.0


def test_a_kernel_written_against_the_old_kernels_spec_still_loads(tmp_path):
    """kernels.spec re-exports the contract for one release: files in other repositories import it."""
    import harness
    from kernels import spec as old

    k = load_kernel(str(kfile(tmp_path, SPEC.replace("from harness import", "from kernels.spec import") + BODY)))
    assert isinstance(k.spec, harness.KernelSpec) and old.KernelSpec is harness.KernelSpec and old.dim is harness.dim

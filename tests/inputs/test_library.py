"""A library's checkout in a suite (harness/inputs/library.py): its config folders, AITER's lookup over them (the
same file, bucket and config as the library's own lookup), the suite's checks, and errors that name its lines."""

from __future__ import annotations

import importlib.util
import itertools
import json
import shutil
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.inputs.suite import as_config_arch, load_suite
from harness.kernel_api import configs as _config
from harness.run.cases import worker_case
from harness.run.suiteview import lines, view
from harness.worker.cases import resolve_config
from harness.worker.errors import error_text

ROOT = Path(__file__).resolve().parents[2]
FAKE = ROOT / "tests" / "data" / "fake_aiter"
CONFIGS = FAKE / "aiter" / "ops" / "triton" / "configs"
ADAPTER = ROOT / "examples" / "aiter" / "batched_gemm.py"


def _suite(tmp_path: Path, body: str, library: Path = FAKE) -> Path:
    p = tmp_path / "s.yaml"
    p.write_text(
        f"library: {{path: {library}, package: aiter, init: false, configs: [aiter/ops/triton/configs]}}\n{body}"
    )
    return p


def _entry(cls: str, **params: object) -> str:
    fields = "".join(f"    {k}: {json.dumps(v)}\n" for k, v in params.items())
    return f"entries:\n  - kernel: {ADAPTER}:{cls}\n{fields}"


def _their_lookup():
    spec = importlib.util.spec_from_file_location(
        "fake_gemm_config_utils", CONFIGS.parent / "utils" / "gemm_config_utils.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.get_gemm_config


@pytest.mark.parametrize("cls,family,bounds", [
    ("Bf16", "BATCHED_GEMM-A16W16", None),
    ("A16WFP4", "BATCHED_GEMM-A16WFP4", None),
    ("AFP4WFP4", "BATCHED_GEMM-AFP4WFP4", (4, 8, 16, 32, 64, 128, 256, 320, 512, 1024, 2048, 4096, 8192)),
])  # fmt: skip
def test_harness_resolves_what_the_librarys_own_lookup_does(tmp_path, cls, family, bounds):
    theirs = _their_lookup()
    archs = ["gfx950", "gfx942", "gfx1250"] if cls == "Bf16" else ["gfx950", "gfx1250"]
    shapes = list(itertools.product([2, 4], [1, 8, 16, 40, 300, 320, 5000], [(64, 128), (128, 512)]))
    body = _entry(cls, zip=[{"B": b, "M": m, "N": n, "K": k} for b, m, (n, k) in shapes])
    cases = load_suite(_suite(tmp_path, body))
    checked = 0
    for arch in archs:
        if arch == "gfx942" and cls != "Bf16" or arch == "gfx1250" and cls == "AFP4WFP4":
            continue
        for case in as_config_arch(cases, arch):
            p = case.params
            cfg, source, tuned = resolve_config(worker_case(case), "interp", _config)
            backend = "gluon" if (cls, arch) == ("Bf16", "gfx1250") else None  # the op's gluon path there
            want, want_tuned, file, bucket = theirs(family, p["M"], p["N"], p["K"], bounds=bounds, B=p["B"], arch=arch,
                                                    backend=backend)  # fmt: skip
            assert (source.split(" ")[0], cfg, tuned) == (f"{file}:{bucket}", want, want_tuned), (arch, p)
            checked += 1
    assert checked >= len(shapes)


def test_the_real_files_cases_b_specialized_note_nested_and_320(tmp_path):
    body = _entry("Bf16", B=[2, 4], M=16, N=64, K=128, dtype="fp16")
    cases = load_suite(_suite(tmp_path, body))
    src = {
        (a, c.params["B"]): resolve_config(worker_case(c), "interp", _config)[1]
        for a in ("gfx1250", "gfx942")
        for c in as_config_arch(cases, a)
    }
    # on gfx1250 AITER's bf16 op takes its gluon kernel: the gluon folder's files, not the Triton path's B=4 file
    assert src[("gfx1250", 4)].startswith("gemm/gluon/gfx1250-BATCHED_GEMM-A16W16.json:any")
    assert src[("gfx1250", 2)].startswith("gemm/gluon/gfx1250-BATCHED_GEMM-A16W16.json:any")
    assert src[("gfx942", 2)].startswith(
        "gfx942/triton/gemm/batched_gemm_a16w16/BATCHED_GEMM-A16W16-N=64-K=128.json:M_LEQ_32"
    )
    note = load_suite(
        _suite(tmp_path, _entry("A16WFP4", B=2, M=4, N=64, K=128, dtype="fp16") + "config_arch: gfx1250\n")
    )
    cfg, source, _ = resolve_config(worker_case(note[0]), "interp", _config)
    assert source == "gemm/gfx1250-BATCHED_GEMM-A16WFP4.json:M_LEQ_8 (skipped keys: _note) (configs of gfx1250)"
    assert cfg["BLOCK_SIZE_M"] == 16


def test_suite_show_lists_each_case_with_the_file_and_bucket_it_resolves(tmp_path):
    cases = load_suite(
        _suite(tmp_path, _entry("Bf16", B=2, M=[16, 40], N=64, K=128, dtype="fp16") + "config_arch: gfx950\n")
    )
    out = lines(view(cases, "sm90"))
    assert out[0].startswith(
        "aiter_batched_gemm_bf16 B2_M16_N64_K128_fp16  gemm/gfx950-BATCHED_GEMM-A16W16-N=64-K=128.json:M_LEQ_16 (tuned) (configs of gfx950)"
    )
    assert '"BLOCK_SIZE_M":32' in out[1] and "M_LEQ_64" in out[1]


def test_a_library_kernel_never_reads_harness_own_files(tmp_path):
    """AITER's family names are harness's too: harness's sm90 files (EPILOGUE_SUBTILE, PERSISTENT) are neither
    checked against the adapter nor resolved for it; without an sm90 file in the library the case says so."""
    cases = load_suite(_suite(tmp_path, _entry("Bf16", B=2, M=16, N=64, K=128)))
    assert not cases[0].harness_configs
    with pytest.raises(_config.ConfigError, match="no default config for BATCHED_GEMM-A16W16 on arch sm90"):
        resolve_config(worker_case(cases[0]), "sm90", _config)


def test_a_bad_key_in_the_librarys_file_is_refused_naming_file_and_bucket(tmp_path):
    lib = tmp_path / "ck"
    shutil.copytree(FAKE, lib)
    f = lib / "aiter/ops/triton/configs/gemm/gfx950-BATCHED_GEMM-A16W16.json"
    data = json.loads(f.read_text())
    data["any"]["BLOCK_SIZE_Q"] = 16
    f.write_text(json.dumps(data))
    with pytest.raises(
        HarnessError,
        match=r"gfx950-BATCHED_GEMM-A16W16.json: any: unknown config key \(of aiter_batched_gemm_bf16\) 'BLOCK_SIZE_Q'",
    ):
        load_suite(_suite(tmp_path, _entry("Bf16", B=2, M=16, N=64, K=128), library=lib))


@pytest.mark.parametrize("library,message", [
    ("{path: nowhere, package: aiter}", r"library: path: .*/nowhere does not exist$"),
    ("{path: ., package: aiter}", "no package 'aiter' in"),
    ("{path: ., package: aiter, inti: false}", "unknown key 'inti'"),
    ("{path: '${NO_SUCH_CHECKOUT_VAR}', package: aiter}", r"\$\{NO_SUCH_CHECKOUT_VAR\} is not set"),
    ("{package: aiter}", "path: required"),
    ("{path: ., package: 'ai-ter'}", "not a top-level module name"),
])  # fmt: skip
def test_bad_library_settings_are_one_line(tmp_path, library, message):
    p = tmp_path / "s.yaml"
    p.write_text(f"library: {library}\n" + _entry("Bf16", B=2, M=16, N=64, K=128))
    with pytest.raises(HarnessError, match=message):
        load_suite(p)


def test_a_case_error_names_the_deepest_line_inside_the_library_first(tmp_path):
    lib = tmp_path / "ck" / "lib"
    lib.mkdir(parents=True)
    (lib / "inner.py").write_text("def deep():\n    raise ValueError('bad tile')\n")
    (lib / "outer.py").write_text("from inner import deep\n\ndef op():\n    return deep()\n")
    wrapper = tmp_path / "adapter.py"
    wrapper.write_text("def launch():\n    import outer\n    return outer.op()\n")
    import sys

    sys.path[:0] = [str(lib), str(tmp_path)]
    try:
        import adapter

        with pytest.raises(ValueError) as info:
            adapter.launch()
    finally:
        del sys.path[:2]
        for m in ("adapter", "outer", "inner"):
            sys.modules.pop(m, None)
    head = error_text(info.value, (str(wrapper),), "", (str(tmp_path / "ck"),)).splitlines()[0]
    assert head == f"ValueError: bad tile (lib/inner.py:2 in deep; via {wrapper}:3 in launch)"


@pytest.mark.parametrize("checkout,message", [
    ("", r"library: path: '\$\{AITER_CHECKOUT\}' expands to nothing \(\$\{AITER_CHECKOUT\} is empty\)$"),
    ("/nonexistent/aiter", r"library: path: /nonexistent/aiter does not exist \(from '\$\{AITER_CHECKOUT\}'\)$"),
])  # fmt: skip
def test_a_checkout_variable_that_is_empty_or_names_no_folder_says_so(monkeypatch, checkout, message):
    """Empty, it would be the suite's own folder; missing, "no package 'aiter' in" hid that the folder is not there."""
    monkeypatch.setenv("AITER_CHECKOUT", checkout)
    with pytest.raises(HarnessError, match=message):
        load_suite(ADAPTER.parent / "cpu.yaml")


def test_a_checkout_under_home_is_found_through_tilde(monkeypatch, tmp_path):
    shutil.copytree(FAKE, tmp_path / "aiter-checkout")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("AITER_CHECKOUT", "~/aiter-checkout")
    assert {c.library.path for c in load_suite(ADAPTER.parent / "cpu.yaml")} == {str(tmp_path / "aiter-checkout")}


def test_the_example_suites_load_with_the_checkout_named_by_a_variable(monkeypatch):
    monkeypatch.setenv("AITER_CHECKOUT", str(FAKE))
    monkeypatch.delenv("AITER_CONFIG_ARCH", raising=False)
    gpu = load_suite(ADAPTER.parent / "batched_gemm.yaml")
    assert len(gpu) == 120 and {c.config_arch for c in gpu} == {"gfx950"}
    assert {c.library.path for c in gpu} == {str(FAKE)}
    monkeypatch.setenv("AITER_CONFIG_ARCH", "")  # set but empty: the GPU's own arch
    assert {c.config_arch for c in load_suite(ADAPTER.parent / "cpu.yaml")} == {"gfx950"}
    assert {c.config_arch for c in load_suite(ADAPTER.parent / "batched_gemm.yaml")} == {""}
    monkeypatch.delenv("AITER_CHECKOUT")
    with pytest.raises(HarnessError, match=r"library: path: \$\{AITER_CHECKOUT\} is not set"):
        load_suite(ADAPTER.parent / "cpu.yaml")


def test_config_folders_precedence_suite_then_spec_never_harness(tmp_path):
    """A user kernel's SPEC names a folder beside it; the suite names one beside itself, searched first: the first
    folder with the family's default file for the arch is the one used; harness's kernels/configs/ is not searched
    (its BATCHED_GEMM-A16W16 files would fit the family name)."""
    kdir, sdir = tmp_path / "kernel", tmp_path / "suite"
    (kdir / "cfg").mkdir(parents=True)
    (sdir / "mine").mkdir(parents=True)
    (kdir / "k.py").write_text(
        "from harness import ConfigLookup, KernelSpec, dim\n"
        "SPEC = KernelSpec(name='mine', params=(dim('M'), dim('N'), dim('K')), flops=lambda p: 1.0,\n"
        "    bytes=lambda p: 1.0, config=ConfigLookup('BATCHED_GEMM-A16W16', folders=('cfg',)),\n"
        "    config_keys=('BLOCK_SIZE_M',))\n"
        "def make_inputs(p, seed): ...\ndef launch(i, c): ...\ndef reference(i): ...\n"
    )
    (kdir / "cfg" / "sm90-BATCHED_GEMM-A16W16.json").write_text('{"any": {"BLOCK_SIZE_M": 1}}')
    (kdir / "cfg" / "gfx950-BATCHED_GEMM-A16W16.json").write_text('{"any": {"BLOCK_SIZE_M": 2}}')
    (sdir / "mine" / "gfx950-BATCHED_GEMM-A16W16.json").write_text('{"any": {"BLOCK_SIZE_M": 3}}')
    suite = sdir / "s.yaml"
    suite.write_text(f"configs: [mine]\nentries:\n  - kernel: {kdir / 'k.py'}\n    M: 16\n    N: 32\n    K: 64\n")
    (case,) = load_suite(suite)
    assert case.folders == (str(sdir / "mine"), str(kdir / "cfg")) and not case.harness_configs
    got = {a: resolve_config(worker_case(case), a, _config)[0] for a in ("gfx950", "sm90")}
    assert got == {"gfx950": {"BLOCK_SIZE_M": 3}, "sm90": {"BLOCK_SIZE_M": 1}}
    with pytest.raises(_config.ConfigError, match="gfx942"):
        resolve_config(worker_case(case), "gfx942", _config)
    (sdir / "mine" / "sm90-BATCHED_GEMM-A16W16.json").write_text('{"any": {"BLOCK_SIZE_Q": 3}}')
    with pytest.raises(HarnessError, match=r"mine/sm90-BATCHED_GEMM-A16W16.json: any: unknown config key"):
        load_suite(suite)  # the suite's folder is checked like the kernel's own

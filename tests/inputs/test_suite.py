"""Suites, kernel declarations and config files are checked before anything is measured: every mistake is one
line naming the file, the entry and the key (exit 2 from the CLI), never a run with defaults or a traceback."""

from __future__ import annotations

import json
import os
import shutil
import string
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import HarnessError
from harness.inputs.kernel import load_kernel, registry
from harness.inputs.suite import Case, check_config_files, config_files, load_suite, select
from harness.kernel_api.configs import CONFIG_DIR, LAUNCH_OPTION_KEYS
from tests.conftest import DATA, ROOT

REGISTRY = list(registry())

USER = DATA / "user_kernels.py"
BF16, A8W8 = "batched_gemm_bf16", "batched_gemm_a8w8"
PREQUANT = "batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant"


@pytest.fixture
def suite(tmp_path):
    """suite(yaml_text) -> path of a suite file in tmp_path (text dedented)."""

    def _suite(text: str, name: str = "s.yaml") -> Path:
        p = tmp_path / name
        p.write_text(textwrap.dedent(text), encoding="utf-8")
        return p

    return _suite


def entry(kernel: str | list[str] = BF16, **fields) -> str:
    """A one-entry suite with B, M, N, K filled in (override any of them with ``fields``; None drops one)."""
    e = {"kernel": kernel, "B": 1, "M": 16, "N": 32, "K": 64, **fields}
    e = {k: v for k, v in e.items() if v is not None}
    return yaml.safe_dump({"name": "t", "entries": [e]}, sort_keys=False)


def refused(path: Path, *fragments: str) -> str:
    with pytest.raises(HarnessError) as info:
        load_suite(path)
    msg = str(info.value)
    assert "\n" not in msg, msg
    for f in fragments:
        assert f in msg, msg
    return msg


# ------------------------------------------------------------------------------------ what is shipped
@pytest.mark.parametrize("path", sorted((ROOT / "suites").glob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_suite_loads(path):
    cases = load_suite(path)
    # a registered kernel, the documented example kernel (examples/softmax.py) that ci.yaml includes, or a vendor
    # baseline of baselines/ (suites/multigpu.yaml's torch paths, user kernels named by path)
    user = ("examples", "baselines")
    assert cases and all((c.name in REGISTRY or c.kernel.file.parent.name in user) and c.case_id for c in cases)


@pytest.mark.parametrize("name", ["context_loss.yaml", "faults.yaml", "slow.yaml"])
def test_the_test_suites_with_user_kernels_load(name):
    cases = load_suite(DATA / name)
    assert cases and all(c.kernel.file == DATA / "user_kernels.py" for c in cases)
    assert len({c.name for c in cases}) == len({c.kernel.source for c in cases})  # each class its own name


def test_every_shipped_config_file_has_only_keys_its_kernel_reads():
    kernels = [load_kernel(name) for name in REGISTRY]
    check_config_files([Case(k, {}) for k in kernels], CONFIG_DIR)
    covered = {f for k in kernels if k.spec.config for f in config_files(k.spec.config.family, CONFIG_DIR)}
    assert covered == set(CONFIG_DIR.glob("*.json"))  # no shipped file escapes the check
    a8w8 = config_files("BATCHED_GEMM-A8W8", CONFIG_DIR)  # a prefix of the prequant family's name
    assert len(a8w8) == 7 and not any("PREQUANT" in f.name for f in a8w8)


def test_the_batched_gemms_declare_their_shape_and_config_keys():
    for name in [n for n in REGISTRY if n.startswith("batched_gemm")]:
        spec = load_kernel(name).spec
        assert [p.name for p in spec.params][:4] == ["B", "M", "N", "K"], name
        assert "BLOCK_SIZE_M" in spec.config_keys and spec.config and spec.config.bucket == "M", name
    assert "BLOCK_SIZE_K" not in load_kernel(PREQUANT).spec.config_keys  # forced to the quantization group


class _Reads(dict):
    """A dict that records the keys read from it (not those its user wrote first)."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.read, self.written = set(), set()

    def __getitem__(self, k):
        if k not in self.written:
            self.read.add(k)
        return super().__getitem__(k)

    def get(self, k, default=None):
        if k not in self.written:
            self.read.add(k)
        return super().get(k, default)

    def __setitem__(self, k, v):
        self.written.add(k)
        super().__setitem__(k, v)


VARIANTS = {
    BF16: [{}, {"NUM_KSPLIT": 2}, {"PERSISTENT": 1, "EPILOGUE_SUBTILE": 1}],
    A8W8: [{}, {"NUM_KSPLIT": 2}, {"PERSISTENT": 1, "EPILOGUE_SUBTILE": 1}],
    "batched_gemm_a16wfp4": [{}, {"NUM_KSPLIT": 2}],
    "batched_gemm_afp4wfp4": [{}, {"NUM_KSPLIT": 2}],
    PREQUANT: [{}, {"NUM_KSPLIT": 2}, {"QUANT_PASS": 1, "PERSISTENT": 1, "K_GROUPS": 2, "EPILOGUE_SUBTILE": 1}],
}


def _interpreter():
    pytest.importorskip("torch")
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before kernels.common is first imported
    if os.environ["TRITON_INTERPRET"] != "1":
        pytest.skip("needs the CPU interpreter")
    from kernels import common as C

    if C.triton_version() < (3, 9):
        pytest.skip("the fp4 and persistent variants need the Triton >= 3.9 interpreter")
    return C


def test_declared_parameters_are_the_ones_each_kernel_reads():
    """Run each batched GEMM's parameter-reading code (make_inputs, its SPEC's formulas, its hooks) on a dict that
    records its reads: the declaration is neither short (a real parameter refused) nor long (one accepted that
    nothing reads)."""
    _interpreter()
    from harness.worker.cases import load_kernel as import_kernel

    for name in [n for n in REGISTRY if n.startswith("batched_gemm")]:
        k = load_kernel(name)
        mod = import_kernel(k.source, str(ROOT))
        params = _Reads(k.spec.case_params({"B": 1, "M": 16, "N": 32, "K": 128}, "t"))
        for p in ("dtype", "out_dtype"):
            if p in params:
                params[p] = "fp16"
        params.written.clear()
        mod.make_inputs(params, 0)
        k.spec.flops_of(params), k.spec.bytes_of(params), k.spec.peak_of(params), k.spec.tolerance_of(params)
        if "supported" in k.spec.hooks:
            mod.supported(params)
        assert params.read == {p.name for p in k.spec.params}, name


@pytest.mark.parametrize("name", list(VARIANTS))
def test_declared_config_keys_are_the_ones_each_kernel_reads(name, monkeypatch):
    """Launch every variant of each kernel with a config that records its reads: together they read exactly the
    declared config keys (a key outside them would be refused in suites although the kernel uses it)."""
    C = _interpreter()
    import torch

    from harness.kernel_api.configs import resolve
    from harness.worker.cases import load_kernel as import_kernel

    spec = load_kernel(name).spec
    k, read = import_kernel(load_kernel(name).source, str(ROOT)), set()
    real = k.split_config

    def spy(config, backend):
        meta, opts = real(config, backend)
        meta = _Reads(meta)
        spies.append(meta)
        return meta, opts

    monkeypatch.setattr(k, "split_config", spy)
    params = spec.case_params({"B": 1, "M": 16, "N": 32, "K": 256}, "t")
    params.update({p: "fp16" for p in ("dtype", "out_dtype") if p in params})
    for extra in VARIANTS[name]:
        spies: list[_Reads] = []
        cfg = {**resolve(spec.config.family, C.arch(), 16, "N=32-K=256").config, "BLOCK_SIZE_K": 64, **extra}
        inputs = k.make_inputs(params, 0)
        y = k.launch(inputs, cfg)
        assert torch.allclose(y.double(), k.reference(inputs), rtol=0.05, atol=0.05), (name, extra)
        read |= set().union(*(s.read for s in spies))
    assert read == set(spec.config_keys)


# ------------------------------------------------------------------------------------ typos (item 5)
def test_top_level_typo_names_the_file_and_the_close_key(suite):
    p = suite("defualts: {bias: false}\nentries:\n  - {kernel: batched_gemm_bf16, B: 1, M: 16, N: 32, K: 64}\n")
    refused(p, str(p), "unknown key 'defualts'", "did you mean 'defaults'?")


def test_entry_field_typo_names_the_entry(suite):
    e = "  - {kernel: batched_gemm_bf16, B: 1, M: 16, N: 32, K: 64"
    p = suite(f"entries:\n{e}}}\n{e}, M: 32}}\n{e}, dtpye: fp16}}\n")
    refused(p, f"{p}: entries[2]: unknown parameter 'dtpye'", "did you mean 'dtype'?")


def test_config_key_in_lower_case_is_refused(suite):
    refused(suite(entry(config={"block_size_m": 64})), "entries[0]", "config: unknown config key 'block_size_m'",
            "did you mean 'BLOCK_SIZE_M'?")  # fmt: skip


def test_launch_option_typo_is_refused(suite):
    refused(suite(entry(config={"num_wraps": [4, 8]})), "unknown config key 'num_wraps'", "did you mean 'num_warps'?")


def test_launch_options_of_every_backend_are_accepted(suite):
    cases = load_suite(suite(entry(config={k: 1 for k in LAUNCH_OPTION_KEYS})))
    assert set(cases[0].overrides) == set(LAUNCH_OPTION_KEYS)


def test_a_field_one_kernel_of_the_entry_ignores_is_refused(suite):
    refused(suite(entry([BF16, A8W8], dtype="fp16")), "entries[0]: batched_gemm_a8w8 does not read parameter 'dtype'")


def test_a_config_key_one_kernel_of_the_entry_ignores_is_refused(suite):
    refused(suite(entry([PREQUANT, A8W8], config={"QUANT_PASS": 1})), "batched_gemm_a8w8 does not read config key")


def test_block_size_k_is_refused_where_the_kernel_forces_it(suite):
    refused(
        suite(entry(PREQUANT, config={"BLOCK_SIZE_K": 64})), "entries[0]: config: unknown config key 'BLOCK_SIZE_K'"
    )


def test_defaults_typo_is_refused(suite):
    p = suite("defaults: {dtpye: fp16}\n" + entry())
    refused(p, f"{p}: defaults: unknown parameter 'dtpye'", "did you mean 'dtype'?")


def test_defaults_config_typo_is_refused(suite):
    p = suite("defaults: {config: {GROUP_SIZE: 8}}\n" + entry())
    refused(p, "entries[0] (from defaults): config: unknown config key 'GROUP_SIZE'", "did you mean 'GROUP_SIZE_M'?")
    p = suite("defaults: {config: {GROUP_SIZE: 8}}\n" + entry(config={"GROUP_SIZE_M": 4}))  # overridden: still a typo
    refused(p, f"{p}: defaults: config: unknown config key 'GROUP_SIZE'")


def test_a_default_applies_where_a_kernel_reads_it(suite):
    """ci.yaml's defaults give dtype and out_dtype to a8w8 and bf16: each reads one of them."""
    cases = load_suite(suite("defaults: {dtype: fp16, out_dtype: fp16}\n" + entry([BF16, A8W8])))
    assert [c.params.get("dtype", c.params.get("out_dtype")) for c in cases] == ["fp16", "fp16"]
    assert "dtype" not in cases[1].params and cases[1].params["out_dtype"] == "fp16"


def test_a_default_no_kernel_of_the_suite_reads_is_refused(suite):
    refused(suite("defaults: {dtype: fp16}\n" + entry(A8W8)), "defaults: unknown parameter 'dtype'")


def test_a_kernel_that_declares_nothing_is_refused(suite, tmp_path):
    (tmp_path / "k.py").write_text("".join(f"def {f}(*a): pass\n" for f in ("make_inputs", "launch", "reference")))
    refused(suite(entry("k.py")), "k.py: not a kernel: no SPEC", "docs/writing-kernels.md")


def test_a_declared_user_kernel_is_checked(suite):
    refused(suite(entry(f"{USER}:good", out_dtype="fp16")), "unknown parameter 'out_dtype'")
    refused(suite(entry(f"{USER}:crash", config={"QUANT_PASS": 1})), "unknown config key 'QUANT_PASS'")  # inherited


def test_parameters_get_their_defaults_and_the_seed(suite):
    (case,) = load_suite(suite(entry()))
    assert case.params == {"B": 1, "M": 16, "N": 32, "K": 64, "dtype": "bf16", "bias": False, "seed": 0}
    assert case.case_id == "B1_M16_N32_K64"  # defaults stay out of the id: adding a parameter keeps old ids


def test_a_missing_required_parameter_is_refused(suite):
    refused(suite(entry(K=None)), "entries[0] (batched_gemm_bf16): missing 'K'", "required parameter")


# ------------------------------------------------------------------------------------- types (item 6)
@pytest.mark.parametrize(
    "field, value, fragment",
    [
        ("M", 16.7, "M: expected an integer, got a number: 16.7"),
        ("B", True, "B: expected an integer, got a YAML bool: True"),
        ("M", "16", "M: expected an integer, got a string: '16'"),
        ("M", [16, 0], "M: must be >= 1, got 0"),
        ("B", -2, "B: must be >= 1, got -2"),
        ("bias", 1, "bias: expected true or false, got an integer: 1"),
        ("bias", "yes please", "bias: expected true or false"),
        ("dtype", 16, "dtype: expected a string, got an integer: 16"),
        ("dtype", "fp32", "dtype: 'fp32' is not one of bf16, fp16"),
        ("seed", False, "seed: expected an integer, got a YAML bool"),
        ("seed", -1, "seed: must be >= 0, got -1"),
        ("M", {"a": 1}, "M: expected a plain value, got a dict"),
        ("M", [[16, 32]], "M: expected a plain value, got a list"),
    ],
)
def test_a_field_of_the_wrong_type_is_refused(suite, field, value, fragment):
    refused(suite(entry(**{field: value})), "entries[0]", fragment)


def test_an_integral_float_is_an_integer(suite):
    (case,) = load_suite(suite(entry(M=16.0, seed=3)))
    assert case.params["M"] == 16 and type(case.params["M"]) is int and case.params["seed"] == 3
    assert case.case_id == "B1_M16_N32_K64_seed3"


def test_zip_points_vary_together(suite):
    cases = load_suite(suite(entry(N=None, K=None, M=[16, 32], zip=[{"N": 512, "K": 128}, {"N": 128, "K": 512}])))
    assert [(c.params["M"], c.params["N"], c.params["K"]) for c in cases] == [
        (16, 512, 128),
        (32, 512, 128),
        (16, 128, 512),
        (32, 128, 512),
    ]  # fmt: skip  (the points outermost, as the suites' (N, K) families always ran)


@pytest.mark.parametrize(
    "zipped, fragment",
    [
        ([{"N": 16.5, "K": 32}], "zip[0]: N: expected an integer, got a number: 16.5"),
        ([{"N": 32, "K": 64}, {"N": True, "K": 64}], "zip[1]: N: expected an integer, got a YAML bool"),
        ([{"N": 32, "K": 64}, {"N": 32}], "zip[1]: fields ['N'] differ from zip[0]'s ['K', 'N']"),
        ([{"N": [32, 64], "K": 64}], "zip[0]: N: a point holds one value"),
        (5, "zip: expected a list of points"),
        ([{"N": 0, "K": 64}], "zip[0]: N: must be >= 1"),
        ([], "zip: expected a list of points"),
        ([{}], "zip[0]: an empty point"),
        ([{"Q": 1}], "zip: unknown parameter 'Q'"),
    ],
)
def test_bad_zip_points_are_refused(suite, zipped, fragment):
    refused(suite(entry(N=None, K=None, zip=zipped)), "entries[0]", fragment)


def test_n_and_k_of_the_wrong_type_are_refused(suite):
    refused(suite(entry(N=[32, 47.5])), "entries[0]: N: expected an integer, got a number: 47.5")


def test_zip_and_a_field_in_one_entry_are_refused_but_an_entry_overrides_defaults(suite):
    refused(suite(entry(zip=[{"N": 32, "K": 64}], K=None)), "entries[0]: 'N' is given both in zip and as a field")
    cases = load_suite(suite("defaults: {N: 999, K: 999}\n" + entry(N=None, K=None, zip=[{"N": 32, "K": 64}])))
    assert [(c.params["N"], c.params["K"]) for c in cases] == [(32, 64)]


def test_nk_pairs_name_their_replacement(suite):
    refused(suite(entry(N=None, K=None, NK=[[32, 64]])), "NK was replaced by zip")


def test_a_bad_default_names_the_defaults(suite):
    p = suite("defaults: {M: 16.7}\nentries:\n  - {kernel: batched_gemm_bf16, B: 1, N: 32, K: 64}\n")
    refused(p, "entries[0] (from defaults): M: expected an integer")


@pytest.mark.parametrize("field", ["M", "kernel"])
def test_an_empty_list_is_refused(suite, field):
    refused(suite(entry(**{field: []})), f"entries[0]: {field}: an empty list makes no cases")


def test_empty_entries_and_bad_structure_are_refused(suite):
    refused(suite("entries: []\n"), "entries: empty")
    refused(suite("entries: {kernel: x}\n"), "expected a mapping with an 'entries' list")
    refused(suite("defaults: [1]\nentries: [{kernel: x}]\n"), "defaults: expected a mapping")
    refused(suite("name: [1]\nentries: [{kernel: x}]\n"), "name: expected a string")
    refused(suite("entries:\n  - 5\n"), "entries[0]: expected a mapping")
    refused(suite("1: 2\nentries: [{kernel: x}]\n"), "unknown key '1'")


def test_broken_yaml_and_bytes_are_one_line(suite, tmp_path):
    refused(suite("entries:\n  - {kernel: [a, b}\n"), "line 2", "not valid YAML")
    bad = tmp_path / "bin.yaml"
    bad.write_bytes(b"entries: \xff\xfe\x00\n")
    refused(bad, str(bad))


def test_two_kernels_of_one_name_are_refused(suite, tmp_path):
    (tmp_path / "k.py").write_text(Path(USER).read_text().replace('name="crash"', 'name="good"'))
    refused(suite(entry([f"{USER}:good", "k.py:crash"])), "two kernels are named 'good'")


def test_an_unknown_kernel_option_is_refused_with_a_close_name():
    cases = load_suite(ROOT / "suites" / "ci.yaml")
    with pytest.raises(HarnessError, match=r"--kernel 'batched_gemm_bf61': .*did you mean 'batched_gemm_bf16'"):
        select(cases, ["batched_gemm_bf16", "batched_gemm_bf61"])
    with pytest.raises(HarnessError, match="the suite's kernels: attention_fwd, rmsnorm, layernorm, gemm"):
        select(cases, ["zzz"])
    assert {c.name for c in select(cases, [A8W8])} == {A8W8}
    assert {c.key for c in select(cases, None, "^batched.*M40")} == {
        f"{BF16}/B2_M40_N32_K64_fp16",
        f"{A8W8}/B2_M40_N32_K64_out_dtypefp16",
    }


# --------------------------------------------------------------------------------------- config files
@pytest.fixture
def config_dir(tmp_path, monkeypatch):
    d = tmp_path / "configs"
    shutil.copytree(CONFIG_DIR, d)
    monkeypatch.setenv("HARNESS_CONFIG_DIR", str(d))
    return d


def _poke(path: Path, bucket: str, key: str, value) -> None:
    data = json.loads(path.read_text())
    data[bucket][key] = value
    path.write_text(json.dumps(data))


def test_a_config_file_typo_names_file_and_bucket(suite, config_dir):
    f = config_dir / "gfx950-BATCHED_GEMM-A16W16.json"
    bucket = next(iter(json.loads(f.read_text())))
    _poke(f, bucket, "num_wraps", 4)
    refused(suite(entry()), f"{f}: {bucket}: unknown config key (of batched_gemm_bf16) 'num_wraps'",
            "did you mean 'num_warps'?")  # fmt: skip


def test_a_suite_pinned_to_one_arch_checks_that_arch_s_files_only(suite, config_dir):
    """Another arch's file of a library may hold keys of another backend of its own (AITER's gfx1250 files, its
    gluon kernel's NUM_BUFFERS): a suite resolved as gfx950 never reads them, so they do not stop it; unpinned,
    or pinned to that arch, they do."""
    f = config_dir / "gfx950-BATCHED_GEMM-A16W16.json"
    other = config_dir / "gfx1250-BATCHED_GEMM-A16W16.json"
    other.write_text(f.read_text())
    bucket = next(iter(json.loads(other.read_text())))
    _poke(other, bucket, "NUM_BUFFERS", 2)
    pinned = yaml.safe_load(entry())
    assert load_suite(suite(yaml.safe_dump({**pinned, "config_arch": "gfx950"}), "p.yaml"))
    refused(suite(yaml.safe_dump({**pinned, "config_arch": "gfx1250"}), "q.yaml"), str(other), "'NUM_BUFFERS'")
    refused(suite(entry()), str(other), "'NUM_BUFFERS'")


def test_a_config_file_key_the_kernel_never_reads_is_refused(suite, config_dir):
    f = config_dir / "sm90-BATCHED_GEMM-A8W8-N=128-K=512.json"
    bucket = next(b for b in json.loads(f.read_text()) if not b.startswith("_"))  # past a `_tuned_for` note
    _poke(f, bucket, "QUANT_PASS", 1)  # a8w8's X comes quantized: it has no quantization pass
    refused(suite(entry(A8W8)), str(f), "'QUANT_PASS'")


def test_only_the_suites_kernels_config_files_are_checked(suite, config_dir):
    """The prequant family's name starts with a8w8's: a typo in its file is not a8w8's business."""
    f = config_dir / "sm90-BATCHED_GEMM-A8W8-A_PER_TOKEN_GROUP_PREQUANT_W_PER_BATCHED_TENSOR_QUANT.json"
    _poke(f, "any", "num_wraps", 4)
    assert load_suite(suite(entry(A8W8)))
    refused(suite(entry(PREQUANT)), str(f), "'num_wraps'")


def test_an_unreadable_config_file_is_one_line(suite, config_dir):
    (config_dir / "interp-BATCHED_GEMM-A16W16.json").write_text("{not json")
    refused(suite(entry()), "interp-BATCHED_GEMM-A16W16.json: cannot read config file")


# ------------------------------------------------------------------------------------------------ CLI
def _cli(argv, capsys, monkeypatch) -> str:
    from harness.cli import main

    monkeypatch.setenv("HARNESS_TEST_PYTHON", sys.executable)
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err.strip()
    assert info.value.code == 2 and len(err.splitlines()) == 1, err
    return err


@pytest.mark.parametrize(
    "fields, fragment",
    [
        ({"dtpye": "fp16"}, "did you mean 'dtype'?"),
        ({"M": 16.7}, "M: expected an integer"),
        ({"kernel": "nope_kernel"}, "unknown kernel 'nope_kernel'"),
        ({"config": {"num_wraps": 4}}, "did you mean 'num_warps'?"),
    ],
)
def test_run_refuses_a_bad_suite_in_one_line(tmp_path, suite, capsys, monkeypatch, fields, fragment):
    p = suite(entry(**fields))
    out = tmp_path / "out.csv"
    err = _cli(["run", "--env", str(DATA / "cpu-env.yaml"), "--suite", str(p), "--out", str(out)], capsys, monkeypatch)
    assert err.startswith("harness: error: ") and fragment in err and str(p) in err
    assert not out.exists()


def test_run_refuses_an_unknown_kernel_option(tmp_path, capsys, monkeypatch):
    argv = ["run", "--env", str(DATA / "cpu-env.yaml"), "--suite", str(ROOT / "suites" / "ci.yaml"),
            "--out", str(tmp_path / "o.csv"), "--kernel", "batched_gemm_a8w9"]  # fmt: skip
    assert "did you mean 'batched_gemm_a8w8'?" in _cli(argv, capsys, monkeypatch)


# ----------------------------------------------------------------------------------------------- fuzz
KEYS = ["entries", "defaults", "kernel", "config", "zip", "N", "K", "M", "B", "dtype", "out_dtype", "bias",
        "seed", "name", "BLOCK_SIZE_M", "num_warps", "PERSISTENT"]  # fmt: skip
KERNELS = [*REGISTRY, f"{USER}:good", f"{USER}:crash", f"{USER}:nope", str(USER), "nope.py", "batched_gemm"]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 300),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(string.printable, max_size=6),
    st.sampled_from(KERNELS + KEYS + ["fp16", "bf16"]),
)
anything = st.recursive(
    scalars,
    lambda ch: st.one_of(
        st.lists(ch, max_size=3),
        st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=4), st.integers(0, 3)), ch, max_size=4),
    ),
    max_leaves=12,
)
small = st.one_of(st.integers(-1, 64), st.lists(st.integers(0, 64), max_size=2), scalars)
wild_entries = st.fixed_dictionaries(
    {"kernel": st.one_of(st.sampled_from(KERNELS), st.lists(st.sampled_from(KERNELS), max_size=2), anything)},
    optional={
        "B": small,
        "M": small,
        "zip": st.one_of(
            st.lists(st.dictionaries(st.sampled_from(["N", "K", "M"]), small, max_size=2), max_size=2), anything
        ),
        "N": small,
        "K": small,
        "dtype": st.one_of(st.sampled_from(["fp16", "bf16"]), scalars),
        "bias": st.one_of(st.booleans(), scalars),
        "config": st.one_of(
            st.dictionaries(st.sampled_from(["BLOCK_SIZE_M", "num_warps", "PERSISTENT", "bogus"]), small, max_size=3),
            anything,
        ),
        "x": anything,
    },
)
sizes = st.integers(1, 64) | st.lists(st.integers(1, 64), min_size=1, max_size=2, unique=True)
good_entries = st.fixed_dictionaries(
    {
        "kernel": st.sampled_from([*REGISTRY, f"{USER}:good"]),
        "B": sizes,
        "M": sizes,
        "zip": st.lists(st.fixed_dictionaries({"N": st.integers(1, 64), "K": st.integers(1, 64)}), min_size=1, max_size=2),
    },
    optional={"bias": st.booleans(), "seed": st.integers(0, 9), "config": st.fixed_dictionaries({}, optional={
        "BLOCK_SIZE_M": sizes, "num_warps": sizes, "GROUP_SIZE_M": sizes})},
)  # fmt: skip
suites = st.one_of(
    anything,
    st.fixed_dictionaries(
        {"entries": st.one_of(st.lists(good_entries | wild_entries, max_size=3), anything)},
        optional={"name": scalars, "defaults": st.one_of(wild_entries, anything), "defualts": anything},
    ),
    st.fixed_dictionaries({"entries": st.lists(good_entries, min_size=1, max_size=3)}),
)


def _loads_or_one_line(path: Path) -> None:
    try:
        cases = load_suite(path)
    except HarnessError as err:
        assert str(err) and "\n" not in str(err)
        return
    assert cases and all(isinstance(c.case_id, str) and json.dumps(c.params) for c in cases)
    for c in cases:
        assert all(type(c.params[d]) is int and c.params[d] > 0 for d in "BMNK"), c


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=suites)
def test_fuzz_random_suites_load_or_fail_in_one_line(tmp_path, data):
    p = tmp_path / "fuzz.yaml"
    p.write_text(yaml.safe_dump(data), encoding="utf-8")
    _loads_or_one_line(p)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=80) | st.sampled_from(["entries: [*a]", "&a [*a]", "entries: !!set {a}", "!!binary x"]))
def test_fuzz_random_text_loads_or_fails_in_one_line(tmp_path, text):
    p = tmp_path / "fuzz.yaml"
    p.write_text(text, encoding="utf-8")
    _loads_or_one_line(p)


# ------------------------------------------------------------------------------------- config values
@pytest.mark.parametrize(
    ("key", "value", "why"),
    [
        ("BLOCK_SIZE_M", 16.5, "16.5 is not a whole number"),
        ("BLOCK_SIZE_M", True, "expected a positive integer, got True"),
        ("BLOCK_SIZE_N", 0, "expected a positive integer, got 0"),
        ("num_warps", "4", "expected a positive integer, got '4'"),
        ("num_stages", -1, "expected a non-negative integer, got -1"),
        ("GROUP_SIZE_M", 2.5, "2.5 is not a whole number"),
    ],
)
def test_a_config_value_that_cannot_be_meant_is_refused(suite, key, value, why):
    refused(suite(entry(config={key: value})), f"entries[0]: config: {key}: {why}")


def test_a_whole_float_config_value_is_its_integer(suite):
    (case,) = load_suite(suite(entry(config={"BLOCK_SIZE_M": 32.0})))
    assert case.overrides["BLOCK_SIZE_M"] == 32 and isinstance(case.overrides["BLOCK_SIZE_M"], int)


def test_a_fraction_in_a_config_file_names_file_bucket_and_key(suite, config_dir):
    f = config_dir / "sm90-BATCHED_GEMM-A16W16.json"
    bucket = next(iter(json.loads(f.read_text())))
    _poke(f, bucket, "BLOCK_SIZE_K", 64.5)
    refused(suite(entry()), f"{f}: {bucket}: BLOCK_SIZE_K: 64.5 is not a whole number")


# ---------------------------------------------------------------------------------------------- include
def test_a_suite_includes_others_in_order(suite, tmp_path):
    suite(entry(M=[16, 32]), "a.yaml")
    suite(entry(A8W8, M=8), "b.yaml")
    p = suite("name: all\ninclude: [a.yaml, b.yaml]\n" + entry(M=64).split("\n", 1)[1], "all.yaml")
    assert [c.key for c in load_suite(p)] == [
        f"{BF16}/B1_M16_N32_K64", f"{BF16}/B1_M32_N32_K64", f"{A8W8}/B1_M8_N32_K64", f"{BF16}/B1_M64_N32_K64"
    ]  # fmt: skip


def test_the_shipped_library_suite_is_every_family():
    names = {c.name for c in load_suite(ROOT / "suites" / "library.yaml")}
    # multi-GPU families (world_size a parameter) have their own suite, suites/multigpu.yaml: one GPU cannot run it
    # the entry kernels call another library's op (entry: module.function): examples/flaggems runs them
    single = {n for n in REGISTRY if load_kernel(n).spec.world_size == 1 and not n.startswith("entry_")}
    assert names == single, "the full library runs every shipped single-GPU kernel"


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("include: a.yaml\n", "include: expected a list of suite files"),
        ("include: []\n", "include: expected a list"),
        ("include: [missing.yaml]\n", "missing.yaml: no such suite file"),
        ("include: [s.yaml]\n", "include: s.yaml includes itself"),
    ],
)
def test_bad_includes_are_one_line(suite, text, fragment):
    refused(suite(text), fragment)


def test_a_case_in_two_included_suites_is_refused(suite):
    suite(entry(), "a.yaml")
    refused(suite("include: [a.yaml, a.yaml]\n"), "appears twice")

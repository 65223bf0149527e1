"""scaled_mxfp4_gemm on the CPU: the quantize dispatch bit for bit against the torch helper, the op (both
variants, both output dtypes, ragged sizes) against its float64 reference, its SPEC, config files and suites; the
same under each venv's interpreter (Triton 3.6.0: quantize only, the GEMM is skipped: no tl.dot_scaled there;
3.9.0: everything); and every shipped sm90 config compiled ahead of time for sm_90 under both Tritons.

In-process tests run under this interpreter's Triton (TRITON_INTERPRET=1); those that need tl.dot_scaled are
skipped below Triton 3.9 with the kernel's own reason.
"""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before any @triton.jit runs

import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harness.inputs.kernel import load_kernel  # noqa: E402
from harness.inputs.suite import load_suite  # noqa: E402
from harness.kernel_api.configs import CONFIG_DIR, LAUNCH_OPTION_KEYS, bad_config_values, read_config_file, resolve  # noqa: E402
from kernels import common as C  # noqa: E402
from kernels import scaled_mxfp4_gemm as K  # noqa: E402

if os.environ.get("TRITON_INTERPRET") != "1":
    pytest.skip("kernel tests run under the interpreter", allow_module_level=True)

NO_DOT_SCALED = C.dot_scaled_unsupported()
needs_dot_scaled = pytest.mark.skipif(NO_DOT_SCALED is not None, reason=str(NO_DOT_SCALED))
FAMILY = "SCALED-MXFP4-GEMM"
SEED_SHAPE = {"M": 10000, "N": 16384, "K": 16384}
ARCHS = ("interp", "sm90", "gfx942", "gfx950")
#: the interp config's tiles; test shapes are ragged against them
TINY = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1, "num_warps": 4}


def special_x(M: int, K: int, seed: int = 0) -> torch.Tensor:
    """(M, K) bf16: N(0, 1) rows at scales 2^-20 .. 2^20, with the quantizer's edge cases planted in the first
    rows: a zero group, -0.0, every e2m1 rounding threshold (ties round up) and its neighbours, group maxima
    at 6·2^k (the largest that keeps scale 2^k) and just above 1.5·2^k, the smallest normals, huge magnitudes."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn((M, K), generator=g) * torch.pow(2.0, torch.randint(-20, 21, (M, 1), generator=g).float())
    thresholds = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 6.0])
    below = (thresholds.bfloat16().view(torch.int16) - 1).view(torch.bfloat16).float()  # the bf16 just below
    edges = torch.cat([thresholds, below, -thresholds])
    planted = [
        torch.zeros(32),
        torch.cat([torch.tensor([-0.0, 6.0]), torch.zeros(30)]),
        torch.cat([edges, edges[:8]]) * 4.0,  # scale 2^2: amax = 24 = 6·4
        torch.cat([torch.tensor([6.0625]), thresholds.repeat(4)[:31]]),  # amax just above 1.5·4: next scale up
        # tiny normals: the scale clamps at its smallest (e = 1). Not subnormals: both interpreters (3.6.0, 3.9.0)
        # convert bf16 subnormals to fp32 wrongly (1.01e-39 -> 4.41e-39), which the GPU's bit shift does not
        torch.full((32,), 1.5 * 2.0**-126),
        torch.cat([torch.tensor([3.0e38, -1.0e38]), torch.randn(30, generator=g) * 1e37]),
    ]
    flat = torch.cat(planted)
    rows = min(M, -(-flat.numel() // K))
    x[:rows].view(-1)[: min(flat.numel(), rows * K)] = flat[: rows * K]
    return x.bfloat16()


def run_quantize(x: torch.Tensor, block: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
    """Dispatch 1 into outputs poisoned with 0xFF (an e8m0 code the quantizer never writes: it clamps at 253)."""
    M, Kx = x.shape
    xq = torch.full((M, Kx // 2), 0xFF, dtype=torch.uint8)
    xs = torch.full((M, Kx // 32), 0xFF, dtype=torch.uint8)
    K.quantize_x(x, xq, xs, block)
    return xq, xs


# ------------------------------------------------------------------------------------- dispatch 1: encode
@pytest.mark.parametrize(
    "M, Kx, block",
    [
        (16, 64, {"QUANT_BLOCK_M": 16, "QUANT_BLOCK_K": 64}),
        (37, 160, {"QUANT_BLOCK_M": 16, "QUANT_BLOCK_K": 64}),  # ragged M and K (5 groups in blocks of 2)
        (9, 96, {"QUANT_BLOCK_M": 8, "QUANT_BLOCK_K": 256}),  # QUANT_BLOCK_K clamped to 128 > K: masked groups
        (33, 128, {}),  # QUANT_DEFAULTS
    ],
)
def test_quantize_kernel_is_bit_identical_to_the_torch_helper(M, Kx, block):
    x = special_x(M, Kx, seed=M)
    xq, xs = run_quantize(x, block)
    rq, rs = C.mxfp4_quantize(x.float())
    assert torch.equal(xs, rs), "e8m0 scales differ from kernels.common.mxfp4_quantize"
    assert torch.equal(xq, rq), "packed e2m1 codes differ from kernels.common.mxfp4_quantize"
    assert (xs != 0xFF).all(), "every scale written"


def test_quantize_edge_cases_mean_what_they_say():
    """The planted rows hit the cases they are meant to (so the bit-identity test covers them)."""
    x = special_x(8, 64)
    _, xs = run_quantize(x, {"QUANT_BLOCK_M": 8, "QUANT_BLOCK_K": 64})
    s = xs.flatten().tolist()
    assert s[0] == 1, "a zero group takes the smallest scale"
    assert s[1] == 127, "amax 6 keeps scale 2^0"
    assert s[2] == 129, "amax 24 = 6·4 keeps scale 2^2"
    assert s[3] == 128, "amax 6.0625 (just above 6 = 1.5·4) moves up to scale 2^1"
    assert s[4] == 1, "the smallest normals clamp at e = 1"
    assert s[5] >= 250, "huge magnitudes take the largest scales"


def test_quantize_rejects_bad_blocks():
    with pytest.raises(ValueError, match="power of two"):
        run_quantize(special_x(16, 64), {"QUANT_BLOCK_M": 16, "QUANT_BLOCK_K": 48})
    with pytest.raises(ValueError, match="power of two"):
        run_quantize(special_x(16, 64), {"QUANT_BLOCK_M": 12, "QUANT_BLOCK_K": 64})


# ----------------------------------------------------------------------------------------------- the op
def run_case(M: int, N: int, Kx: int, out_dtype: str, config: dict[str, Any], seed: int = 0):
    case = {"M": M, "N": N, "K": Kx, "out_dtype": out_dtype}
    inputs = K.make_inputs(case, seed)
    assert not (inputs["x"].float() == 0).all() and inputs["x"].dtype == torch.bfloat16
    C.poison_(inputs["y"])
    y = K.launch(inputs, config)
    assert y is inputs["y"] and y.shape == (M, N)
    assert torch.isfinite(y.float()).all(), "every output element written"
    return case, inputs, y


@needs_dot_scaled
@pytest.mark.parametrize("fuse", [0, 1], ids=["two-dispatch", "fused"])
@pytest.mark.parametrize("out_dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("M, N, Kx", [(16, 32, 64), (40, 48, 96), (33, 64, 160)])
def test_op_matches_reference(M, N, Kx, out_dtype, fuse):
    case, inputs, y = run_case(M, N, Kx, out_dtype, dict(TINY, FUSE_QUANT=fuse), seed=M + fuse)
    err = C.rel_frobenius(y, K.reference(inputs))
    assert err <= K.SPEC.tolerance_of(case), f"relative error {err:.3g}"
    if not fuse:  # dispatch 1's scratch holds exactly the reference's quantized X
        rq, rs = C.mxfp4_quantize(inputs["x"].float())
        assert torch.equal(inputs["x_q"], rq) and torch.equal(inputs["x_scale"], rs)


@needs_dot_scaled
def test_fused_and_two_dispatch_results_are_bit_identical():
    """The same quantization and the same dot_scaled operands, whichever dispatch quantizes."""
    cfg = dict(TINY, GROUP_SIZE_M=2, BLOCK_SIZE_K=256)  # grouped tile order over 3 row tiles; BLOCK_SIZE_K > K
    _, inputs, two = run_case(40, 48, 96, "fp16", cfg, seed=3)
    two = two.clone()
    C.poison_(inputs["y"])
    fused = K.launch(inputs, dict(cfg, FUSE_QUANT=1))
    assert torch.equal(two, fused)
    assert C.rel_frobenius(fused, K.reference(inputs)) <= 2e-3


@needs_dot_scaled
def test_shipped_interp_config_runs_the_ci_shapes():
    for case in load_suite(ROOT / "suites" / "ci_scaled_mxfp4.yaml"):
        p = case.params
        cfg = resolve(FAMILY, "interp", p["M"], case.kernel.spec.config.file_key(p), overrides=case.overrides).config
        inputs = K.make_inputs(p, p["seed"])
        C.poison_(inputs["y"])
        err = C.rel_frobenius(K.launch(inputs, cfg), K.reference(inputs))
        assert err <= K.SPEC.tolerance_of(p), f"{case.kernel.spec.case_id(p, case.overrides)}: {err:.3g}"


def test_sizes_past_32_bit_offsets_are_refused():
    assert K.size_problem(16384, 16384, 16384) is None  # the suite's largest
    assert "64-bit" in K.size_problem(131072, 16384, 16384)


def test_supported_names_the_stack(monkeypatch):
    assert K.supported(SEED_SHAPE) == NO_DOT_SCALED
    monkeypatch.setattr(C, "triton_version", lambda: (3, 6))
    assert "needs >= 3.9" in K.supported(SEED_SHAPE)
    with pytest.raises(ValueError, match="multiple of 32"):
        K.make_inputs({"M": 4, "N": 32, "K": 80, "out_dtype": "fp16"}, 0)


# ---------------------------------------------------------------------------------------- SPEC, configs, suites
def test_spec_as_the_driver_reads_it():
    spec = load_kernel("scaled_mxfp4_gemm").spec  # by its registered name, without importing torch/triton
    p = spec.case_params(SEED_SHAPE, "test")
    M, N, Kx = 10000, 16384, 16384
    assert spec.flops_of(p) == 2 * M * N * Kx
    assert spec.bytes_of(p) == 2 * M * Kx + N * Kx // 2 + N * Kx // 32 + 2 * M * N  # quantized X not counted
    assert spec.peak_of(p) == "fp4" and spec.dtype_of(p) == "mxfp4"
    assert spec.tolerance_of(p) == 1e-2 and spec.tolerance_of(dict(p, out_dtype="fp16")) == 2e-3
    assert spec.case_id(p) == "M10000_N16384_K16384"
    assert spec.hooks == ("supported",) and spec.config.family == FAMILY and spec.config.bucket == "M"
    assert set(K.QUANT_KEYS) | {"FUSE_QUANT"} <= set(spec.config_keys)


@pytest.mark.parametrize("arch", ARCHS)
def test_config_files_resolve_and_hold_only_known_keys(arch):
    files = sorted(CONFIG_DIR.glob(f"{arch}-{FAMILY}*.json"))
    assert CONFIG_DIR / f"{arch}-{FAMILY}.json" in files, "the default file"
    allowed = set(K.SPEC.config_keys) | set(LAUNCH_OPTION_KEYS)
    for f in files:
        assert not bad_config_values(f), f.name
        for bucket, cfg in read_config_file(f).items():
            assert set(cfg) <= allowed, f"{f.name}:{bucket}"
            assert cfg.get("FUSE_QUANT", 0) == 0, "the two-dispatch form is the default"
            assert cfg["BLOCK_SIZE_K"] % 32 == 0 and cfg["QUANT_BLOCK_K"] % 32 == 0
            if arch.startswith("gfx"):
                assert "waves_per_eu" in cfg and cfg["matrix_instr_nonkdim"] == 16
    for M in (16, 1024, 10000):
        cfg = resolve(FAMILY, arch, M, "N=16384-K=16384").config
        assert K.gemm_meta(dict(cfg), 16384)["NUM_K_TILES"] * cfg["BLOCK_SIZE_K"] == 16384


def test_suites():
    main = load_suite(ROOT / "suites" / "scaled_mxfp4.yaml")
    assert 10 <= len(main) <= 12 and {c.kernel.name for c in main} == {"scaled_mxfp4_gemm"}
    seed = [c for c in main if all(c.params[k] == v for k, v in SEED_SHAPE.items())]
    fused = [c.overrides.get("FUSE_QUANT", 0) for c in seed]
    assert fused == [0, 1], "the seed's shape, as two dispatches and fused"
    shapes = {(c.params["M"], c.params["N"], c.params["K"]) for c in main}
    assert {m for m, _, _ in shapes} == {1024, 4096, 10000, 16384}
    assert {(n, k) for _, n, k in shapes} <= {(n, k) for n in (8192, 16384) for k in (8192, 16384)}
    sweep = load_suite(ROOT / "suites" / "sweep_sm90_scaled_mxfp4.yaml")
    assert 0 < len(sweep) <= 200
    assert {c.overrides.get("FUSE_QUANT", 0) for c in sweep} == {0, 1}
    ci = load_suite(ROOT / "suites" / "ci_scaled_mxfp4.yaml")
    assert len(ci) <= 10 and all(16 <= c.params["M"] <= 40 and 32 <= c.params["N"] <= 64 for c in ci)
    assert all(64 <= c.params["K"] <= 128 for c in ci)
    assert any(c.params["M"] % TINY["BLOCK_SIZE_M"] for c in ci), "ragged M"
    assert any(c.overrides.get("FUSE_QUANT") for c in ci), "the fused variant"


# ---------------------------------------------------------------------------------------------- both venvs
def venv_pythons() -> dict[str, str]:
    """.venvs/golden (Triton 3.6.0) and .venvs/tot (3.9.0), as scripts/test.sh makes them."""
    found = {side: ROOT / ".venvs" / side / "bin" / "python" for side in ("golden", "tot")}
    return {side: str(py) for side, py in found.items() if py.exists()}


VENV_SCRIPT = r"""
import json, os, sys
os.environ["TRITON_INTERPRET"] = "1"
root, test_file = sys.argv[1], sys.argv[2]
sys.path.insert(0, root)
import importlib.util
import torch, triton
spec = importlib.util.spec_from_file_location("mxfp4_test", test_file)
T = importlib.util.module_from_spec(spec)
spec.loader.exec_module(T)  # the test module's helpers: special_x, run_quantize
from kernels import common as C
from kernels import scaled_mxfp4_gemm as K
from harness.kernel_api.configs import resolve
from harness.inputs.suite import load_suite

out = {"triton": triton.__version__, "quant": [], "cases": []}
for M, Kx, block in [(37, 160, {"QUANT_BLOCK_M": 16, "QUANT_BLOCK_K": 64}), (16, 128, {})]:
    x = T.special_x(M, Kx, seed=M)
    xq, xs = T.run_quantize(x, block)
    rq, rs = C.mxfp4_quantize(x.float())
    out["quant"].append(bool(torch.equal(xq, rq) and torch.equal(xs, rs)))
for case in load_suite(os.path.join(root, "suites", "ci_scaled_mxfp4.yaml")):
    p, row = case.params, {"id": case.kernel.spec.case_id(case.params, case.overrides)}
    why = K.supported(p)
    if why:
        row["skipped"] = why
    else:
        cfg = resolve("SCALED-MXFP4-GEMM", C.arch(), p["M"], case.kernel.spec.config.file_key(p),
                      overrides=case.overrides or None).config
        inputs = K.make_inputs(p, p["seed"])
        C.poison_(inputs["y"])
        y = K.launch(inputs, cfg)
        row["finite"] = bool(torch.isfinite(y.float()).all())
        row["err"] = C.rel_frobenius(y, K.reference(inputs))
        row["tol"] = case.kernel.spec.tolerance_of(p)
    out["cases"].append(row)
print(json.dumps(out))
"""


@pytest.mark.slow
def test_quantize_and_ci_suite_under_both_venvs(tmp_path):
    """Golden (3.6.0): the quantize dispatch is bit-identical and every ci case is skipped with the dot_scaled
    reason; ToT (3.9.0): the same quantize result and every ci case passes."""
    pythons = venv_pythons()
    if not pythons:
        pytest.skip("needs .venvs/golden and/or .venvs/tot (made by scripts/test.sh)")
    script = tmp_path / "venv_check.py"
    script.write_text(VENV_SCRIPT)
    env = {**os.environ, "TRITON_INTERPRET": "1", "TRITON_DEFAULT_FP_FUSION": "1"}
    procs = {
        side: subprocess.Popen(
            [py, str(script), str(ROOT), __file__], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        for side, py in pythons.items()
    }
    for side, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, f"{side}: {stderr[-3000:]}"
        out = json.loads(stdout.strip().splitlines()[-1])
        assert out["quant"] == [True, True], f"{side} (Triton {out['triton']}): quantize not bit-identical"
        assert len(out["cases"]) == len(load_suite(ROOT / "suites" / "ci_scaled_mxfp4.yaml"))
        for row in out["cases"]:
            if out["triton"].startswith("3.6"):
                assert "tl.dot_scaled is not supported by the Triton 3.6" in row.get("skipped", ""), row
            else:
                assert "skipped" not in row and row["finite"] and row["err"] <= row["tol"], row


# ----------------------------------------------------------------------------------------- AOT for sm_90
AOT_SCRIPT = r"""
import json, re, subprocess, sys, tempfile
sys.path.insert(0, sys.argv[1])
import triton
from triton.backends.compiler import GPUTarget
from triton.backends.nvidia.compiler import get_ptxas
from triton.compiler import ASTSource
from harness.worker.artifacts import cubin_resources
from kernels import scaled_mxfp4_gemm as K

DIV16 = [["tt.divisibility", 16]]


def spills(ptx):
    # ptxas -v on the kernel's PTX: cuobjdump's LOCAL does not show spills
    with tempfile.NamedTemporaryFile("w", suffix=".ptx") as f:
        f.write(ptx)
        f.flush()
        r = subprocess.run([get_ptxas(90).path, "-v", "--gpu-name=sm_90a", f.name, "-o", "/dev/null"],
                           capture_output=True, text=True)
    return sum(int(n) for n in re.findall(r"(\d+) bytes spill stores", r.stderr))


def compile_one(fn, sig, consts, warps, stages):
    # as the JIT specializes a launch: unit strides are constexpr 1, pointers and sizes divisible by 16
    attrs = {(fn.arg_names.index(n),): DIV16 for n in sig}
    sig = dict(sig, **{n: "constexpr" for n in consts})
    src = ASTSource(fn, signature={n: sig[n] for n in fn.arg_names}, constexprs=consts, attrs=attrs)
    c = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps, "num_stages": stages})
    return {"regs": cubin_resources(c.asm["cubin"]).get("reg"), "spill": spills(c.asm["ptx"]),
            "shared": c.metadata.shared}


def compile_config(cfg, N, Kx):
    tiles = K.gemm_meta(dict(cfg), Kx)
    out = {}
    if cfg.get("FUSE_QUANT"):
        fn, ptrs = K._scaled_mxfp4_fused_gemm_kernel, {"x_ptr": "*bf16", "w_ptr": "*u8", "ws_ptr": "*u8"}
        ints = {"M": 0, "N": 0, "K": 0, "stride_xm": 0, "stride_wn": 0, "stride_wsn": 0, "stride_ym": 0}
        ones = ("stride_xk", "stride_wk", "stride_wsk", "stride_yn")
    else:
        fn, ptrs = K._scaled_mxfp4_gemm_kernel, {"xq_ptr": "*u8", "xs_ptr": "*u8", "w_ptr": "*u8", "ws_ptr": "*u8"}
        ints = {"M": 0, "N": 0, "K": 0, "stride_xm": 0, "stride_xsm": 0, "stride_wn": 0, "stride_wsn": 0,
                "stride_ym": 0}
        ones = ("stride_xk", "stride_xsk", "stride_wk", "stride_wsk", "stride_yn")
        block, qwarps = K.quant_meta(dict(cfg), Kx)
        qsig = {"x_ptr": "*bf16", "xq_ptr": "*u8", "xs_ptr": "*u8", "M": "i32", "K": "i32", "stride_xm": "i32",
                "stride_qm": "i32", "stride_sm": "i32"}
        q = dict(block, stride_xk=1, stride_qk=1, stride_sk=1)
        out["quant"] = compile_one(K._scaled_mxfp4_quant_kernel, qsig, q, qwarps, 1)
    sig = dict(ptrs, y_ptr="*bf16", **{n: "i32" for n in ints})
    out["gemm"] = compile_one(fn, sig, dict(tiles, **{n: 1 for n in ones}), cfg["num_warps"], cfg["num_stages"])
    return out


for job in json.loads(sys.argv[2]):
    print(json.dumps({"job": job, "result": compile_config(job["config"], job["N"], job["K"])}), flush=True)
"""
#: sm_90's shared memory per block (227 KiB)
SM90_SHARED = 232448


def sm90_jobs() -> list[dict[str, Any]]:
    """Every distinct config the shipped sm90 files and the GPU suite give: each bucket of each sm90 file (at its
    (N, K), the seed's for the default file) and each case of suites/scaled_mxfp4.yaml as resolved on sm90 under
    its overrides (the fused entry)."""
    jobs: list[dict[str, Any]] = []
    for f in sorted(CONFIG_DIR.glob(f"sm90-{FAMILY}*.json")):
        key = f.stem[len(f"sm90-{FAMILY}") :].lstrip("-")
        shape = dict(p.split("=") for p in key.split("-")) if key else {"N": "16384", "K": "16384"}
        for cfg in read_config_file(f).values():
            jobs.append({"N": int(shape["N"]), "K": int(shape["K"]), "config": cfg})
    for case in load_suite(ROOT / "suites" / "scaled_mxfp4.yaml"):
        p = case.params
        cfg = resolve(FAMILY, "sm90", p["M"], case.kernel.spec.config.file_key(p), overrides=case.overrides or None)
        jobs.append({"N": p["N"], "K": p["K"], "config": cfg.config})
    unique: dict[str, dict[str, Any]] = {}
    for j in jobs:  # one compilation per config: N is a runtime argument, K only the trip count of the K loop
        unique.setdefault(json.dumps(j["config"], sort_keys=True), j)
    return list(unique.values())


@pytest.mark.slow
def test_shipped_sm90_configs_compile_for_sm90_under_both_tritons(tmp_path):
    """Ahead-of-time for sm_90 on this CPU (ptxas comes with the Triton wheel): each shipped sm90 config's
    kernels compile under both Tritons, within sm_90's shared memory, without register spills."""
    pythons = venv_pythons()
    if not pythons:
        pytest.skip("needs .venvs/golden and/or .venvs/tot (made by scripts/test.sh)")
    script = tmp_path / "aot.py"
    script.write_text(AOT_SCRIPT)
    jobs = sm90_jobs()
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}  # a real compilation
    env["TRITON_DEFAULT_FP_FUSION"] = "1"
    procs = {
        side: subprocess.Popen(
            [py, str(script), str(ROOT), json.dumps(jobs)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for side, py in pythons.items()
    }
    for side, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=900)
        if proc.returncode != 0 and "ptxas" in stderr:
            pytest.skip(f"{side}: ptxas cannot run here: {stderr.strip().splitlines()[-1]}")
        assert proc.returncode == 0, f"{side}: {stderr[-3000:]}"
        results = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
        assert len(results) == len(jobs)
        for r in results:
            for kernel, res in r["result"].items():
                where = f"{side} {kernel} {r['job']}"
                assert res["shared"] <= SM90_SHARED, f"{where}: {res['shared']} bytes of shared memory"
                assert res["spill"] == 0, f"{where}: {res['spill']} bytes of register spills"
                assert 0 < res["regs"] <= 255, where
            print(side, r["job"]["config"], r["result"])


# ---------------------------------------------------------------------------------------------- vendor paths
def test_vendor_ops_run_on_the_kernels_inputs():
    """benchmarks/vendor/scaled_mxfp4.py on the CPU: the bf16 path is the same math (within the bf16 output
    tolerance); the fp8 row-wise paths, where this torch has them, give finite results of the right shape."""
    from benchmarks.vendor import scaled_mxfp4 as V

    spec = load_kernel("scaled_mxfp4_gemm").spec
    for params in V.CASES:
        spec.case_params(params, "vendor CASES")  # every case is a valid case of the kernel
    case = {"M": 40, "N": 48, "K": 96, "out_dtype": "bf16"}
    inputs = K.make_inputs(case, 0)
    ops = V.vendor_ops(case, inputs)
    bf16 = ops.pop("torch.mm bf16 (cuBLAS) on dequantized MXFP4 X, W")
    assert C.rel_frobenius(bf16(), K.reference(inputs)) <= K.SPEC.tolerance_of(case)
    assert set(ops) <= {
        "torch._scaled_mm fp8 e4m3 row-wise (X, W quantized beforehand)",
        "torch fp8 row-wise quantize of X + torch._scaled_mm (end to end)",
    }
    for op in ops.values():
        y = op()
        assert y.shape == (40, 48) and torch.isfinite(y.float()).all()

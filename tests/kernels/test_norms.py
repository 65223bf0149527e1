"""RMSNorm and LayerNorm (kernels/rmsnorm.py, kernels/layernorm.py) on the CPU.

- Under TRITON_INTERPRET=1 in this process: every dtype, both paths (the row in registers, and the chunked loop)
  and the persistent grid, ragged N (not a multiple of the block) and ragged M (not a multiple of the rows a
  program takes), each output poisoned with NaN first, then checked fully written and within the SPEC's tolerance.
- The same cases in each installed venv (.venvs/golden: Triton 3.6.0, .venvs/tot: 3.9.0) in a subprocess, and the
  CPU suite suites/ci_norms.yaml case by case: both interpreters must run every case (no loop has a runtime bound).
- An ahead-of-time sm_90 compile (ptxas from the Triton wheel, no GPU) of every bucket of the shipped sm90 config
  files under both venvs: it compiles, ptxas spills nothing, and x is read and y written as 16-byte vectors.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("TRITON_INTERPRET", "1")  # before any @triton.jit runs

import pytest  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

KERNELS = {"rmsnorm": "RMSNORM-FWD", "layernorm": "LAYERNORM-FWD"}
DTYPES = ("fp16", "bf16", "fp32")
#: (M, N, config overrides, the chunks the plan must use): interp buckets N<=64 (BLOCK_N 64, 4 rows a program),
#: N<=256 (256, 2 rows), any (128, 2 rows)
SHAPES = (
    (5, 64, {}, 1),  # one pass, even N; 5 rows in blocks of 4
    (5, 200, {}, 1),  # one pass, N ragged in a 256-wide block
    (7, 300, {}, 3),  # chunked, the last of three 128-wide chunks ragged
    (3, 256, {"BLOCK_N": 64, "ROWS_PER_PROGRAM": 1}, 4),  # chunked, even
    (6, 1000, {"BLOCK_N": 64, "ROWS_PER_PROGRAM": 4}, 16),  # 16 chunks, 4 rows a program, 6 rows
    (1, 17, {}, 1),  # one row, an odd N
    (8, 300, {"PERSISTENT": 1}, 3),  # persistent grid: 2 "SMs" under the interpreter, 2 row blocks each
    (9, 64, {"PERSISTENT": 1, "ROWS_PER_PROGRAM": 2}, 1),  # persistent, one pass, the last block half empty
)
TORCH_DTYPES = {"fp16": "torch.float16", "bf16": "torch.bfloat16", "fp32": "torch.float32"}
CASES = [(k, M, N, dt, cfg, chunks) for k in KERNELS for dt in DTYPES for M, N, cfg, chunks in SHAPES]


def _case_id(c: tuple) -> str:
    k, M, N, dt, cfg, _ = c
    return f"{k}-M{M}-N{N}-{dt}" + "".join(f"-{a}{b}" for a, b in cfg.items())


def run_case(kernel: str, M: int, N: int, dtype: str, overrides: dict[str, Any], seed: int = 0) -> dict[str, Any]:
    """One case as the harness runs it: the interp config for N under ``overrides``, y poisoned, launched, checked."""
    import torch

    from harness.inputs.kernel import load_kernel
    from harness.kernel_api.configs import resolve
    from kernels import common as C
    from kernels import layernorm, rmsnorm

    mod = {"rmsnorm": rmsnorm, "layernorm": layernorm}[kernel]
    spec = load_kernel(kernel).spec
    params = spec.case_params({"M": M, "N": N, "dtype": dtype}, "test")
    cfg = resolve(KERNELS[kernel], C.arch(), N, "", "N", overrides=overrides).config
    inputs = mod.make_inputs(params, seed)
    C.poison_(inputs["y"])
    y = mod.launch(inputs, cfg)
    return {
        "written": bool(torch.isfinite(y.float()).all()),
        "same_buffer": y.data_ptr() == inputs["y"].data_ptr(),
        "err": C.rel_frobenius(y, mod.reference(inputs)),
        "tol": spec.tolerance_of(params),
        "chunks": rmsnorm.plan(M, N, cfg).NUM_CHUNKS,
        "dtype": str(y.dtype),
    }


def _interp_only() -> None:
    if os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("the in-process kernel tests run under the interpreter")


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_kernel_matches_reference(case):
    _interp_only()
    kernel, M, N, dt, cfg, chunks = case
    r = run_case(kernel, M, N, dt, cfg, seed=M + N)
    assert r["written"] and r["same_buffer"], "every element of the poisoned y written, in place"
    assert r["chunks"] == chunks, "the path this case is meant to cover"
    assert r["dtype"] == TORCH_DTYPES[dt], "y in x's dtype"
    assert r["err"] <= r["tol"], f"relative error {r['err']:.3g} over {r['tol']}"


@pytest.mark.parametrize("kernel", KERNELS)
def test_one_pass_and_chunked_paths_agree(kernel):
    """The same rows through the row-in-registers path and the 4-chunk loop: the same normalization (fp32 inputs,
    so only the order of the fp32 sums differs)."""
    _interp_only()
    from kernels import common as C
    from kernels import layernorm, rmsnorm

    mod = {"rmsnorm": rmsnorm, "layernorm": layernorm}[kernel]
    inputs = mod.make_inputs({"M": 6, "N": 250, "dtype": "fp32", "eps": 1e-5}, 3)
    one = mod.launch(inputs, {"BLOCK_N": 256, "ROWS_PER_PROGRAM": 2}).clone()
    C.poison_(inputs["y"])
    chunked = mod.launch(inputs, {"BLOCK_N": 64, "ROWS_PER_PROGRAM": 4})
    assert rmsnorm.plan(6, 250, {"BLOCK_N": 64}).NUM_CHUNKS == 4
    assert C.rel_frobenius(chunked, one) < 1e-6


@pytest.mark.parametrize("block_n", [256, 32])
def test_layernorm_variance_survives_a_large_mean(block_n):
    """x = 1000 + N(0, 1) in fp32: E[x²] − E[x]² in fp32 would lose the variance entirely (1e6 against 1); the
    one-pass path centers first, the chunked path shifts by the row's first element."""
    _interp_only()
    from kernels import common as C
    from kernels import layernorm

    inputs = layernorm.make_inputs({"M": 4, "N": 200, "dtype": "fp32", "eps": 1e-5}, 1)
    inputs["x"] += 1000.0
    y = layernorm.launch(inputs, {"BLOCK_N": block_n, "ROWS_PER_PROGRAM": 2})
    assert C.rel_frobenius(y, layernorm.reference(inputs)) < 1e-3
    assert (y.std(dim=-1) > 0.5).all(), "the rows still carry their N(0, 1) spread"


@pytest.mark.parametrize("kernel", KERNELS)
def test_eps_reaches_the_kernel(kernel):
    """A large eps visibly shrinks the output; the kernel follows the reference with it."""
    _interp_only()
    from kernels import common as C
    from kernels import layernorm, rmsnorm

    mod = {"rmsnorm": rmsnorm, "layernorm": layernorm}[kernel]
    small = mod.make_inputs({"M": 3, "N": 64, "dtype": "fp32", "eps": 1e-6}, 2)
    big = dict(small, eps=4.0, y=small["y"].clone())
    ys, yb = mod.launch(small, {"BLOCK_N": 64}), mod.launch(big, {"BLOCK_N": 64})
    assert C.rel_frobenius(yb, mod.reference(big)) < 1e-5
    assert yb.abs().mean() < 0.6 * ys.abs().mean()


def test_plan():
    from kernels.rmsnorm import plan

    p = plan(16384, 4096, {"BLOCK_N": 16384, "ROWS_PER_PROGRAM": 1}, sms=132)
    assert (p.BLOCK_N, p.NUM_CHUNKS, p.ROWS, p.ITERS, p.programs) == (4096, 1, 1, 1, 16384), "BLOCK_N capped at N"
    p = plan(1000, 5000, {"BLOCK_N": 2048, "ROWS_PER_PROGRAM": 4}, sms=132)
    assert (p.BLOCK_N, p.NUM_CHUNKS, p.programs) == (2048, 3, 250)
    p = plan(32768, 1024, {"BLOCK_N": 1024, "ROWS_PER_PROGRAM": 4, "PERSISTENT": 2}, sms=132)
    assert (p.programs, p.ITERS) == (264, 32), "8192 row blocks over 264 programs: 32 rounds"
    assert plan(10, 64, {"BLOCK_N": 64, "ROWS_PER_PROGRAM": 4, "PERSISTENT": 8}, sms=132).programs == 3
    for bad in ({"BLOCK_N": 96}, {"ROWS_PER_PROGRAM": 3}):
        with pytest.raises(ValueError, match="power of two"):
            plan(8, 64, bad, sms=1)


def test_spec_and_config_lookup():
    from harness.inputs.kernel import load_kernel
    from harness.kernel_api.configs import resolve

    rms, ln = load_kernel("rmsnorm").spec, load_kernel("layernorm").spec
    p = rms.case_params({"M": 4096, "N": 8192}, "test")
    assert p["dtype"] == "bf16" and p["eps"] == 1e-6 and rms.case_id(p) == "M4096_N8192"
    assert rms.bytes_of(p) == 2 * (2 * 4096 * 8192 + 8192) and rms.flops_of(p) == 4 * 4096 * 8192
    q = ln.case_params({"M": 4, "N": 300, "dtype": "fp32", "eps": 1e-3}, "test")
    assert ln.bytes_of(q) == 4 * (2 * 4 * 300 + 2 * 300) and ln.flops_of(q) == 7 * 4 * 300
    assert ln.case_id(q) == "M4_N300_fp32_eps0.001" and ln.peak_of(q) == "memory"
    assert rms.config.file_key(p) == "", "no per-shape files: the bucket on N picks the config"
    for fam in KERNELS.values():
        assert resolve(fam, "sm90", 4096, "", "N").bucket == "N_LEQ_4096"
        assert resolve(fam, "sm90", 5000, "", "N").bucket == "N_LEQ_8192"
        assert resolve(fam, "sm90", 65536, "", "N").config["BLOCK_N"] < 65536, "past 16384: the chunked path"
        for arch in ("interp", "sm90", "gfx942", "gfx950"):
            assert resolve(fam, arch, 1024, "", "N").config["BLOCK_N"] >= 64


def test_suites_load():
    from harness.inputs.suite import load_suite

    gpu = load_suite(ROOT / "suites" / "norms.yaml")
    assert len(gpu) == 36 and {c.name for c in gpu} == set(KERNELS)
    assert all(c.params["dtype"] == "bf16" and 16 * 2**20 <= 4 * c.params["M"] * c.params["N"] <= 2**31 for c in gpu)
    assert len(load_suite(ROOT / "suites" / "sweep_sm90_norms.yaml")) <= 300
    ci = load_suite(ROOT / "suites" / "ci_norms.yaml")
    assert {c.params["dtype"] for c in ci} == {"fp16", "fp32"} and any(c.params["N"] % 16 for c in ci)


# ------------------------------------------------------------------------------------------ both venvs
def _venv_pythons() -> dict[str, str]:
    """.venvs/golden and .venvs/tot of this checkout, else of the main worktree (a git worktree shares its venvs)."""
    roots = [ROOT]
    r = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--git-common-dir"], capture_output=True, text=True)
    if r.returncode == 0:
        roots.append((ROOT / r.stdout.strip()).resolve().parent)
    found = {}
    for side in ("golden", "tot"):
        for root in roots:
            py = root / ".venvs" / side / "bin" / "python"
            if py.exists():
                found[side] = str(py)
                break
    return found


def _each_venv():
    pythons = _venv_pythons()
    missing = sorted({"golden", "tot"} - set(pythons))
    if missing:
        print(f"skipping {', '.join(missing)}: no .venvs/{missing[0]} (made by scripts/test.sh)")
    return pytest.mark.parametrize("side", sorted(pythons) or [pytest.param("none", marks=pytest.mark.skip)])


CHECK = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import triton
from harness.inputs.suite import load_suite
from tests.kernels.test_norms import CASES, run_case
out = {"triton": triton.__version__, "cases": [], "suite": []}
for kernel, M, N, dt, cfg, chunks in CASES:
    out["cases"].append(dict(run_case(kernel, M, N, dt, cfg, seed=M + N), want_chunks=chunks))
for c in load_suite(sys.argv[1] + "/suites/ci_norms.yaml"):
    r = run_case(c.name, c.params["M"], c.params["N"], c.params["dtype"], c.overrides, c.params["seed"])
    out["suite"].append(dict(r, case=c.key))
print(json.dumps(out))
"""


@pytest.mark.slow
@_each_venv()
def test_every_case_under_each_venv(side, tmp_path):
    py = _venv_pythons()[side]
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    r = subprocess.run([py, "-c", CHECK, str(ROOT)], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["triton"] == {"golden": "3.6.0", "tot": "3.9.0"}[side]
    assert len(out["cases"]) == len(CASES) and len(out["suite"]) == 26
    for res in out["cases"] + out["suite"]:
        assert res["written"] and res["err"] <= res["tol"], res
    assert [c["chunks"] for c in out["cases"]] == [c["want_chunks"] for c in out["cases"]]
    assert {c["chunks"] for c in out["suite"]} == {1, 3}, "the CI suite covers both paths"


AOT = r"""
import json, re, subprocess, sys, tempfile
sys.path.insert(0, sys.argv[1])
import triton
from triton.backends.compiler import GPUTarget
from triton.backends.nvidia.compiler import get_ptxas
from triton.compiler import ASTSource
from harness.worker.artifacts import cubin_resources
from kernels import layernorm, rmsnorm
from harness.kernel_api.configs import CONFIG_DIR, read_config_file, split_config

FNS = {"RMSNORM-FWD": (rmsnorm._rmsnorm_kernel, ["x_ptr", "w_ptr", "y_ptr"]),
       "LAYERNORM-FWD": (layernorm._layernorm_kernel, ["x_ptr", "w_ptr", "b_ptr", "y_ptr"])}
rows = []
for family, (fn, ptrs) in FNS.items():
    for bucket, cfg in read_config_file(CONFIG_DIR / f"sm90-{family}.json").items():
        N = int(bucket.rsplit("_", 1)[1]) if bucket != "any" else 32768  # the bucket's largest N (any: 32768)
        meta, opts = split_config(cfg, "cuda")
        p = rmsnorm.plan(16384, N, meta, sms=132)
        sig = {a: "*bf16" for a in ptrs}
        sig.update(M="i32", N="i32", stride_xm="i32", stride_ym="i32", eps="fp32", **dict.fromkeys(p.meta(), "constexpr"))
        # what the launcher specializes at these shapes: 16-byte aligned pointers, N and row strides multiples of 16
        attrs = {(fn.arg_names.index(a),): [["tt.divisibility", 16]] for a in [*ptrs, "N", "stride_xm", "stride_ym"]}
        k = triton.compile(ASTSource(fn, sig, p.meta(), attrs), target=GPUTarget("cuda", 90, 32), options=opts)
        with tempfile.NamedTemporaryFile("w", suffix=".ptx") as f:
            f.write(k.asm["ptx"])
            f.flush()
            log = subprocess.run([get_ptxas(90).path, "-v", "--gpu-name=sm_90a", f.name, "-o", "/dev/null"],
                                 capture_output=True, text=True).stderr
        spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
        rows.append(dict(family=family, bucket=bucket, N=N, num_warps=opts.get("num_warps", 4), **p.meta(),
                         regs=cubin_resources(k.asm["cubin"]).get("reg"), shared=k.metadata.shared,
                         spill_bytes=int(spills.group(1)) + int(spills.group(2)),
                         ld16=len(re.findall(r"ld\.global[\w.:]*\.v4\.b32", k.asm["ptx"])),
                         st16=len(re.findall(r"st\.global[\w.:]*\.v4\.b32", k.asm["ptx"]))))
print(json.dumps({"triton": triton.__version__, "rows": rows}))
"""


@pytest.mark.slow
@_each_venv()
def test_sm90_configs_compile_ahead_of_time(side, tmp_path):
    """Every bucket of sm90-{RMSNORM,LAYERNORM}-FWD.json compiled for sm_90 (bf16, M=16384, N the bucket's bound):
    no spills, and the row moves as 16-byte vectors. Registers and shared memory are printed (pytest -s)."""
    py = _venv_pythons()[side]
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}  # a real compilation
    r = subprocess.run([py, "-c", AOT, str(ROOT)], capture_output=True, text=True, env=env, cwd=tmp_path)
    if r.returncode != 0 and "ptxas" in r.stderr:
        pytest.skip(f"{side}: ptxas cannot run here: {r.stderr.strip().splitlines()[-1]}")
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    print(f"\n{side} (Triton {out['triton']}), sm_90, bf16:")
    for row in out["rows"]:
        print("  " + " ".join(f"{k}={v}" for k, v in row.items() if k != "family"), row["family"])
    assert len(out["rows"]) == 12
    for row in out["rows"]:
        assert row["spill_bytes"] == 0, row
        assert row["ld16"] > 0 and row["st16"] > 0, f"no 16-byte vector loads/stores: {row}"
        assert 0 < row["regs"] <= 255, row

"""kernels/attention.py on the CPU: the SPEC and its suites and config files in this process; the kernel against
its float64 reference under the interpreter of each venv (.venvs/golden: Triton 3.6.0, which runs the constexpr
loop driver; .venvs/tot: 3.9.0, which runs the GPU's runtime-bound driver and must agree with the other bit for
bit); every shipped sm90 config compiled for sm_90 under both venvs (fits shared memory, no spills).

fp16 only under the interpreter: it computes bf16 dots wrongly. The two venvs run in parallel subprocesses.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TRITON_INTERPRET", "1")  # before kernels.common is first imported (as tests/test_kernels.py)

from harness.inputs.kernel import load_kernel  # noqa: E402
from harness.inputs.suite import load_suite  # noqa: E402
from harness.kernel_api.configs import read_config_file, resolve  # noqa: E402

KERNEL = ROOT / "kernels" / "attention.py"
CONFIGS = ROOT / "kernels" / "configs"
#: what an sm90 CTA may hold in shared memory (227 KiB); the compiler does not check it, the launch does
SM90_SHARED = 232448

# (B, H, GQA, S, D, causal, BLOCK_M, BLOCK_N): ragged S (not a multiple of either tile), S below one tile, S = 1,
# BLOCK_M above, equal to and below BLOCK_N (causal: 2, 1 and 1 masked diagonal blocks), GQA 1, 2 and 4, D 64/128
CASES = [
    (1, 2, 1, 37, 64, False, 16, 16),
    (1, 2, 1, 37, 64, True, 16, 16),
    (2, 4, 2, 45, 64, True, 32, 16),
    (2, 4, 2, 45, 64, False, 32, 16),
    (1, 4, 4, 45, 64, False, 16, 32),
    (1, 4, 4, 45, 64, True, 16, 32),
    (1, 2, 2, 50, 128, True, 32, 16),
    (1, 2, 1, 64, 64, True, 32, 32),
    (1, 2, 1, 64, 64, False, 32, 32),
    (1, 1, 1, 5, 64, True, 16, 16),
    (1, 1, 1, 1, 64, False, 16, 16),
]

INTERP = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
import torch, triton
from kernels import attention as A
from kernels import common as C

for B, H, G, S, D, causal, bm, bn in json.loads(sys.argv[2]):
    case = {"B": B, "H": H, "GQA": G, "S": S, "D": D, "causal": causal, "dtype": "fp16"}
    inputs = A.make_inputs(case, S)
    cfg = {"BLOCK_M": bm, "BLOCK_N": bn, "num_warps": 4, "num_stages": 1}
    C.poison_(inputs["y"])
    y = A.launch(inputs, cfg).clone()
    ref = A.reference(inputs)
    other = A.reference({**inputs, "causal": not causal})
    row = {"case": [B, H, G, S, D, causal, bm, bn], "static": A.static_loops(), "finite": bool(torch.isfinite(y).all()),
           "err": C.rel_frobenius(y, ref), "err_other_mask": C.rel_frobenius(y, other)}
    if not A.static_loops():  # the 3.6 driver, run here too: the same blocks in the same order, the same bits
        C.poison_(inputs["y"])
        row["static_equal"] = bool(torch.equal(A.run(inputs, cfg, True), y))
    print(json.dumps(row), flush=True)
print(json.dumps({"triton": triton.__version__}))
"""

AOT = r"""
import json, os, re, subprocess, sys, tempfile
sys.path.insert(0, sys.argv[1])
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from kernels import attention as A

def resources(cubin):
    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as fh:
        fh.write(cubin)
        fh.flush()
        text = subprocess.run([tool, "-res-usage", fh.name], capture_output=True, text=True, check=True).stdout
    return {k.lower(): int(v) for k, v in re.findall(r"\b(REG|STACK|LOCAL|SHARED):(\d+)", text)}

fn = A._attn_fwd_kernel
for point in json.loads(sys.argv[2]):
    D, causal, even, cfg = point["D"], point["causal"], point["even"], point["config"]
    bm, bn = cfg["BLOCK_M"], cfg["BLOCK_N"]
    const = dict(HEAD_DIM=D, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal, EVEN_N=even, DIAG_BLOCKS=max(bm // bn, 1),
                 STATIC_LOOPS=False, MAX_FULL_BLOCKS=1)
    sig, attrs = {}, {}
    for i, name in enumerate(fn.arg_names):  # as the launcher specializes: pointers and strides 16-divisible
        if name in const:
            sig[name] = "constexpr"
        elif name.endswith("_ptr") or name.startswith("stride"):
            sig[name] = "*bf16" if name.endswith("_ptr") else "i32"
            attrs[(i,)] = [["tt.divisibility", 16]]
        else:
            sig[name] = "fp32" if name == "qk_scale" else "i32"
    k = triton.compile(ASTSource(fn, sig, const, attrs), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": cfg["num_warps"], "num_stages": cfg["num_stages"]})
    ptx = k.asm["ptx"]
    print(json.dumps({**point, "dynamic_shared": k.metadata.shared, **resources(k.asm["cubin"]),
                      "wgmma": ptx.count("wgmma.mma_async"), "cp_async": ptx.count("cp.async")}), flush=True)
"""


def _checkouts() -> list[Path]:
    """This checkout, then the main one when this is a git worktree (whose .venvs the test command built)."""
    r = subprocess.run(["git", "rev-parse", "--git-common-dir"], cwd=ROOT, capture_output=True, text=True)
    main = (ROOT / r.stdout.strip()).resolve().parent if r.returncode == 0 else ROOT
    return [ROOT] if main == ROOT else [ROOT, main]


def _pythons() -> dict[str, str]:
    """The venvs the project's test command builds (.venvs/golden: Triton 3.6.0, .venvs/tot: 3.9.0)."""
    found = {}
    for side in ("golden", "tot"):
        for base in _checkouts():
            py = base / ".venvs" / side / "bin" / "python"
            if py.exists():
                found[side] = str(py)
                break
    return found


def _run_both(script: str, arg: str, interpret: bool) -> dict[str, list[dict]]:
    """``script`` under each venv's python at once; its JSON lines per venv (a missing venv is skipped with a
    printed reason, a ptxas that cannot run here skips the AOT test)."""
    pythons = _pythons()
    if len(pythons) < 2:
        pytest.skip(f"needs .venvs/golden and .venvs/tot (Triton 3.6.0 and 3.9.0); found {sorted(pythons)}")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_DEFAULT_FP_FUSION"] = "1"
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    procs = {
        side: subprocess.Popen(
            [py, "-c", script, str(ROOT), arg], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        for side, py in pythons.items()
    }
    out = {}
    for side, p in procs.items():
        stdout, stderr = p.communicate(timeout=600)
        if p.returncode != 0 and "ptxas" in stderr and not interpret:
            pytest.skip(f"{side}: ptxas cannot run here: {stderr.strip().splitlines()[-1]}")
        assert p.returncode == 0, f"{side}: {stderr[-3000:]}"
        out[side] = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    return out


@cache
def _interpreter_rows() -> dict[str, list[dict]]:
    return _run_both(INTERP, json.dumps(CASES), interpret=True)


# --------------------------------------------------------------------------------------------- the SPEC
def test_spec_loads_without_torch_and_counts_the_work():
    spec = load_kernel(str(KERNEL)).spec
    p = spec.case_params({"B": 2, "H": 32, "GQA": 4, "S": 1024, "D": 128, "causal": True}, "t")
    assert spec.case_id(p) == "B2_H32_GQA4_S1024_D128_causal"
    assert spec.flops_of(p) == 4 * 2 * 32 * 1024**2 * 128 / 2  # causal: the unmasked half
    assert spec.flops_of({**p, "causal": False}) == 4 * 2 * 32 * 1024**2 * 128
    assert spec.bytes_of(p) == 2 * (2 * 32 * 1024 * 128 * 2 + 2 * 8 * 1024 * 128 * 2)  # q, o; k, v at H/GQA
    assert spec.tolerance_of(p) == 2e-2 and spec.tolerance_of({**p, "dtype": "fp16"}) == 3e-3
    assert spec.config.file_key(p) == "D=128-causal=True"


@pytest.mark.parametrize(
    "given, message",
    [({"D": 96}, "not one of 64, 128"), ({"GQA": 0}, "must be >= 1"), ({"dtype": "fp8"}, "not one of bf16, fp16")],
)
def test_spec_refuses_what_the_kernel_cannot_run(given, message):
    from harness.kernel_api.spec import SpecError

    spec = load_kernel(str(KERNEL)).spec
    with pytest.raises(SpecError, match=message):
        spec.case_params({"B": 1, "H": 4, "S": 64, "D": 64, **given}, "t")


def test_make_inputs_refuses_heads_not_a_multiple_of_gqa():
    from kernels import attention as A

    with pytest.raises(ValueError, match="H=6 query heads is not a multiple of GQA=4"):
        A.make_inputs({"B": 1, "H": 6, "GQA": 4, "S": 8, "D": 64, "causal": False, "dtype": "fp16"}, 0)


def test_suites_load_within_their_budgets():
    main, ci, sweep = (load_suite(ROOT / "suites" / f) for f in ("attention.yaml", "ci_attention.yaml",
                                                                  "sweep_sm90_attention.yaml"))  # fmt: skip
    assert 20 <= len(main) <= 40 and len(sweep) <= 300 and len(ci) <= 8
    seen = {(c.params["D"], c.params["causal"], c.params["dtype"], c.params["GQA"] > 1) for c in main}
    assert {(d, c) for d, c, _, _ in seen} == {(64, False), (64, True), (128, False), (128, True)}
    assert {"fp16", "bf16"} == {t for _, _, t, _ in seen} and any(g for *_, g in seen)
    for c in main:
        assert c.params["H"] % c.params["GQA"] == 0 and 512 <= c.params["S"] <= 16384
    assert {c.params["dtype"] for c in ci} == {"fp16"} and {c.params["causal"] for c in ci} == {False, True}


def test_every_suite_case_finds_a_config_on_every_arch():
    cases = [c for f in ("attention.yaml", "sweep_sm90_attention.yaml") for c in load_suite(ROOT / "suites" / f)]
    for arch in ("sm90", "gfx942", "gfx950", "interp"):
        for c in cases:
            r = resolve("ATTN-FWD", arch, c.params["S"], c.spec.config.file_key(c.params), "S")
            assert {"BLOCK_M", "BLOCK_N", "num_warps", "num_stages"} <= set(r.config), (arch, c.key)
            # sm90: picked per (D, causal) file and S bucket from the H100 sweep; the others: starting points
            assert r.tuned == (arch == "sm90" and r.bucket != "any"), (arch, c.key, r.source)


# ------------------------------------------------------------------------------- under the interpreters
@pytest.mark.slow
@pytest.mark.parametrize("side", ["golden", "tot"])
def test_kernel_matches_reference_under_each_interpreter(side):
    rows = _interpreter_rows()[side]
    version = rows[-1]["triton"]
    assert version.startswith("3.6" if side == "golden" else "3.9")
    checked = [r for r in rows if "case" in r]
    assert len(checked) == len(CASES)
    for r in checked:
        assert r["static"] == (side == "golden"), "3.6 runs the constexpr driver, 3.9 the GPU's"
        assert r["finite"], f"{r['case']}: an output element was never written (still NaN)"
        assert r["err"] <= 3e-3, f"{r['case']}: relative error {r['err']:.3g}"
        if r["case"][3] > 1:  # the other mask (causal vs not) is far off: the check sees which one ran
            assert r["err_other_mask"] > 0.05, r
        if side == "tot":
            assert r["static_equal"], f"{r['case']}: the two loop drivers disagree"


# ----------------------------------------------------------------------------------- AOT for sm_90
def _shipped_sm90_points() -> list[dict]:
    """Every bucket of every sm90 config file, with the (D, causal) values it serves (the default file: those
    without their own file), for each EVEN_N the case can take (causal never reads it)."""
    points, own = [], set()
    for f in sorted(CONFIGS.glob("sm90-ATTN-FWD-*.json")):
        d, c = (kv.split("=")[1] for kv in f.stem.removeprefix("sm90-ATTN-FWD-").split("-"))
        own.add((int(d), c == "True"))
        points += [(f.name, b, int(d), c == "True", cfg) for b, cfg in read_config_file(f).items()]
    default = CONFIGS / "sm90-ATTN-FWD.json"
    for d in (64, 128):
        for c in (False, True):
            if (d, c) not in own:
                points += [(default.name, b, d, c, cfg) for b, cfg in read_config_file(default).items()]
    return [
        {"file": f, "bucket": b, "D": d, "causal": c, "even": e, "config": cfg}
        for f, b, d, c, cfg in points
        for e in ((True,) if c else (True, False))
    ]


@pytest.mark.slow
def test_every_shipped_sm90_config_compiles_for_hopper_under_both_tritons():
    points = _shipped_sm90_points()
    assert len({p["file"] for p in points}) >= 2
    for side, rows in _run_both(AOT, json.dumps(points), interpret=False).items():
        assert len(rows) == len(points), side
        for r in rows:
            where = f"{side} {r['file']}:{r['bucket']} D={r['D']} causal={r['causal']} even={r['even']}"
            print(f"{where}: {r['reg']} registers, {r['dynamic_shared']} B shared, {r['local']} B local")
            assert r["dynamic_shared"] + r["shared"] <= SM90_SHARED, f"{where}: does not fit shared memory"
            assert r["stack"] == 0 and r["local"] == 0, f"{where}: spills ({r['stack']} B stack, {r['local']} B local)"
            assert r["wgmma"] > 0 and r["cp_async"] > 0, f"{where}: no wgmma or no pipelined loads"


# ------------------------------------------------------------------------------------------ vendor ops
def test_vendor_cases_are_cases_and_its_ops_compute_the_same_attention():
    """benchmarks/vendor/attention.py: CASES are valid parameters; on this CPU only the flash backend runs (torch
    has a CPU flash kernel), and it matches our reference, GQA through enable_gqa included."""
    import importlib.util

    from kernels import attention as A
    from kernels import common as C

    spec = importlib.util.spec_from_file_location("vendor_attention", ROOT / "benchmarks" / "vendor" / "attention.py")
    V = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(V)
    kspec = load_kernel(str(KERNEL)).spec
    for p in V.CASES:
        assert kspec.case_params(p, "CASES")["H"] % p["GQA"] == 0
    assert max(p["S"] for p in V.CASES) == 16384 and {p["causal"] for p in V.CASES} == {False, True}
    for causal in (False, True):
        case = {"B": 1, "H": 4, "GQA": 2, "S": 40, "D": 64, "causal": causal, "dtype": "fp16"}
        inputs = A.make_inputs(case, 3)
        ops = V.vendor_ops(case, inputs)
        assert "sdpa (flash)" in ops
        assert C.rel_frobenius(ops["sdpa (flash)"](), A.reference(inputs)) <= kspec.tolerance_of(case)

"""The whole pipeline on the CPU: two real venvs (Triton 3.6.0 and 3.9.0 over the same torch), the CI suite
under TRITON_INTERPRET=1 through scripts/run_golden.sh and run_tot.sh, then compare; plus the fp4 kernels, which
the 3.6 interpreter cannot run (tl.dot_scaled), checked under 3.9."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from harness.compare.compare import compare_files
from harness.results.load import load_results
from harness.results.schema import sidecar_path
from tests.conftest import ROOT

pytestmark = pytest.mark.slow
VENVS = {name: ROOT / ".venvs" / name / "bin" / "python" for name in ("golden", "tot")}
need_venvs = pytest.mark.skipif(
    not all(p.exists() for p in VENVS.values()),
    reason="run `make test` (or harness env create envs/venv-*.yaml) to build the venvs",
)


@need_venvs
def test_the_demo_golden_vs_tot_on_cpu(tmp_path):
    """`make demo`'s job as the README's first command runs it (scripts/demo.sh): the CI suite through
    scripts/run_golden.sh and run_tot.sh, compare, markdown and the HTML report. One rep of one timed launch (the
    interpreter's launches are the test's cost; what a rep is made of and how many the stability rule takes are
    tested in tests/run): every case still prepared, checked against its reference and timed."""
    env = {
        **os.environ,
        "DEMO_DIR": str(tmp_path),
        "PYTHONPATH": str(ROOT),
        "HARNESS_RUN_ARGS": "--launches 1 --reps 1",
    }
    r = subprocess.run(["bash", "scripts/demo.sh"], cwd=ROOT, capture_output=True, text=True, timeout=1800, env=env)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    g, t = load_results(tmp_path / "golden.csv"), load_results(tmp_path / "tot.csv")
    assert json.loads(sidecar_path(tmp_path / "golden.csv").read_text())["triton"]["version"] == "3.6.0"
    assert json.loads(sidecar_path(tmp_path / "tot.csv").read_text())["triton"]["version"] == "3.9.0"
    for side in ("golden", "tot"):  # HARNESS_RUN_ARGS reached both runs
        start = json.loads((tmp_path / f"{side}.csv.journal.jsonl").read_text().splitlines()[0])
        assert start["options"]["launches"] == 1 and start["options"]["reps"] == 1
    fp4 = g["kernel"].str.contains("fp4")
    assert (g.loc[fp4, "status"] == "skipped").all() and "needs >= 3.9" in g.loc[fp4, "error"].iloc[0]
    assert (g.loc[~fp4, "status"].isin(["ok", "unstable"])).all()
    assert (t["status"].isin(["ok", "unstable"])).all(), t[["kernel", "status", "error"]]
    assert (t["rel_err"] < 1e-2).all()
    cmp = compare_files(tmp_path / "golden.csv", tmp_path / "tot.csv")
    v = cmp.table.set_index("kernel")["verdict"]
    assert set(v[v.index.str.contains("fp4")]) == {"skipped_in_golden"}  # unsupported under 3.6.0: not a failure
    assert "3.9.0" in (tmp_path / "compare.md").read_text()
    html = (tmp_path / "report" / "index.html").read_text()
    assert "demo: CPU interpreter, wallclock" in html and "Best configuration" in html


@need_venvs
def test_fp4_kernels_exact_under_triton_39_interpreter():
    code = """
import torch
from harness.inputs.kernel import load_kernel
from harness.worker.cases import load_kernel as import_kernel
from kernels import common as C
from harness.kernel_api.configs import resolve
load = lambda name: import_kernel(load_kernel(name).source, ".")
full = lambda k, case: k.SPEC.case_params({n: v for n, v in case.items() if k.SPEC.param(n)}, "test")
cfg_of = lambda k, M, N, K: resolve(k.SPEC.config.family, C.arch(), M, f"N={N}-K={K}").config
for name in ("batched_gemm_a16wfp4", "batched_gemm_afp4wfp4"):
    k = load(name)
    for case, ks in ((dict(B=2, M=16, N=32, K=256, dtype="fp16", out_dtype="fp16"), 1),
                     (dict(B=1, M=20, N=40, K=160, dtype="fp16", out_dtype="fp16"), 2)):
        case = full(k, case)
        cfg = dict(cfg_of(k, case["M"], case["N"], case["K"]), NUM_KSPLIT=ks)
        inputs = k.make_inputs(case, 7)
        C.poison_(inputs["y"])
        err = C.rel_frobenius(k.launch(inputs, cfg), k.reference(inputs))
        assert err <= k.SPEC.tolerance_of(case), (name, case, err)
        print(name, case["K"], ks, err)
"""
    r = subprocess.run(
        [str(VENVS["tot"]), "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)},
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.count("batched_gemm") == 4


@need_venvs
def test_persistent_tma_kernels_under_triton_39_interpreter():
    """The persistent TMA variants (the 3.6 interpreter cannot run their loop): ragged tiles, a last partial round
    of programs (whose scale and bias loads must be masked), bias, odd K-group counts with K_GROUPS=2, the split
    epilogue. The fp8 and int8 variants must equal the pointer kernel bit for bit; bf16 within its tolerance."""
    code = """
import torch
from harness.inputs.kernel import load_kernel
from harness.worker.cases import load_kernel as import_kernel
from kernels import common as C
from harness.kernel_api.configs import resolve
load = lambda name: import_kernel(load_kernel(name).source, ".")
full = lambda k, case: k.SPEC.case_params({n: v for n, v in case.items() if k.SPEC.param(n)}, "test")
cfg_of = lambda k, M, N, K: resolve(k.SPEC.config.family, C.arch(), M, f"N={N}-K={K}").config
assert C.tma_unsupported(torch.empty(1, 8, 16, dtype=torch.float16)) is None
runs = [
    ("batched_gemm_bf16", (3, 40, 48, 200), dict(PERSISTENT=1), True),
    ("batched_gemm_bf16", (3, 16, 64, 64), dict(PERSISTENT=2, EPILOGUE_SUBTILE=1), True),
    ("batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant", (3, 16, 64, 384),
     dict(QUANT_PASS=1, PERSISTENT=2, K_GROUPS=2), True),
    ("batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant", (3, 40, 48, 200),
     dict(QUANT_PASS=1, PERSISTENT=1, EPILOGUE_SUBTILE=1), False),
    ("batched_gemm_a8w8", (3, 40, 48, 256), dict(PERSISTENT=1), True),
    ("batched_gemm_a8w8", (3, 16, 64, 64), dict(PERSISTENT=2, EPILOGUE_SUBTILE=1), False),
]
for name, (B, M, N, K), extra, bias in runs:
    k = load(name)
    case = full(k, dict(B=B, M=M, N=N, K=K, dtype="fp16", out_dtype="fp16", bias=bias))
    base = cfg_of(k, M, N, K)
    cfg = dict(base, **extra)
    assert C.num_tiles(B, M, N, cfg) % C.persistent_programs(B, M, N, cfg) or extra.get("PERSISTENT") == 1
    inputs = k.make_inputs(case, 3)
    C.poison_(inputs["y"])
    y = k.launch(inputs, cfg).clone()
    err = C.rel_frobenius(y, k.reference(inputs))
    assert err <= k.SPEC.tolerance_of(case), (name, extra, err)
    C.poison_(inputs["y"])
    y0 = k.launch(inputs, base)
    if "QUANT_PASS" in extra or name == "batched_gemm_a8w8":  # int32 / same-order fp32 sums: exact
        assert torch.equal(y, y0), (name, extra)
    print(name, extra, err)
"""
    r = subprocess.run(
        [str(VENVS["tot"]), "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)},
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.count("batched_gemm") == 6

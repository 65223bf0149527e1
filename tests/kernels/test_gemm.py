"""The plain GEMMs (kernels/gemm.py, kernels/gemm_fp8.py) on the CPU, under both Triton stacks.

- Interpreter (TRITON_INTERPRET=1), one subprocess per venv (.venvs/golden: Triton 3.6.0, .venvs/tot: 3.9.0): every
  case of suites/ci_gemm.yaml and a grid of tiny shapes x variants (ragged M, N, K; grouped order; split-K;
  persistent TMA, which 3.6's interpreter replaces with the pointer kernel), fp16 for the bf16/fp16 kernel (the
  interpreter's bf16 dots are wrong) and both fp8 scalings, each on a NaN-poisoned output that must come back
  fully written and within the SPEC's tolerance; fp8 dots are exact there, which an fp32 output shows to 1e-6.
- AOT: every config of the shipped sm90 files compiled for sm_90 on this CPU (ptxas from the wheel) under both
  venvs: it must fit an H100's shared memory and not spill, and only the fp8 kernels add each dot's partial into
  the accumulator in fp32 (bf16's fold into the MMA). Registers / shared / spills are printed (``-rP``).
  HARNESS_AOT_SWEEP=1 also compiles every config family of suites/sweep_sm90_gemm.yaml (minutes).
- In this process: the SPECs, suites, config lookups, and the vendor baselines' torch calls (on the CPU, against
  the kernels' references, in the interpreter subprocesses).

Run as a script (``python tests/kernels/test_gemm.py interp|aot JOBS.json``) this file is the subprocess's side:
it prints one JSON line per job.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SIDES = ("golden", "tot")
#: an H100's largest shared memory per block (227 KB): a compiled kernel needing more cannot launch
SM90_MAX_SHARED = 232448
SM90_FAMILIES = {"gemm": "GEMM-A16W16", "gemm_fp8": "GEMM-A8W8-FP8"}
#: the M each bucket of the shipped sm90 files is compiled at (and the default file's (N, K))
BUCKET_M = {"M_LEQ_16": 16, "M_LEQ_128": 128, "M_LEQ_1024": 1024, "any": 8192}
DEFAULT_NK = (6144, 4096)


# ============================================================================== the subprocess's side (script)
def _interp_job(job: dict[str, Any]) -> dict[str, Any]:
    """Launch one case as the worker does (poisoned output, resolved config + overrides) and measure it."""
    import torch

    from harness.kernel_api.configs import resolve
    from kernels import common as C
    from kernels import gemm

    mod = _module(job["file"])
    calls = {"persistent": 0}
    real = gemm._gemm_persistent_kernel

    class Counting:  # which variant ran: the persistent kernel's launches are counted
        def __getitem__(self, grid: Any) -> Any:
            calls["persistent"] += 1
            return real[grid]

    gemm._gemm_persistent_kernel = Counting()
    try:
        p = job["params"]
        cfg = resolve(job["family"], "interp", p["M"], job["key"], overrides=job["overrides"] or None).config
        inputs = mod.make_inputs(p, p.get("seed", 0))
        C.poison_(inputs["y"])
        y = mod.launch(inputs, cfg)
        ref = mod.reference(inputs)
        out = {"finite": bool(torch.isfinite(y.float()).all()), "rel_err": C.rel_frobenius(y, ref)}
        out["variant"] = "persistent" if calls["persistent"] else "pointer"
        out["same_buffer"] = y.data_ptr() == inputs["y"].data_ptr()
        out["unsupported"] = mod.supported(p) if hasattr(mod, "supported") else None
        if job.get("vendor"):
            out["vendor"] = _vendor_errors(p, inputs, ref)
        return out
    finally:
        gemm._gemm_persistent_kernel = real


def _vendor_errors(params: dict[str, Any], inputs: dict[str, Any], ref: Any) -> dict[str, float]:
    import importlib.util

    from kernels import common as C

    spec = importlib.util.spec_from_file_location("vendor_gemm", ROOT / "benchmarks" / "vendor" / "gemm.py")
    vendor = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(vendor)
    return {name: C.rel_frobenius(op(), ref) for name, op in vendor.vendor_ops(params, inputs).items()}


def _exact_fp8_job(job: dict[str, Any]) -> dict[str, Any]:
    """The fp8 kernel into an fp32 output: the interpreter's fp8 dot and the scales are exact, so only fp32
    rounding separates it from the float64 reference (its bf16 store truncates, which hides that)."""
    import torch

    from harness.kernel_api.configs import resolve
    from kernels import common as C
    from kernels import gemm, gemm_fp8

    p = job["params"]
    inputs = gemm_fp8.make_inputs(p, 3)
    y = torch.full((p["M"], p["N"]), float("nan"))
    cfg = dict(resolve("GEMM-A8W8-FP8", "interp", p["M"], "").config, **job["overrides"])
    scales = gemm_fp8.SCALES[p["scaling"]]
    gemm.run_gemm(inputs["x"], inputs["w"], y, cfg, inputs["x_scale"], inputs["w_scale"], scales)
    return {"finite": bool(torch.isfinite(y).all()), "rel_err": C.rel_frobenius(y, gemm_fp8.reference(inputs))}


def _splitk_job(job: dict[str, Any]) -> dict[str, Any]:
    """Split-K against the unsplit kernel on the same inputs: the same sums in another order."""
    from harness.kernel_api.configs import resolve
    from kernels import common as C
    from kernels import gemm

    p = job["params"]
    inputs = gemm.make_inputs(p, 7)
    cfg = resolve("GEMM-A16W16", "interp", p["M"], "").config
    whole = gemm.launch(inputs, dict(cfg, NUM_KSPLIT=1)).clone()
    C.poison_(inputs["y"])
    split = gemm.launch(inputs, dict(cfg, NUM_KSPLIT=job["ks"]))
    return {"rel_diff": C.rel_frobenius(split, whole), "rel_err": C.rel_frobenius(split, gemm.reference(inputs))}


def _module(file: str) -> Any:
    import importlib

    return importlib.import_module("kernels." + Path(file).stem)


def _aot_job(job: dict[str, Any]) -> dict[str, Any]:
    """Compile the kernel a config launches (pointer or persistent, as kernels/gemm.run_gemm picks on an H100) for
    sm_90 with the specializations the JIT would use: ints of 1 constant, pointers and multiples of 16
    divisible by 16."""
    import torch
    import triton

    from harness.worker.artifacts import cubin_resources
    from kernels import common as C

    cfg, (M, N, K) = job["config"], job["MNK"]
    meta = {k: v for k, v in cfg.items() if k not in ("num_warps", "num_stages")}
    opts = {k: cfg[k] for k in ("num_warps", "num_stages") if k in cfg}
    ks, split = C.splitk_plan(K, meta, 1)
    in_dt = torch.float8_e4m3fn if job["kernel"] == "gemm_fp8" else torch.bfloat16
    scales = _scales(job)
    persistent = bool(meta.get("PERSISTENT")) and ks == 1
    fn, args, constexprs = (_persistent_args if persistent else _pointer_args)(in_dt, scales, M, N, K, meta, ks, split)
    t0 = time.time()
    k = triton.compile(_source(fn, args, constexprs), target=_target(), options=opts)
    res = cubin_resources(k.asm["cubin"])
    tile = f"tensor<{meta['BLOCK_SIZE_M']}x{meta['BLOCK_SIZE_N']}xf32"
    return {
        "variant": "persistent" if persistent else "pointer",
        # each dot's partial added into the accumulator in fp32 (not folded into the MMA's own accumulation)
        "promoted": any("arith.addf" in line and tile in line for line in k.asm["ttgir"].splitlines()),
        "shared": k.metadata.shared,
        "regs": res.get("reg"),
        "spill_bytes": res.get("local"),
        "compile_s": round(time.time() - t0, 1),
    }


def _scales(job: dict[str, Any]) -> int:
    from kernels import gemm

    return {"": gemm.NO_SCALES, "tensor": gemm.TENSOR_SCALES, "row": gemm.ROW_SCALES}[job.get("scaling", "")]


def _target() -> Any:
    from triton.backends.compiler import GPUTarget

    return GPUTarget("cuda", 90, 32)


def _pointer_args(in_dt: Any, scales: int, M: int, N: int, K: int, meta: dict, ks: int, split: int) -> tuple:
    import torch

    from kernels import common as C
    from kernels import gemm

    x = torch.empty(1, dtype=in_dt)
    s = torch.empty(1, dtype=torch.float32) if scales else x
    y = torch.empty(1, dtype=torch.float32 if ks > 1 else (torch.bfloat16 if scales else in_dt))
    args = dict(x_ptr=x, w_ptr=x, xs_ptr=s, ws_ptr=s, y_ptr=y, M=M, N=N, K=K, stride_xm=K, stride_xk=1,
                stride_wn=K, stride_wk=1, stride_ym=N, stride_yn=1, stride_yk=M * N if ks > 1 else 0)  # fmt: skip
    consts = dict(SCALES=scales, NUM_KSPLIT=ks, SPLITK_BLOCK_SIZE=split, EVEN_K=K % split == 0, **C.tile_meta(meta))
    return gemm._gemm_kernel, args, consts


def _persistent_args(in_dt: Any, scales: int, M: int, N: int, K: int, meta: dict, ks: int, split: int) -> tuple:
    import torch
    from triton.tools.tensor_descriptor import TensorDescriptor

    from kernels import common as C
    from kernels import gemm

    bm, bn, bk = meta["BLOCK_SIZE_M"], meta["BLOCK_SIZE_N"], meta["BLOCK_SIZE_K"]
    sub = int(meta.get("EPILOGUE_SUBTILE", 0))
    out_dt = torch.bfloat16 if scales else in_dt
    s = torch.empty(1, dtype=torch.float32) if scales else torch.empty(1, dtype=in_dt)

    def desc(dt: Any, block: list[int]) -> Any:  # the type depends on dtype and block only
        return TensorDescriptor.from_tensor(torch.empty(1, 256, 256, dtype=dt), block)

    tiles = -(-M // bm) * -(-N // bn)
    args = dict(x_desc=desc(in_dt, [1, bm, bk]), w_desc=desc(in_dt, [1, bn, bk]), y_desc=desc(out_dt, [1, bm, bn >> sub]),
                xs_ptr=s, ws_ptr=s, M=M, N=N, K=K, NUM_PROGRAMS=min(tiles, 132 * int(meta["PERSISTENT"])),
                NUM_TILES=tiles)  # fmt: skip
    return gemm._gemm_persistent_kernel, args, dict(SCALES=scales, EPILOGUE_SUBTILE=sub, **C.tile_meta(meta))


def _source(fn: Any, args: dict[str, Any], constexprs: dict[str, Any]) -> Any:
    import torch
    from triton.compiler import ASTSource
    from triton.compiler.compiler import make_backend
    from triton.runtime.jit import mangle_type

    divisible = make_backend(_target()).parse_attr("D")
    sig, consts, attrs = {}, dict(constexprs), {}
    for i, name in enumerate(fn.arg_names):
        v = args.get(name)
        if name in constexprs or (type(v) is int and v == 1):
            sig[name] = "constexpr"
            consts.setdefault(name, v)
            continue
        sig[name] = mangle_type(v)
        if isinstance(v, torch.Tensor) or (type(v) is int and v % 16 == 0):
            attrs[(i,)] = divisible
    return ASTSource(fn, sig, consts, attrs)


JOB_KINDS = {"case": _interp_job, "exact_fp8": _exact_fp8_job, "splitk": _splitk_job, "aot": _aot_job}


def _main(jobs_file: str) -> None:
    sys.path.insert(0, str(ROOT))
    for job in json.loads(Path(jobs_file).read_text()):
        try:
            out = JOB_KINDS[job["kind"]](job)
        except Exception as exc:  # noqa: BLE001 - reported per job, asserted by the test
            out = {"error": f"{type(exc).__name__}: {str(exc)[:500]}"}
        print(json.dumps({"id": job["id"], **out}), flush=True)


if __name__ == "__main__":
    _main(sys.argv[2])
    sys.exit(0)

# ================================================================================== the pytest side
import pytest  # noqa: E402

from harness.inputs.kernel import load_kernel  # noqa: E402
from harness.inputs.suite import load_suite  # noqa: E402
from harness.kernel_api.configs import read_config_file, resolve  # noqa: E402

SPECS = {name: load_kernel(f"kernels/{name}.py", ROOT).spec for name in SM90_FAMILIES}
FP16_SHAPES = [(1, 32, 64), (16, 32, 256), (37, 40, 72), (64, 96, 160)]
FP16_VARIANTS = [
    {},
    {"GROUP_SIZE_M": 1},
    {"BLOCK_SIZE_M": 16, "GROUP_SIZE_M": 4},
    {"NUM_KSPLIT": 2},
    {"NUM_KSPLIT": 4},
    {"PERSISTENT": 1},
    {"PERSISTENT": 2, "EPILOGUE_SUBTILE": 1},
]
FP8_SHAPES = [(1, 32, 128), (37, 40, 136), (64, 48, 256)]
FP8_VARIANTS = [{}, {"NUM_KSPLIT": 3}, {"PERSISTENT": 1}, {"PERSISTENT": 1, "EPILOGUE_SUBTILE": 1}]


def _label(cfg: dict[str, Any]) -> str:
    return "-".join(f"{k}{v}" for k, v in sorted(cfg.items())) or "default"


def _case_job(jid: str, kernel: str, params: dict[str, Any], overrides: dict[str, Any], **extra: Any) -> dict:
    spec = SPECS[kernel]
    p = spec.case_params(params, jid)
    return {"id": jid, "kind": "case", "file": f"kernels/{kernel}.py", "params": p, "family": spec.config.family,
            "key": spec.config.file_key(p), "overrides": overrides, "tol": spec.tolerance_of(p), **extra}  # fmt: skip


def _persistent_expected(kernel: str, params: dict[str, Any], overrides: dict[str, Any]) -> bool | None:
    """Whether the persistent kernel should run under Triton 3.9's interpreter (never under 3.6's): asked for,
    no split-K, and every operand TMA-aligned (16-byte rows)."""
    if not overrides.get("PERSISTENT") or overrides.get("NUM_KSPLIT", 1) > 1:
        return False
    esize = 1 if kernel == "gemm_fp8" else 2
    out_size = 2
    return params["K"] * esize % 16 == 0 and params["N"] * out_size % 16 == 0


def interp_jobs() -> list[dict[str, Any]]:
    jobs = []
    for case in load_suite(ROOT / "suites" / "ci_gemm.yaml"):
        name, p, o = case.kernel.name, dict(case.params), dict(case.overrides)
        jobs.append(_case_job(f"ci/{name}/{case.case_id}", name, p, o, tma=_persistent_expected(name, p, o)))
    for (M, N, K), cfg in ((s, c) for s in FP16_SHAPES for c in FP16_VARIANTS):
        p = {"M": M, "N": N, "K": K, "dtype": "fp16"}
        tma = _persistent_expected("gemm", p, cfg)
        jobs.append(_case_job(f"grid/gemm/M{M}_N{N}_K{K}/{_label(cfg)}", "gemm", p, cfg, tma=tma))
    for (M, N, K), scaling, cfg in ((s, sc, c) for s in FP8_SHAPES for sc in ("tensor", "row") for c in FP8_VARIANTS):
        p = {"M": M, "N": N, "K": K, "scaling": scaling}
        tma = _persistent_expected("gemm_fp8", p, cfg)
        jobs.append(_case_job(f"grid/gemm_fp8/M{M}_N{N}_K{K}_{scaling}/{_label(cfg)}", "gemm_fp8", p, cfg, tma=tma))
    jobs.append(_case_job("vendor/gemm", "gemm", {"M": 16, "N": 32, "K": 64, "dtype": "fp16"}, {}, vendor=True))
    for scaling in ("tensor", "row"):
        p = {"M": 16, "N": 32, "K": 64, "scaling": scaling}
        jobs.append(_case_job(f"vendor/gemm_fp8/{scaling}", "gemm_fp8", p, {}, vendor=True))
        for cfg in ({}, {"NUM_KSPLIT": 2}, {"PERSISTENT": 1}):
            jid = f"exact/gemm_fp8/{scaling}/{_label(cfg)}"
            jobs.append({"id": jid, "kind": "exact_fp8", "params": {"M": 33, "N": 48, "K": 192, "scaling": scaling},
                         "overrides": cfg})  # fmt: skip
    ragged = {"M": 20, "N": 48, "K": 200, "dtype": "fp16"}
    jobs += [{"id": f"splitk/ks{ks}", "kind": "splitk", "ks": ks, "params": ragged} for ks in (2, 3, 5)]
    return jobs


def _aot_key(kernel: str, scaling: str, cfg: dict[str, Any]) -> str:
    return json.dumps([kernel, scaling, sorted(cfg.items())])


def shipped_aot_jobs() -> list[dict[str, Any]]:
    """Each distinct config of the sm90 files of both families, compiled at its file's (N, K) and its bucket's M;
    the fp8 ones under both scalings."""
    jobs: dict[str, dict[str, Any]] = {}
    for kernel, family in SM90_FAMILIES.items():
        for path in sorted((ROOT / "kernels" / "configs").glob(f"sm90-{family}*.json")):
            tail = path.stem[len(f"sm90-{family}") :]
            nk = tuple(int(part.split("=")[1]) for part in tail.strip("-").split("-")) if tail else DEFAULT_NK
            for bucket, cfg in read_config_file(path).items():
                for scaling in ("tensor", "row") if kernel == "gemm_fp8" else ("",):
                    key = _aot_key(kernel, scaling, cfg)
                    where = f"{path.name}:{bucket}" + (f" ({scaling})" if scaling else "")
                    if key in jobs:
                        jobs[key]["where"].append(where)
                        continue
                    jobs[key] = {"id": where, "kind": "aot", "kernel": kernel, "scaling": scaling, "config": cfg,
                                 "MNK": [BUCKET_M[bucket], *nk], "where": [where]}  # fmt: skip
    return list(jobs.values())


def sweep_aot_jobs() -> list[dict[str, Any]]:
    jobs: dict[str, dict[str, Any]] = {}
    for case in load_suite(ROOT / "suites" / "sweep_sm90_gemm.yaml"):
        p, cfg = case.params, dict(case.overrides)
        key = _aot_key(case.kernel.name, p.get("scaling", ""), cfg)
        jobs.setdefault(key, {"id": f"{case.kernel.name}/{case.case_id}", "kind": "aot", "kernel": case.kernel.name,
                              "scaling": p.get("scaling", ""), "config": cfg, "MNK": [p["M"], p["N"], p["K"]]})  # fmt: skip
    return list(jobs.values())


def venv_pythons() -> dict[str, str]:
    """The two stacks' interpreters: this checkout's .venvs, else the main worktree's (a git worktree has none)."""
    roots = [ROOT / ".venvs"]
    try:
        common = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--path-format=absolute", "--git-common-dir"],
            capture_output=True, text=True, timeout=30,
        ).stdout.strip()  # fmt: skip
        if common:
            roots.append(Path(common).parent / ".venvs")
    except OSError:
        pass
    found = {}
    for side in SIDES:
        py = next((r / side / "bin" / "python" for r in roots if (r / side / "bin" / "python").exists()), None)
        if py is not None:
            found[side] = str(py)
    return found


class Batch:
    """One venv's subprocess over a job list, started now and read when first needed."""

    def __init__(self, python: str, jobs: list[dict[str, Any]], workdir: Path, interpret: bool):
        self.jobs = {j["id"]: j for j in jobs}
        path = workdir / f"jobs-{abs(hash((python, interpret)))}.json"
        path.write_text(json.dumps(jobs))
        env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
        env.update(PYTHONPATH=str(ROOT), TRITON_DEFAULT_FP_FUSION="1")
        if interpret:
            env["TRITON_INTERPRET"] = "1"
        mode = "interp" if interpret else "aot"
        self.proc = subprocess.Popen(
            [python, str(Path(__file__).resolve()), mode, str(path)],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        self._results: dict[str, dict[str, Any]] | None = None
        self.stderr = ""

    def results(self) -> dict[str, dict[str, Any]]:
        if self._results is None:
            out, self.stderr = self.proc.communicate(timeout=1800)
            rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
            self._results = {r["id"]: r for r in rows}
        return self._results


@pytest.fixture(scope="module")
def batches(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Batch]:
    """All four subprocesses (interp, aot) x (golden, tot) at once: the machine's cores run them side by side."""
    pythons = venv_pythons()
    work = tmp_path_factory.mktemp("gemm")
    out = {}
    aot = shipped_aot_jobs() + (sweep_aot_jobs() if os.environ.get("HARNESS_AOT_SWEEP") == "1" else [])
    for side, py in pythons.items():
        out[("interp", side)] = Batch(py, interp_jobs(), work, interpret=True)
        out[("aot", side)] = Batch(py, aot, work, interpret=False)
    return out


def _batch(batches: dict, mode: str, side: str) -> Batch:
    if (mode, side) not in batches:
        pytest.skip(f"no .venvs/{side} (made by the test command; Triton {'3.6.0' if side == 'golden' else '3.9.0'})")
    return batches[(mode, side)]


def _result(batch: Batch, jid: str) -> dict[str, Any]:
    res = batch.results().get(jid)
    assert res is not None, f"{jid}: no result; the subprocess said:\n{batch.stderr[-3000:]}"
    assert "error" not in res, f"{jid}: {res['error']}"
    return res


# ------------------------------------------------------------------------------------- interpreter
INTERP_JOBS = interp_jobs()
CASE_IDS = [j["id"] for j in INTERP_JOBS if j["kind"] == "case" and not j.get("vendor")]


@pytest.mark.slow
@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("jid", CASE_IDS)
def test_kernel_matches_reference_under_the_interpreter(batches, side, jid):
    """Poisoned output fully written (no NaN left), in place, within the SPEC's tolerance; the persistent
    variant runs where asked and TMA can (Triton 3.9's interpreter), the pointer kernel otherwise."""
    batch = _batch(batches, "interp", side)
    job, res = batch.jobs[jid], _result(batch, jid)
    assert res["finite"], "the poisoned output was not fully written"
    assert res["same_buffer"], "launch must write and return inputs['y']"
    assert res["unsupported"] is None, "the interpreter runs every case on both stacks"
    assert res["rel_err"] <= job["tol"], f"rel err {res['rel_err']:.3g} > tolerance {job['tol']}"
    persistent = bool(job["tma"]) and side == "tot"
    assert res["variant"] == ("persistent" if persistent else "pointer")


@pytest.mark.slow
@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("jid", [j["id"] for j in INTERP_JOBS if j["kind"] == "exact_fp8"])
def test_fp8_dot_and_scales_are_exact_into_fp32(batches, side, jid):
    res = _result(_batch(batches, "interp", side), jid)
    assert res["finite"] and res["rel_err"] <= 1e-6


@pytest.mark.slow
@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("jid", [j["id"] for j in INTERP_JOBS if j["kind"] == "splitk"])
def test_splitk_agrees_with_the_unsplit_kernel(batches, side, jid):
    res = _result(_batch(batches, "interp", side), jid)
    assert res["rel_diff"] <= 1e-3 and res["rel_err"] <= SPECS["gemm"].tolerance_of({"dtype": "fp16"})


@pytest.mark.slow
@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("jid", [j["id"] for j in INTERP_JOBS if j.get("vendor")])
def test_vendor_baselines_compute_the_same_math(batches, side, jid):
    """benchmarks/vendor/gemm.py's torch calls on the kernels' own inputs (torch's CPU paths: the call
    signatures and scale layouts torch._scaled_mm checks) match the kernels' references."""
    batch = _batch(batches, "interp", side)
    job, res = batch.jobs[jid], _result(batch, jid)
    assert res["rel_err"] <= job["tol"]
    scaling = job["params"].get("scaling")
    want = {"tensor": "torch._scaled_mm tensorwise (cuBLASLt)", "row": "torch._scaled_mm rowwise"}.get(scaling)
    names = {want, f"{want} fast accum"} if want else {"torch.mm (cuBLAS)", "F.linear (cuBLAS)"}
    assert set(res["vendor"]) == names
    for name, err in res["vendor"].items():
        assert err <= job["tol"], f"{name}: rel err {err:.3g}"


# ------------------------------------------------------------------------------------------------ AOT
@pytest.mark.slow
@pytest.mark.parametrize("side", SIDES)
def test_every_shipped_sm90_config_compiles_for_hopper_and_fits(batches, side, capsys):
    """Each config of kernels/configs/sm90-GEMM-*.json, as the kernel it launches on an H100, under this stack:
    compiles, fits in 227 KB of shared memory, spills nothing. Prints registers / shared / spills per config."""
    batch = _batch(batches, "aot", side)
    rows = batch.results()
    if rows and all("ptxas" in r.get("error", "") for r in rows.values()):
        pytest.skip(f"{side}: ptxas cannot run here: {next(iter(rows.values()))['error'][-200:]}")
    problems, lines = [], []
    shipped = {j["id"] for j in shipped_aot_jobs()}
    for jid, job in batch.jobs.items():
        if jid not in shipped:
            continue
        res = rows.get(jid, {"error": "no result: " + batch.stderr[-500:]})
        if "error" in res:
            problems.append(f"{jid}: {res['error']}")
            continue
        lines.append(
            f"{side:6} {res['variant']:10} regs {res['regs']:3} shared {res['shared']:6} spills {res['spill_bytes']} "
            f"{_label(job['config'])}  <- {', '.join(job['where'])}"
        )
        if res["shared"] > SM90_MAX_SHARED or res["spill_bytes"]:
            problems.append(f"{jid}: shared {res['shared']} B, spills {res['spill_bytes']} B")
        if res["promoted"] != (job["kernel"] == "gemm_fp8"):
            problems.append(f"{jid}: fp8 partial sums promoted in fp32: {res['promoted']} (kernels/gemm.py docstring)")
    print("\n".join(lines))
    assert not problems, "\n".join(problems)


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("HARNESS_AOT_SWEEP") != "1", reason="HARNESS_AOT_SWEEP=1 compiles the sweep")
@pytest.mark.parametrize("side", SIDES)
def test_every_sweep_config_family_compiles_and_fits(batches, side):
    batch = _batch(batches, "aot", side)
    ids = {j["id"] for j in sweep_aot_jobs()}
    problems, lines = [], []
    for jid in sorted(ids):
        res = batch.results().get(jid, {"error": "no result"})
        if "error" in res or res["shared"] > SM90_MAX_SHARED:
            problems.append(f"{jid}: {res.get('error') or res['shared']}")
        else:
            r = res
            lines.append(
                f"{side} {jid}: {r['variant']} regs {r['regs']} shared {r['shared']} spills {r['spill_bytes']}"
            )
    print("\n".join(lines))
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------------------------------ in this process
def test_specs_declare_the_math():
    g = SPECS["gemm"].case_params({"M": 8192, "N": 28672, "K": 4096}, "t")
    assert SPECS["gemm"].flops_of(g) == 2 * 8192 * 28672 * 4096
    assert SPECS["gemm"].bytes_of(g) == 2 * (8192 * 4096 + 28672 * 4096 + 8192 * 28672)
    assert SPECS["gemm"].peak_of(g) == "bf16" and SPECS["gemm"].dtype_of(g) == "bf16"
    for scaling, scale_bytes in (("tensor", 8), ("row", 4 * (16 + 4096))):
        f = SPECS["gemm_fp8"].case_params({"M": 16, "N": 4096, "K": 14336, "scaling": scaling}, "t")
        assert SPECS["gemm_fp8"].bytes_of(f) == 16 * 14336 + 4096 * 14336 + scale_bytes + 2 * 16 * 4096
        assert SPECS["gemm_fp8"].peak_of(f) == "fp8"
    assert SPECS["gemm_fp8"].case_id(f) == "M16_N4096_K14336_rowscale"
    assert SPECS["gemm_fp8"].hooks == ("supported",)
    assert SPECS["gemm_fp8"].config_keys == SPECS["gemm"].config_keys, "one kernel pair, one set of keys"


def test_suites_load_with_the_intended_sizes():
    gpu = load_suite(ROOT / "suites" / "gemm.yaml")
    kinds = [c.kernel.name for c in gpu]
    assert kinds.count("gemm") == 35 and kinds.count("gemm_fp8") == 24
    assert {c.params["scaling"] for c in gpu if c.kernel.name == "gemm_fp8"} == {"tensor", "row"}
    assert {c.params["M"] for c in gpu} == {1, 16, 128, 1024, 8192}
    assert max(SPECS[c.kernel.name].flops_of(c.params) for c in gpu) < 2.0e12  # < 5 ms at 400 TFLOP/s
    ci = load_suite(ROOT / "suites" / "ci_gemm.yaml")
    assert {c.params.get("dtype", "fp8") for c in ci} == {"fp16", "fp8"}
    assert any(c.overrides.get("NUM_KSPLIT", 1) > 1 for c in ci) and any(c.overrides.get("PERSISTENT") for c in ci)
    assert any(c.params["M"] % 16 and c.params["N"] % 16 and c.params["K"] % 16 for c in ci), "a ragged case"
    sweep = load_suite(ROOT / "suites" / "sweep_sm90_gemm.yaml")
    assert 0 < len(sweep) <= 400
    assert all(set(c.overrides) >= {"BLOCK_SIZE_M", "NUM_KSPLIT", "PERSISTENT", "num_warps"} for c in sweep)


@pytest.mark.parametrize(
    "family, M, key, want",
    [
        # the picks of the H100 sweep (reports/h100-library-triton-3.6.0-vs-3.9.0/tuning/picked.md)
        ("GEMM-A16W16", 1, "N=4096-K=14336", {"NUM_KSPLIT": 2, "BLOCK_SIZE_M": 16}),
        ("GEMM-A16W16", 16, "N=6144-K=4096", {"NUM_KSPLIT": 1, "BLOCK_SIZE_M": 16}),
        ("GEMM-A16W16", 128, "N=28672-K=4096", {"NUM_KSPLIT": 1, "BLOCK_SIZE_N": 128}),
        ("GEMM-A16W16", 8192, "N=10240-K=8192", {"PERSISTENT": 1, "BLOCK_SIZE_N": 256}),
        ("GEMM-A8W8-FP8", 1, "N=2112-K=7168", {"NUM_KSPLIT": 4, "BLOCK_SIZE_K": 256}),
        ("GEMM-A8W8-FP8", 8192, "N=6144-K=4096", {"PERSISTENT": 1, "BLOCK_SIZE_K": 128}),
    ],
)
def test_sm90_lookup_picks_the_per_shape_file_and_bucket(family, M, key, want):
    cfg = resolve(family, "sm90", M, key).config
    assert {k: cfg.get(k) for k in want} == want


def test_every_arch_has_a_default_file_for_both_families():
    for arch in ("interp", "sm90", "gfx942", "gfx950"):
        for family in SM90_FAMILIES.values():
            buckets = read_config_file(ROOT / "kernels" / "configs" / f"{arch}-{family}.json")
            assert "any" in buckets
            if arch.startswith("gfx"):
                assert all("PERSISTENT" not in c and "waves_per_eu" in c for c in buckets.values())

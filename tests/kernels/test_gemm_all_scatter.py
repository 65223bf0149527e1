"""GEMM + all-scatter (kernels/gemm_all_scatter.py) and its vendor baselines (baselines/) on the CPU, both stacks.

- Interpreter (TRITON_INTERPRET=1), one subprocess per venv (.venvs/golden: Triton 3.6.0, .venvs/tot: 3.9.0):
  every case of suites/ci_multigpu.yaml as the worker runs it (resolved config + the suite's overrides, output
  poisoned with NaN, then fully written and within the SPEC's tolerance), and a grid of ragged shapes x every
  variant (SCATTER direct / copy / none, a program per tile or a persistent grid, grouped or plain order), fp16
  (the interpreter's bf16 dots are wrong). At W = 1 the peer table must hold Y's own address.
- The peer stores themselves, W = 2, 3, 4 ranks simulated in one process: each rank's kernel gets its own B slice,
  its own Y and the table of every rank's Y (plain CPU tensors), exactly as on GPUs with symmetric memory minus the
  barriers; after all ranks ran, every Y must hold the whole C (direct, copy), or only the rank's own columns with
  the rest untouched (none).
- The baselines at W = 2 for real: two processes over torch.distributed's gloo backend (the all-gather runs), under
  each venv's Python.
- AOT: every config of the shipped sm90 file compiled for sm_90 (ptxas from the wheel, no GPU) at W = 1 and W = 4
  under both venvs: fits an H100's shared memory, spills nothing, stores to peers as vectors like the local store
  (``tl.multiple_of`` on the loaded peer pointer; without it every element is a 2-byte store), and uses wgmma
  where the tile allows. Registers / shared per config are printed (``-rP``). HARNESS_AOT_SWEEP=1 also
  compiles every configuration of suites/sweep_multigpu.yaml.
- Static: no file of the repository uses NVLink multicast or multimem (the issue's safety rule).

Run as a script (``python tests/kernels/test_gemm_all_scatter.py interp|aot|gloo JOBS.json``) this file is the
subprocess's side: it prints one JSON line per job.
"""

from __future__ import annotations

import io
import json
import os
import re
import socket
import subprocess
import sys
import time
import tokenize
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SIDES = ("golden", "tot")
FAMILY = "GEMM-ALL-SCATTER"
#: an H100's largest shared memory per block (227 KB)
SM90_MAX_SHARED = 232448
#: the M each bucket of the shipped sm90 file is compiled at; (N, K) of the default file
BUCKET_M = {"M_LEQ_16": 16, "M_LEQ_64": 64, "M_LEQ_256": 256, "M_LEQ_1024": 1024, "any": 4096}
DEFAULT_NK = (4096, 14336)


# ============================================================================== the subprocess's side (script)
def _case_job(job: dict[str, Any]) -> dict[str, Any]:
    """One case as the worker runs it: its kernel's code, resolved config, poisoned output, the reference."""
    import torch

    from harness.kernel_api.configs import resolve
    from harness.worker.cases import load_kernel
    from kernels import common as C

    mod = load_kernel(str(ROOT / job["file"]), str(ROOT))
    p = job["params"]
    if job["family"]:
        cfg = resolve(job["family"], "interp", p["M"], job["key"], overrides=job["overrides"] or None).config
    else:
        cfg = dict(job["overrides"])
    why = mod.supported(p) if hasattr(mod, "supported") else None
    if why:
        return {"unsupported": why}
    inputs = mod.make_inputs(p, p.get("seed", 0))
    C.poison_(inputs["y"])
    y = mod.launch(inputs, cfg)
    out = {"finite": bool(torch.isfinite(y.float()).all()), "rel_err": C.rel_frobenius(y, mod.reference(inputs))}
    out["in_y"] = y.untyped_storage().data_ptr() == inputs["y"].untyped_storage().data_ptr()
    out["shape"] = list(y.shape)
    if "peers" in inputs:
        out["table"] = inputs["peers"].table.tolist()
        out["y_ptr"] = inputs["y"].data_ptr()
    return out


def _ranks_job(job: dict[str, Any]) -> dict[str, Any]:
    """W ranks in one process: rank r's kernel stores its columns into every rank's Y through the table."""
    import torch

    from kernels import common as C
    from kernels import gemm_all_scatter as gas

    p, W, cfg = job["params"], job["params"]["W"], job["config"]
    M, N = p["M"], p["N"]
    ys = [torch.full((M, N), float("nan"), dtype=torch.float16) for _ in range(W)]
    table = gas.peer_table([y.data_ptr() for y in ys], "cpu")
    for r in range(W):
        a, b = gas.operands(p, 11, r)
        gas.scatter_gemm(a, b, ys[r], table, r, W, cfg)
    full = gas.full_product(a, p, 11)
    n = N // W
    own = [C.rel_frobenius(ys[r][:, r * n : (r + 1) * n], full[:, r * n : (r + 1) * n]) for r in range(W)]
    whole = [C.rel_frobenius(y, full) for y in ys]
    untouched = [int(torch.isnan(ys[r].float()).sum()) for r in range(W)]
    return {"own": own, "whole": whole, "nan": untouched, "others": (W - 1) * M * n}


def _world_job(job: dict[str, Any]) -> dict[str, Any]:
    """What a W > 1 case says on the CPU (supported) and what make_inputs does without a process group."""
    from kernels import gemm_all_scatter as gas

    p = {"M": 4, "N": 32, "K": 32, "dtype": "fp16", "W": 2}
    out = {"supported_w2": gas.supported(p), "supported_w1": gas.supported({**p, "W": 1, "N": 32})}
    try:
        gas.make_inputs(p, 0)
        out["make_inputs"] = "no error"
    except RuntimeError as err:
        out["make_inputs"] = str(err)
    return out


def _aot_job(job: dict[str, Any]) -> dict[str, Any]:
    """Compile the kernel a config launches on an H100 at world size W, with the JIT's specializations (ints of 1
    constant, pointers and multiples of 16 divisible by 16; the loops' runtime bounds)."""
    import torch
    import triton

    from harness.worker.artifacts import cubin_resources
    from kernels import gemm_all_scatter as gas

    cfg, (M, N, K), W = job["config"], job["MNK"], job["W"]
    meta = {k: v for k, v in cfg.items() if k not in ("num_warps", "num_stages")}
    opts = {k: cfg[k] for k in ("num_warps", "num_stages") if k in cfg}
    n_local = N // W
    plan = gas.plan(M, n_local, K, meta)
    x, t = torch.empty(1, dtype=torch.bfloat16), torch.empty(1, dtype=torch.int64)
    args = dict(a_ptr=x, b_ptr=x, y_ptr=x, peers_ptr=t, M=M, N_LOCAL=n_local, K=K, rank=W - 1, stride_am=K,
                stride_ak=1, stride_bn=K, stride_bk=1, stride_ym=N, stride_yn=1, num_programs=plan["programs"],
                tiles_per_program=plan["tiles_per_program"], k_tiles=plan["k_tiles"])  # fmt: skip
    consts = dict(WORLD=W, SCATTER=gas.SCATTER_MODES[meta["SCATTER"]], EVEN_K=K % meta["BLOCK_SIZE_K"] == 0,
                  FIXED_TILES=0, FIXED_K_TILES=0, **{k: meta[k] for k in gas.CONFIG_KEYS[:4]})  # fmt: skip
    t0 = time.time()
    k = triton.compile(_source(gas._gemm_all_scatter_kernel, args, consts), target=_target(), options=opts)
    res, ptx = cubin_resources(k.asm["cubin"]), k.asm["ptx"]
    return {
        "shared": k.metadata.shared,
        "regs": res.get("reg"),
        "spill_bytes": res.get("local"),
        "vector_stores": len(re.findall(r"st\.global(?:\.\w+)*\.v[24]\.b32", ptx)),
        "scalar_stores": len(re.findall(r"st\.global(?:\.\w+)*\.b16\b", ptx)),
        "wgmma": "wgmma.mma_async" in ptx,
        "compile_s": round(time.time() - t0, 1),
    }


def _target() -> Any:
    from triton.backends.compiler import GPUTarget

    return GPUTarget("cuda", 90, 32)


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


def _gloo_main(jobs: list[dict[str, Any]]) -> None:
    """One rank of a real two-process group (env RANK, WORLD_SIZE, MASTER_ADDR/PORT): each baseline at W = 2."""
    import torch.distributed as dist

    dist.init_process_group("gloo")
    try:
        for job in jobs:
            try:
                out = _case_job(job)
            except Exception as exc:  # noqa: BLE001 - reported per job, asserted by the test
                out = {"error": f"{type(exc).__name__}: {str(exc)[:500]}"}
            print(json.dumps({"id": job["id"], "rank": dist.get_rank(), **out}), flush=True)
    finally:
        dist.destroy_process_group()


JOB_KINDS = {"case": _case_job, "ranks": _ranks_job, "world": _world_job, "aot": _aot_job}


def _main(mode: str, jobs_file: str) -> None:
    sys.path.insert(0, str(ROOT))
    jobs = json.loads(Path(jobs_file).read_text())
    if mode == "gloo":
        _gloo_main(jobs)
        return
    for job in jobs:
        try:
            out = JOB_KINDS[job["kind"]](job)
        except Exception as exc:  # noqa: BLE001 - reported per job, asserted by the test
            out = {"error": f"{type(exc).__name__}: {str(exc)[:500]}"}
        print(json.dumps({"id": job["id"], **out}), flush=True)


if __name__ == "__main__":
    _main(sys.argv[1], sys.argv[2])
    sys.exit(0)

# ================================================================================== the pytest side
import pytest  # noqa: E402

from harness.inputs.kernel import load_kernel  # noqa: E402
from harness.inputs.suite import load_suite  # noqa: E402
from harness.kernel_api.configs import read_config_file, resolve  # noqa: E402

SPEC = load_kernel("kernels/gemm_all_scatter.py", ROOT).spec
BASELINES = ("baselines/torch_gemm.py", "baselines/torch_gemm_all_gather.py")
#: ragged shapes (M, N, K): M, N, K not multiples of the interp tiles (16 x 16/32 x 32), M = 1, K < a tile
GRID_SHAPES = [(1, 32, 64), (5, 40, 72), (20, 48, 100), (37, 24, 16)]
GRID_VARIANTS = [
    {"SCATTER": "direct"},
    {"SCATTER": "copy"},
    {"SCATTER": "none"},
    {"NUM_SMS": 2},
    {"NUM_SMS": 3, "GROUP_SIZE_M": 1, "SCATTER": "copy"},
    {"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 16, "BLOCK_SIZE_K": 16, "GROUP_SIZE_M": 4},
]
#: simulated ranks: (W, M, N, K, config); N a multiple of W, N / W ragged against the 16-wide tiles
RANK_CASES = [
    (2, 20, 40, 72, {"SCATTER": "direct"}),
    (2, 20, 40, 72, {"SCATTER": "copy"}),
    (2, 20, 40, 72, {"SCATTER": "none"}),
    (3, 17, 66, 40, {"SCATTER": "direct", "NUM_SMS": 2}),
    (3, 17, 66, 40, {"SCATTER": "copy", "NUM_SMS": 2, "GROUP_SIZE_M": 1}),
    (4, 33, 96, 32, {"SCATTER": "direct", "GROUP_SIZE_M": 2}),
    (4, 33, 96, 32, {"SCATTER": "copy", "NUM_SMS": 5}),
]
INTERP_BASE = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 16, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 2, "NUM_SMS": 0}


def _label(cfg: dict[str, Any]) -> str:
    return "-".join(f"{k}{v}" for k, v in sorted(cfg.items())) or "default"


def _job(jid: str, file: str, params: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    spec = load_kernel(file, ROOT).spec
    p = spec.case_params(params, jid)
    family, key = (spec.config.family, spec.config.file_key(p)) if spec.config else ("", "")
    return {"id": jid, "kind": "case", "file": file, "params": p, "family": family, "key": key,
            "overrides": overrides, "tol": spec.tolerance_of(p), "kernel": spec.name}  # fmt: skip


def interp_jobs() -> list[dict[str, Any]]:
    jobs = []
    for case in load_suite(ROOT / "suites" / "ci_multigpu.yaml"):
        file = str(Path(case.kernel.source).relative_to(ROOT))
        jobs.append(_job(f"ci/{case.kernel.name}/{case.case_id}", file, dict(case.params), dict(case.overrides)))
    for (M, N, K), cfg in ((s, c) for s in GRID_SHAPES for c in GRID_VARIANTS):
        p = {"M": M, "N": N, "K": K, "dtype": "fp16"}
        jobs.append(_job(f"grid/M{M}_N{N}_K{K}/{_label(cfg)}", "kernels/gemm_all_scatter.py", p, cfg))
    for W, M, N, K, cfg in RANK_CASES:
        p = {"M": M, "N": N, "K": K, "dtype": "fp16", "W": W}
        jobs.append({"id": f"ranks/W{W}_M{M}_N{N}_K{K}/{_label(cfg)}", "kind": "ranks", "params": p,
                     "config": {**INTERP_BASE, **cfg}, "tol": SPEC.tolerance_of(p)})  # fmt: skip
    jobs.append({"id": "world", "kind": "world"})
    return jobs


def gloo_jobs() -> list[dict[str, Any]]:
    return [
        _job(f"gloo/{Path(f).stem}/{dt}", f, {"M": 7, "N": 40, "K": 56, "dtype": dt, "W": 2}, {})
        for f in BASELINES
        for dt in ("fp16", "bf16")
    ]


def _aot_key(cfg: dict[str, Any], W: int) -> str:
    return json.dumps([sorted(cfg.items()), W])


def shipped_aot_jobs() -> list[dict[str, Any]]:
    """Each distinct config of the sm90 files, at its bucket's M and its file's (N, K), at W = 1 and W = 4."""
    jobs: dict[str, dict[str, Any]] = {}
    for path in sorted((ROOT / "kernels" / "configs").glob(f"sm90-{FAMILY}*.json")):
        tail = path.stem[len(f"sm90-{FAMILY}") :]
        parts = dict(part.split("=") for part in tail.strip("-").split("-")) if tail else {}
        nk = (int(parts["N"]), int(parts["K"])) if parts else DEFAULT_NK
        for bucket, cfg in read_config_file(path).items():
            for W in (1, 4):
                where = f"{path.name}:{bucket}:W{W}"
                job = {"id": where, "kind": "aot", "config": cfg, "W": W, "MNK": [BUCKET_M[bucket], *nk], "where": []}
                jobs.setdefault(_aot_key(cfg, W), job)["where"].append(where)
    return list(jobs.values())


def sweep_aot_jobs() -> list[dict[str, Any]]:
    jobs: dict[str, dict[str, Any]] = {}
    for case in load_suite(ROOT / "suites" / "sweep_multigpu.yaml"):
        cfg = dict(case.overrides)
        jobs.setdefault(_aot_key(cfg, 4), {"id": f"sweep/{_label(cfg)}", "kind": "aot", "config": cfg, "W": 4,
                                           "MNK": [1024, 8192, 28672]})  # fmt: skip
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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Batch:
    """Subprocesses over a job list (one, or one per rank in gloo mode), started now and read when first needed."""

    def __init__(self, python: str, jobs: list[dict[str, Any]], workdir: Path, mode: str, ranks: int = 1):
        self.jobs = {j["id"]: j for j in jobs}
        path = workdir / f"jobs-{mode}-{abs(hash(python))}.json"
        path.write_text(json.dumps(jobs))
        env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
        env.update(PYTHONPATH=str(ROOT), TRITON_DEFAULT_FP_FUSION="1")
        if mode != "aot":
            env["TRITON_INTERPRET"] = "1"
        if ranks > 1:  # what the worker group gives every rank (harness/run/group.py)
            env.update(WORLD_SIZE=str(ranks), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()))
            env.update(NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1", NVSHMEM_DISABLE_NVLS="1")
        self.procs = [
            subprocess.Popen(
                [python, str(Path(__file__).resolve()), mode, str(path)],
                cwd=ROOT,
                env={**env, "RANK": str(r), "LOCAL_RANK": str(r)},
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )  # fmt: skip
            for r in range(ranks)
        ]
        self._results: dict[Any, dict[str, Any]] | None = None
        self.stderr = ""

    def results(self) -> dict[Any, dict[str, Any]]:
        """Job id -> result (one process), or (job id, rank) -> result (gloo ranks)."""
        if self._results is None:
            self._results = {}
            for proc in self.procs:
                out, err = proc.communicate(timeout=900)
                self.stderr += err
                for row in (json.loads(line) for line in out.splitlines() if line.startswith("{")):
                    self._results[(row["id"], row["rank"]) if "rank" in row else row["id"]] = row
        return self._results


@pytest.fixture(scope="module")
def batches(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Batch]:
    """Every subprocess at once (interp, aot, gloo) x (golden, tot): the machine's cores run them side by side."""
    work = tmp_path_factory.mktemp("gemm_all_scatter")
    aot = shipped_aot_jobs() + (sweep_aot_jobs() if os.environ.get("HARNESS_AOT_SWEEP") == "1" else [])
    out = {}
    for side, py in venv_pythons().items():
        out[("interp", side)] = Batch(py, interp_jobs(), work, "interp")
        out[("aot", side)] = Batch(py, aot, work, "aot")
        out[("gloo", side)] = Batch(py, gloo_jobs(), work, "gloo", ranks=2)
    return out


def _batch(batches: dict, mode: str, side: str) -> Batch:
    if (mode, side) not in batches:
        pytest.skip(f"no .venvs/{side} (made by the test command; Triton {'3.6.0' if side == 'golden' else '3.9.0'})")
    return batches[(mode, side)]


def _result(batch: Batch, key: Any) -> dict[str, Any]:
    res = batch.results().get(key)
    assert res is not None, f"{key}: no result; the subprocess said:\n{batch.stderr[-3000:]}"
    assert "error" not in res, f"{key}: {res['error']}"
    return res


# ------------------------------------------------------------------------------------- interpreter
INTERP_JOBS = interp_jobs()


@pytest.mark.slow
@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("jid", [j["id"] for j in INTERP_JOBS if j["kind"] == "case"])
def test_case_matches_reference_under_the_interpreter(batches, side, jid):
    """Poisoned output fully written, within the SPEC's tolerance, in the case's own output buffer; the fused
    kernel's peer table at W = 1 is Y's own address; SCATTER none at W = 1 is still the whole C."""
    batch = _batch(batches, "interp", side)
    job, res = batch.jobs[jid], _result(batch, jid)
    assert "unsupported" not in res, f"W = 1 runs on the CPU under both stacks: {res.get('unsupported')}"
    assert res["finite"], "the poisoned output was not fully written"
    assert res["rel_err"] <= job["tol"], f"rel err {res['rel_err']:.3g} > tolerance {job['tol']}"
    assert res["in_y"], "launch must write the case's output buffer inputs['y']"
    p = job["params"]
    want = [p["M"], p["N"] // p["W"]] if job["kernel"] == "torch_gemm" else [p["M"], p["N"]]
    assert res["shape"] == want
    if job["kernel"] == "gemm_all_scatter":
        assert res["table"] == [res["y_ptr"]], "at W = 1 the peer table holds Y's own address"


@pytest.mark.slow
@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("jid", [j["id"] for j in INTERP_JOBS if j["kind"] == "ranks"])
def test_simulated_ranks_scatter_into_every_peer(batches, side, jid):
    """W ranks' kernels, each storing through the table of every rank's Y: direct and copy leave the whole C in
    every Y; none leaves each rank's own columns right and every other element untouched (NaN)."""
    batch = _batch(batches, "interp", side)
    job, res = batch.jobs[jid], _result(batch, jid)
    tol = job["tol"]
    assert all(e <= tol for e in res["own"]), f"a rank's own columns are wrong: {res['own']}"
    if job["config"]["SCATTER"] == "none":
        assert res["nan"] == [res["others"]] * job["params"]["W"], "SCATTER none must not touch the peers' columns"
    else:
        assert res["nan"] == [0] * job["params"]["W"], "some peer columns were never written"
        assert all(e <= tol for e in res["whole"]), f"rel err per rank {res['whole']}"


@pytest.mark.slow
@pytest.mark.parametrize("side", SIDES)
def test_world_size_above_one_is_refused_on_the_cpu(batches, side):
    res = _result(_batch(batches, "interp", side), "world")
    assert "peer memory" in res["supported_w2"] and res["supported_w1"] is None
    assert "W=2" in res["make_inputs"] and "1 rank" in res["make_inputs"], res["make_inputs"]


# ----------------------------------------------------------------------------------- gloo (2 ranks)
@pytest.mark.slow
@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("jid", [j["id"] for j in gloo_jobs()])
def test_baselines_at_two_ranks_over_gloo(batches, side, jid):
    """Each baseline in a real two-process group: the GEMM-only one gives each rank its own block, the all-gather
    one the whole C on both ranks (NCCL's call, here over gloo), within tolerance."""
    batch = _batch(batches, "gloo", side)
    job = batch.jobs[jid]
    for rank in (0, 1):
        res = _result(batch, (jid, rank))
        assert res["finite"] and res["in_y"]
        assert res["rel_err"] <= job["tol"], f"rank {rank}: rel err {res['rel_err']:.3g}"
        p = job["params"]
        assert res["shape"] == ([p["M"], p["N"] // 2] if "torch_gemm/" in jid else [p["M"], p["N"]])


# ------------------------------------------------------------------------------------------------ AOT
def _aot_problems(batch: Batch, jobs: list[dict[str, Any]], side: str) -> tuple[list[str], list[str]]:
    problems, lines = [], []
    for job in jobs:
        res = batch.results().get(job["id"], {"error": "no result: " + batch.stderr[-500:]})
        if "error" in res:
            problems.append(f"{job['id']}: {res['error']}")
            continue
        cfg = job["config"]
        lines.append(
            f"{side:6} W{job['W']} regs {res['regs']:3} shared {res['shared']:6} spills {res['spill_bytes']} "
            f"vector stores {res['vector_stores']:3} wgmma {int(res['wgmma'])}  {_label(cfg)}"
        )
        if res["shared"] > SM90_MAX_SHARED or res["spill_bytes"]:
            problems.append(f"{job['id']}: shared {res['shared']} B, spills {res['spill_bytes']} B")
        if res["scalar_stores"] or not res["vector_stores"]:
            problems.append(f"{job['id']}: {res['scalar_stores']} 2-byte stores, {res['vector_stores']} vector ones")
        if res["wgmma"] != (cfg["BLOCK_SIZE_M"] >= 64 and cfg["num_warps"] % 4 == 0):
            problems.append(f"{job['id']}: wgmma {res['wgmma']} for BLOCK_SIZE_M {cfg['BLOCK_SIZE_M']}")
    return problems, lines


@pytest.mark.slow
@pytest.mark.parametrize("side", SIDES)
def test_every_shipped_sm90_config_compiles_for_hopper_and_fits(batches, side):
    """Each config of kernels/configs/sm90-GEMM-ALL-SCATTER*.json at W = 1 and 4 under this stack: compiles, fits
    227 KB of shared memory, spills nothing, stores (locally and to every peer) as vectors only (16 bytes a thread,
    8 where a 16 x 32 tile gives 128 threads 4 elements each), and runs its MMAs on wgmma exactly when the tile
    allows it (BLOCK_SIZE_M >= 64)."""
    batch = _batch(batches, "aot", side)
    rows = batch.results()
    if rows and all("ptxas" in r.get("error", "") for r in rows.values()):
        pytest.skip(f"{side}: ptxas cannot run here: {next(iter(rows.values()))['error'][-200:]}")
    problems, lines = _aot_problems(batch, shipped_aot_jobs(), side)
    print("\n".join(lines))
    assert not problems, "\n".join(problems)


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("HARNESS_AOT_SWEEP") != "1", reason="HARNESS_AOT_SWEEP=1 compiles the sweep")
@pytest.mark.parametrize("side", SIDES)
def test_every_sweep_config_compiles_and_fits(batches, side):
    problems, lines = _aot_problems(_batch(batches, "aot", side), sweep_aot_jobs(), side)
    print("\n".join(lines))
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------------------------------ in this process
def test_spec_counts_the_work():
    """flops: the whole product (all ranks); bytes: one rank's HBM (A, its B slice, all of C); link bytes: its block
    to each of W - 1 peers."""
    from kernels import gemm_all_scatter as gas

    p = SPEC.case_params({"M": 16, "N": 4096, "K": 14336, "W": 4}, "t")
    assert SPEC.flops_of(p) == 4 * 2 * 16 * 1024 * 14336
    assert SPEC.bytes_of(p) == 2 * (16 * 14336 + 1024 * 14336 + 16 * 4096)
    assert gas.link_bytes(p) == 2 * 16 * 1024 * 3 and gas.link_bytes({**p, "W": 1}) == 0
    assert SPEC.peak_of(p) == "bf16" and SPEC.peak_of({**p, "dtype": "fp16"}) == "fp16"
    assert SPEC.world_size_of(p) == 4 and SPEC.case_id(p) == "M16_N4096_K14336_W4"
    assert SPEC.config.file_key(p) == "N=4096-K=14336-W=4", "config files specialize on (N, K, W)"
    with pytest.raises(Exception, match="not a multiple of W"):
        SPEC.case_params({"M": 16, "N": 4096, "K": 64, "W": 3}, "t")
    gemm = load_kernel("baselines/torch_gemm.py", ROOT).spec
    gather = load_kernel("baselines/torch_gemm_all_gather.py", ROOT).spec
    assert gemm.bytes_of(p) == 2 * (16 * 14336 + 1024 * 14336 + 16 * 1024), "GEMM only: C's own block"
    assert gather.bytes_of(p) == SPEC.bytes_of(p) and gather.flops_of(p) == gemm.flops_of(p) == SPEC.flops_of(p)
    assert gemm.world_size == gather.world_size == "W" and gemm.config is None and gather.hooks == ()


def test_suites_hold_the_issue_s_product():
    gpu = load_suite(ROOT / "suites" / "multigpu.yaml")
    fused = [c for c in gpu if c.kernel.name == "gemm_all_scatter"]
    assert len(fused) == 240 and sum(c.overrides.get("SCATTER") == "none" for c in fused) == 120
    assert {c.params["W"] for c in gpu} == {1, 2, 4} and {c.params["M"] for c in gpu} == {1, 16, 64, 256, 1024}
    assert {(c.params["N"], c.params["K"]) for c in gpu} == {(4096, 14336), (4096, 4096), (8192, 4096), (8192, 28672)}
    assert {c.params["dtype"] for c in fused} == {"fp16", "bf16"}
    assert {c.kernel.name for c in gpu} == {"gemm_all_scatter", "torch_gemm", "torch_gemm_all_gather"}
    sweep = load_suite(ROOT / "suites" / "sweep_multigpu.yaml")
    configs = {tuple(sorted(c.overrides.items())) for c in sweep}
    assert len(sweep) >= 1000 and len(configs) >= 20 and {c.params["W"] for c in sweep} == {1, 2, 4}
    assert all(set(c.overrides) == set(SPEC.config_keys) | {"num_warps", "num_stages"} for c in sweep)
    assert {c.overrides["SCATTER"] for c in sweep} == {"direct", "copy"}
    ci = load_suite(ROOT / "suites" / "ci_multigpu.yaml")
    assert {c.params["W"] for c in ci} == {1} and {c.kernel.name for c in ci} == {k.kernel.name for k in gpu}
    assert {c.overrides.get("SCATTER") for c in ci} >= {"direct", "copy", "none"}
    assert any(c.overrides.get("NUM_SMS") for c in ci)


def test_every_arch_has_a_config_file_and_the_lookup_buckets_on_m():
    for arch in ("interp", "sm90", "gfx942", "gfx950"):
        buckets = read_config_file(ROOT / "kernels" / "configs" / f"{arch}-{FAMILY}.json")
        assert "any" in buckets
        assert all(c["SCATTER"] in ("direct", "copy", "none") for c in buckets.values())
        if arch.startswith("gfx"):
            assert all("waves_per_eu" in c for c in buckets.values())
    assert resolve(FAMILY, "sm90", 1, "N=4096-K=14336-W=4").config["BLOCK_SIZE_M"] == 16
    assert resolve(FAMILY, "sm90", 1024, "N=4096-K=14336-W=4").config["BLOCK_SIZE_M"] == 128


# --------------------------------------------------------------------------------- multicast: never
#: names that turn multicast off or refuse to run with it on (TORCH_SYMM_MEM_DISABLE_MULTICAST, NO_MULTICAST,
#: multicast_problem, require_multicast_off): the only names that may contain "multicast"
MULTICAST_OFF_NAME = re.compile(r"^(\w*_)?(disable_multicast|no_multicast|multicast_off|multicast_problem)$")
CODE_SUFFIXES = {".py", ".sh", ".bash", ".yaml", ".yml", ".toml", ".cfg", ".ini", ".c", ".cc", ".cpp", ".cu", ".cuh",
                 ".h", ".hpp", ".ptx", ".ttir", ".ttgir", ".llir"}  # fmt: skip


def _forbidden(word: str) -> bool:
    """A name that uses multimem or multicast (cuMulticastCreate, multicast_ptr, multimem_all_reduce_, the PTX
    multimem.ld_reduce...); the plain English word in a message or a name that turns it off is fine."""
    w = word.lower()
    return "multimem" in w or ("multicast" in w and w != "multicast" and not MULTICAST_OFF_NAME.match(w))


def _python_words(text: str) -> list[tuple[int, str]]:
    """(line, word) of every identifier but the names a ``def`` or ``class`` gives (a test named for what it refuses
    uses nothing), and every word in a string that is not a docstring; comments skipped."""
    words, prev, prev_name = [], tokenize.NEWLINE, ""
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.NAME and prev_name not in ("def", "class"):
            words.append((tok.start[0], tok.string))
        elif tok.type == tokenize.STRING and prev not in (
            tokenize.NEWLINE,
            tokenize.NL,
            tokenize.INDENT,
            tokenize.DEDENT,
        ):
            words += [(tok.start[0], w) for w in re.findall(r"[A-Za-z_][A-Za-z0-9_.]*", tok.string)]
        if tok.type not in (tokenize.COMMENT, tokenize.NL):
            prev, prev_name = tok.type, tok.string if tok.type == tokenize.NAME else ""
    return words


def _other_words(path: Path, text: str) -> list[tuple[int, str]]:
    comment = "//" if path.suffix in {".c", ".cc", ".cpp", ".cu", ".cuh", ".h", ".hpp", ".ptx"} else "#"
    return [(n, w) for n, line in enumerate(text.splitlines(), 1)
            for w in re.findall(r"[A-Za-z_][A-Za-z0-9_.]*", line.split(comment)[0])]  # fmt: skip


def repo_code_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "--cached", "--others", "--exclude-standard"],
        capture_output=True, text=True, timeout=60,
    ).stdout.split()  # fmt: skip
    files = [ROOT / f for f in listed] if listed else [p for p in ROOT.rglob("*") if ".venvs" not in p.parts]
    me = Path(__file__).resolve()
    return [f for f in files if f.is_file() and (f.suffix in CODE_SUFFIXES or f.name == "Makefile") and f != me]


def test_no_file_uses_nvlink_multicast_or_multimem():
    """The issue's safety rule, checked on every code file of the repository (comments, docstrings and this test
    aside): no multimem operations, no multicast objects (cuMulticastCreate, a symmetric-memory handle's
    multicast_ptr, torch's multimem collectives). Names that turn multicast off are allowed."""
    files = repo_code_files()
    assert any(f.name == "gemm_all_scatter.py" for f in files), "the scan must see the kernels"
    found = []
    for f in files:
        text = f.read_text(encoding="utf-8", errors="replace")
        if "multimem" not in text.lower() and "multicast" not in text.lower():
            continue
        words = _python_words(text) if f.suffix == ".py" else _other_words(f, text)
        found += [f"{f.relative_to(ROOT)}:{n}: {w}" for n, w in words if _forbidden(w)]
    assert not found, "NVLink multicast / multimem used:\n" + "\n".join(found)


def test_the_multicast_scan_catches_real_uses():
    sample = (
        '"""Docstrings may say multimem and cuMulticastCreate."""\n'
        "import os  # a comment may say multicast_ptr\n"
        "ptr = handle.multicast_ptr\n"
        'asm = "multimem.ld_reduce.relaxed.sys.global.add.f32 $0, [$1];"\n'
        'os.environ["TORCH_SYMM_MEM_DISABLE_MULTICAST"] = "1"\n'
        'print("NVLink multicast must stay off")\n'
        "cuda.cuMulticastCreate(prop)\n"
        "def test_refuses_multicast_objects():\n"
        "    pass\n"
    )
    found = [(n, w) for n, w in _python_words(sample) if _forbidden(w)]
    assert found == [
        (3, "multicast_ptr"),
        (4, "multimem.ld_reduce.relaxed.sys.global.add.f32"),
        (7, "cuMulticastCreate"),
    ]


def test_launches_take_turns_on_the_ring_of_ys(monkeypatch):
    """At W > 1 every launch moves to the next symmetric Y (and its table and handle), wrapping around, so a rep
    samples several placements of the one input that cannot move; the env knob sets the ring's size."""
    import torch

    from kernels import gemm_all_scatter as gas

    ring = [(torch.full((1,), float(i)), torch.tensor([i]), f"h{i}") for i in range(3)]
    p = gas.Peers(y=ring[0][0], table=ring[0][1], handle=ring[0][2], rank=0, world=2, seed=0, ring=ring)
    seen = []
    for _ in range(4):
        p.next_y()
        seen.append((p.handle, int(p.table[0]), float(p.y[0])))
    assert seen == [("h1", 1, 1.0), ("h2", 2, 2.0), ("h0", 0, 0.0), ("h1", 1, 1.0)]
    monkeypatch.delenv(gas.Y_RING_ENV, raising=False)
    assert gas.y_ring() == gas.Y_RING
    monkeypatch.setenv(gas.Y_RING_ENV, "1")
    assert gas.y_ring() == 1
    monkeypatch.setenv(gas.Y_RING_ENV, "zero")
    with pytest.raises(RuntimeError, match="GEMM_ALL_SCATTER_Y_RING='zero'"):
        gas.y_ring()

"""The worker: runs inside one environment's Python, with only the standard library, torch and triton.

Run by path (``python worker.py --repo ROOT --result-fd FD``); it never imports the harness package. It reads one
JSON request per line on stdin and answers with one JSON line on the result pipe (never stdout: Triton and kernels
print there, and the driver keeps stdout/stderr only as error text).

Requests:
  {"op": "hello"}                                    -> environment facts (versions, GPU, knobs)
  {"op": "prepare", "case": {...}, "check": true,    -> build inputs, resolve config, compile (timed), check;
   "artifacts": DIR}                                    with DIR: store each compiled kernel the case launched
  {"op": "heat", "seconds": 5}                       -> sustained matmuls: reps start on a warm GPU
  {"op": "time", "case": {...}, "n": 20,             -> one rep: n timed launches (L2 flushed before each), median;
   "gap": null | "auto" | "<ms>",                       gap: the GPU idles that long before every launch;
   "shuffle": true, "move_inputs": true}                shuffle: a random-sized allocation before every launch,
                                                        so buffers the op allocates land somewhere new each time;
                                                        move_inputs: the inputs too, copied to a random place;
                                                        with NVML the answer carries "telemetry" (SM clock,
                                                        clock-lowering reasons, temperature; gpu_telemetry.py)
  {"op": "quit"}
A case that fails answers {"status": <compile_error|runtime_error|incorrect|skipped>, "error": "..."}; a crash or a
hang kills the process, and the driver records that instead. A failure that leaves the GPU context unusable (an
illegal address is sticky in CUDA) is answered with "worker_exits": true, and the worker exits: the driver starts
a fresh one for the next case instead of failing every case after it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import time
import traceback
from collections import OrderedDict
from typing import Any

KNOB_PREFIXES = ("TRITON_", "AMDGCN_", "MLIR_", "LLVM_", "PTXAS", "NVPTX_", "HIP_", "CUDA_VISIBLE", "ROCR_")
FLUSH_BYTES = 256 * 1024 * 1024
#: auto launch count: about this much kernel time per rep, at least this many launches. Power-bound ms-long
#: kernels wander by a few % from launch to launch on Hopper; 5 launches a rep let that through to the verdicts.
#: With the inputs moved before every launch, each launch is one more placement sampled: 30 keep an H100's rep
#: medians of ms-long GEMMs within about 0.15 % (benchmarks/gpu_validation/launch_trace.py).
AUTO_REP_US = 40_000
AUTO_MIN_LAUNCHES = 30
#: --launch-gap auto: the GPU idles AUTO_GAP_FACTOR x the kernel's time, at most AUTO_GAP_MAX_US, before each
#: timed launch. On an H100 a 5.7 ms bf16 GEMM read 5850-6090 us between rounds with 1 ms of idle (the power
#: limiter had not let go) and 5576-5579 us with 10 ms (benchmarks/gpu_validation/power_trace.py, 2026-11-22)
AUTO_GAP_FACTOR = 2.0
AUTO_GAP_MAX_US = 10_000.0
#: input placements: a rehomed tensor starts at a random multiple of PLACE_ALIGN bytes (Triton specializes
#: pointers on 16-byte alignment, TMA needs 16: both kept) within a pad of its own size, at least PLACE_PAD_MIN
#: and at most PLACE_PAD_MAX bytes
PLACE_ALIGN = 4096
PLACE_PAD_MIN = 2 << 20
PLACE_PAD_MAX = 64 << 20
FLUSH_NAME = "_harness_l2_flush"
MARKER_NAME = "_harness_marker"


def _tail(text: str, n: int = 1500) -> str:
    return text if len(text) <= n else "..." + text[-n:]


#: an error text's length: the driver keeps the last 1,500 characters of it (runner._row), prefixes included
ERROR_CHARS = 1400


def _chain(exc: BaseException) -> list[tuple[str, BaseException]]:
    """The exception and the ones it chains to, as (how it links to the one before, exception); at most 5."""
    out: list[tuple[str, BaseException]] = [("", exc)]
    seen = {id(exc)}
    while len(out) < 5:
        e = out[-1][1]
        nxt, how = (e.__cause__, "caused by") if e.__cause__ is not None else (e.__context__, "while handling")
        if nxt is None or e.__suppress_context__ and e.__cause__ is None or id(nxt) in seen:
            break
        seen.add(id(nxt))
        out.append((how, nxt))
    return out


def _where(exc: BaseException, files: tuple[str, ...], repo: str) -> str:
    """``file:line in function`` of the last frame of ``exc`` inside ``files`` (the kernel's own file), else
    inside ``repo`` other than this worker; "" when the failure never passed through either."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{_short_path(exc.filename, repo)}:{exc.lineno}"
    frames = traceback.extract_tb(exc.__traceback__)
    real = {os.path.realpath(f) for f in files}
    mine = [f for f in frames if os.path.realpath(f.filename) in real]
    if not mine and repo:
        root = os.path.realpath(repo) + os.sep
        here = os.path.realpath(__file__)
        mine = [
            f for f in frames if os.path.realpath(f.filename).startswith(root) and os.path.realpath(f.filename) != here
        ]
    if not mine:
        return ""
    f = mine[-1]
    return f"{_short_path(f.filename, repo)}:{f.lineno} in {f.name}"


def _short_path(path: str, repo: str) -> str:
    rel = os.path.relpath(os.path.realpath(path), os.path.realpath(repo)) if repo else path
    return path if rel.startswith("..") else rel


def _error_text(exc: BaseException, files: tuple[str, ...] = (), repo: str = "") -> str:
    """An error as one summary line, then the traceback's end. The summary names each exception of the chain
    (``raise X from Y``: Y is the cause) with the file and line where it was raised in the kernel's own file
    (``files``), so a user kernel's failing line survives even when the exception came out of Triton."""
    parts = []
    for how, e in _chain(exc):
        msg = next((ln.strip() for ln in str(e).splitlines() if ln.strip()), "")
        where = _where(e, files, repo)
        text = f"{type(e).__name__}: {msg}".rstrip(": ") + (f" ({where})" if where else "")
        parts.append(f"{how} {text}" if how else text)
    head = "; ".join(parts)
    if len(head) > ERROR_CHARS // 2:
        head = head[: ERROR_CHARS // 2 - 3] + "..."
    body = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).strip()
    return head + "\n" + _tail(body, ERROR_CHARS - len(head) - 4)  # 4: the newline and _tail's "..."


def _kernel_files(k: Any) -> tuple[str, ...]:
    """The file a kernel object comes from (a module, or a class in a user's file)."""
    mod = k if hasattr(k, "__file__") else sys.modules.get(getattr(k, "__module__", ""), None)
    f = getattr(mod, "__file__", None)
    return (f,) if f else ()


def _spec_files(case: dict[str, Any]) -> tuple[str, ...]:
    """The file a path kernel spec names (``dir/file.py:name``), for errors raised while loading it."""
    spec = str(case.get("kernel", ""))
    if ".py" not in spec:
        return ()
    path = spec.partition(".py")[0] + ".py"
    return (os.path.join(case["base"], path) if case.get("base") and not os.path.isabs(path) else path,)


def _compile_error(exc: BaseException) -> bool:
    """Did this fail while compiling? On a GPU Triton raises CompilationError & co.; under the interpreter a
    failed ``tl.static_assert`` surfaces as an InterpreterError whose cause was raised inside static_assert."""
    seen: BaseException | None = exc
    while seen is not None:
        names = {c.__name__ for c in type(seen).__mro__}
        if names & {"CompilationError", "CompileTimeAssertionFailure", "OutOfResources", "PTXASError"}:
            return True
        tb = seen.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_name in ("static_assert", "_new_static_assert"):
                return True
            tb = tb.tb_next
        seen = seen.__cause__ or seen.__context__
    return False


def _output_problem(inputs: Any, torch: Any) -> str:
    """What is wrong with make_inputs' answer ("" when it is a dict holding a tensor 'y')."""
    if not isinstance(inputs, dict):
        return f"got {type(inputs).__name__}"
    if "y" not in inputs:
        return "no 'y' among its keys: " + (", ".join(map(repr, list(inputs)[:8])) or "none")
    if not isinstance(inputs["y"], torch.Tensor):
        return f"'y' is a {type(inputs['y']).__name__}"
    return ""


class Worker:
    def __init__(self, repo: str, timing: str, mem_budget: float):
        sys.path.insert(0, repo)
        import torch  # heavy imports happen once, after the driver has the process

        if "TRITON_INTERPRET" not in os.environ and not torch.cuda.is_available():
            os.environ["TRITON_INTERPRET"] = "1"  # no GPU: Triton's CPU interpreter (set before any @triton.jit)
        import triton

        import kernels
        from kernels import _common as common
        from kernels import _config as config

        self.torch, self.triton, self.kernels, self.C, self.config = torch, triton, kernels, common, config
        self.repo = repo
        self.timing = timing
        self.mem_budget = mem_budget
        self.prepared: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._flush_buf = None
        self._flush_kernel = None
        self._nvml: Any = False  # not looked for yet; None: not available
        self._rng = random.Random(0x5EED)

    def nvml(self) -> Any:
        """The NVML handle of this worker's GPU (gpu_telemetry.NvmlDevice), None without one (CPU, ROCm)."""
        if self._nvml is False:
            self._nvml = None
            torch = self.torch
            if self.C.backend() != "interp" and torch.cuda.is_available() and not torch.version.hip:
                try:
                    gpu_telemetry = _telemetry()
                    p = torch.cuda.get_device_properties(torch.cuda.current_device())
                    pci = None
                    if hasattr(p, "pci_bus_id"):
                        pci = f"{getattr(p, 'pci_domain_id', 0):08X}:{p.pci_bus_id:02X}:{p.pci_device_id:02X}.0"
                    index = None if os.environ.get("CUDA_VISIBLE_DEVICES") else torch.cuda.current_device()
                    self._nvml = gpu_telemetry.open_device(str(getattr(p, "uuid", "") or ""), pci, index)
                except Exception:  # noqa: BLE001 - telemetry is optional; timing goes on without it
                    self._nvml = None
        return self._nvml

    # ------------------------------------------------------------------------------------------ facts
    def hello(self) -> dict[str, Any]:
        torch, triton = self.torch, self.triton
        info: dict[str, Any] = {
            "python": {"executable": sys.executable, "version": platform.python_version()},
            "triton": {
                "version": triton.__version__,
                "path": os.path.dirname(triton.__file__),
                "commit": getattr(triton, "__git_commit__", None) or _dist_commit("triton"),
            },
            "torch": {
                "version": torch.__version__,
                "gpu_runtime": (
                    f"ROCm {torch.version.hip}"
                    if torch.version.hip
                    else f"CUDA {torch.version.cuda}"
                    if torch.version.cuda
                    else "none"
                ),
            },
            "knobs": {k: v for k, v in sorted(os.environ.items()) if k.startswith(KNOB_PREFIXES)},
            "backend": self.C.backend(),
            "arch": self.C.arch(),
            "timing": self.timing,
            "pid": os.getpid(),
        }
        if self.C.backend() != "interp" and torch.cuda.is_available():
            p = torch.cuda.get_device_properties(torch.cuda.current_device())
            info["gpu"] = {
                "name": p.name,
                "multiprocessors": p.multi_processor_count,
                "memory_gib": round(p.total_memory / 2**30, 1),
                # which physical GPU: two boards of one model differ by a few % (compare checks it)
                "uuid": _uuid_text(getattr(p, "uuid", None)),
                "pci_bus_id": _pci_bus_id(p),
            }
        else:
            info["gpu"] = {"name": f"CPU interpreter ({platform.processor() or platform.machine()})"}
        return info

    # ----------------------------------------------------------------------------------------- cases
    def _kernel(self, case: dict[str, Any]):
        from pathlib import Path

        return self.kernels.load(case["kernel"], base=Path(case["base"]) if case.get("base") else None)

    def _resolve(self, k, case: dict[str, Any]):
        nk = k.config_nk(case) if hasattr(k, "config_nk") else (int(case["N"]), int(case["K"]))
        name = getattr(k, "CONFIG_NAME", None)
        override = case.get("config") or {}
        if name is None:  # a user kernel without config files: the suite's config is the config
            return dict(override), "suite", False
        r = self.config.resolve(name, self.C.arch(), int(case["M"]), *nk, overrides=override or None)
        return r.config, r.source, r.tuned

    def _evict(self, keep: str) -> None:
        torch = self.torch
        if self.C.backend() == "interp" or not torch.cuda.is_available():
            while len(self.prepared) > 64:
                self.prepared.popitem(last=False)
            return
        limit = self.mem_budget * torch.cuda.get_device_properties(0).total_memory
        while self.prepared and torch.cuda.memory_allocated() > limit:
            cid = next(iter(self.prepared))
            if cid == keep:
                break
            del self.prepared[cid]
            torch.cuda.empty_cache()

    @staticmethod
    def _key(case: dict[str, Any]) -> str:
        return f"{case['kernel']}/{case['case_id']}"  # case ids repeat across kernels: the key needs both

    def prepare(
        self, case: dict[str, Any], check: bool = True, artifacts: str = "", compile_only: bool = False
    ) -> dict[str, Any]:
        """Build, compile and check one case. Out of GPU memory with other cases still held: drop them all, retry.

        ``compile_only``: launch once to fill the compile cache, keep nothing (parallel pre-compilation)."""
        if compile_only:
            self.prepared.clear()
            res = self._prepare(case, False, "")
            self.prepared.clear()
            if self.C.backend() != "interp":
                self.torch.cuda.empty_cache()
            return {k: v for k, v in res.items() if k in ("case_id", "status", "error", "compile_s")}
        res = self._prepare(case, check, artifacts)
        if res.get("status") == "runtime_error" and "out of memory" in res.get("error", "") and self.prepared:
            self.prepared.clear()
            self.torch.cuda.empty_cache()
            res = self._prepare(case, check, artifacts)
        return res

    def _prepare(self, case: dict[str, Any], check: bool, artifacts: str) -> dict[str, Any]:
        cid = self._key(case)
        out: dict[str, Any] = {"case_id": case["case_id"]}
        try:
            k = self._kernel(case)
        except Exception as exc:  # noqa: BLE001 - a user kernel file that does not import is this case's failure
            return {**out, "status": "compile_error", "error": _error_text(exc, _spec_files(case), self.repo)}
        files = _kernel_files(k)
        named = case.get("dtype")
        out["dtype"] = named if named in getattr(k, "DTYPES", {}) else getattr(k, "INPUT_DTYPE", named or "")
        why = k.supported(case) if hasattr(k, "supported") else None
        if why:
            return {**out, "status": "skipped", "error": why}
        try:
            cfg, source, tuned = self._resolve(k, case)
        except Exception as exc:  # noqa: BLE001
            return {**out, "status": "skipped", "error": f"config: {exc}"}
        out.update(config=cfg, config_source=source, tuned=tuned)
        self._evict(cid)  # before allocating this case's inputs, not after
        try:
            inputs = k.make_inputs(case, int(case.get("seed", 0)))
        except Exception as exc:  # noqa: BLE001
            return {**out, "status": "runtime_error", "error": "make_inputs: " + _error_text(exc, files, self.repo)}
        self._evict(cid)
        bad = _output_problem(inputs, self.torch)
        if bad:
            return {
                **out,
                "status": "runtime_error",
                "error": f"make_inputs must return a dict with an output tensor 'y' ({bad})",
            }
        y = inputs["y"]
        self.C.poison_(y)
        t0 = time.perf_counter()
        try:
            if artifacts:
                result, compiled = capture_compiled(lambda: k.launch(inputs, cfg))
            else:
                result, compiled = k.launch(inputs, cfg), []
            self._sync()
        except Exception as exc:  # noqa: BLE001
            status = "compile_error" if _compile_error(exc) else "runtime_error"
            return {**out, "status": status, "error": _error_text(exc, files, self.repo)}
        out["compile_s"] = time.perf_counter() - t0
        if artifacts:
            try:
                out["artifacts"] = [dump_compiled(c, artifacts) for c in compiled]
            except Exception as exc:  # noqa: BLE001 - never lose the measurement over a failed dump
                out["artifacts"] = []
                out["artifacts_error"] = _error_text(exc)
        if check:
            try:
                ref = k.reference(inputs)
                err = self.C.rel_frobenius(result, ref)
            except Exception as exc:  # noqa: BLE001
                return {**out, "status": "runtime_error", "error": "reference: " + _error_text(exc, files, self.repo)}
            tol = float(k.tolerance(case))
            out["rel_err"] = err
            if not err <= tol:
                unwritten = int(self.torch.isnan(result.float()).sum().item())
                extra = f"; {unwritten} output elements never written" if unwritten else ""
                return {
                    **out,
                    "status": "incorrect",
                    "error": f"relative Frobenius error {err:.3g} > tolerance {tol:g}{extra}",
                }
        if self.C.backend() != "interp":
            # the reference's float64 temporaries stay in torch's cache otherwise: give them back, another
            # worker (an interleaved run) may share this GPU
            self.torch.cuda.empty_cache()
        out["flops"] = float(k.flops(case))
        out["bytes"] = float(k.bytes_moved(case))
        self.prepared[cid] = {"kernel": k, "inputs": inputs, "config": cfg}
        self.prepared.move_to_end(cid)
        return {**out, "status": "ok"}

    # ---------------------------------------------------------------------------------------- timing
    def _sync(self) -> None:
        if self.C.backend() != "interp":
            self.torch.cuda.synchronize()

    def _flush(self) -> None:
        """Evict L2 with a dedicated Triton kernel that *reads* 256 MiB (the profiler backends find it by name).

        A flush that writes (``cache.zero_()``, as do_bench does) leaves L2 full of dirty lines, and the timed
        kernel then pays their write-back: on an H200 that inflated 9 µs kernels by up to 25% against ncu,
        whose own cache control invalidates clean. Reading leaves only clean lines behind.
        """
        if self.C.backend() == "interp":
            return
        if self._flush_kernel is None:
            import triton.language as tl

            @self.triton.jit
            def _harness_l2_flush(ptr, out_ptr, n, BLOCK: tl.constexpr):
                offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
                v = tl.load(ptr + offs, mask=offs < n, other=0)
                s = tl.sum(v, axis=0)
                if s == 123456789:  # (almost) never true; keeps the load from being optimized away
                    tl.store(out_ptr, s)

            # random, not zeros: Hopper can compress zero-filled L2 lines, so a zero buffer may evict less than
            # its size (on the H200 the switch made no measurable difference; it removes the doubt)
            self._flush_buf = self.torch.randint(
                1, 2**31 - 1, (FLUSH_BYTES // 4,), dtype=self.torch.int32, device="cuda"
            )
            self._flush_out = self.torch.zeros(1, dtype=self.torch.int32, device="cuda")
            self._flush_kernel = _harness_l2_flush
        n = self._flush_buf.numel()
        self._flush_kernel[(self.triton.cdiv(n, 8192),)](self._flush_buf, self._flush_out, n, BLOCK=8192)

    def time(
        self, case: dict[str, Any], n: int, gap: str | None = None, shuffle: bool = False, move_inputs: bool = False
    ) -> dict[str, Any]:
        cid = self._key(case)
        if cid not in self.prepared:  # evicted, or a fresh worker: rebuild (cache hit compile; checked in phase 1)
            p = self.prepare(case, check=False)
            if p["status"] != "ok":
                return p
        entry = self.prepared[cid]
        self.prepared.move_to_end(cid)
        k, cfg = entry["kernel"], entry["config"]

        def launch():
            return k.launch(entry["inputs"], cfg)  # read at each call: rehome() moves them

        def empty(nbytes: int):  # noqa: ANN202
            return self.torch.empty(nbytes, dtype=self.torch.uint8, device="cuda")

        op, rehome = launch, None
        if shuffle and self.C.backend() != "interp":
            op = shuffled(launch, empty, self._rng)
            if move_inputs and self.timing in ("cupti", "events"):

                def rehome() -> None:
                    entry["inputs"] = rehomed(entry["inputs"], empty, self._rng)

        for _ in range(2):  # warm-up: clocks up, caches of the launcher filled
            op()
        self._sync()
        if "est_us" not in entry and (n <= 0 or gap == "auto"):  # one estimate per case, launch overhead included
            t0 = time.perf_counter()
            for _ in range(3):
                op()
            self._sync()
            entry["est_us"] = (time.perf_counter() - t0) / 3 * 1e6
        if n <= 0:  # fixed per case for all its reps: one estimate
            n = auto_launches(entry["est_us"])
        idle_s = 0.0
        if gap == "auto":
            idle_s = auto_idle_s(entry["est_us"])
        elif gap:
            idle_s = float(gap) / 1e3
        dev = self.nvml() if self.timing in ("cupti", "events") else None
        sampler = _telemetry().Sampler(dev) if dev is not None else _telemetry().NoSampler()
        # inputs moved before every launch, which is timed: on an H100 the first launch at a new place read the
        # same as the next ones (launch_trace.py --every 2), so no untimed launch after a move
        every = 1 if rehome is not None else 0
        try:
            if self.timing == "cupti":
                samples, dispatch = self._time_cupti(op, n, idle_s, sampler, rehome, every)
            elif self.timing == "events":
                samples, dispatch = self._time_events(op, n, sampler, rehome, every), None
            elif self.timing == "rocprofv3":
                samples, dispatch = self._time_markers(op, n, case), None
            else:
                samples, dispatch = self._time_wallclock(op, n), None
        except Exception as exc:  # noqa: BLE001
            error = "timing: " + _error_text(exc, _kernel_files(k), self.repo)
            return {"case_id": case["case_id"], "status": "runtime_error", "error": error}
        res: dict[str, Any] = {"case_id": case["case_id"], "status": "ok", "n": len(samples)}
        if samples:
            res["time_us"] = statistics.median(samples)
        if dispatch:
            res["dispatch_us"] = dispatch
        if dev is not None:
            res["telemetry"] = sampler.summary()
        return res

    def context_lost(self) -> str:
        """Non-empty when the GPU context is unusable: an illegal address, a trap or a launch failure is sticky
        in CUDA (every later call in this process fails), so the case that caused it must be the only one that
        fails. Probed with a synchronize after a failed request."""
        if self.C.backend() == "interp":
            return ""
        try:
            self.torch.cuda.synchronize()
            self.torch.empty(1, device="cuda").fill_(0).item()
        except Exception as exc:  # noqa: BLE001
            return "GPU context lost (" + str(exc).strip().splitlines()[0][:120] + ")"
        return ""

    def heat(self, seconds: float) -> dict[str, Any]:
        """Keep the GPU busy with large matmuls for ``seconds``, so the first reps run at the same power and
        temperature as the later ones (a GPU idle while the suite compiled starts cool and boosts higher)."""
        if self.C.backend() == "interp" or seconds <= 0:
            return {"status": "ok", "seconds": 0.0}
        torch = self.torch
        a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            for _ in range(10):
                torch.mm(a, b)
            self._sync()
        del a, b
        torch.cuda.empty_cache()
        return {"status": "ok", "seconds": time.perf_counter() - t0}

    def _time_wallclock(self, op, n: int) -> list[float]:
        out = []
        for _ in range(n):
            self._flush()
            self._sync()
            t0 = time.perf_counter()
            op()
            self._sync()
            out.append((time.perf_counter() - t0) * 1e6)
        return out

    def _time_events(
        self,
        op,  # noqa: ANN001
        n: int,
        sampler=None,  # noqa: ANN001
        rehome=None,  # noqa: ANN001
        every: int = 0,
        warm: bool = False,
    ) -> list[float]:
        torch = self.torch
        sampler = sampler or _telemetry().NoSampler()
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
        timed = iter(ev)
        with sampler:
            for move, is_timed in launch_plan(n, every if rehome is not None else 0, warm):
                if move:  # before the flush: the copies leave the inputs' tail in L2
                    sampler.busy = False
                    rehome()
                if not is_timed:
                    self._flush()
                    op()
                    continue
                s, e = next(timed)
                sampler.busy = True
                self._flush()
                s.record()
                op()
                e.record()
            torch.cuda.synchronize()
            sampler.busy = False
        return [s.elapsed_time(e) * 1e3 for s, e in ev]

    def _time_cupti(
        self,
        op,  # noqa: ANN001
        n: int,
        idle_s: float = 0.0,
        sampler=None,  # noqa: ANN001 - a gpu_telemetry.Sampler
        rehome=None,  # noqa: ANN001 - a zero-argument callable that moves the inputs
        every: int = 0,
        warm: bool = False,
    ) -> tuple[list[float], dict[str, float]]:
        """Kernel-only device time through CUPTI (torch.profiler): the op's own dispatches between flushes;
        with ``idle_s`` the GPU idles that long (flush done) before every launch. ``sampler`` records the SM
        clock while the launches run (not during the idle gaps). With ``rehome``, every ``every`` launches the
        inputs move (byte copies: memcpys, which the kernel list leaves out); with ``warm`` one untimed launch
        follows each move, its own flush-delimited invocation, dropped from the samples."""
        from torch.profiler import ProfilerActivity, profile

        torch = self.torch
        sampler = sampler or _telemetry().NoSampler()
        plan = launch_plan(n, every if rehome is not None else 0, warm)
        self._flush()
        with sampler, profile(activities=[ProfilerActivity.CUDA]) as prof:
            for move, is_timed in plan:
                if move:  # before the flush: the copies leave the inputs' tail in L2
                    sampler.busy = False
                    rehome()
                if not is_timed:  # its own flush-delimited invocation, dropped below
                    self._flush()
                    op()
                    continue
                self._flush()
                if idle_s:
                    torch.cuda.synchronize()
                    sampler.busy = False
                    time.sleep(idle_s)
                sampler.busy = True
                op()
            torch.cuda.synchronize()
            sampler.busy = False
        untimed = {i for i, (_, is_timed) in enumerate(plan) if not is_timed}
        return attribute_dispatches(kernel_events(prof), FLUSH_NAME, len(plan), drop=untimed)

    def _time_markers(self, op, n: int, case: dict[str, Any]) -> list[float]:
        """Under rocprofv3 the trace is read by the driver after this process exits; here only the launches
        happen, bracketed by marker kernels whose grid encodes (case index, rep)."""
        import triton.language as tl

        if not hasattr(self, "_marker"):

            @self.triton.jit
            def _harness_marker(ptr):
                tl.store(ptr + tl.program_id(0) * 0, 1)

            self._marker = _harness_marker
            self._marker_buf = self.torch.zeros(1, dtype=self.torch.int32, device="cuda")
        idx, rep = int(case.get("index", 0)), int(case.get("rep", 0))
        self._marker[(idx + 1, rep + 1, 1)](self._marker_buf)
        for _ in range(n):
            self._flush()
            op()
        self._marker[(idx + 1, rep + 1, 2)](self._marker_buf)
        self._sync()
        return []


def auto_launches(est_us: float) -> int:
    """Launches a rep for a kernel estimated at ``est_us`` (launch overhead included): about AUTO_REP_US of kernel
    time, at least AUTO_MIN_LAUNCHES, at most 100."""
    return int(min(100, max(AUTO_MIN_LAUNCHES, AUTO_REP_US // max(est_us, 1.0))))


def auto_idle_s(est_us: float) -> float:
    """--launch-gap auto: seconds the GPU idles before each timed launch of a kernel estimated at ``est_us``."""
    return min(AUTO_GAP_FACTOR * est_us, AUTO_GAP_MAX_US) / 1e6


def shuffled(launch, empty, rng: random.Random):  # noqa: ANN001, ANN201 - zero-argument callables
    """``launch`` preceded by a random-sized allocation (1…64 MiB, freed once the launch is queued), so the
    buffers the op allocates per launch (outputs, workspaces, a quantized copy of X) land at a different place
    each time. Where such a buffer lands can set a kernel's speed: on an H100 the fp8 prequant GEMM's quantized
    X at some addresses made it 3 % slower, for as long as the allocator kept handing out that block
    (benchmarks/gpu_validation/placement.py). Shuffled, a rep's median is the time at a typical placement
    instead of whichever block this rep happened to get (compare Stabilizer's layout randomization)."""

    def op():  # noqa: ANN202
        shim = empty(rng.randrange(1 << 20, 64 << 20))
        try:
            return launch()
        finally:
            del shim

    return op


def launch_plan(n: int, every: int = 0, warm: bool = False) -> list[tuple[bool, bool]]:
    """The launches of one rep in order, as (move the inputs first, timed): ``n`` timed ones; with ``every`` > 0
    the inputs move before each run of ``every``, and with ``warm`` an untimed launch follows each move (in case
    the first launch at a new place, walking page tables and missing TLBs, is not the steady state)."""
    plan: list[tuple[bool, bool]] = []
    for i in range(n):
        move = every > 0 and i % every == 0
        if move and warm:
            plan.append((True, False))
            move = False
        plan.append((move, True))
    return plan


def rehomed(inputs: dict[str, Any], empty, rng: random.Random) -> dict[str, Any]:  # noqa: ANN001
    """``inputs`` with every tensor copied to a new random place: a fresh byte buffer from ``empty(nbytes)`` with
    room to spare, the tensor starting at a random multiple of PLACE_ALIGN bytes in it, same dtype, shape and
    strides. Other values are kept. Where a kernel's inputs sit in memory can set its speed by a few % (DRAM
    channel and page mapping), and it stays put for a process's life: sampled once a process, it is noise between
    processes that the reps never see. Sampled several times a rep, the rep's median is the time at a typical
    placement (compare Stabilizer's heap randomization). The copies are raw bytes (memcpys: no kernel), and
    tensors that shared storage no longer do: inputs must be read-only operands and output buffers."""
    out: dict[str, Any] = {}
    for name, t in inputs.items():
        if not hasattr(t, "untyped_storage") or t.numel() == 0:
            out[name] = t
            continue
        es = t.element_size()
        nbytes = (1 + sum((size - 1) * stride for size, stride in zip(t.shape, t.stride()))) * es
        pad = min(max(nbytes, PLACE_PAD_MIN), PLACE_PAD_MAX)
        buf = empty(nbytes + pad)
        at = rng.randrange(0, pad // PLACE_ALIGN + 1) * PLACE_ALIGN
        src = buf.new_empty(0).set_(t.untyped_storage(), t.storage_offset() * es, (nbytes,), (1,))
        dst = buf[at : at + nbytes]
        dst.copy_(src)
        out[name] = dst.view(t.dtype).as_strided(t.shape, t.stride())
    return out


def _telemetry():  # noqa: ANN202 - the gpu_telemetry module
    """gpu_telemetry, the sibling file (standard library only): importable as a top-level module when this
    file runs by path, as harness.gpu_telemetry when a benchmark imports harness.worker."""
    try:
        import gpu_telemetry
    except ImportError:
        from harness import gpu_telemetry
    return gpu_telemetry


def kernel_events(prof) -> list[tuple[str, float]]:  # noqa: ANN001 - a finished torch.profiler.profile
    """(name, µs) of every GPU kernel a torch.profiler session recorded, in start order (copies and memsets
    dropped)."""
    import torch

    cuda = torch.autograd.DeviceType.CUDA
    kin = [e for e in prof.profiler.kineto_results.events() if e.device_type() == cuda]
    kin = sorted(
        (
            e
            for e in kin
            if e.end_ns() > e.start_ns() and "memcpy" not in e.name().lower() and "memset" not in e.name().lower()
        ),
        key=lambda e: e.start_ns(),
    )
    return [(e.name(), (e.end_ns() - e.start_ns()) / 1e3) for e in kin]


def attribute_dispatches(
    events: list[tuple[str, float]], flush_name: str, n: int, drop: set[int] | frozenset[int] = frozenset()
) -> tuple[list[float], dict]:
    """Group a stream of (kernel name, µs) into op invocations delimited by the flush kernel.

    Returns one op time per invocation (the sum of its dispatches: split-K + reduce count as one op) and the
    median time of each dispatch name, leaving out the invocations numbered in ``drop`` (0-based, of the ``n``).
    Raises if the number of invocations is not ``n``.
    """
    groups: list[list[tuple[str, float]]] = []
    cur: list[tuple[str, float]] | None = None
    for name, us in events:
        if name.startswith(flush_name):
            if cur is not None:
                groups.append(cur)
            cur = []
        elif cur is not None:
            cur.append((name, us))
    if cur is not None:
        groups.append(cur)
    groups = groups[-n:] if len(groups) >= n else groups
    if len(groups) != n or any(not g for g in groups):
        raise RuntimeError(f"profiler saw {len(groups)} op invocations with kernels, expected {n}")
    groups = [g for i, g in enumerate(groups) if i not in drop]
    per_name: dict[str, list[float]] = {}
    for g in groups:
        for i, (name, us) in enumerate(g):
            per_name.setdefault(f"{i}:{name}", []).append(us)
    return [sum(us for _, us in g) for g in groups], {k: statistics.median(v) for k, v in per_name.items()}


# -------------------------------------------------------------------------------------------- artifacts
#: text stages kept per compiled kernel (whatever the backend produced), plus "sass" made from the cubin
STAGES = ("ttir", "ttgir", "llir", "ptx", "amdgcn", "source")


def capture_compiled(launch):  # noqa: ANN001, ANN201 - a zero-argument callable; returns (its result, kernels)
    """Run ``launch`` and collect every compiled Triton kernel it launched (user kernels included).

    ``JITFunction.run`` returns the compiled kernel in every supported Triton (3.4–3.9), cache hit or not, so
    wrapping it for one call sees exactly the kernels of this case, in launch order.
    """
    from triton.runtime.jit import JITFunction

    seen: list[Any] = []
    original = JITFunction.run

    def run(self, *args, **kwargs):  # noqa: ANN001, ANN202
        k = original(self, *args, **kwargs)
        if k is not None and hasattr(k, "asm") and all(k is not s for s in seen):
            seen.append(k)
        return k

    JITFunction.run = run
    try:
        result = launch()
    finally:
        JITFunction.run = original
    return result, seen


def _nvidia_tool(name: str) -> str | None:
    import shutil

    import triton

    bundled = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", name)
    return bundled if os.access(bundled, os.X_OK) else shutil.which(name)


def cubin_resources(cubin: bytes) -> dict[str, int]:
    """``cuobjdump -res-usage``: REG, STACK, SHARED, LOCAL (bytes of local memory: spills live there)."""
    import re
    import subprocess
    import tempfile

    tool = _nvidia_tool("cuobjdump")
    if not tool:
        return {}
    with tempfile.NamedTemporaryFile(suffix=".cubin") as fh:
        fh.write(cubin)
        fh.flush()
        text = subprocess.run([tool, "-res-usage", fh.name], capture_output=True, text=True, timeout=60).stdout
    return {k.lower(): int(v) for k, v in re.findall(r"\b(REG|STACK|SHARED|LOCAL):(\d+)", text)}


def dump_compiled(k: Any, root: str) -> str:
    """Store one compiled kernel's stages and resources under ``root/<hash>-<name>/``; returns that folder's name.

    The folder is keyed by the kernel's compile hash, so cases sharing a compiled kernel store it once; a folder
    already complete (its meta.json exists) is not written again.
    """
    import triton

    md = k.metadata
    name = getattr(md, "name", None) or getattr(k, "name", "kernel")
    kid = f"{str(getattr(md, 'hash', '') or 'nohash')[:16]}-{name}"
    folder = os.path.join(root, kid)
    if os.path.exists(os.path.join(folder, "meta.json")):
        return kid
    os.makedirs(folder, exist_ok=True)
    files = []
    asm = k.asm
    for stage in STAGES:
        if stage in asm:
            text = asm[stage]
            with open(os.path.join(folder, stage), "w", encoding="utf-8") as fh:
                fh.write(text if isinstance(text, str) else text.decode("utf-8", "replace"))
            files.append(stage)
    meta: dict[str, Any] = {}
    if "cubin" in asm:
        try:
            sass = asm["sass"]  # Triton disassembles the cubin with its bundled cuobjdump / nvdisasm
            with open(os.path.join(folder, "sass"), "w", encoding="utf-8") as fh:
                fh.write(sass)
            files.append("sass")
        except Exception as exc:  # noqa: BLE001 - no disassembler: keep everything else
            meta["sass_error"] = _tail(_error_text(exc), 300)
        try:
            meta["cubin_resources"] = cubin_resources(asm["cubin"])
        except Exception as exc:  # noqa: BLE001
            meta["cubin_resources_error"] = _tail(_error_text(exc), 300)
    md_dict = md._asdict() if hasattr(md, "_asdict") else dict(getattr(md, "__dict__", {}))
    meta.update(
        name=name,
        triton=getattr(triton, "__version__", ""),
        files=files,
        metadata={k2: v for k2, v in md_dict.items() if isinstance(v, (int, float, str, bool, type(None), list))},
        target=str(md_dict.get("target", "")),
        n_regs=getattr(k, "n_regs", None),
        n_spills=getattr(k, "n_spills", None),
    )
    tmp = os.path.join(folder, "meta.json.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(meta, fh, indent=1, default=str, sort_keys=True)
    os.replace(tmp, os.path.join(folder, "meta.json"))
    return kid


def _uuid_text(uuid: Any) -> str | None:
    """torch's device UUID as text (``GPU-`` stripped, as nvidia-smi adds it), None when torch has none."""
    text = str(uuid or "").strip()
    return text.removeprefix("GPU-") or None


def _pci_bus_id(props: Any) -> str | None:
    """``00000000:1B:00.0``, nvidia-smi's form, when torch reports the PCI location."""
    try:
        return f"{props.pci_domain_id:08X}:{props.pci_bus_id:02X}:{props.pci_device_id:02X}.0"
    except (AttributeError, TypeError, ValueError):
        return None


def _dist_commit(name: str) -> str | None:
    try:
        from importlib.metadata import distribution

        d = distribution(name)
        direct = d.read_text("direct_url.json")
        if direct:
            info = json.loads(direct)
            return info.get("vcs_info", {}).get("commit_id")
    except Exception:  # noqa: BLE001
        return None
    return None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True, help="directory holding the kernels package")
    ap.add_argument("--result-fd", type=int, required=True)
    ap.add_argument("--timing", default="wallclock")
    ap.add_argument("--mem-budget", type=float, default=0.6, help="fraction of GPU memory kept for prepared cases")
    a = ap.parse_args()
    out = os.fdopen(a.result_fd, "w", buffering=1)

    def send(obj: dict[str, Any]) -> None:
        out.write(json.dumps(obj, default=float) + "\n")
        out.flush()

    try:
        w = Worker(a.repo, a.timing, a.mem_budget)
    except Exception as exc:  # noqa: BLE001 - the env cannot even import torch/triton
        send({"status": "runtime_error", "error": "worker start: " + _error_text(exc)})
        return
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        op = req.get("op")
        if op == "quit":
            break
        if op == "hello":
            ans = {"status": "ok", "info": w.hello()}
        elif op == "prepare":
            ans = w.prepare(
                req["case"],
                bool(req.get("check", True)),
                str(req.get("artifacts") or ""),
                bool(req.get("compile_only", False)),
            )
        elif op == "heat":
            ans = w.heat(float(req.get("seconds", 0)))
        elif op == "time":
            ans = w.time(
                req["case"],
                int(req.get("n", 20)),
                req.get("gap"),
                bool(req.get("shuffle", False)),
                bool(req.get("move_inputs", False)),
            )
        else:
            ans = {"status": "runtime_error", "error": f"unknown op {op!r}"}
        lost = ans.get("status") not in ("ok", "skipped") and w.context_lost()
        if lost:
            ans["error"] = f"{ans.get('error', '')} [{lost}: the worker exits, the next case gets a fresh one]"
            ans["worker_exits"] = True
        send(ans)
        if lost:
            break
    out.close()


if __name__ == "__main__":
    main()

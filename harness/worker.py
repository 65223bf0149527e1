"""The worker: runs inside one environment's Python, with only the standard library, torch and triton.

Run by path (``python worker.py --repo ROOT --result-fd FD``); it never imports the harness package. It reads one
JSON request per line on stdin and answers with one JSON line on the result pipe (never stdout: Triton and kernels
print there, and the driver keeps stdout/stderr only as error text).

Requests:
  {"op": "hello"}                                    -> environment facts (versions, GPU, knobs)
  {"op": "prepare", "case": {...}, "check": true}    -> build inputs, resolve config, compile (timed), check
  {"op": "time", "case": {...}, "n": 20}             -> one rep: n timed launches (L2 flushed before each), median
  {"op": "quit"}
A case that fails answers {"status": <compile_error|runtime_error|incorrect|skipped>, "error": "..."}; a crash or a
hang kills the process, and the driver records that instead.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
import traceback
from collections import OrderedDict
from typing import Any

KNOB_PREFIXES = ("TRITON_", "AMDGCN_", "MLIR_", "LLVM_", "PTXAS", "NVPTX_", "HIP_", "CUDA_VISIBLE", "ROCR_")
FLUSH_BYTES = 256 * 1024 * 1024
FLUSH_NAME = "_harness_l2_flush"
MARKER_NAME = "_harness_marker"


def _tail(text: str, n: int = 1500) -> str:
    return text if len(text) <= n else "..." + text[-n:]


def _error_text(exc: BaseException) -> str:
    tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
    last = "".join(tb[-3:]).strip()
    return _tail(f"{type(exc).__name__}: {exc}".strip() + "\n" + last, 2000)


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

    def prepare(self, case: dict[str, Any], check: bool = True) -> dict[str, Any]:
        cid = self._key(case)
        out: dict[str, Any] = {"case_id": case["case_id"]}
        try:
            k = self._kernel(case)
        except Exception as exc:  # noqa: BLE001 - a user kernel file that does not import is this case's failure
            return {**out, "status": "compile_error", "error": _error_text(exc)}
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
        try:
            inputs = k.make_inputs(case, int(case.get("seed", 0)))
        except Exception as exc:  # noqa: BLE001
            return {**out, "status": "runtime_error", "error": "make_inputs: " + _error_text(exc)}
        self._evict(cid)
        y = inputs["y"]
        self.C.poison_(y)
        t0 = time.perf_counter()
        try:
            result = k.launch(inputs, cfg)
            self._sync()
        except Exception as exc:  # noqa: BLE001
            status = "compile_error" if _compile_error(exc) else "runtime_error"
            return {**out, "status": status, "error": _error_text(exc)}
        out["compile_s"] = time.perf_counter() - t0
        if check:
            try:
                ref = k.reference(inputs)
                err = self.C.rel_frobenius(result, ref)
            except Exception as exc:  # noqa: BLE001
                return {**out, "status": "runtime_error", "error": "reference: " + _error_text(exc)}
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

    def time(self, case: dict[str, Any], n: int) -> dict[str, Any]:
        cid = self._key(case)
        if cid not in self.prepared:  # evicted, or a fresh worker after a crash: rebuild (cache hit compile)
            p = self.prepare(case, check=True)
            if p["status"] != "ok":
                return p
        entry = self.prepared[cid]
        self.prepared.move_to_end(cid)
        k, inputs, cfg = entry["kernel"], entry["inputs"], entry["config"]

        def op():
            return k.launch(inputs, cfg)

        for _ in range(2):  # warm-up: clocks up, caches of the launcher filled
            op()
        self._sync()
        if n <= 0:  # auto: ~20 ms of kernel time per rep, 5..100 launches, fixed per case for all its reps
            if "n" not in entry:
                t0 = time.perf_counter()
                for _ in range(3):
                    op()
                self._sync()
                est_us = (time.perf_counter() - t0) / 3 * 1e6
                entry["n"] = int(min(100, max(5, 20_000 // max(est_us, 1.0))))
            n = entry["n"]
        try:
            if self.timing == "cupti":
                samples, dispatch = self._time_cupti(op, n)
            elif self.timing == "events":
                samples, dispatch = self._time_events(op, n), None
            elif self.timing == "rocprofv3":
                samples, dispatch = self._time_markers(op, n, case), None
            else:
                samples, dispatch = self._time_wallclock(op, n), None
        except Exception as exc:  # noqa: BLE001
            return {"case_id": case["case_id"], "status": "runtime_error", "error": "timing: " + _error_text(exc)}
        res: dict[str, Any] = {"case_id": case["case_id"], "status": "ok", "n": len(samples)}
        if samples:
            res["time_us"] = statistics.median(samples)
        if dispatch:
            res["dispatch_us"] = dispatch
        return res

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

    def _time_events(self, op, n: int) -> list[float]:
        torch = self.torch
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
        for s, e in ev:
            self._flush()
            s.record()
            op()
            e.record()
        torch.cuda.synchronize()
        return [s.elapsed_time(e) * 1e3 for s, e in ev]

    def _time_cupti(self, op, n: int) -> tuple[list[float], dict[str, float]]:
        """Kernel-only device time through CUPTI (torch.profiler): the op's own dispatches between flushes."""
        from torch.profiler import ProfilerActivity, profile

        torch = self.torch
        self._flush()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(n):
                self._flush()
                op()
            torch.cuda.synchronize()
        return attribute_dispatches(kernel_events(prof), FLUSH_NAME, n)

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


def attribute_dispatches(events: list[tuple[str, float]], flush_name: str, n: int) -> tuple[list[float], dict]:
    """Group a stream of (kernel name, µs) into op invocations delimited by the flush kernel.

    Returns one op time per invocation (the sum of its dispatches: split-K + reduce count as one op) and the
    median time of each dispatch name. Raises if the number of invocations is not ``n``.
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
    per_name: dict[str, list[float]] = {}
    for g in groups:
        for i, (name, us) in enumerate(g):
            per_name.setdefault(f"{i}:{name}", []).append(us)
    return [sum(us for _, us in g) for g in groups], {k: statistics.median(v) for k, v in per_name.items()}


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
            send({"status": "ok", "info": w.hello()})
        elif op == "prepare":
            send(w.prepare(req["case"], bool(req.get("check", True))))
        elif op == "time":
            send(w.time(req["case"], int(req.get("n", 20))))
        else:
            send({"status": "runtime_error", "error": f"unknown op {op!r}"})
    out.close()


if __name__ == "__main__":
    main()

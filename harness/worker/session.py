"""One worker process's state: the cases it has prepared (inputs on the GPU, config, compiled kernels), its timer
and its NVML handle. The request loop (main.py) calls one method per request."""

from __future__ import annotations

import contextlib
import os
import random
import statistics
import sys
import time
from collections import OrderedDict
from typing import Any, NamedTuple

from harness.worker import clocks, facts
from harness.worker.backends import BACKENDS
from harness.worker.cases import CaseFailed, CaseRun, Prepared, load_kernel, resolve_config, source_file
from harness.worker.clocks import InstrumentError
from harness.worker.delay import delay_of, delayed
from harness.worker.errors import error_text, import_failure
from harness.worker.group import Ranks, world_size
from harness.worker.launches import as_config, recorded
from harness.worker.library import attach, library_roots
from harness.worker.placement import rehomed, shuffled
from harness.worker.telemetry import NoSampler, Sampler, open_device
from harness.worker.timing import Timer, auto_idle_s, auto_launches

#: the timings a running worker can switch to (a wrapped one, rocprofv3, traces the process from its start: a new
#: worker is started for it)
SWITCHABLE = tuple(name for name, b in BACKENDS.items() if b.switchable)


class _Rep(NamedTuple):
    """One rep's launches as a timing loop gets them (Session._samples): ``op`` as warmed up, ``raw`` the launch
    alone (a rank's GPU timers queue it behind their own barrier), the gap, sampler, input moves and ranks."""

    op: Any
    raw: Any
    n: int
    idle_s: float
    sampler: Any
    rehome: Any
    every: int
    step: Any
    case: dict[str, Any]


class Session:
    def __init__(self, repo: str, timing: str, mem_budget: float):
        if repo not in sys.path:
            sys.path.insert(0, repo)
        import torch  # heavy imports happen once, after the driver has the process

        if "TRITON_INTERPRET" not in os.environ and not torch.cuda.is_available():
            os.environ["TRITON_INTERPRET"] = "1"  # no GPU: Triton's CPU interpreter (set before any @triton.jit)
        #: one rank of a multi-GPU case (None: a single-GPU worker); set up before anything touches a GPU
        self.ranks = Ranks(torch) if world_size() > 1 else None
        import triton

        from harness.kernel_api import configs
        from kernels import common as common

        self.torch, self.triton, self.C, self.configs = torch, triton, common, configs
        self.repo, self.timing, self.mem_budget = repo, timing, mem_budget
        self.backend = common.backend()
        self.timer = Timer(torch, triton, self.backend)
        self.prepared: OrderedDict[str, Prepared] = OrderedDict()
        self._nvml: Any = False  # not looked for yet; None: not available
        self._rng = random.Random(0x5EED)

    def hello(self) -> dict[str, Any]:
        info = facts.environment(self.torch, self.triton, self.backend, self.C.arch(), self.timing)
        if self.ranks is not None:
            info.update(rank=self.ranks.rank, world_size=self.ranks.world)
        return info

    def nvml(self) -> Any:
        """The NVML handle of this worker's GPU (telemetry.NvmlDevice), None without one (CPU, ROCm)."""
        if self._nvml is False:
            self._nvml = None
            if self.backend == "cuda" and self.torch.cuda.is_available():
                try:
                    g = facts.gpu(self.torch, self.backend)
                    index = None if os.environ.get("CUDA_VISIBLE_DEVICES") else self.torch.cuda.current_device()
                    self._nvml = open_device(g.get("uuid") or "", g.get("pci_bus_id"), index)
                except Exception:  # noqa: BLE001 - telemetry is optional; timing goes on without it
                    self._nvml = None
        return self._nvml

    # ----------------------------------------------------------------------------------------- prepare
    @staticmethod
    def key(case: dict[str, Any]) -> str:
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
            self._release()
            return {k: v for k, v in res.items() if k in ("case_id", "status", "error", "compile_s")}
        res = self._prepare(case, check, artifacts)
        if res.get("status") == "runtime_error" and "out of memory" in res.get("error", "") and self.prepared:
            self.prepared.clear()
            self._release()
            res = self._prepare(case, check, artifacts)
        return res

    def _prepare(self, case: dict[str, Any], check: bool, artifacts: str) -> dict[str, Any]:
        out: dict[str, Any] = {"case_id": case["case_id"], "dtype": case.get("dtype", "")}
        try:
            kernel = self._kernel(case)
            why = kernel.supported(case["params"]) if "supported" in case.get("hooks", ()) else None
            if why:
                return {**out, "status": "skipped", "error": str(why)}
            cfg = self._config(case, kernel, out)
            run = CaseRun(case, kernel, self.repo, self.torch, self.C)
            self._evict(self.key(case))  # before allocating this case's inputs, not after
            inputs = run.build()
            self._evict(self.key(case))
            records_launches = "chosen_config" in case.get("hooks", ()) and not hasattr(kernel, "chosen_config")
            with recorded(self.triton) if records_launches else contextlib.nullcontext([]) as launches:
                # the first call: a library that caches its compiled kernel (FlagGems' LibEntry) launches through
                # Triton's JIT only here, its autotuner's last launch being the config it chose
                result, recorded_ = run.first_launch(inputs, cfg, artifacts, self.timer.sync)
            out.update(recorded_)
            if "chosen_config" in case.get("hooks", ()):
                self._chosen(case, kernel, inputs, out, launches)
            if check:
                out["rel_err"] = run.check(inputs, result)
        except CaseFailed as failed:
            return {**out, "status": failed.status, "error": failed.error}
        finally:
            self._release()  # the reference's float64 temporaries: another worker may share this GPU
        self.prepared[self.key(case)] = Prepared(kernel, inputs, cfg)
        return {**out, "status": "ok"}

    def _kernel(self, case: dict[str, Any]) -> Any:
        path = source_file(case["source"])[0]
        roots = library_roots(case)
        try:
            attach(case.get("library"))
            return load_kernel(case["source"], self.repo)
        except ImportError as exc:  # a module missing or broken (or a clashing checkout): not the kernel's compile
            raise CaseFailed("import_error", import_failure(exc, error_text(exc, (path,), self.repo, roots))) from None
        except Exception as exc:  # noqa: BLE001 - a user file that does not import fails its cases, one line each
            raise CaseFailed("compile_error", error_text(exc, (path,), self.repo, roots)) from None

    def _config(self, case: dict[str, Any], kernel: Any, out: dict[str, Any]) -> dict[str, Any]:
        """The config the case runs: looked up, stripped of launch options this backend rejects (for every kernel,
        so a user's ``**config`` never hands ``waves_per_eu`` to NVIDIA's compiler), then the kernel's
        ``finalize_config`` (its library's post-processing: split-K, ``2*K``); the results record this one."""
        if "lookup_config" in case.get("hooks", ()):
            cfg, source, tuned = self._own_lookup(case, kernel)
        else:
            try:
                cfg, source, tuned = resolve_config(case, self.C.arch(), self.configs)
            except Exception as exc:  # noqa: BLE001 - no config for this arch or shape: not this stack's failure
                if "chosen_config" not in case.get("hooks", ()):
                    raise CaseFailed("skipped", f"config: {exc}") from None
                cfg, source, tuned = {}, f"no preview: {exc}", False  # the library decides all the same
        cfg = self.configs.for_backend(cfg, self.backend, tuple(case.get("config_keys") or ()))
        if "finalize_config" in case.get("hooks", ()):
            try:
                cfg = dict(kernel.finalize_config(case["params"], dict(cfg)))
            except Exception as exc:  # noqa: BLE001 - the library's own post-processing failing on this case
                path = source_file(case["source"])[0]  # the kernel file: its line, not importlib's
                text = error_text(exc, (path,), self.repo, library_roots(case))
                if isinstance(exc, ImportError):
                    raise CaseFailed("import_error", import_failure(exc, text)) from None
                raise CaseFailed("runtime_error", "finalize_config: " + text) from None
        out.update(config=cfg, config_source=source, tuned=tuned)
        return cfg

    def _chosen(
        self, case: dict[str, Any], kernel: Any, inputs: dict[str, Any], out: dict[str, Any], launches: list[Any]
    ) -> None:
        """The library decided (its entry, called as its users call it): record what it picked, from the kernel's
        ``chosen_config(params, inputs)``, and where harness's own reading of the library's files (a ConfigLookup,
        now a preview) picked otherwise, say so in ``config_source`` (the driver warns:
        run/command.preview_warnings)."""
        try:
            if hasattr(kernel, "chosen_config"):
                got = kernel.chosen_config(case["params"], inputs)
            else:  # none written: what the entry launched on its first call, each kernel's last launch
                got = as_config(launches)
        except Exception as exc:  # noqa: BLE001 - the library's answer failing: its line, not ours
            text = error_text(exc, (source_file(case["source"])[0],), self.repo, library_roots(case))
            raise CaseFailed("runtime_error", "chosen_config: " + text) from None
        cfg, where = got if isinstance(got, tuple) and len(got) == 2 else (got, "")
        if got is not None and (not isinstance(cfg, dict) or not isinstance(where, str)):
            kind = type(got).__name__
            raise CaseFailed("runtime_error", f"chosen_config: returned a {kind}, expected a dict or (dict, str)")
        source = "library" + (f": {where}" if where else "" if got is not None else " (it did not say which config)")
        if got is not None and case.get("lookup"):
            # what this backend would launch of it: the preview had the same launch options cut (_config)
            launched = self.configs.for_backend(cfg, self.backend, tuple(case.get("config_keys") or ()))
            differs = preview_differences(out.get("config") or {}, launched)
            if differs:
                source += f"; harness's preview ({out.get('config_source')}) differs: {differs}"
        out.update(config=dict(cfg or {}), config_source=source, tuned=bool(where))

    def _own_lookup(self, case: dict[str, Any], kernel: Any) -> tuple[dict[str, Any], str, bool]:
        """The kernel's ``lookup_config(params, arch)``: the library's own lookup, as the library calls it (``arch``
        the case's config arch, else this worker's); its answer a config, or (config, where it came from), or None
        for no config (skipped). The suite's overrides go on top, as on a looked-up config."""
        mine = self.C.arch()
        arch = case.get("config_arch") or mine
        try:
            got = kernel.lookup_config(case["params"], arch)
        except Exception as exc:  # noqa: BLE001 - the library's lookup failing on this case: its line, not ours
            text = error_text(exc, (source_file(case["source"])[0],), self.repo, library_roots(case))
            if isinstance(exc, ImportError):
                raise CaseFailed("import_error", import_failure(exc, text)) from None
            raise CaseFailed("runtime_error", "lookup_config: " + text) from None
        as_arch = f" (configs of {arch})" if arch != mine else ""
        if got is None:
            raise CaseFailed("skipped", f"config: the kernel's lookup_config found none{as_arch}")
        cfg, where = got if isinstance(got, tuple) and len(got) == 2 else (got, "")
        if not isinstance(cfg, dict) or not isinstance(where, str):
            kind = type(got).__name__
            raise CaseFailed("runtime_error", f"lookup_config: returned a {kind}, expected a dict or (dict, str)")
        overrides = dict(case.get("overrides") or {})
        source = (
            "lookup_config" + (f": {where}" if where else "") + as_arch + (" +suite overrides" if overrides else "")
        )
        return {**cfg, **overrides}, source, False

    def configure(self, timing: str | None = None, mem_budget: float | None = None) -> dict[str, Any]:
        """Time by ``timing`` and keep prepared cases within ``mem_budget`` from now on (None: as before). Nothing is
        set up for a timer before its first rep, and the budget is read at each prepare, so a worker told so
        serves as one started with them would."""
        if timing is not None and timing not in SWITCHABLE:
            return {"status": "runtime_error", "error": f"timing {timing!r}: expected one of {', '.join(SWITCHABLE)}"}
        if mem_budget is not None and not (isinstance(mem_budget, (int, float)) and 0 <= mem_budget <= 1):
            return {"status": "runtime_error", "error": f"mem_budget {mem_budget!r}: expected a fraction from 0 to 1"}
        self.timing = self.timing if timing is None else timing
        self.mem_budget = self.mem_budget if mem_budget is None else float(mem_budget)
        return {"status": "ok"}

    def forget(self) -> dict[str, Any]:
        """Drop every prepared case and give its GPU memory back (the driver keeps this worker for another run)."""
        dropped = len(self.prepared)
        self.prepared.clear()
        self._release()
        return {"status": "ok", "dropped": dropped}

    def _release(self) -> None:
        if self.backend != "interp":
            self.torch.cuda.empty_cache()

    def _evict(self, keep: str) -> None:
        """Drop the oldest prepared cases while their GPU memory is over this worker's budget."""
        if self.backend == "interp" or not self.torch.cuda.is_available():
            while len(self.prepared) > 64:
                self.prepared.popitem(last=False)
            return
        limit = self.mem_budget * self.torch.cuda.get_device_properties(0).total_memory
        while self.prepared and self._allocated() > limit:
            key = next(iter(self.prepared))
            if key == keep:
                break
            del self.prepared[key]
            self._release()

    def _allocated(self) -> float:
        """GPU bytes in use, the most of any rank in a group: every rank then evicts the same cases. A rank that
        dropped a case its peers kept would rebuild it alone, and its inputs' collective set-up (a symmetric-memory
        rendezvous) would wait for peers that never come: a run on two H100s hung so."""
        used = float(self.torch.cuda.memory_allocated())
        return used if self.ranks is None else self.ranks.max_over_ranks(used)

    def _missing(self, key: str) -> bool:
        """Whether ``key`` must be prepared again — by every rank of a group if any rank lacks it."""
        missing = key not in self.prepared
        return missing if self.ranks is None else self.ranks.max_over_ranks(float(missing)) > 0

    # -------------------------------------------------------------------------------------------- time
    def time(
        self, case: dict[str, Any], n: int, gap: str | None = None, shuffle: bool = False, move_inputs: bool = False
    ) -> dict[str, Any]:
        """One rep: ``n`` timed launches (0: as many as ~40 ms of kernel time), each after an L2 flush and, with
        ``gap``, an idle GPU; the median, the per-dispatch medians and the GPU's telemetry."""
        key = self.key(case)
        if self._missing(key):  # evicted, or a fresh worker: rebuild (cache hit compile; checked in phase 1)
            self.prepared.pop(key, None)
            p = self.prepare(case, check=False)
            if p["status"] != "ok":
                return p
        entry = self.prepared[key]
        self.prepared.move_to_end(key)
        # a rank's inputs include symmetric-memory buffers its peers write through: they stay where they are
        raw, rehome = self._op(entry, shuffle, move_inputs)
        try:  # harness calibrate's known slowdown, inside the timed window (delay.py); none in a normal run
            raw = delayed(raw, delay_of(case), self.backend)
        except (RuntimeError, OSError, ValueError) as exc:
            return {"case_id": case["case_id"], "status": "runtime_error", "error": f"injected delay: {exc}"}
        op = raw if self.ranks is None else self._in_step(raw)
        for _ in range(2):  # warm-up: clocks up, caches of the launcher filled
            op()
        self.timer.sync()
        # the estimate sets the automatic launch count and, under CUPTI (the only timer that idles between
        # launches), the automatic gap; a rep of N launches by another clock needs none (3 launches saved a case)
        auto_gap = gap == "auto" and BACKENDS[self.timing].idles
        if entry.est_us is None and (n <= 0 or auto_gap):
            entry.est_us = self._estimate(op)  # one estimate per case, launch overhead included
            if self.ranks is not None:  # every rank launches as often and idles as long: the same estimate
                entry.est_us = self.ranks.max_over_ranks(entry.est_us)
        n = n if n > 0 else auto_launches(entry.est_us)
        idle_s = auto_idle_s(entry.est_us) if auto_gap else 0.0 if gap == "auto" else float(gap) / 1e3 if gap else 0.0
        dev = self.nvml() if BACKENDS[self.timing].telemetry else None
        sampler = Sampler(dev) if dev is not None else NoSampler()
        try:
            samples, dispatch, second = self._samples(op, raw, n, idle_s, sampler, rehome, case)
            agreed = clocks.compare(*second) if second is not None else None
        except InstrumentError as exc:
            return {"case_id": case["case_id"], "status": "instrument", "error": f"timing: {exc}"}
        except Exception as exc:  # noqa: BLE001
            error = "timing: " + error_text(exc, (source_file(case["source"])[0],), self.repo)
            return {"case_id": case["case_id"], "status": "runtime_error", "error": error}
        why = clocks.problem(agreed) if agreed is not None else ""
        if why:
            return {"case_id": case["case_id"], "status": "instrument", "error": f"timing: {why}", "clocks": agreed}
        broken = self.ranks.broken() if self.ranks is not None else ""
        if broken:  # the samples were taken out of lockstep: no time, and the worker exits (context_lost)
            return {"case_id": case["case_id"], "status": "runtime_error", "error": "timing: " + broken}
        res: dict[str, Any] = {"case_id": case["case_id"], "status": "ok", "n": len(samples)}
        if samples:
            res["time_us"] = statistics.median(samples)
            if self.ranks is not None:  # the group takes the slowest rank launch by launch (run/group.py)
                res["samples_us"] = [round(x, 4) for x in samples]
        if dispatch:
            res["dispatch_us"] = dispatch
        if agreed is not None:
            res["clocks"] = agreed
        if dev is not None:
            res["telemetry"] = sampler.summary()
        return res

    def _op(self, entry: Prepared, shuffle: bool, move_inputs: bool) -> tuple[Any, Any]:
        """The launch to time (with a random-sized allocation before it when shuffling), and the function that
        moves the inputs (None when they stay put)."""

        def launch() -> Any:
            return entry.kernel.launch(entry.inputs, entry.config)  # read at each call: rehome() moves them

        def empty(nbytes: int) -> Any:
            return self.torch.empty(nbytes, dtype=self.torch.uint8, device="cuda")

        if not shuffle or self.backend == "interp":
            return launch, None
        rehome = None
        stays = self._stays() if move_inputs else None
        if stays is not None and BACKENDS[self.timing].moves_inputs:

            def rehome() -> None:
                entry.inputs = rehomed(entry.inputs, empty, self._rng, stays)

        return shuffled(launch, empty, self._rng), rehome

    def _stays(self) -> Any:
        """Which input tensors must keep their place when the inputs move: none on one GPU; a rank's symmetric
        memory (its peers store into it through pointers they hold), told by torch; None — nothing may move —
        where this torch cannot tell."""
        if self.ranks is None:
            return lambda t: False
        try:
            from torch.distributed._symmetric_memory import is_symm_mem_tensor
        except ImportError:
            return None
        return is_symm_mem_tensor

    def _in_step(self, op: Any) -> Any:
        """``op`` after every rank has reached it: a multi-GPU op starts on all GPUs together, as in a model."""
        ranks, sync = self.ranks, self.timer.sync

        def stepped() -> Any:
            sync()
            ranks.barrier()
            return op()

        return stepped

    def _estimate(self, op: Any) -> float:
        t0 = time.perf_counter()
        for _ in range(3):
            op()
        self.timer.sync()
        return (time.perf_counter() - t0) / 3 * 1e6

    def _samples(
        self, op: Any, raw: Any, n: int, idle_s: float, sampler: Any, rehome: Any, case: dict[str, Any]
    ) -> tuple:
        """``op``: the launch as warmed up (a rank's meets its peers on the host first); ``raw``: the launch alone,
        which a rank's GPU timers queue behind their own device-side barrier instead (lockstep)."""
        # inputs moved before every launch, which is timed: on an H100 the first launch at a new place read the
        # same as the next ones (launch_trace.py --every 2), so no untimed launch after a move
        every = 1 if rehome is not None else 0
        step = self.ranks
        if step is not None and os.environ.get("HARNESS_LOCKSTEP") == "0":
            # the method before lockstep, kept for the comparison in docs/multigpu-timing.md: every launch after a
            # host barrier, each rank queueing it whenever its host gets there
            step, raw = None, op
        drive = getattr(self, f"_by_{BACKENDS[self.timing].timer}")
        return drive(_Rep(op, raw, n, idle_s, sampler, rehome, every, step, case))

    # one adapter per timing loop of worker/timing.Timer (backends.Backend.timer names it):
    # (samples, dispatch, (the profiler's spans, the second clock's times) or None: worker/clocks.py)
    def _by_cupti(self, r: _Rep) -> tuple:
        return self.timer.cupti(r.raw, r.n, r.idle_s, r.sampler, r.rehome, r.every, step=r.step)

    def _by_events(self, r: _Rep) -> tuple:
        return self.timer.events(r.raw, r.n, r.sampler, r.rehome, r.every, step=r.step), None, None

    def _by_markers(self, r: _Rep) -> tuple:
        return self.timer.markers(r.op, r.n, int(r.case.get("index", 0)), int(r.case.get("rep", 0))), None, None

    def _by_wallclock(self, r: _Rep) -> tuple:
        return self.timer.wallclock(r.op, r.n), None, None

    # ------------------------------------------------------------------------------------------ others
    def context_lost(self) -> str:
        """Non-empty when the GPU context is unusable: an illegal address, a trap or a launch failure is sticky
        in CUDA (every later call in this process fails), so the case that caused it must be the only one that
        fails. Probed with a synchronize after a failed request."""
        if self.backend == "interp":
            return ""
        broken = self.ranks.broken() if self.ranks is not None else ""
        if broken:
            return broken
        try:
            self.torch.cuda.synchronize()
            self.torch.empty(1, device="cuda").fill_(0).item()
        except Exception as exc:  # noqa: BLE001
            return "GPU context lost (" + str(exc).strip().splitlines()[0][:120] + ")"
        return ""

    def heat(self, seconds: float) -> dict[str, Any]:
        """Keep the GPU busy with large matmuls for ``seconds``, so the first reps run at the same power and
        temperature as the later ones (a GPU idle while the suite compiled starts cool and boosts higher)."""
        if self.backend == "interp" or seconds <= 0:
            return {"status": "ok", "seconds": 0.0}
        torch = self.torch
        a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            for _ in range(10):
                torch.mm(a, b)
            self.timer.sync()
        del a, b
        self._release()
        return {"status": "ok", "seconds": time.perf_counter() - t0}


def preview_differences(preview: dict[str, Any], chosen: dict[str, Any]) -> str:
    """``BLOCK_SIZE_M 64 vs 128, NUM_BUFFERS (not in the preview)``: the keys on which harness's reading of a
    library's files and the library's own choice disagree ('' when they agree on every key the library names)."""
    parts = [f"{k} {preview[k]!r} vs {chosen[k]!r}" for k in chosen if k in preview and preview[k] != chosen[k]]
    parts += [f"{k} (not in the preview)" for k in chosen if k not in preview]
    return ", ".join(parts)

"""What the SM clock does while the harness times a power-bound kernel: NVML read every ~0.25 ms next to the CUPTI
time of every launch, for a few cases and four ways of spacing the launches.

    python lab/gpu_validation/power_trace.py --filter 'bf16/B16_M2048|prequant.*/B16_M256_' --out trace.json

Modes: ``b2b`` (launches back to back after the L2 flush), ``1ms`` (the GPU idle for the kernel's own time, at
most 1 ms, before each launch: the harness's ``--launch-gap auto`` until 2026-11-22 08:10 UTC), ``auto`` (twice the
kernel's time, at most 10 ms: the harness's default since), ``10ms`` (10 ms idle), ``unthrottle`` (``1ms``, then
idle until NVML reports no clock-lowering reason, at most 20 ms; on the H100 the reason never cleared within
20 ms, because NVML refreshes about every 100 ms, so this mode is a 21 ms gap). Per (case, mode): every launch's time, the mean SM
clock while busy, the share of busy samples with the power-cap reason, and the raw trace (t ms, MHz, reasons,
busy). Also the cost of one NVML read. Answers whether the A/A differences of ms-long cases follow the clock.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from harness.worker.telemetry import SLOWDOWN_MASK  # noqa: E402 - after the path is set


def wait_unthrottled(dev, budget_s: float, step_s: float = 0.0005) -> float:  # noqa: ANN001
    """Idle until NVML reports no clock-lowering reason, at most ``budget_s``; the seconds waited."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < budget_s:
        m = dev.reasons()
        if m is None or not (m & SLOWDOWN_MASK):
            break
        time.sleep(step_s)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--suite", default=str(ROOT / "suites/batched_gemm.yaml"))
    ap.add_argument("--filter", required=True, help="regex over kernel/case_id")
    ap.add_argument("--launches", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2, help="times every (case, mode) is repeated, round-robin")
    ap.add_argument("--modes", default="b2b,1ms,auto,10ms")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()

    import torch

    from harness.inputs.suite import load_suite, select
    from harness.run.cases import worker_case
    from harness.worker import telemetry as gt
    from harness.worker.session import Session
    from harness.worker.timing import FLUSH_NAME, attribute_dispatches, auto_idle_s, kernel_events

    w = Session(str(ROOT), "cupti", 0.6)
    dev = w.nvml()
    if dev is None:
        sys.exit("NVML not available: nothing to trace")
    t0 = time.perf_counter()
    for _ in range(200):
        dev.sm_clock_mhz()
        dev.reasons()
    read_us = (time.perf_counter() - t0) / 200 * 1e6
    out: dict = {
        "gpu": w.hello()["gpu"],
        "nvml_read_us": round(read_us, 1),
        "max_clock_mhz": dev.max_sm_clock_mhz(),
        "runs": [],
    }
    print(f"NVML clock+reasons read: {read_us:.1f} us; max SM clock {out['max_clock_mhz']} MHz", flush=True)

    cases = select(load_suite(Path(a.suite)), None, a.filter)
    prepared = []
    for c in cases:
        req = worker_case(c)
        p = w.prepare(req, check=False)
        if p["status"] != "ok":
            print(c.case_id, p["status"], p.get("error", "")[:200])
            continue
        e = w.prepared[w.key(req)]
        op = lambda e=e: e.kernel.launch(e.inputs, e.config)  # noqa: E731
        op()
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(3):
            op()
        torch.cuda.synchronize()
        prepared.append((c, op, (time.perf_counter() - t) / 3))
    w.heat(5.0)

    state = {"busy": False, "stop": False}
    trace: list[tuple[float, int | None, int | None, bool]] = []

    def sample() -> None:
        while not state["stop"]:
            trace.append((time.perf_counter(), dev.sm_clock_mhz(), dev.reasons(), state["busy"]))
            time.sleep(0.00025)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    for rnd in range(a.rounds):
        for c, op, est_s in prepared:
            for mode in a.modes.split(","):
                idle = {"b2b": 0.0, "10ms": 0.010, "auto": auto_idle_s(est_s * 1e6)}.get(mode, min(est_s, 0.001))
                trace.clear()
                start = time.perf_counter()
                waited = 0.0
                with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                    for _ in range(a.launches):
                        w.timer.flush()
                        if idle:
                            torch.cuda.synchronize()
                            state["busy"] = False
                            time.sleep(idle)
                        if mode == "unthrottle":
                            waited += wait_unthrottled(dev, 0.020)
                        state["busy"] = True
                        op()
                    torch.cuda.synchronize()
                    state["busy"] = False
                times, _ = attribute_dispatches(kernel_events(prof), FLUSH_NAME, a.launches)
                busy = [(clk, m) for (_, clk, m, b) in list(trace) if b and clk]
                s = gt.summarize(busy)
                run = {
                    "round": rnd,
                    "case": f"{c.key}",
                    "mode": mode,
                    "median_us": statistics.median(times),
                    "times_us": [round(x, 2) for x in times],
                    "waited_ms": round(waited * 1e3, 2),
                    **s,
                    "trace": [(round((t - start) * 1e3, 3), clk, m, int(b)) for (t, clk, m, b) in list(trace)[::2]],
                }
                out["runs"].append(run)
                print(
                    f"r{rnd} {run['case'][-40:]:40s} {mode:10s} {run['median_us']:10.1f} us  "
                    f"clock {s.get('sm_clock_mhz')} MHz (min {s.get('sm_clock_min_mhz')})  "
                    f"capped {s.get('slowdown_frac')}  {s.get('throttle')}  waited {run['waited_ms']} ms",
                    flush=True,
                )
    state["stop"] = True
    Path(a.out).write_text(json.dumps(out))


if __name__ == "__main__":
    main()

"""Every launch of every rep, timed the way `harness run` times them (CUPTI, L2 flush, idle gap, per-launch
allocation shim, inputs moved before every launch), with the addresses each launch used: where is a slow rep
slow? In a few launches (placement: the slow ones share an address) or in all of them for a while (a GPU state
that outlasts a rep)?

    python lab/gpu_validation/launch_trace.py --filter 'prequant.*/B16_M256_N8192' --reps 40 --out t.json
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--suite", default=str(ROOT / "suites/batched_gemm.yaml"))
    ap.add_argument("--filter", required=True)
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--every", type=int, default=1, help="move the inputs every K launches (0: never)")
    ap.add_argument("--warm", action="store_true", help="an untimed launch after each move")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()

    import torch

    from harness.inputs.suite import load_suite, select
    from harness.run.cases import worker_case
    from harness.worker.placement import launch_plan, rehomed, shuffled
    from harness.worker.session import Session
    from harness.worker.timing import auto_idle_s, auto_launches
    from kernels import batched_gemm_a8w8_prequant as pq

    xq_seen: list[int] = []
    original = pq.quantize_x

    def recording(x, fp8):  # noqa: ANN001, ANN202
        xq, s = original(x, fp8)
        xq_seen.append(xq.data_ptr())
        return xq, s

    pq.quantize_x = recording
    w = Session(str(ROOT), "cupti", 0.6)
    rng = random.Random(0)
    out = {"gpu": w.hello()["gpu"], "every": a.every, "warm": a.warm, "cases": []}
    for c in select(load_suite(Path(a.suite)), None, a.filter):
        req = worker_case(c)
        p = w.prepare(req, check=False)
        if p["status"] != "ok":
            print(c.case_id, p["status"], p.get("error", "")[:300])
            continue
        e = w.prepared[w.key(req)]
        ptrs: list[tuple[int, int, float]] = []

        def launch(e=e, ptrs=ptrs):  # noqa: ANN001, ANN202
            ptrs.append((e.inputs["x"].data_ptr(), e.inputs["w"].data_ptr(), time.perf_counter()))
            return e.kernel.launch(e.inputs, e.config)

        def empty(nbytes: int):  # noqa: ANN202
            return torch.empty(nbytes, dtype=torch.uint8, device="cuda")

        def rehome(e=e) -> None:  # noqa: ANN001
            e.inputs = rehomed(e.inputs, empty, rng)

        op = shuffled(launch, empty, rng)
        for _ in range(3):
            op()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(3):
            op()
        torch.cuda.synchronize()
        est = (time.perf_counter() - t0) / 3 * 1e6
        n, idle = auto_launches(est), auto_idle_s(est)
        every = max(0, a.every)
        plan = launch_plan(n, every, a.warm)
        reps = []
        start = time.perf_counter()
        for r in range(a.reps):
            ptrs.clear()
            xq_seen.clear()
            samples, disp, _ = w.timer.cupti(op, n, idle, None, rehome if every else None, every, a.warm)
            timed = [i for i, (_, t) in enumerate(plan) if t]
            launches = [
                {
                    "us": round(us, 2),
                    "moved": plan[i][0],  # the inputs moved right before this launch
                    "t_s": round(ptrs[i][2] - start, 4),
                    "x": hex(ptrs[i][0]),
                    "w": hex(ptrs[i][1]),
                    **({"xq": hex(xq_seen[i])} if len(xq_seen) == len(plan) else {}),
                }
                for us, i in zip(samples, timed)
            ]
            reps.append({"rep": r, "median_us": round(statistics.median(samples), 2), "launches": launches})
            fast = min(samples)
            slow = sum(us > 1.01 * fast for us in samples)
            print(f"{c.case_id} rep {r:2d} median {statistics.median(samples):9.2f} min {fast:9.2f} "
                  f"max {max(samples):9.2f} launches >1% over min: {slow}/{len(samples)}", flush=True)  # fmt: skip
        out["cases"].append({"case": f"{c.key}", "n": n, "every": every, "reps": reps})
        del e, op
        w.prepared.clear()
        torch.cuda.empty_cache()
    Path(a.out).write_text(json.dumps(out))


if __name__ == "__main__":
    main()

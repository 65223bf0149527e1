"""The worker: the process the driver starts in each environment's Python, by path::

    python harness/worker/main.py --repo ROOT --result-fd FD [--timing cupti] [--mem-budget 0.6]

It imports only the standard library, torch, triton, the kernels and this package (tests/worker/test_imports.py
holds it to that), so any environment that can run the kernels can run it. It reads one JSON request per line on
stdin and answers each with one JSON line on the result pipe: never on stdout, where Triton and kernels print (the
driver keeps stdout and stderr only as error text).

Requests:
  {"op": "hello"}                                    -> environment facts (versions, GPU, knobs)
  {"op": "prepare", "case": {...}, "check": true,    -> build inputs, resolve config, compile (timed), check;
   "artifacts": DIR}                                    with DIR: store each compiled kernel the case launched
  {"op": "heat", "seconds": 5}                       -> sustained matmuls: reps start on a warm GPU
  {"op": "time", "case": {...}, "n": 20,             -> one rep: n timed launches (L2 flushed before each), median;
   "gap": null | "auto" | "<ms>",                       gap: the GPU idles that long before every launch;
   "shuffle": true, "move_inputs": true}                shuffle: a random-sized allocation before every launch;
                                                        move_inputs: the inputs copied to a random place too;
                                                        with NVML the answer carries "telemetry"
  {"op": "forget"}                                   -> drop every prepared case: a worker kept for the driver's
                                                        next run starts it holding what a fresh one holds
  {"op": "set", "timing": "cupti",                   -> from now on, time by this backend (the driver resolved
   "mem_budget": 0.15}                                  --timing auto from the hello; not rocprofv3, which wraps
                                                        the process from its start) and keep prepared cases
                                                        within this fraction of GPU memory (a kept worker's next
                                                        run may be an interleaved one, which shares the GPU)
  {"op": "modules"}                                  -> the top-level modules imported so far (the import test)
  {"op": "quit"}
A case that fails answers {"status": <import_error|compile_error|runtime_error|incorrect|skipped>, "error": "..."}; a crash or a
hang kills the process, and the driver records that instead. A failure that leaves the GPU context unusable (an
illegal address is sticky in CUDA) is answered with "worker_exits": true, and the worker exits: the driver starts
a fresh one for the next case instead of failing every case after it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any


def _arguments() -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True, help="directory holding the kernels package")
    ap.add_argument("--result-fd", type=int, required=True)
    ap.add_argument("--timing", default="wallclock")  # backends.NOTHING (harness is importable only later)
    ap.add_argument("--mem-budget", type=float, default=0.6, help="fraction of GPU memory kept for prepared cases")
    return ap.parse_args()


def _answer(session: Any, req: dict[str, Any]) -> dict[str, Any]:
    op = req.get("op")
    if op == "hello":
        return {"status": "ok", "info": session.hello()}
    if op == "prepare":
        check, artifacts = bool(req.get("check", True)), str(req.get("artifacts") or "")
        return session.prepare(req["case"], check, artifacts, bool(req.get("compile_only", False)))
    if op == "heat":
        return session.heat(float(req.get("seconds", 0)))
    if op == "time":
        shuffle, move = bool(req.get("shuffle", False)), bool(req.get("move_inputs", False))
        return session.time(req["case"], int(req.get("n", 20)), req.get("gap"), shuffle, move)
    if op == "forget":
        return session.forget()
    if op == "set":
        return session.configure(req.get("timing"), req.get("mem_budget"))
    if op == "modules":  # what this process imported: the boundary test (tests/worker/test_imports.py)
        return {"status": "ok", "modules": sorted(sys.modules)}
    return {"status": "runtime_error", "error": f"unknown op {op!r}"}


def serve(session: Any, requests: Any, send: Any) -> None:
    """Answer requests until ``quit`` or the end of input; exit after a case that lost the GPU context."""
    for line in requests:
        if not line.strip():
            continue
        req = json.loads(line)
        if req.get("op") == "quit":
            return
        ans = _answer(session, req)
        lost = ans.get("status") not in ("ok", "skipped") and session.context_lost()
        if lost:
            ans["error"] = f"{ans.get('error', '')} [{lost}: the worker exits, the next case gets a fresh one]"
            ans["worker_exits"] = True
        send(ans)
        if lost:
            return


def main() -> None:
    a = _arguments()
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]  # no sibling imports by accident
    sys.path.insert(0, os.path.abspath(a.repo))
    out = os.fdopen(a.result_fd, "w", buffering=1)

    def send(obj: dict[str, Any]) -> None:
        out.write(json.dumps(obj, default=float) + "\n")
        out.flush()

    from harness.worker.errors import error_text

    try:
        from harness.worker.session import Session

        session = Session(a.repo, a.timing, a.mem_budget)
    except Exception as exc:  # noqa: BLE001 - the env cannot even import torch/triton
        send({"status": "runtime_error", "error": "worker start: " + error_text(exc)})
        return
    serve(session, sys.stdin, send)
    out.close()


if __name__ == "__main__":
    main()

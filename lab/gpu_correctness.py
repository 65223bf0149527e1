"""Check every kernel and variant against its high-precision reference on the GPU (or the CPU interpreter): every
case of suites/correctness.yaml (odd shapes, split-K, bias, persistent programs, GQA, chunked norms, fp8
scalings, the fused MXFP4 op), prepared exactly as `harness run` prepares a case (the worker's own code: config
lookup, poisoned output, first launch, relative Frobenius error against the reference). Prints one line per case
and exits 1 if any case fails.

    python lab/gpu_correctness.py [--suite suites/correctness.yaml] [--filter REGEX] [--out FILE]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.inputs.suite import load_suite, select  # noqa: E402
from harness.run.cases import worker_case  # noqa: E402
from harness.worker.session import Session  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--suite", default=str(ROOT / "suites" / "correctness.yaml"))
    ap.add_argument("--filter")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    s = Session(str(ROOT), "wallclock", 0.5)
    info = s.hello()
    lines = [f"# triton {info['triton']['version']}, torch {info['torch']['version']}, {info['gpu']['name']}"]
    bad = 0
    for case in select(load_suite(a.suite), None, a.filter):
        t0 = time.perf_counter()
        res = s.prepare(worker_case(case))
        s.prepared.clear()  # one case at a time: the largest hold several GB
        dt = time.perf_counter() - t0
        status = res["status"]
        if status == "skipped":
            lines.append(f"SKIP {case.key}: {res.get('error', '')}")
            continue
        ok = status == "ok"
        bad += not ok
        detail = f"rel_err={res['rel_err']:.2e} (tol {worker_case(case)['tolerance']:g})" if ok else ""
        detail = detail or f"{status}: {res.get('error', '').splitlines()[0][:300]}"
        lines.append(f"{'PASS' if ok else 'FAIL'} {case.key}: {detail} {dt:.2f}s [{res.get('config_source', '')}]")
        print(lines[-1], flush=True)
    lines.append(f"# {bad} failures")
    text = "\n".join(lines) + "\n"
    print(lines[-1])
    if a.out:
        a.out.write_text(text)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

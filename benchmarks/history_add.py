"""How long `harness history add` takes to store 100,000 results rows (target: under 10 s on the 2-core machine).

Writes a version 2 results file of N rows (every column the runner writes: params, config, reps, per-dispatch
times, clocks) with its sidecar into a temporary folder, then adds it to a fresh SQLite database (or the one
``--db`` / ``$HARNESS_DB`` names, e.g. a PostgreSQL URL) through the same path as the CLI: the one loader, the
content hash, the inserts. Prints the time of each step, and of adding the same file again (stored once).

    python3 benchmarks/history_add.py [--rows 100000] [--db postgresql://...]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.results.schema import COLUMNS  # noqa: E402


def make_results(path: Path, rows: int, seed: int = 0) -> None:
    """A results file of ``rows`` gemm-like cases and its sidecar."""
    rng = np.random.default_rng(seed)
    m = rng.choice([16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192], rows)
    n = rng.choice([512, 1024, 2048, 4096, 8192], rows)
    t = rng.uniform(4, 5000, rows).round(4)
    reps = np.stack([t * (1 + rng.normal(0, 0.004, rows)) for _ in range(3)], axis=1).round(4)
    df = pd.DataFrame(
        {
            "kernel": np.where(np.arange(rows) % 2, "gemm", "gemm_fp8"),
            "case_id": [f"M{a}_N{b}_K4096_i{i}" for i, (a, b) in enumerate(zip(m, n))],
            "params": [f'{{"K":4096,"M":{a},"N":{b},"dtype":"bf16","i":{i}}}' for i, (a, b) in enumerate(zip(m, n))],
            "dtype": "bf16",
            "world_size": 1,
            "status": "ok",
            "time_us": t,
            "config": '{"BLOCK_M":128,"BLOCK_N":128,"BLOCK_K":64,"num_warps":8,"num_stages":3}',
            "config_source": "sm90-GEMM-N=4096-K=4096.json:M_LEQ_1024 (tuned)",
            "reps": 3,
            "rep_times_us": ["[" + ",".join(f"{v:.4f}" for v in r) + "]" for r in reps],
            "spread_pct": ((reps.max(1) - reps.min(1)) / reps.min(1) * 100).round(5),
            "dispatch_us": [f'{{"_gemm_kernel":{v:.4f}}}' for v in t],
            "flops": 2.0 * m * n * 4096,
            "bytes": 2.0 * (m * 4096 + n * 4096 + m * n),
            "peak": "bf16",
            "tflops": (2.0 * m * n * 4096 / t / 1e6).round(3),
            "gbps": (2.0 * (m * 4096 + n * 4096 + m * n) / t / 1e3).round(3),
            "compile_s": 0.0012,
            "rel_err": 0.0021,
            "timing": "cupti",
            "sm_clock_mhz": 1980.0,
            "rep_clocks_mhz": "[1980.0,1980.0,1980.0]",
            "throttle": "",
            "gpu_temp_c": 41.0,
            "error": "",
            "artifacts": "",
        },
        columns=list(COLUMNS),
    )
    df.to_csv(path, index=False)
    side = {
        "schema_version": 2,
        "env_name": "tot",
        "captured_at": "2026-11-24T00:00:00Z",
        "triton": {"version": "3.9.0"},
        "gpu": {"name": "NVIDIA H100 80GB HBM3", "uuid": "bench"},
        "host": "bench",
        "timing": "cupti",
    }
    path.with_name(path.name + ".env.json").write_text(json.dumps(side))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--db", default=None, help="database (default: a fresh SQLite file in a temporary folder)")
    args = ap.parse_args()

    from harness.history.store import History
    from harness.results.load import load_results

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "results.csv"
        make_results(src, args.rows)
        db = args.db or str(Path(tmp) / "history.sqlite")
        t0 = time.perf_counter()
        with History.open(db, write=True) as h:
            t1 = time.perf_counter()
            df = load_results(src)
            t2 = time.perf_counter()
            added = h.add_results(src, frame=df)
            t3 = time.perf_counter()
            again = h.add_results(src)
            t4 = time.perf_counter()
        size = Path(db).stat().st_size / 2**20 if Path(db).exists() else float("nan")
        print(f"rows: {args.rows:,} in {src.stat().st_size / 2**20:.1f} MiB of CSV; database: {h.loc.shown}")
        print(f"open + migrate: {t1 - t0:.2f} s")
        print(f"load (the one loader): {t2 - t1:.2f} s")
        print(f"store (hash + inserts): {t3 - t2:.2f} s  (run {added.id}, new={added.new})")
        print(f"add, total: {t3 - t0:.2f} s  ({args.rows / (t3 - t0):,.0f} rows/s)")
        print(f"the same file again: {t4 - t3:.2f} s  (new={again.new})")
        if size == size:
            print(f"database size: {size:.1f} MiB")


if __name__ == "__main__":
    main()

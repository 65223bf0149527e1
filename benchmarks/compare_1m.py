"""Time `harness compare` on two 1,000,000-row results files (target: under 5 s on a 2-core machine).

    python benchmarks/compare_1m.py [--rows 1000000] [--keep DIR]

Writes two synthetic results files with the runner's full column set (TOT = golden x a random factor,
some failures and missing cases), then times load + validate + join + verdicts + CSV/markdown output,
the same code path as the CLI. Prints one line per stage and the total.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's harness, whatever is installed

from harness.compare.compare import compare_files
from harness.compare.store import write_compare
from harness.render.markdown import render_markdown
from harness.results.schema import COLUMNS


def make(path: Path, n: int, seed: int, base: np.ndarray | None = None) -> np.ndarray:
    rng = np.random.default_rng(seed)
    kernels = np.array(
        [
            "batched_gemm_bf16",
            "batched_gemm_a8w8",
            "batched_gemm_a16wfp4",
            "batched_gemm_afp4wfp4",
            "batched_gemm_a8w8_prequant",
        ]
    )
    t = rng.lognormal(3, 1.5, n) if base is None else base * rng.normal(1.0, 0.01, n)
    status = np.where(rng.random(n) < 0.001, "compile_error", "ok")
    df = pd.DataFrame({c: "" for c in COLUMNS}, index=range(n))
    df["kernel"] = kernels[np.arange(n) % len(kernels)]
    df["case_id"] = "case" + pd.Series(np.arange(n)).astype(str)
    df["B"], df["M"], df["N"], df["K"], df["dtype"] = 128, 2 ** (np.arange(n) % 8 + 4), 512, 128, "bf16"
    df["time_us"] = np.where(status == "ok", np.round(t, 4).astype(str), "")
    df["status"] = status
    df["reps"] = 3
    df["config"] = '{"BLOCK_SIZE_M":64,"BLOCK_SIZE_N":128,"BLOCK_SIZE_K":64,"num_warps":4}'
    df.to_csv(path, index=False)
    return t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--keep", type=Path)
    ap.add_argument("--repeat", type=int, default=3, help="time this many runs; the best is reported")
    ap.add_argument("--reuse", action="store_true", help="time files left in --keep by an earlier run")
    a = ap.parse_args()
    d = a.keep or Path(tempfile.mkdtemp())
    d.mkdir(parents=True, exist_ok=True)
    g, t = d / "golden.csv", d / "tot.csv"
    t0 = time.perf_counter()
    if not (a.reuse and g.exists() and t.exists()):
        base = make(g, a.rows, 1)
        make(t, a.rows, 2, base)
    print(f"wrote 2 x {a.rows:,} rows ({g.stat().st_size / 1e6:.0f} MB each) in {time.perf_counter() - t0:.1f} s")

    runs = []
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        cmp = compare_files(g, t)
        t1 = time.perf_counter()
        write_compare(cmp, d / "compare.csv")
        t2 = time.perf_counter()
        md = render_markdown(cmp)
        t3 = time.perf_counter()
        runs.append((t1 - t0, t2 - t1, t3 - t2, t3 - t0))
        print(
            f"run: load+validate+join+verdicts {t1 - t0:.2f} s, write compare.csv {t2 - t1:.2f} s, "
            f"markdown ({len(md):,} chars) {t3 - t2:.2f} s, total {t3 - t0:.2f} s"
        )
    best = min(runs, key=lambda r: r[3])
    print(
        f"BEST of {a.repeat}: compare of 2 x {a.rows:,} rows {best[0]:.2f} s; with compare.csv and markdown written "
        f"{best[3]:.2f} s   verdicts: {cmp.counts()}"
    )


if __name__ == "__main__":
    main()

"""Time `harness compare` on two 1,000,000-row results files (target: under 5 s on a 2-core machine).

    python benchmarks/compare_1m.py [--rows 1000000] [--keep DIR] [--cli [--base OTHER_CHECKOUT]]

Writes two synthetic results files with the runner's full column set (TOT = golden x a random factor,
some failures and missing cases), then times load + validate + join + verdicts + CSV/markdown output,
the same code path as the CLI. Prints one line per stage and the total.

--cli times the whole command instead (`python -m harness compare G T --out`, a new process: imports, load,
validate, compare, terminal table, compare.csv), wall-clock and CPU (user + sys) of each run; with --base, another
checkout's harness too, interleaved run by run, so both see the same machine. On a shared machine trust the CPU
seconds over the wall-clock ones, and report the load average printed with them.
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


def time_cli(checkout: Path, g: Path, t: Path, out: Path) -> tuple[float, float]:
    """(wall, user + sys) seconds of one `harness compare` of the checkout ``checkout``, a process of its own."""
    import os
    import resource
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(checkout)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    # cwd: `python -m` puts the working folder first on sys.path, ahead of PYTHONPATH (else --base timed this one)
    subprocess.run([sys.executable, "-m", "harness", "compare", str(g), str(t), "--out", str(out)], env=env,
                   cwd=checkout, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)  # fmt: skip
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--keep", type=Path)
    ap.add_argument("--repeat", type=int, default=3, help="time this many runs; the best is reported")
    ap.add_argument("--reuse", action="store_true", help="time files left in --keep by an earlier run")
    ap.add_argument("--cli", action="store_true", help="time the whole CLI, a process per run")
    ap.add_argument("--base", type=Path, help="with --cli: another checkout to time too, interleaved")
    a = ap.parse_args()
    d = a.keep or Path(tempfile.mkdtemp())
    d.mkdir(parents=True, exist_ok=True)
    g, t = d / "golden.csv", d / "tot.csv"
    t0 = time.perf_counter()
    if not (a.reuse and g.exists() and t.exists()):
        base = make(g, a.rows, 1)
        make(t, a.rows, 2, base)
    print(f"wrote 2 x {a.rows:,} rows ({g.stat().st_size / 1e6:.0f} MB each) in {time.perf_counter() - t0:.1f} s")

    if a.cli:
        import os

        here = Path(__file__).resolve().parents[1]
        sides = [("this", here)] + ([("base", a.base.resolve())] if a.base else [])
        for k in range(a.repeat):
            shown = []
            for name, checkout in sides:
                wall, cpu = time_cli(checkout, g, t, d / f"compare-{name}.csv")
                shown.append(f"{name}: wall {wall:.2f} s, cpu {cpu:.2f} s")
            print(f"run {k + 1}: " + "; ".join(shown) + f"   (load average {os.getloadavg()[0]:.2f})")
        return
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

"""Time `harness compare` on two 1,000,000-row results files (target: the whole CLI in at most 3 s on a 2-core
machine; results in benchmarks/README.md).

    python benchmarks/compare_1m.py [--rows 1000000] [--keep DIR] [--cli | --stages [--base OTHER_CHECKOUT]]

Writes two synthetic results files with the runner's full column set (TOT = golden x a random factor,
some failures and missing cases), then times load + validate + join + verdicts + CSV/markdown output,
the same code path as the CLI. Prints one line per stage and the total.

--cli times the whole command instead (`python -m harness compare G T --out`, a new process: imports, load,
validate, compare, terminal table, compare.csv), wall-clock and CPU (user + sys) of each run; with --base, another
checkout's harness too, interleaved run by run, so both see the same machine. On a shared machine trust the CPU
seconds over the wall-clock ones, and report the load average printed with them.

--stages times each stage of one compare in a fresh process (imports; read+parse and validate of both files, one
after the other; compare; terminal summary; compare.csv and its metadata), CPU and wall, with --base the same for
another checkout (any version of harness: the stages are found by name).
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

#: with --filled: cells a results file may hold in ``rep_times_us`` besides a runner's list, one each on this many
#: ok rows (an empty list, spaces after the commas as pandas or a hand edit writes, a cell cut short, not a list)
ODD_REPS = ("[]", "[12.5, 12.51, 12.49]", "[12.5,12.51", "n/a")


def rep_cells(t: np.ndarray, ok: np.ndarray, rng: np.random.Generator, odd: int) -> tuple[np.ndarray, np.ndarray]:
    """(rep_times_us, sm_clock_mhz) cells as a run writes them on ok rows: a JSON list of 3 reps (5 on 2 % of rows,
    re-measured) within ~0.3 % of the case's time, rounded to 4 decimals, and a mean SM clock near 1980 MHz;
    ``odd`` rows of each ODD_REPS cell; empty on the other rows."""
    n = len(t)
    reps = np.where(rng.random(n) < 0.02, 5, 3)
    vals = np.round(t[:, None] * (1 + rng.normal(0, 0.003, (n, 5))), 4)
    cells = ["[" + ",".join(map(repr, v[:k].tolist())) + "]" for v, k in zip(vals, reps, strict=True)]
    out = np.where(ok, np.array(cells, dtype=object), "")
    where = rng.choice(np.flatnonzero(ok), size=min(odd * len(ODD_REPS), int(ok.sum())), replace=False)
    for k, cell in enumerate(ODD_REPS):
        out[where[k * odd : (k + 1) * odd]] = cell
    clock = np.round(1980 * (1 - np.abs(rng.normal(0, 0.004, n))), 1)
    return out, np.where(ok, clock.astype(str), "")


def proc_cells(reps: pd.Series, ok: np.ndarray) -> np.ndarray:
    """``rep_procs`` as the plain command writes it on ok rows: the first pass's reps from two worker processes,
    the stability rule's extra ones from a fresh process each (epochs 5, 6: results.schema.FIRST_EXTRA_EPOCH)."""
    by_count = {3: "[0,0,1]", 5: "[0,0,1,5,6]"}
    return np.where(ok, reps.map(lambda k: by_count.get(k, "")).to_numpy(dtype=object), "")


def make(
    path: Path,
    n: int,
    seed: int,
    base: np.ndarray | None = None,
    *,
    filled: bool = False,
    odd: int = 0,
    labelled: bool = False,
    shuffle: bool = False,
) -> np.ndarray:
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
    if filled:
        df["rep_times_us"], df["sm_clock_mhz"] = rep_cells(t, status == "ok", rng, odd)
        df["reps"] = np.where(status == "ok", df["rep_times_us"].str.count(",") + 1, 3)
        if labelled:
            df["rep_procs"] = proc_cells(df["reps"], status == "ok")
    if shuffle:  # another order, as a shard merge may leave it, and 1 % of the cases never written (a crash)
        df = df.iloc[rng.permutation(n)[: n - n // 100]]
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


#: run in a fresh interpreter of the checkout timed (old and new harness alike): each stage of one compare,
#: in order and one file after the other, CPU (user + sys of the process) and wall seconds
STAGES = r"""
import json, os, resource, sys, time
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
c0, w0 = cpu(), time.perf_counter()
try:  # numpy set up as the command sets it up, before it is imported (harness.process from 2026-12-01)
    import harness.process
    harness.process.quiet_numpy()
except (ImportError, AttributeError):
    pass
import harness.cli.compare, harness.compare.compare as C, harness.compare.store as S, harness.render.terminal as R
import harness.results.load as L
from harness.verdict.rule import Rule
import pandas, pyarrow, pyarrow.csv
try:  # the Arrow reader: fastread.py until 2026-12-01, arrowframe.py since
    import harness.results.arrowframe as F
except ImportError:
    try:
        import harness.results.fastread as F
    except ImportError:
        F = None
got = {"imports": [cpu() - c0, time.perf_counter() - w0]}
try:  # what the command sets up, where it does (harness.process from 2026-12-01, cli/compare.py before)
    import harness.process as P
except ImportError:
    P = harness.cli.compare
getattr(P, "arrow_allocator", getattr(P, "_arrow_allocator", lambda: None))()
def timed(mod, name, stage):
    f = getattr(mod, name)
    def g(*a, **k):
        c, w = cpu(), time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            got.setdefault(stage, [0.0, 0.0])
            got[stage][0] += cpu() - c
            got[stage][1] += time.perf_counter() - w
    setattr(mod, name, g)
for mod, name in ((L, "_read_bytes"), (L, "_decode"), (L, "_read_frame"), (F, "_table")):
    if mod is not None and hasattr(mod, name):
        timed(mod, name, "read+parse")
timed(L, "load_results", "load")
g, t, out = sys.argv[1:4]
frames = [L.load_results(g)]
import inspect  # TOT as the command loads it: its cases' uniqueness from golden's where this harness can
known = {"unique_keys": lambda: frames[0]} if "unique_keys" in inspect.signature(L.load_results).parameters else {}
frames.append(L.load_results(t, **known))
c, w = cpu(), time.perf_counter()
table, warnings = C.compare_frames(*frames, Rule())
got["compare"] = [cpu() - c, time.perf_counter() - w]
cmp = C.Comparison(table=table, rule=Rule())
c, w = cpu(), time.perf_counter()
with open(os.devnull, "w") as devnull:
    R.print_comparison(cmp, console=R.Console(file=devnull, width=80))
got["terminal"] = [cpu() - c, time.perf_counter() - w]
c, w = cpu(), time.perf_counter()
S.write_compare(cmp, out)
got["write"] = [cpu() - c, time.perf_counter() - w]
got["validate"] = [a - b for a, b in zip(got.pop("load"), got["read+parse"])]
got["total"] = [cpu() - c0, time.perf_counter() - w0]
order = ("imports", "read+parse", "validate", "compare", "terminal", "write", "total")
print(json.dumps({k: got[k] for k in order}))
"""


def time_stages(checkout: Path, g: Path, t: Path, out: Path) -> dict[str, list[float]]:
    """{stage: [cpu, wall]} of one compare by ``checkout``'s harness, in a process of its own (see STAGES)."""
    import json
    import os
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(checkout)}
    done = subprocess.run([sys.executable, "-c", STAGES, str(g), str(t), str(out)], env=env, cwd=checkout,
                          capture_output=True, text=True, check=True)  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--keep", type=Path)
    ap.add_argument("--repeat", type=int, default=3, help="time this many runs; the best is reported")
    ap.add_argument("--reuse", action="store_true", help="time files left in --keep by an earlier run")
    ap.add_argument("--cli", action="store_true", help="time the whole CLI, a process per run")
    ap.add_argument("--base", type=Path, help="with --cli or --stages: another checkout to time too, interleaved")
    ap.add_argument("--stages", action="store_true", help="CPU and wall of each stage, a process per run")
    ap.add_argument("--filled", action="store_true", help="rep_times_us and sm_clock_mhz filled on every ok row")
    ap.add_argument("--odd", type=int, default=0, help="with --filled: ok rows given each odd rep cell (ODD_REPS)")
    ap.add_argument("--labelled", action="store_true", help="with --filled: rep_procs too, as the plain command")
    ap.add_argument("--shuffle", action="store_true", help="TOT's rows in another order, 1 %% of its cases left out")
    a = ap.parse_args()
    d = a.keep or Path(tempfile.mkdtemp())
    d.mkdir(parents=True, exist_ok=True)
    g, t = d / "golden.csv", d / "tot.csv"
    t0 = time.perf_counter()
    if not (a.reuse and g.exists() and t.exists()):
        base = make(g, a.rows, 1, filled=a.filled, odd=a.odd, labelled=a.labelled)
        make(t, a.rows, 2, base, filled=a.filled, odd=a.odd, labelled=a.labelled, shuffle=a.shuffle)
    print(f"wrote 2 x {a.rows:,} rows ({g.stat().st_size / 1e6:.0f} MB each) in {time.perf_counter() - t0:.1f} s")

    here = Path(__file__).resolve().parents[1]
    sides = [("this", here)] + ([("base", a.base.resolve())] if a.base else [])
    if a.stages:
        import os

        for k in range(a.repeat):
            for name, checkout in sides:
                got = time_stages(checkout, g, t, d / f"compare-{name}.csv")
                shown = ", ".join(f"{s} {c:.2f}/{w:.2f}" for s, (c, w) in got.items())
                print(f"run {k + 1} {name} (cpu/wall s): {shown}   (load average {os.getloadavg()[0]:.2f})")
        return
    if a.cli:
        import os

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

"""Fidelity of the harness's kernel times against Nsight Compute and do_bench, on the GPU.

    python fidelity.py pick  --results golden.csv --n 36 --out cases.json      # choose cases across kernels
    ncu --csv --metrics gpu__time_duration.sum --clock-control none -k regex:^_ \\
        python fidelity.py launch --cases cases.json --reps 5 > ncu-golden.csv   # under ncu
    python fidelity.py dobench --cases cases.json --out dobench-golden.json
    python fidelity.py report --cases cases.json --stack golden=golden.csv,ncu-golden.csv,dobench-golden.json \\
        --stack tot=... [--ncu2 ncu-golden-2.csv] --out fidelity.csv

``launch`` runs each case once to compile, then ``reps`` times after a 256 MiB L2 flush; ncu sees
(1 + reps) launches per case in order, and the first of each group (the compile launch) is dropped.

Where harness and ncu differ, ``gap`` tests the explanation: the harness's own timing (the worker's read-only
flush, CUPTI) with the GPU left idle for G ms before every launch, as ncu's replay leaves it:

    python fidelity.py gap --cases cases.json --idle-ms 0,1,10 --out gap-golden.json

and ``empty`` measures the fixed part of ncu's bracket: one near-empty kernel (one program, one store) timed by
ncu and by CUPTI; ncu's start timestamp is written into the command stream before the grid launch, CUPTI's
when the grid starts, so the difference is launch processing that is not the kernel's:

    ncu --csv --metrics gpu__time_duration.sum --clock-control none -k regex:_empty_kernel \
        python fidelity.py empty > ncu-empty.csv
    python fidelity.py empty --out empty-cupti.json
    python fidelity.py report ... --empty ncu-empty.csv,empty-cupti.json
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def pick(a) -> None:
    import pandas as pd

    from harness.results.load import load_results

    df = load_results(a.results)
    df = df[(df["status"] == "ok") & (df["time_us"] >= a.min_us)]
    chosen = []
    per = max(1, a.n // df["kernel"].nunique())
    for _, g in df.groupby("kernel"):
        g = g.sort_values("time_us")
        idx = [int(round(i * (len(g) - 1) / max(per - 1, 1))) for i in range(min(per, len(g)))]
        chosen.append(g.iloc[sorted(set(idx))])
    sel = pd.concat(chosen)
    cases = []
    for r in sel.itertuples():
        cases.append(
            {
                "kernel": r.kernel,
                "case_id": r.case_id,
                "params": json.loads(r.params),
                "config": json.loads(r.config),
                # kernels one op launches (QUANT_PASS, split-K: 2): ncu reports each, the op's time is their sum
                "dispatches": len(json.loads(r.dispatch_us)) if str(r.dispatch_us).startswith("{") else 1,
            }
        )
    Path(a.out).write_text(json.dumps(cases, indent=1))
    print(f"picked {len(cases)} cases over {sel['kernel'].nunique()} kernels")


def _prepared(cases):
    import torch

    from harness.inputs.kernel import load_kernel
    from harness.worker.cases import load_kernel as import_kernel
    from kernels import common as C

    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    for c in cases:
        k = import_kernel(load_kernel(c["kernel"]).source, str(ROOT))
        inputs = k.make_inputs(c["params"], 0)
        yield c, (lambda k=k, inputs=inputs, cfg=c["config"]: k.launch(inputs, cfg)), flush, C


def launch(a) -> None:
    import torch

    cases = json.loads(Path(a.cases).read_text())
    for _c, op, flush, _ in _prepared(cases):
        op()
        torch.cuda.synchronize()
        for _ in range(a.reps):
            flush.zero_()
            op()
        torch.cuda.synchronize()


def dobench(a) -> None:
    import triton

    cases = json.loads(Path(a.cases).read_text())
    out = {}
    for c, op, _, _ in _prepared(cases):
        op()
        out[f"{c.key}"] = 1e3 * triton.testing.do_bench(op, warmup=25, rep=100, return_mode="median")
    Path(a.out).write_text(json.dumps(out, indent=1))


def gap(a) -> None:
    """Per case and idle gap: the median CUPTI time of ``reps`` launches, each after the harness's L2 flush and
    then ``idle`` ms with the GPU idle (0 = the harness's back-to-back launches)."""
    import time

    import torch

    from harness.worker.session import Session
    from harness.worker.timing import FLUSH_NAME, attribute_dispatches, kernel_events

    w = Session(str(ROOT), "cupti", 0.5)
    cases = json.loads(Path(a.cases).read_text())
    idles = [float(v) for v in a.idle_ms.split(",")]
    out = {}
    for c, op, _, _ in _prepared(cases):
        op()
        torch.cuda.synchronize()
        row = {}
        for idle in idles:
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                for _ in range(a.reps):
                    w.timer.flush()
                    torch.cuda.synchronize()
                    if idle:
                        time.sleep(idle / 1e3)
                    op()
                torch.cuda.synchronize()
            times, _ = attribute_dispatches(kernel_events(prof), FLUSH_NAME, a.reps)
            row[f"{idle:g}"] = statistics.median(times)
        out[f"{c.key}"] = row
        print(c["case_id"], row, flush=True)
    Path(a.out).write_text(json.dumps(out, indent=1))


def empty(a) -> None:
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def _empty_kernel(ptr):
        tl.store(ptr + tl.program_id(0), 1.0)

    buf = torch.zeros(1, device="cuda")
    _empty_kernel[(1,)](buf)
    torch.cuda.synchronize()
    if not a.out:  # under ncu: just the launches
        for _ in range(a.reps):
            _empty_kernel[(1,)](buf)
        torch.cuda.synchronize()
        return
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(a.reps):
            _empty_kernel[(1,)](buf)
            torch.cuda.synchronize()
    from harness.worker.timing import kernel_events

    times = [us for name, us in kernel_events(prof) if "_empty_kernel" in name]
    Path(a.out).write_text(json.dumps({"cupti_us": times, "median_us": statistics.median(times)}, indent=1))
    print(f"empty kernel, CUPTI: median {statistics.median(times):.3f} us over {len(times)}")


def ncu_times(path: str) -> list[float]:
    """Every gpu__time_duration.sum row of an ncu --csv output, in µs."""
    text = Path(path).read_text(errors="replace")
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    rows = [r for r in rows if r.get("Metric Name") == "gpu__time_duration.sum"]
    times = []
    for r in rows:
        v = float(r["Metric Value"].replace(",", ""))
        unit = r.get("Metric Unit", "ns")
        times.append(v / 1e3 if unit == "ns" else v * 1e3 if unit == "msecond" else v)
    return times


def parse_ncu(path: str, cases: list[dict], reps: int) -> dict[str, list[float]]:
    """ncu --csv output → per case the `reps` op times in µs (the compile launch dropped; an op of several
    kernels is the sum of its dispatches, as the harness counts it)."""
    times = ncu_times(path)
    expected = sum((1 + reps) * c.get("dispatches", 1) for c in cases)
    if len(times) != expected:
        raise SystemExit(f"{path}: {len(times)} kernel rows, expected {expected}")
    out, i = {}, 0
    for c in cases:
        k = c.get("dispatches", 1)
        ops = [sum(times[i + j * k : i + (j + 1) * k]) for j in range(1 + reps)]
        out[f"{c.key}"] = ops[1:]
        i += (1 + reps) * k
    return out


def report(a) -> None:
    import numpy as np
    import pandas as pd

    from harness.results.load import load_results
    from harness.verdict.rule import Rule, timed_verdicts

    cases = json.loads(Path(a.cases).read_text())
    rows = []
    per_stack = {}
    for spec in a.stack:
        name, files = spec.split("=", 1)
        res_f, ncu_f, db_f = files.split(",")
        res = load_results(res_f).set_index(["kernel", "case_id"])
        ncu = parse_ncu(ncu_f, cases, a.reps)
        db = json.loads(Path(db_f).read_text())
        per_stack[name] = {}
        for c in cases:
            key = f"{c.key}"
            h = float(res.loc[(c["kernel"], c["case_id"]), "time_us"])
            n = statistics.median(ncu[key])
            per_stack[name][key] = (h, n)
            rows.append(
                {
                    "stack": name,
                    "kernel": c["kernel"],
                    "case_id": c["case_id"],
                    "harness_us": h,
                    "ncu_us": n,
                    "ncu_min_us": min(ncu[key]),
                    "ncu_max_us": max(ncu[key]),
                    "diff_pct": 100 * (h - n) / n,
                    "dobench_us": db[key],
                    "dobench_over_ncu": db[key] / n,
                }
            )
    df = pd.DataFrame(rows)
    lines = []
    big = df[df["ncu_us"] >= 4]
    lines.append(f"cases x stacks: {len(df)} ({len(big)} with ncu >= 4 us)")
    lines.append(
        f"harness vs ncu: median |diff| {big['diff_pct'].abs().median():.2f}%, max |diff| "
        f"{big['diff_pct'].abs().max():.2f}%, mean signed diff {big['diff_pct'].mean():+.2f}%"
    )
    lines.append(
        f"do_bench / ncu: median {df['dobench_over_ncu'].median():.2f}x, max {df['dobench_over_ncu'].max():.2f}x"
        f" (small kernels: {df[df['ncu_us'] < 15]['dobench_over_ncu'].median():.2f}x)"
    )
    if a.empty:
        ncu_f, cupti_f = a.empty.split(",")
        off = statistics.median(ncu_times(ncu_f)) - json.loads(Path(cupti_f).read_text())["median_us"]
        corr = 100 * (big["harness_us"] + off - big["ncu_us"]) / big["ncu_us"]
        df["diff_pct_bracket_corrected"] = 100 * (df["harness_us"] + off - df["ncu_us"]) / df["ncu_us"]
        lines.append(
            f"ncu's launch bracket (empty kernel, ncu minus CUPTI): {off:.2f} us; harness + bracket vs ncu: median "
            f"|diff| {corr.abs().median():.2f}%, max |diff| {corr.abs().max():.2f}%"
        )
    if a.ncu2:
        name, f = a.ncu2.split("=", 1)
        second = parse_ncu(f, cases, a.reps)
        d = [100 * (statistics.median(second[k]) - per_stack[name][k][1]) / per_stack[name][k][1] for k in second]
        lines.append(
            f"ncu vs ncu ({name}, two processes): median |diff| {np.median(np.abs(d)):.2f}%, "
            f"max {np.max(np.abs(d)):.2f}%"
        )
    if len(per_stack) == 2:
        (g, gd), (t, td) = per_stack.items()
        rule = Rule()
        keys = list(gd)
        hg = np.array([gd[k][0] for k in keys])
        ht = np.array([td[k][0] for k in keys])
        ng = np.array([gd[k][1] for k in keys])
        nt = np.array([td[k][1] for k in keys])
        vh, vn = timed_verdicts(hg, ht, rule), timed_verdicts(ng, nt, rule)
        near = np.abs(nt - rule.limit_us(ng)) <= 0.01 * rule.limit_us(ng)
        agree = (vh == vn) | near
        lines.append(
            f"verdict agreement harness vs ncu ({g} vs {t}): {int(agree.sum())}/{len(keys)} "
            f"({int((vh == vn).sum())} identical, {int((~(vh == vn) & near).sum())} differ within 1% of the limit)"
        )
        for k, a_, b_, n_ in zip(keys, vh, vn, near, strict=True):
            if a_ != b_:
                lines.append(f"  {k}: harness {a_}, ncu {b_}{' (within 1% of the limit)' if n_ else ''}")
    df.to_csv(a.out, index=False, float_format="%.4f")
    text = "\n".join(lines)
    print(text)
    Path(a.out).with_suffix(".txt").write_text(text + "\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pick")
    p.add_argument("--results", required=True)
    p.add_argument("--n", type=int, default=36)
    p.add_argument("--min-us", type=float, default=4.0)
    p.add_argument("--out", required=True)
    p = sub.add_parser("launch")
    p.add_argument("--cases", required=True)
    p.add_argument("--reps", type=int, default=5)
    p = sub.add_parser("dobench")
    p.add_argument("--cases", required=True)
    p.add_argument("--out", required=True)
    p = sub.add_parser("gap")
    p.add_argument("--cases", required=True)
    p.add_argument("--idle-ms", default="0,1,10")
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--out", required=True)
    p = sub.add_parser("empty")
    p.add_argument("--reps", type=int, default=50)
    p.add_argument("--out")
    p = sub.add_parser("report")
    p.add_argument("--cases", required=True)
    p.add_argument("--stack", action="append")
    p.add_argument("--ncu2")
    p.add_argument("--empty", help="NCU_EMPTY.csv,EMPTY_CUPTI.json from the `empty` step: report bracket-corrected")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--out", required=True)
    a = ap.parse_args()
    {"pick": pick, "launch": launch, "dobench": dobench, "gap": gap, "empty": empty, "report": report}[a.cmd](a)


if __name__ == "__main__":
    main()

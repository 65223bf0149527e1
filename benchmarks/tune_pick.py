"""Turn config-sweep results into AITER-style config files, for any kernel with a ConfigLookup.

    python benchmarks/tune_pick.py SWEEP.csv [MORE.csv ...] [--arch sm90] [--out kernels/configs] [--summary md]

For each kernel, the sweep's cases are grouped by the values of the lookup's ``specialize`` parameters (one file
each: ``{arch}-{family}-N=512-K=128.json``, or the default ``{arch}-{family}.json`` when the lookup specializes on
nothing) and by the value of its ``bucket`` parameter (one bucket each: ``{P}_LEQ_<v>`` for every swept value but
the largest, which becomes ``any``). In a bucket the pick is the config with the smallest geometric mean of its
time over the best time of each case it served (the other parameters: dtype, scaling, batch...), among configs
that ran ``ok`` on every one of those cases: a config that failed anywhere (shared memory, a wrong answer) is never
picked. Several sweeps of one GPU are read as one (a case measured in more than one file: the last file's row
counts, so a re-run of some configs replaces their first measurement).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pandas as pd  # noqa: E402

from harness.inputs.kernel import load_kernel  # noqa: E402
from harness.results.load import load_results, params_of  # noqa: E402


def pick(rows: pd.DataFrame) -> tuple[dict, float, int] | None:
    """(config, its geometric-mean slowdown over each case's best, cases) for the rows of one bucket; None when no
    config ran ok on all of them."""
    rows = rows.assign(case=rows["others"], cfg=rows["config"])
    best = rows.groupby("case")["time_us"].min()
    n_cases = len(best)
    scores = []
    for cfg, g in rows.groupby("cfg"):
        if g["case"].nunique() < n_cases:
            continue
        slow = [t / best[c] for c, t in zip(g["case"], g["time_us"])]
        scores.append((math.exp(sum(map(math.log, slow)) / len(slow)), cfg))
    if not scores:
        return None
    score, cfg = min(scores)
    return json.loads(cfg), score, n_cases


def kernel_files(kernel: str, ok: pd.DataFrame, arch: str, out: Path, lines: list[str]) -> None:
    lookup = load_kernel(kernel).spec.config
    if lookup is None:
        print(f"{kernel}: no ConfigLookup (its configs come from the suite): nothing to write", file=sys.stderr)
        return
    p = pd.DataFrame([params_of(x) for x in ok["params"]], index=ok.index)
    spec_cols, b = list(lookup.specialize), lookup.bucket
    other = [c for c in p.columns if c not in (*spec_cols, b, "seed")]
    ok = ok.assign(key=p[spec_cols].astype(str).agg("|".join, axis=1) if spec_cols else "", value=p[b])
    ok = ok.assign(others=p[other].astype(str).agg("|".join, axis=1) if other else "")
    for key, g in ok.groupby("key"):
        values = sorted(int(v) for v in g["value"].unique())
        buckets = {}
        for v in values:
            found = pick(g[g["value"] == v])
            if found is None:
                print(f"{kernel} {key} {b}={v}: no config ran ok on every case", file=sys.stderr)
                continue
            cfg, score, n = found
            name = "any" if v == values[-1] else f"{b}_LEQ_{v}"
            buckets[name] = cfg
            lines.append(f"| {kernel} | {key or 'default'} | {name} | {n} | {score:.3f} | {json.dumps(cfg)} |")
        suffix = "-" + "-".join(f"{c}={x}" for c, x in zip(spec_cols, str(key).split("|"))) if spec_cols else ""
        path = out / f"{arch}-{lookup.family}{suffix}.json"
        path.write_text("{\n" + ",\n".join(f'  "{k}": {json.dumps(c)}' for k, c in buckets.items()) + "\n}\n")
        print(f"wrote {path.name}: {', '.join(buckets)}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("sweep", nargs="+")
    ap.add_argument("--arch", default="sm90")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "kernels" / "configs"))
    ap.add_argument("--summary")
    a = ap.parse_args()
    df = pd.concat([load_results(f) for f in a.sweep]).drop_duplicates(["kernel", "case_id"], keep="last")
    ok = df[df["status"] == "ok"]
    lines = [
        "| kernel | file | bucket | cases | slowdown vs each case's best (geo-mean) | config |",
        "|---|---|---|---:|---:|---|",
    ]
    for kernel, g in ok.groupby("kernel"):
        kernel_files(str(kernel), g, a.arch, Path(a.out), lines)
    if a.summary:
        Path(a.summary).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

"""The summary of run.sh's step `aiter` (issue 33's GPU proof): AITER's own batched GEMMs from a checkout, golden,
TOT and golden again interleaved. Per kernel: the cases and their status under each stack, the configs that ran
(AITER's file and bucket, after AITER's post-processing), golden vs TOT (verdicts, median and worst change) and
golden vs golden again (the A/A: what the rule flags there is noise). Which AITER commit, which Triton, which GPU.

    python3 lab/gpu_validation/aiter_stats.py DIR    # DIR/{golden,tot,golden-aa}.csv, compare.csv, compare-aa.csv
    python3 lab/gpu_validation/aiter_stats.py DIR --stacks main,pr,main-again   # two checkouts, one Triton

Prints the summary and writes it to DIR/summary.md. Standard library only.
"""

from __future__ import annotations

import argparse
import collections
import csv
import json
import statistics
import sys
from pathlib import Path

STACKS = ("golden", "tot", "golden-aa")
#: statuses with a time (harness/results/schema.py TIMED_STATUSES), and skipped: not failures
NOT_FAILED = ("ok", "unstable", "skipped")


def rows(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def sidecar(path: Path) -> dict:
    try:
        return json.loads(Path(f"{path}.env.json").read_text())
    except (OSError, ValueError):
        return {}


def _f(x: str) -> float | None:
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def _pct(xs: list[float]) -> str:
    return f"{statistics.median(xs):+.2f}" if xs else "-"


def _counts(values: list[str]) -> str:
    return ", ".join(f"{v} {n}" for v, n in collections.Counter(values).most_common()) or "-"


def stack_line(d: Path, name: str) -> str:
    s = sidecar(d / f"{name}.csv")
    if not s:
        return f"- {name}: no results"
    t, gpu = s.get("triton") or {}, (s.get("gpu") or {}).get("name", "?")
    libs = ", ".join(
        f"{k} {(v.get('commit') or 'commit unknown')[:10]} ({v.get('path')})"
        for k, v in (s.get("libraries") or {}).items()
    )
    arch = sorted({v.get("config_arch") or "the GPU's own" for v in (s.get("config_lookup") or {}).values()})
    return f"- {name}: Triton {t.get('version', '?')} ({t.get('path', '?')}), {gpu}; {libs or 'no library'}; configs of {', '.join(arch) or '?'}"


def summary(d: Path, stacks: tuple[str, ...] = STACKS) -> str:
    """The summary of the runs ``stacks`` in ``d``: the baseline, the one compared with it (compare.csv), and the
    baseline again (compare-aa.csv)."""
    base, new, again = stacks
    res = {s: rows(d / f"{s}.csv") for s in stacks}
    cmp_, aa = rows(d / "compare.csv"), rows(d / "compare-aa.csv")
    kernels = sorted({r["kernel"] for rs in res.values() for r in rs})
    out = [f"# AITER from a checkout: {base} vs {new}, and {base} again ({d})", ""]
    out += [stack_line(d, s) for s in stacks] + [""]
    out.append(
        f"| kernel | cases | status {' / '.join(stacks)} | {new}: verdicts | {new} median d% | A/A: verdicts "
        "| A/A median abs d% | A/A max abs d% |"
    )
    out.append("|---|---|---|---|---|---|---|---|")
    for k in kernels:
        st = " / ".join(_counts([r["status"] for r in res[s] if r["kernel"] == k]) for s in stacks)
        c = [r for r in cmp_ if r["kernel"] == k]
        a = [r for r in aa if r["kernel"] == k]
        dc = [
            x
            for r in c
            if r["verdict"] in ("ok", "regression", "improvement") and (x := _f(r["delta_pct"])) is not None
        ]
        da = [
            abs(x)
            for r in a
            if r["verdict"] in ("ok", "regression", "improvement") and (x := _f(r["delta_pct"])) is not None
        ]
        n = len({r["case_id"] for s in stacks for r in res[s] if r["kernel"] == k})
        out.append(
            f"| {k} | {n} | {st} | {_counts([r['verdict'] for r in c])} | {_pct(dc)} | {_counts([r['verdict'] for r in a])} "
            f"| {f'{statistics.median(da):.2f}' if da else '-'} | {f'{max(da):.2f}' if da else '-'} |"
        )
    out += [
        "",
        f"Configs that ran ({base}; file:bucket from AITER's files, the config after AITER's post-processing):",
        "",
    ]
    timed = ("ok", "unstable")
    ran = collections.Counter((r["kernel"], r["config_source"], r["config"]) for r in res[base] if r["status"] in timed)
    out += [f"- {k}: {src} x{n}: `{cfg}`" for (k, src, cfg), n in sorted(ran.items())]
    diff = [r for r in res[base] if r["status"] in timed]
    tot_cfg = {(r["kernel"], r["case_id"]): r["config"] for r in res[new]}
    changed = [r for r in diff if tot_cfg.get((r["kernel"], r["case_id"]), r["config"]) != r["config"]]
    out.append(
        f"- {new} ran {'the same config in every case' if not changed else f'another config in {len(changed)} cases'}"
    )
    worst = sorted((r for r in cmp_ if _f(r["delta_pct"]) is not None), key=lambda r: -float(r["delta_pct"]))[:8]
    if worst:
        out += ["", f"Largest changes ({base} us -> {new} us, d%, verdict; A/A d% of the same case):", ""]
        aa_pct = {(r["kernel"], r["case_id"]): r["delta_pct"] for r in aa}
        for r in worst:
            a = _f(aa_pct.get((r["kernel"], r["case_id"]), ""))
            out.append(
                f"- {r['kernel']}/{r['case_id']}: {float(r['golden_us']):.1f} -> {float(r['tot_us']):.1f} us, "
                f"{float(r['delta_pct']):+.2f}%, {r['verdict']}; A/A {f'{a:+.2f}%' if a is not None else '-'}"
            )
    failed = [r for s in stacks for r in res[s] if r["status"] not in NOT_FAILED]
    if failed:
        out += ["", "Failures (first of each status and kernel):", ""]
        firsts = {(r["kernel"], r["status"]): r for r in failed}
        out += [
            f"- {k} {st}: {r['case_id']}: {(r.get('error') or '').partition(chr(10))[0][:300]}"
            for (k, st), r in sorted(firsts.items())
        ]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--stacks", default=",".join(STACKS), help="the baseline, the compared run, the baseline again")
    a = ap.parse_args(argv)
    stacks = tuple(a.stacks.split(","))
    if len(stacks) != 3:
        print("aiter_stats: --stacks takes three names", file=sys.stderr)
        return 2
    if not (a.dir / f"{stacks[0]}.csv").exists():
        print(f"aiter_stats: no {a.dir / f'{stacks[0]}.csv'}", file=sys.stderr)
        return 2
    text = summary(a.dir, stacks)
    (a.dir / "summary.md").write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

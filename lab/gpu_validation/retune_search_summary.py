"""What a `harness retune` search found before it was cut, from its OUT folder alone (cache.jsonl, runs/*.json):
per slot, the seed config (the first search batch times every slot's seed) against the best config timed on every
case of the slot, scored like the retune does (cases made slower than the seed, regressed cases left, geometric
mean), and what that would do to COMPARE's regressions under TOT. A prediction, not a result: no golden check and
no guard has measured these configs (the retune's later phases do).

    python lab/gpu_validation/retune_search_summary.py OUT COMPARE.csv [--markdown FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

from harness.compare.store import load_compare
from harness.retune.cache import Cache
from harness.retune.guard import slower
from harness.retune.search import SlotCase
from harness.retune.search import score as search_score
from harness.retune.space import config_key
from harness.verdict.rule import Rule


def load(out: Path) -> tuple[dict, dict]:
    """(case key → {config json → TOT time}) from the cache, and (case key → seed config json) from the first
    search batch (the one that times the seeds: the smallest, run first)."""
    times: dict[str, dict[str, float]] = defaultdict(dict)
    for e in Cache(out / "cache.jsonl").entries.values():  # the retune's own reader: a torn last line is skipped
        k = e.key
        if k.stack.startswith("triton") and k.tag == "search" and e.status == "ok":
            times[f"{k.kernel}/{k.case_id}"][k.config] = float(e.time_us)
    batches = [json.loads(p.read_text()) for p in (out / "runs").glob("search-tot-*[0-9a-f].json")]
    first = min(batches, key=len)
    seed = {key: config_key(cfg) for key, cfg in first}
    return times, seed


def slots(seed: dict[str, str]) -> dict[tuple, list[str]]:
    """Cases of one kernel and shape (N, K) that share a seed config: one bucket of one file, near enough."""
    out: dict[tuple, list[str]] = defaultdict(list)
    for key, cfg in seed.items():
        kernel, case = key.split("/")
        nk = "_".join(p for p in case.split("_") if p[0] in "NK")
        out[(kernel, nk, cfg)].append(key)
    return out


def best(cases: list[str], seed_cfg: str, times: dict, golden: dict, rule: Rule) -> tuple[str, tuple]:
    """The config scored best on every case, by the retune's own score (harness.retune.search.score)."""
    slot = [SlotCase(c, golden.get(c), c in golden) for c in cases]
    seed_times = {c: times[c][seed_cfg] for c in cases}

    def time_of(case: str, cfg: dict) -> tuple[str, float] | None:
        t = times[case].get(config_key(cfg))
        return None if t is None else ("ok", t)

    def score(cfg: str) -> tuple | None:
        s = search_score(slot, seed_times, json.loads(cfg), time_of, rule)
        return None if s is None else (s.worse, s.unfixed, s.geo)

    scored = [(s, cfg) for cfg in times[cases[0]] if (s := score(cfg)) is not None]
    s, cfg = min(scored)
    return cfg, s


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("compare", type=Path)
    ap.add_argument("--markdown", type=Path)
    a = ap.parse_args(argv)
    cmp = load_compare(a.compare)
    rule, reg = cmp.rule, cmp.table[cmp.table["verdict"] == "regression"]
    golden = {f"{k}/{c}": g for k, c, g in zip(reg["kernel"], reg["case_id"], reg["golden_us"])}
    times, seed = load(a.out)
    rows, per_kernel = [], defaultdict(lambda: [0, 0, 0])
    for (kernel, nk, seed_cfg), cases in sorted(slots(seed).items()):
        cfg, (worse, left, geo) = best(cases, seed_cfg, times, golden, rule)
        targets = [c for c in cases if c in golden]
        now = sum(slower(golden[c], times[c][seed_cfg], rule) for c in targets)
        n_configs = sum(all(x in times[c] for c in cases) for x in times[cases[0]])
        per_kernel[kernel][0] += len(targets)
        per_kernel[kernel][1] += now
        per_kernel[kernel][2] += left
        change = ", ".join(f"{k} {v}→{json.loads(cfg)[k]}" for k, v in json.loads(seed_cfg).items()
                           if json.loads(cfg).get(k) != v) or "none better"  # fmt: skip
        rows.append((kernel.replace("batched_gemm_", ""), nk, len(cases), len(targets), now, left, worse, geo,
                     n_configs, change))  # fmt: skip
    lines = ["| kernel | N, K | cases | targets | regressed with the seed now | with the best | slower than seed |"
             " time vs seed (geo) | configs on all cases | best change |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]  # fmt: skip
    for r in rows:
        lines.append(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]} | {r[5]} | {r[6]} | {r[7]:.3f} | {r[8]} | {r[9]} |")
    lines += ["", "| kernel | regressions in COMPARE | regressed with the seeds, timed now | with the best configs |",
              "|---|---:|---:|---:|"]  # fmt: skip
    tot = [0, 0, 0]
    for k, (n, now, left) in sorted(per_kernel.items()):
        lines.append(f"| {k} | {n} | {now} | {left} |")
        tot = [tot[0] + n, tot[1] + now, tot[2] + left]
    lines.append(f"| all | {tot[0]} | {tot[1]} | {tot[2]} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.markdown:
        a.markdown.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

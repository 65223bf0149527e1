"""Whether a retune kept its promise, from two full runs on one GPU: BEFORE (golden and TOT with the shipped
configs) and AFTER (golden and TOT with the retuned files), each a `harness run --with-env` of the whole suite.

It applies the compare rule to four pairs of every case:

- golden old → TOT old: the regressions the retune started from, on this GPU;
- golden old → TOT new: what a user who upgrades Triton and takes the new files sees (the retune's promise: a
  case is kept only if it is no regression against golden's *old* time);
- golden old → golden new: what a user still on golden loses (the promise: nothing);
- golden new → TOT new: the fresh comparison at equal configs (what the compiler itself still loses).

"New" regressions are cases regressed against golden's old time after, but not before. A case whose config the
retune did not change and that flips verdict between the two runs is run-to-run noise; the table marks which
cases' configs changed.

    python lab/gpu_validation/retune_proof.py AFTER_DIR (--before BEFORE_DIR | --retune RETUNE_JSON)
        [--markdown FILE]

(each DIR holding golden.csv and tot.csv). Without a BEFORE run on the same GPU, ``--retune`` takes golden's and
TOT's old times from the retune's guard (interleaved with the new ones, on the same GPU) for every case whose
config it changed; for every other case golden's config is the same before and after, so the AFTER run's golden
is golden old.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from harness.results.load import load_results
from harness.retune.space import config_key
from harness.verdict.rule import Rule, verdict_of

STACKS = ("golden", "tot")

#: column → (run, stack) of the reference and of the measured side
PAIRS = {
    "before": ("before", "golden", "before", "tot"),
    "upgraded": ("before", "golden", "after", "tot"),
    "golden user": ("before", "golden", "after", "golden"),
    "fresh": ("after", "golden", "after", "tot"),
}
LEGEND = (
    "Regressions by the compare rule. before: golden old → TOT old; upgraded: golden old → TOT new; "
    "golden user: golden old → golden new (golden slower); fresh: golden new → TOT new."
)


def times(folder: Path, stack: str) -> tuple[dict[str, float], dict[str, str]]:
    """(case key → time, case key → config) of FOLDER/STACK.csv; failed cases have no time."""
    df = load_results(folder / f"{stack}.csv")
    t, cfg = {}, {}
    for r in df.to_dict("records"):
        key = f"{r['kernel']}/{r['case_id']}"
        cfg[key] = config_key(json.loads(r["config"])) if isinstance(r["config"], str) else ""
        if r["status"] == "ok":
            t[key] = float(r["time_us"])
    return t, cfg


def verdicts(runs: dict, pair: tuple[str, str, str, str], rule: Rule) -> dict[str, str]:
    a, b = runs[pair[:2]], runs[pair[2:]]
    return {k: verdict_of(a[k], b[k], rule) if k in b else "failed" for k in a}


def from_guard(retune_json: Path, after_golden: dict[str, float]) -> tuple[dict, set[str]]:
    """(BEFORE's times, the changed cases): the guard's old times for the cases it changed and AFTER's golden for
    the others (TOT old is known only where the guard measured it)."""
    kept = json.loads(retune_json.read_text())["kept"]
    guard = {c["case"]: c for k in kept for c in k["cases"]}
    golden = {k: guard[k]["golden_old"] if k in guard else t for k, t in after_golden.items()}
    tot = {k: c["tot_old"] for k, c in guard.items() if c["tot_old"] is not None}
    return {("before", "golden"): golden, ("before", "tot"): tot}, set(guard)


def report(after_dir: Path, rule: Rule, before_dir: Path | None = None, retune_json: Path | None = None) -> str:
    after = {s: times(after_dir, s) for s in STACKS}
    runs = {("after", s): after[s][0] for s in STACKS}
    if before_dir is not None:
        before = {s: times(before_dir, s) for s in STACKS}
        runs.update({("before", s): before[s][0] for s in STACKS})
        changed = {k for k, c in after["tot"][1].items() if c != before["tot"][1].get(k)}
    else:
        old, changed = from_guard(retune_json, runs[("after", "golden")])
        runs.update(old)
    v = {name: verdicts(runs, pair, rule) for name, pair in PAIRS.items()}
    if before_dir is None:  # TOT old only for the changed cases: 'before' is what the guard saw there
        v["before"] = {k: x for k, x in v["before"].items() if k in changed}
    kernels = sorted({k.split("/")[0] for k in runs[("after", "golden")]})
    lines = [LEGEND, "", "| kernel | cases | configs changed | " + " | ".join(PAIRS) + " |"]
    lines.append("|---|---:|---:|" + "---:|" * len(PAIRS))
    for kern in [*kernels, None]:
        keys = [k for k in runs[("after", "golden")] if kern is None or k.startswith(kern + "/")]
        counts = [sum(v[n].get(k) == "regression" for k in keys) for n in PAIRS]
        name = kern or "**all**"
        lines.append(f"| {name} | {len(keys)} | {len(changed & set(keys))} | " + " | ".join(map(str, counts)) + " |")
    if before_dir is None:
        lines += ["", "(before: over the changed cases only, as the guard measured them)"]
    up, was = v["upgraded"], v["before"]
    new = sorted(k for k, x in up.items() if x == "regression" and k in was and was[k] != "regression")
    lines += ["", f"New regressions against golden's old time: {len(new)}"]
    for k in new:
        g, t0, t1 = runs[("before", "golden")][k], runs[("before", "tot")][k], runs[("after", "tot")][k]
        why = "config changed by the retune" if k in changed else "config unchanged: run-to-run noise"
        lines.append(f"- {k}: golden {g:.2f} µs, TOT {t0:.2f} → {t1:.2f} µs ({why})")
    slow = sorted(k for k, x in v["golden user"].items() if x == "regression")
    lines += ["", f"Golden slower with the new files: {len(slow)}"]
    lines += [f"- {k} ({'config changed' if k in changed else 'config unchanged'})" for k in slow]
    left = sorted(k for k, x in up.items() if x == "regression")
    lines += ["", f"Regressions left against golden's old time: {len(left)}"]
    for k in left:
        g, t1 = runs[("before", "golden")][k], runs[("after", "tot")][k]
        lines.append(f"- {k}: {g:.2f} → {t1:.2f} µs ({(t1 / g - 1) * 100:+.1f} %)" + (" *" if k in changed else ""))
    return "\n".join(lines) + "\n\n(* the retune changed this case's config)\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("after", type=Path)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--before", type=Path, help="golden.csv and tot.csv with the shipped configs, same GPU")
    src.add_argument("--retune", type=Path, help="the retune's retune.json (its guard's old times)")
    ap.add_argument("--markdown", type=Path)
    a = ap.parse_args(argv)
    text = report(a.after, Rule(), a.before, a.retune)
    print(text, end="")
    if a.markdown:
        a.markdown.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

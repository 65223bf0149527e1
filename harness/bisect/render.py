"""The bisection's outputs: bisect.md (culprits, steps with their git ranges and explanations, the per-release
time series), culprits.csv (one row per case), series.csv (one row per measurement), timeline.png and
bisect.json. Written atomically; nothing here measures."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pandas as pd

from harness.bisect.model import Outcome, Plan
from harness.bisect.search import STATES, Measurement, Reading, lean
from harness.compare.store import write_csv
from harness.fsutil import write_bytes, write_text
from harness.render.mdtable import md_table
from harness.results.cells import number
from harness.results.schema import sidecar_path

MARK = {"good": "✓", "bad": "✗", "noisy": "~", "failed": "!", "skipped": "–"}
COLORS = {"good": "#2ca02c", "bad": "#d62728", "noisy": "#ff7f0e", "failed": "#8c1c13", "skipped": "#aec7e8"}


def sidecar_gpu(plan: Plan) -> str:
    """The GPU (and host) round 1 ran on, from golden's sidecar."""
    import json

    p = sidecar_path(plan.out / "runs" / "round-1" / "golden.csv")
    try:
        meta = json.loads(p.read_text())
    except (OSError, ValueError):
        return ""
    gpu = (meta.get("gpu") or {}).get("name") or meta.get("backend") or ""
    return f"{gpu} ({meta.get('host', '')})".strip()


def delta_pct(m: Measurement) -> float | None:
    if m.golden_us is None or m.release_us is None or not m.golden_us:
        return None
    return 100.0 * (m.release_us / m.golden_us - 1.0)


def _pct(v: float | None) -> str:
    return "" if v is None else f"{v:+.1f} %"


def _last(res: Outcome, key: str, stack: str) -> Measurement | None:
    ms = res.measurements.get((key, stack))
    return ms[-1][1] if ms else None


def golden_us(res: Outcome, key: str) -> float | None:
    """The case's golden time in round 1 (beside the first release)."""
    ms = res.measurements.get((key, res.plan.stacks[1].key))
    return ms[0][1].golden_us if ms else None


# --------------------------------------------------------------------------------------------- tables


def series_frame(res: Outcome) -> pd.DataFrame:
    """One row per measurement of a (case, release), oldest first; round 0 is the comparison's TOT."""
    rule = res.plan.cmp.rule
    rows = []
    for c in res.plan.cases:
        for s in res.plan.stacks[1:]:
            pair = (c.key, s.key)
            for (rnd, m), r in zip(res.measurements.get(pair, []), res.readings.get(pair, [])):
                rows.append({
                    "kernel": c.name, "case_id": c.case_id, "stack": s.label, "triton": s.version, "round": rnd,
                    "golden_us": m.golden_us, "release_us": m.release_us, "delta_pct": delta_pct(m),
                    "limit_us": None if m.golden_us is None else float(rule.limit_us(m.golden_us)),
                    "golden_status": m.golden_status, "release_status": m.release_status,
                    "golden_reps_us": json.dumps(m.golden_reps), "release_reps_us": json.dumps(m.release_reps),
                    "reading": r.kind, "clean": r.clean, "why": r.why or m.error, "state": res.states[pair],
                })  # fmt: skip
    return pd.DataFrame(rows)


def culprits_frame(res: Outcome) -> pd.DataFrame:
    """One row per case: the comparison's verdict, the history, the culprit step and its git range, and per
    stack the state and the last Δ vs golden."""
    plan = res.plan
    git = {(e["good"].label, e["bad"].label): e["git"] for e in res.steps} if res.steps else {}
    rows = []
    for rec, c in zip(plan.targets.to_dict("records"), plan.cases):
        h = res.histories[c.key]
        cul = h.culprit
        g = git.get((cul.good, cul.bad), {}) if cul else {}
        row = {
            "kernel": c.name, "case_id": c.case_id, "verdict": rec.get("verdict"),
            "compare_delta_pct": rec.get("delta_pct"), "history": h.kind,
            "culprit": cul.text() if cul else "", "last_good": cul.good if cul else "", "first_bad": cul.bad if cul else "",
            "git_range": g.get("range", ""), "compare_url": g.get("compare_url", ""), "summary": h.text,
        }  # fmt: skip
        row[f"us {plan.stacks[0].label}"] = golden_us(res, c.key)
        for s in plan.stacks[1:]:
            m = _last(res, c.key, s.key)
            row[f"state {s.label}"] = res.states.get((c.key, s.key), "")
            row[f"delta_pct {s.label}"] = delta_pct(m) if m else None
        rows.append(row)
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------- markdown


def _rel(path: Path, base: Path) -> str:
    return os.path.relpath(path, base).replace(os.sep, "/")


def markdown(res: Outcome, drawn: bool = True) -> str:
    """bisect.md; ``drawn``: timeline.png was drawn (matplotlib installed), else the page says why it is not."""
    plan = res.plan
    out: list[str] = ["# Which Triton release made each case slower", ""]
    out += _intro(res)
    out += ["", "## Culprits", ""]
    rows = []
    for rec, c in zip(plan.targets.to_dict("records"), plan.cases):
        h = res.histories[c.key]
        rows.append([f"`{c.key}`", _pct(number(rec.get("delta_pct"))), h.culprit.text() if h.culprit else "—", h.text])
    out += md_table(["case", "TOT vs golden (comparison)", "culprit", "history"], rows, {1})
    out += ["", _tally(res)]
    out += ["", "## Steps", ""]
    out += _steps(res) or ["No case got slower at any release measured."]
    out += ["", "## Time series", ""]
    out += _series(res, drawn)
    noisy = _noisy(res)
    if noisy:
        out += ["", "## Measured again", "", "Pairs that were noisy after a measurement (the reps' ranges straddle the "
                "rule's limit, or a side was unstable) and were measured again, each measurement's Δ vs its golden:",
                ""] + noisy  # fmt: skip
    return "\n".join(out) + "\n"


def _n(n: int, word: str) -> str:
    return f"{n} {word}{'s' * (n != 1)}"


def _intro(res: Outcome) -> list[str]:
    plan = res.plan
    golden, tot = plan.stacks[0], plan.stacks[-1]
    how = "measured again" if tot.spec is not None else "its verdicts taken from the comparison, not measured again"
    rule = plan.cmp.rule
    total = sum(r["seconds"] for r in res.rounds)
    rounds = "; ".join(
        f"round {r['round']}: {_n(r['cases'], 'case')} × {len(r['stacks'])} stacks, {r['seconds']:.0f} s"
        for r in res.rounds
    )
    gpu = sidecar_gpu(plan)
    return [
        f"Comparison `{plan.compare_csv}` (golden Triton {golden.version} vs TOT {tot.version}): {len(plan.cases)} "
        f"cases bisected, from suite `{plan.suite}`.",
        "",
        "Stacks, in order: " + " · ".join(s.label for s in plan.stacks) + f" (TOT {how}).",
        "",
        f"Every case is timed under golden and each release in one run with their reps interleaved "
        f"({plan.opts.reps} reps, the 5 % stability rule), and each release is judged against the golden of that "
        f"run by the comparison's rule ({rule.describe()}). **good**: not slower; **bad**: slower (a failure under "
        "the release counts as bad); **noisy**: the reps' ranges straddle the rule's limit or a side was unstable, "
        f"so it is measured again (up to {plan.remeasure} more times) and decided by its last two measurements "
        "agreeing, one of them clean; still noisy after that, it is reported as noisy.",
        "",
        f"Measured on {gpu or 'this machine'}: {rounds}; {total:.0f} s in all.",
        *(["", *(f"- **Warning**: {w}" for w in plan.warnings)] if plan.warnings else []),
    ]


def _tally(res: Outcome) -> str:
    by: dict[str, int] = {}
    for h in res.histories.values():
        k = h.culprit.text() if h.culprit and h.kind == "step" else h.kind
        by[k] = by.get(k, 0) + 1
    ranked = sorted(by.items(), key=lambda kv: -kv[1])
    return "Cases per culprit: " + "; ".join(f"{k}: {n}" for k, n in ranked) + "."


def _steps(res: Outcome) -> list[str]:
    out: list[str] = []
    for e in res.steps:
        g, b, git = e["good"], e["bad"], e["git"]
        n, k = len(e["cases"]), len(e["culprit_of"])
        out += [f"### {g.label} → {b.label}", "",
                f"{_n(n, 'case')} got slower here; {k} of {n} stayed slower up to TOT (this step is their culprit).",
                ""]  # fmt: skip
        if git.get("range"):
            out += [
                f"Triton git range `{git['range']}` ([compare view]({git['compare_url']}); release branches "
                f"{git['branches']}). With a source build:",
                "",
                f"    {git['log']}",
                f"    {git['bisect']}",
                "",
            ]
        else:
            out += [f"No git range: {git.get('note', '')}.", ""]
        if e.get("explain"):
            index = Path(e["explain"])
            out += [f"Compiled kernels before and after: [explain]({_rel(index, res.plan.out)}) "
                    f"([html]({_rel(index.with_suffix('.html'), res.plan.out)})); "
                    f"results: `{_rel(e['folder'] / 'compare.csv', res.plan.out)}`.", ""]  # fmt: skip
        elif e.get("explain_problem"):
            out += [f"Compiled kernels: {e['explain_problem']}.", ""]
        out += ["Cases: " + ", ".join(f"`{k}`" for k in e["cases"]), ""]
    return out


def _series(res: Outcome, drawn: bool = True) -> list[str]:
    plan = res.plan
    head = ["case", f"{plan.stacks[0].label}, µs", *(s.label for s in plan.stacks[1:])]
    rows = []
    for c in plan.cases:
        g = golden_us(res, c.key)
        row = [f"`{c.key}`", f"{g:.2f}" if g else ""]
        for s in plan.stacks[1:]:
            st = res.states.get((c.key, s.key), "")
            m = _last(res, c.key, s.key)
            n = len(res.measurements.get((c.key, s.key), []))
            row.append(f"{MARK.get(st, '?')} {_pct(delta_pct(m)) if m else ''}".strip() + (f" ({n}×)" if n > 1 else ""))
        rows.append(row)
    legend = ("Δ vs the golden of the same run, last measurement: ✓ good, ✗ bad, ~ noisy, ! failed, – skipped; (n×): "
              "measured n times. `series.csv` has every measurement, `culprits.csv` one row per case.")  # fmt: skip
    return [
        legend,
        "",
        *md_table(head, rows, set(range(1, len(head)))),
        "",
        "![Δ vs golden per release](timeline.png)" if drawn else "(No timeline.png: matplotlib is not installed.)",
    ]


def _noisy(res: Outcome) -> list[str]:
    rows = []
    for c in res.plan.cases:
        for s in res.plan.stacks[1:]:
            ms = res.measurements.get((c.key, s.key), [])
            if len(ms) < 2:
                continue
            rs: list[Reading] = res.readings[(c.key, s.key)]
            seen = ", ".join(
                f"{_pct(delta_pct(m))} {MARK.get(r.kind, r.kind)}{'' if r.clean else ' (straddles)'}"
                for (_, m), r in zip(ms, rs)
            )
            st = res.states[(c.key, s.key)]
            rows.append([f"`{c.key}`", s.label, seen, st + (f" ({lean(rs)})" if st == "noisy" else "")])
    return md_table(["case", "release", "measurements", "state"], rows) if rows else []


# -------------------------------------------------------------------------------------------------- plot


def plot(res: Outcome) -> bytes:
    """Δ vs golden per release, one line per case coloured by its culprit step; the marker is the state."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plan = res.plan
    labels = [s.label for s in plan.stacks]
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(labels)), 4.8))
    groups = sorted({(h.culprit.text() if h.culprit else h.kind) for h in res.histories.values()})
    cmap = plt.get_cmap("tab10")
    color = {g: cmap(i % 10) for i, g in enumerate(groups)}
    shown: set[str] = set()
    for c in plan.cases:
        h = res.histories[c.key]
        group = h.culprit.text() if h.culprit else h.kind
        ys = [0.0] + [(delta_pct(m) if (m := _last(res, c.key, s.key)) else None) for s in plan.stacks[1:]]
        xs = [i for i, y in enumerate(ys) if y is not None]
        ax.plot(xs, [ys[i] for i in xs], color=color[group], alpha=0.6, lw=1,
                label=None if group in shown else f"culprit {group}" if h.culprit else group)  # fmt: skip
        shown.add(group)
        for i, s in enumerate(plan.stacks[1:], start=1):
            st = res.states.get((c.key, s.key))
            if ys[i] is not None and st:
                noisy = st == "noisy"  # drawn larger and on top: the points a reader must not miss
                ax.scatter([i], [ys[i]], color=COLORS[st], marker={"bad": "X", "noisy": "D"}.get(st, "o"),
                           s=60 if noisy else 28, zorder=4 if noisy else 3,
                           edgecolors="black" if noisy else "none")  # fmt: skip
    ax.axhline(0, color="#7f7f7f", lw=0.8)
    rule = plan.cmp.rule
    ax.axhline(100 * (rule.rel - 1), color="#d62728", lw=0.8, ls="--",
               label=f"rule: +{100 * (rule.rel - 1):g} % (+{rule.abs_us:g} µs)")  # fmt: skip
    ax.set_xticks(range(len(labels)), labels, rotation=15)
    ax.set_ylabel("Δ vs golden of the same run, %")
    ax.set_title("Each case against golden, release by release (✕ bad, ◆ noisy, ● good)")
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()


# ---------------------------------------------------------------------------------------------- all files


def summary(res: Outcome) -> dict[str, Any]:
    plan = res.plan
    return {
        "compare": str(plan.compare_csv),
        "suite": str(plan.suite),
        "rule": plan.cmp.rule.describe(),
        "gpu": sidecar_gpu(plan),
        "stacks": [
            {
                "label": s.label,
                "role": s.role,
                "triton": s.version,
                "path": s.path,
                "spec": str(s.spec.path) if s.spec else None,
            }
            for s in plan.stacks
        ],  # fmt: skip
        "rounds": res.rounds,
        "measured_s": round(sum(r["seconds"] for r in res.rounds), 1),
        "states": {st: sum(1 for v in res.states.values() if v == st) for st in STATES},
        "cases": {
            k: {"history": h.kind, "culprit": h.culprit.text() if h.culprit else None, "text": h.text}
            for k, h in res.histories.items()
        },
        "steps": [
            {
                "good": e["good"].label,
                "bad": e["bad"].label,
                "cases": e["cases"],
                "git": e["git"],
                "explain": str(e["explain"]) if e.get("explain") else None,
            }
            for e in res.steps
        ],  # fmt: skip
    }


def write_outputs(res: Outcome) -> Path:
    """bisect.md, culprits.csv, series.csv, timeline.png and bisect.json in the bisection's folder."""
    out = res.plan.out
    drawn = can_plot()
    write_csv(culprits_frame(res), out / "culprits.csv")
    write_csv(series_frame(res), out / "series.csv")
    write_text(out / "bisect.json", json.dumps(summary(res), indent=2, default=str) + "\n")
    md = write_text(out / "bisect.md", markdown(res, drawn))
    if drawn:  # last: the measurements' files are written whatever happens to the plot
        write_bytes(out / "timeline.png", plot(res))
    return md


def can_plot() -> bool:
    """matplotlib (an optional dependency, not on a GPU node's driver install) is importable."""
    import importlib.util

    return importlib.util.find_spec("matplotlib") is not None


__all__ = ["markdown", "plot", "culprits_frame", "series_frame", "write_outputs"]

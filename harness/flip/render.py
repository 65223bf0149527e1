"""flip.md and flip.json: per regressed case, TOT in this run and each knob's variant against golden; which knob
flips it, or that none does."""

from __future__ import annotations

from typing import Any

from harness.flip.model import Flip


def flipped_by(fl: Flip, key: str) -> list[str]:
    """The knobs that bring the case confidently within the rule, in the order tried; none where TOT did not
    regress again in this run (there was nothing to flip)."""
    if fl.results[key]["tot"]["verdict"] != "regression":
        return []
    return [label for label, r in fl.results[key]["knobs"].items() if r["state"] == "flips"]


def verdict_line(fl: Flip, key: str) -> str:
    """One line per case for the terminal and the index."""
    r = fl.results[key]
    tot = r["tot"]
    if tot["verdict"] != "regression":
        return (f"{key}: TOT is {tot['verdict'] or 'not measured'} against golden in this run "
                f"({_pct(tot['delta_pct'])}): no regression here, nothing to flip")  # fmt: skip
    by = flipped_by(fl, key)
    if by:
        return f"{key}: TOT {_pct(tot['delta_pct'])}; flipped by " + ", ".join(
            f"{label} ({_pct(r['knobs'][label]['delta_pct'])})" for label in by
        )
    unsure = [label for label, k in r["knobs"].items() if k["state"] == "flips, not confirmed"]
    tail = f" (within the rule but not confirmed: {', '.join(unsure)})" if unsure else ""
    return f"{key}: TOT {_pct(tot['delta_pct'])}; no single knob flips it{tail}"


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{v:+.2f} %"


def summary(fl: Flip) -> dict[str, Any]:
    return {
        "comparison": str(fl.compare_csv),
        "golden": fl.golden.name,
        "tot": fl.tot.name,
        "rule": fl.rule.record(),
        "knobs": [{"name": k.name, "value": k.value, "what": k.what} for k in fl.knobs],
        "seconds": round(fl.seconds, 1),
        "cases": {key: {**r, "flipped_by": flipped_by(fl, key)} for key, r in fl.results.items()},
    }


def markdown(fl: Flip) -> str:
    labels = [k.label for k in fl.knobs]
    lines = [
        "# Which knob flips each regression",
        "",
        f"Golden `{fl.golden.name}`, TOT `{fl.tot.name}`, and TOT with one knob changed at a time, interleaved in "
        f"one run ({fl.seconds:.0f} s), each judged against golden by the comparison's rule with the run's "
        "confirmed verdicts. Δ % against golden; a knob **flips** a case when TOT with it is confidently within "
        "the rule.",
        "",
        "| knob | value | what it does |",
        "|---|---|---|",
        *(f"| `{k.name}` | `{k.value}` | {k.what} |" for k in fl.knobs),
        "",
        "| case | TOT here | " + " | ".join(f"`{lb}`" for lb in labels) + " |",
        "|---|---:|" + "---:|" * len(labels),
    ]
    for key, r in fl.results.items():
        cells = [_cell(r["knobs"][lb]) for lb in labels]
        lines.append(f"| {key} | {_pct(r['tot']['delta_pct'])} {r['tot']['verdict']} | " + " | ".join(cells) + " |")
    lines += ["", *(f"- {verdict_line(fl, key)}" for key in fl.results), ""]
    flips = sum(1 for key in fl.results if flipped_by(fl, key))
    lines.append(f"{flips} of {len(fl.results)} cases flipped by a single knob.")
    return "\n".join(lines) + "\n"


def _cell(k: dict[str, Any]) -> str:
    mark = {"flips": "**flips**", "flips, not confirmed": "flips?", "still slower": "", "fails": "fails"}
    state = mark.get(k["state"], k["state"])
    return f"{_pct(k['delta_pct'])} {state}".strip()

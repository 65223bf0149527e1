"""How each verdict looks, everywhere it is shown (terminal, PR markdown, spreadsheet, HTML report), how a
case is named and what the two stacks are called: one copy, so the four never disagree."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.errors import counted

#: the first line of compare's markdown: how a sticky PR comment, and compare's --markdown check, know their own
MARKDOWN_MARKER = "<!-- harness:perf-compare -->"


@dataclass(frozen=True)
class Look:
    #: rich style in the terminal ('' = plain)
    style: str
    #: the column heading of the per-kernel count tables (short words: twelve columns fit 80)
    short: str
    #: marker colour in plots (strong), and row fill in the spreadsheet (light); '' = none
    color: str
    fill: str


LOOKS: dict[str, Look] = {
    "regression": Look("bold red", "regr", "#d62728", "#f4c7c3"),
    "failed_in_tot": Look("bold red", "TOT fail", "#8c1c13", "#ea9999"),
    "missing_in_tot": Look("yellow", "miss", "#ff7f0e", "#fce8b2"),
    # skips are not failures: a lighter amber for a case TOT no longer supports, a pale blue-grey elsewhere
    "skipped_in_tot": Look("yellow", "TOT skip", "#ffbb78", "#fef2cc"),
    "improvement": Look("green", "impr", "#2ca02c", "#b7e1cd"),
    "ok": Look("", "ok", "#7f7f7f", ""),
    "ignored": Look("dim", "ign", "#c7c7c7", ""),
    "new_in_tot": Look("cyan", "new", "#17becf", ""),
    "failed_in_golden": Look("magenta", "gold fail", "#9467bd", "#d9d9d9"),
    "failed_in_both": Look("magenta", "both fail", "#9467bd", "#d9d9d9"),
    "skipped_in_golden": Look("dim", "gold skip", "#aec7e8", "#e5eaf2"),
    "skipped_in_both": Look("dim", "both skip", "#aec7e8", "#e5eaf2"),
}


def regressions(n: int, ambiguous: int = 0) -> str:
    """``3 regressions (1 ambiguous)``: the count the headlines give, with how many of them are not sure."""
    return f"{counted(n, 'regression')} ({ambiguous} ambiguous)" if ambiguous else counted(n, "regression")


def case_label(kernel: str, case_id: str) -> str:
    """``kernel/case_id``: how a case is named in lists, filters (--filter, --case) and logs."""
    return f"{kernel}/{case_id}"


def rgb(hex_color: str) -> tuple[float, float, float]:
    """``#f4c7c3`` -> (0.957, 0.780, 0.765)."""
    h = hex_color.lstrip("#")
    return tuple(round(int(h[i : i + 2], 16) / 255, 3) for i in (0, 2, 4))  # type: ignore[return-value]


#: what the two sides of a comparison are called when it names them as usual (env specs ``golden`` and ``tot``)
STACKS = ("golden", "TOT")


def stack_labels(golden_env: Mapping[str, Any] | None, tot_env: Mapping[str, Any] | None) -> tuple[str, str]:
    """What to call the two sides of a comparison: the env names its results recorded (``env_name`` of each
    side's environment, e.g. ``main`` and ``pr`` for two checkouts of a kernel library under one Triton), or
    ``golden`` / ``TOT`` where those are the names, where a name is missing, or where both are the same."""
    names = [
        str(env.get("env_name") or "").strip() if isinstance(env, Mapping) else "" for env in (golden_env, tot_env)
    ]
    if not all(names) or names[0].lower() == names[1].lower():
        return STACKS
    usual = {"golden": STACKS[0], "tot": STACKS[1]}
    return usual.get(names[0].lower(), names[0]), usual.get(names[1].lower(), names[1])


def unknown_line(n: int) -> str:
    """What the verdicts without an interval are: the rule's verdict, with nothing to say how sure it is."""
    return f"{counted(n, 'verdict')} without an interval: under 2 readable reps a stack (unknown)"

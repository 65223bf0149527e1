"""The bisection's data: the Triton stacks it measures, the plan (what is bisected against what, where) and the
outcome (every reading and decision). Data only, apart from the orchestrator (bisect.py) that fills it and the
renderer (render.py) that writes it out, so neither imports the other."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from harness.bisect.search import Measurement, Reading
from harness.compare.compare import Comparison
from harness.envs.spec import EnvSpec
from harness.inputs.suite import Case
from harness.run.options import RunOptions


@dataclass
class Stack:
    """One Triton stack of the bisection. ``spec`` None: TOT's verdicts are the comparison's (not measured)."""

    key: str  # file stem in runs/round-N/
    role: str  # golden | release | tot
    spec: EnvSpec | None
    version: str = ""  # the Triton its worker imports
    path: str = ""
    commit: str | None = None
    asked: str = ""  # the release named on the command line, if any

    @property
    def label(self) -> str:
        return {"golden": f"{self.version} (golden)", "tot": f"{self.version} (TOT)"}.get(self.role, self.version)


@dataclass
class Plan:
    compare_csv: Path
    cmp: Comparison
    targets: pd.DataFrame  # the comparison's rows of the cases bisected, worst first
    cases: list[Case]
    suite: Path
    stacks: list[Stack]
    out: Path
    opts: RunOptions
    remeasure: int = 2
    #: what the bisection measures differently from the comparison (results/identity.BISECT): the terminal and the
    #: report say each
    warnings: list[str] = field(default_factory=list)
    #: the (facet, field) pairs a warning was said for: the code before round 1, then its golden run, say each once
    said: set[tuple[str, str]] = field(default_factory=set)

    @property
    def measured(self) -> list[Stack]:
        return [s for s in self.stacks if s.spec is not None]


@dataclass
class Outcome:
    """Everything measured and decided: readings[(case key, stack key)] oldest first, states, histories."""

    plan: Plan
    readings: dict[tuple[str, str], list[Reading]] = field(default_factory=dict)
    measurements: dict[tuple[str, str], list[tuple[int, Measurement]]] = field(default_factory=dict)
    states: dict[tuple[str, str], str] = field(default_factory=dict)
    histories: dict[str, Any] = field(default_factory=dict)
    rounds: list[dict[str, Any]] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)


def key_of(kernel: str, case_id: str) -> str:
    return f"{kernel}/{case_id}"

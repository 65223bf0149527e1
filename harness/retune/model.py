"""`harness retune`'s records: its options, the slots (the cases one bucket of one shape serves, and what became
of them) and the changes it kept."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.retune import inputs as I
from harness.retune.guard import Decision
from harness.retune.search import SlotSearch
from harness.run.options import RunOptions

#: the share of the budget the search may spend; the golden check and the guard get the rest
SEARCH_SHARE = 0.6


@dataclass
class Options:
    compare: Path
    tot_env: str
    golden_env: str
    out: Path
    kernels: list[str] = field(default_factory=list)
    budget_min: float = 30.0
    dry_run: bool = False
    run: RunOptions = field(default_factory=RunOptions)
    hints: list[Path] = field(default_factory=list)
    search_min: float | None = None  # default: SEARCH_SHARE of budget_min

    @property
    def search_budget(self) -> float:
        return self.budget_min * SEARCH_SHARE if self.search_min is None else self.search_min


def diff_text(old: dict[str, Any], new: dict[str, Any]) -> str:
    """``BLOCK_SIZE_K 64→128, num_warps 4→8``: what a config change changes."""
    keys = list(dict.fromkeys([*old, *new]))
    parts = [f"{k} {old.get(k, '—')}→{new.get(k, '—')}" for k in keys if old.get(k, "—") != new.get(k, "—")]
    return ", ".join(parts) or "no change"


@dataclass
class Slot:
    """The cases of COMPARE one bucket of one shape serves, and what became of them."""

    family: str
    key: str
    file: str
    bucket: str
    cases: list[I.CaseInfo]
    search: SlotSearch | None = None
    candidates: list[dict[str, Any]] = field(default_factory=list)
    outcome: str = ""  # kept | rejected | fixed elsewhere
    why: str = ""

    @property
    def name(self) -> str:
        return f"{self.file}:{self.bucket}" + (f" ({self.key})" if self.key and self.key not in self.file else "")

    @property
    def targets(self) -> list[I.CaseInfo]:
        return [c for c in self.cases if c.target]

    @property
    def searched(self) -> list[I.CaseInfo]:
        """The cases the search times: the targets and every case TOT timed in COMPARE."""
        return [c for c in self.cases if c.target or c.tot_timed]

    @property
    def by_key(self) -> dict[str, I.CaseInfo]:
        return {c.key: c for c in self.cases}

    @property
    def severity(self) -> float:
        return max((c.severity for c in self.targets), default=0.0)

    @property
    def seed(self) -> dict[str, Any]:
        return self.cases[0].where.config


@dataclass
class Change:
    """A kept change: where it went and the guard's measurements of every case it changed."""

    slot: str
    kind: str
    file: str
    bucket: str
    old: dict[str, Any]
    new: dict[str, Any]
    decision: Decision

"""Measure again until decided (Chromium Pinpoint's way): after the stability rule, the cases whose verdict a
referee calls undecided get more reps, interleaved across the envs on the same GPU, until the referee decides
each or the budget is spent. Pure: the policy and the arithmetic of targets and rows; the runner
(:mod:`harness.run.runner`) and the interleaving driver (:mod:`harness.run.interleave`) do the measuring.

The run stage does not know the rule: the referee is a callable the caller injects (``harness run`` builds one
from :mod:`harness.verdict.referee`), given a case's results row under each env (golden first), answering
whether the comparison is decided. Nothing measured is discarded: extra reps are appended to the case's reps
(and journaled like any other), and a re-measured case's time is the mean of all its reps, the estimator the
confidence interval is built around (docs/verdicts.md).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.verdict import groupcheck
from harness.verdict.defaults import EXTRA_REPS, SHARE

if TYPE_CHECKING:
    from harness.verdict.rule import Rule

#: the key a run yields when it waits for the referee (case keys are never empty)
CHECKPOINT = ""
#: the undecided cases (key → its results row under each env of the run, golden first) → the keys now decided;
#: all at once, so that a referee can judge each case beside its kernel's others, as compare does
Referee = Callable[[Mapping[str, list[dict[str, Any]]]], set[str]]


@dataclass(frozen=True)
class Budget:
    """How much re-measurement a run may spend. ``extra_reps``: at most this many reps per case beyond the
    stability rule's; ``step``: reps added per pass (even, so each env goes first as often: A B, B A);
    ``share``: the passes stop once they took this share of the wall time the run had taken before them."""

    extra_reps: int = EXTRA_REPS
    step: int = 2
    share: float = SHARE

    def __post_init__(self) -> None:
        if self.extra_reps < 0 or self.step < 1 or self.share < 0:
            raise ValueError(f"a re-measurement budget needs extra_reps >= 0, step >= 1, share >= 0: {self}")


@dataclass(frozen=True)
class Remeasure:
    """What a run re-measures with: the referee and the budget (a field of RunOptions; None: no re-measuring).
    ``rule``: what the referee judges by, as its maker describes it (``{"rel": …, "abs_us": …}``): written to each
    sidecar's ``remeasure.rule`` as given, never read here, so that a later comparison under another rule can say
    the run measured against another limit."""

    referee: Referee
    budget: Budget = Budget()
    rule: dict[str, Any] | None = None


def remeasure_policy(on: bool, extra_reps: int, share: float, rule: Rule | None = None) -> Remeasure | None:
    """The re-measuring policy of an interleaved run: ``rule`` (default AITER's) referees, and is recorded in each
    sidecar's ``remeasure.rule`` (the run stage never reads it), so that compare can tell a run re-measured against
    another limit than its own."""
    if not on:
        return None

    from harness.verdict.referee import rule_referee
    from harness.verdict.rule import Rule

    rule = rule or Rule()
    return Remeasure(rule_referee(rule), Budget(extra_reps=extra_reps, share=share), rule=rule.record())


def next_targets(
    undecided: dict[str, int],
    budget: Budget,
    spent_s: float,
    before_s: float,
    confirming: bool = False,
    step: int | None = None,
) -> tuple[dict[str, int], str]:
    """How many reps each undecided case gets in the next pass, and why re-measuring stops when it does ('' while
    it goes on). ``undecided``: key → extra reps it has had so far; ``spent_s``: wall time of the passes so far;
    ``before_s``: the run's wall time before them. ``confirming``: the first pass of a run whose passes confirm
    its flags in fresh processes: part of the method, never cut for time (a flag not measured again is no
    verdict). ``step``: reps a case a pass in place of the budget's (a pass in fresh processes takes one)."""
    if not undecided:
        return {}, "decided"
    if spent_s >= budget.share * before_s and not confirming:
        return {}, "time"
    more = {key: min(step or budget.step, budget.extra_reps - had) for key, had in undecided.items()}
    more = {key: n for key, n in more.items() if n > 0}
    return (more, "") if more else ({}, "reps")


@dataclass
class Board:
    """Where the envs of one interleaved run meet between passes: each env posts its held cases (key → results
    row, the extra reps it has had, and whether it can take more: a failed extra rep ends a case's re-measuring);
    the driver posts how many more reps each undecided case gets."""

    envs: int
    held: list[dict[str, tuple[dict[str, Any], int, bool]]] = field(default_factory=list)
    more: dict[str, int] = field(default_factory=dict)
    #: cases the referee decided: their rows no longer change, it is not asked again
    decided: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.held = [{} for _ in range(self.envs)]

    def undecided(self, referee: Referee) -> dict[str, int]:
        """Cases held under every env, open under every env, that the referee does not decide or that the
        multi-GPU guard refused under some env → the most extra reps any env has had of them. A case held under some envs only (it failed elsewhere) has nothing to
        decide. The referee sees every case held under every env, decided ones too (a case is judged beside its
        kernel's others, as compare judges it), and a case it once decided stays decided."""
        common = sorted(set.intersection(*(set(h) for h in self.held))) if self.held else []
        open_ = [key for key in common if key not in self.decided and all(h[key][2] for h in self.held)]
        if open_:
            self.decided |= set(referee({key: [h[key][0] for h in self.held] for key in common})) & set(open_)
            # a time the multi-GPU guard refused has no verdict to decide, yet other worker groups may give one
            self.decided -= {key for key in open_ if any(groupcheck.refused(h[key][0]) for h in self.held)}
        return {key: max(h[key][1] for h in self.held) for key in open_ if key not in self.decided}


def pooled_time(reps: list[float]) -> float:
    """A re-measured case's time: the mean of every rep (never outside them through rounding)."""
    return min(max(statistics.fmean(reps), min(reps)), max(reps))

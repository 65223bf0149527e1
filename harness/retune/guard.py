"""The guard: whether a config change may be kept, from the times of every case whose config it changes. Pure.

Each such case is measured four ways in one interleaved run: golden with the config users had before the retune
(``golden_old``), TOT with the config of the files as they stand before this change (``tot_old``), and both
stacks with the new config (``golden_new``, ``tot_new``). Every comparison is AITER's rule
(harness.verdict.rule), applied as the compare stage applies it (the floor included: a case golden runs in under
4 µs never counts):

* golden with the new config is not slower than golden with the old (people still on golden lose nothing);
* TOT with the new config is not slower than TOT with the old, does not fail, and is not a regression against
  golden's old time unless it was one already;
* a change is kept only if no case got worse and at least one was *fixed*: a regression (or a TOT failure)
  before, none after, and sure of it: a fix whose TOT time stays ambiguous against golden's old one after
  re-measuring (compare's confidence interval straddles the limit) is ``unsure``, counted neither way, since on
  another GPU of the model it may well be a regression again. A case that was a regression and still is, no
  slower, does not block it: the change fixed others and cost it nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from harness.render.html import plain
from harness.verdict.referee import decided_pairs
from harness.verdict.rule import Rule, verdict_of

#: the guard run's envs in order (retune.measure.ROLES) and the pairs judge() reads, (reference, new)
GUARD_PAIRS = ((0, 2), (1, 3), (0, 1), (0, 3))
#: the pair whose verdict says whether a case is fixed: golden's old time against TOT's new one
FIX_PAIR = (0, 3)


def slower(ref_us: float | None, new_us: float | None, rule: Rule) -> bool:
    """Whether ``new_us`` is slower than ``ref_us`` by the rule (``ref_us`` in golden's place). False where
    either is missing."""
    if ref_us is None or new_us is None:
        return False
    return verdict_of(ref_us, new_us, rule) == "regression"


def pct(ref_us: float, new_us: float) -> str:
    """``+23.0%``: how much slower ``new_us`` is (a change under 0.05 % is ``+0.0%``, never ``-0.0%``)."""
    d = 100.0 * (new_us / ref_us - 1)
    return f"{0.0 if abs(d) < 0.05 else d:+.1f}%"


def us(v: float | None) -> str:
    return "failed" if v is None else f"{plain(v)} µs"


@dataclass(frozen=True)
class Measured:
    """One case of a guard run. A time is None where that measurement failed (its status says how)."""

    kernel: str
    case_id: str
    golden_old: float | None
    tot_old: float | None
    golden_new: float | None
    tot_new: float | None
    status: tuple[str, str, str, str] = ("ok", "ok", "ok", "ok")
    #: the pairs of GUARD_PAIRS still ambiguous after re-measuring (none known: timings cached without their reps)
    unsure: frozenset[tuple[int, int]] = frozenset()

    @property
    def fix_unsure(self) -> bool:
        """Whether TOT's new time against golden's old one is still ambiguous."""
        return FIX_PAIR in self.unsure


@dataclass(frozen=True)
class CaseVerdict:
    """``fixed``, ``unsure`` (fixed by the point estimate, not by the interval), ``still_regressed``, ``ok`` or
    ``worse``, and why (one line)."""

    kind: str
    why: str

    @property
    def worse(self) -> bool:
        return self.kind == "worse"


def judge(m: Measured, rule: Rule) -> CaseVerdict:
    """The guard's verdict on one case."""
    g0, t0, g1, t1 = m.golden_old, m.tot_old, m.golden_new, m.tot_new
    if g0 is not None and g1 is None:
        return CaseVerdict("worse", f"golden fails with the new config ({m.status[2]})")
    if t1 is None:
        return CaseVerdict("worse", f"TOT fails with the new config ({m.status[3]})")
    if slower(g0, g1, rule):
        return CaseVerdict("worse", f"golden slower: {us(g0)} → {us(g1)} ({pct(g0, g1)})")
    if slower(t0, t1, rule):
        return CaseVerdict("worse", f"TOT slower: {us(t0)} → {us(t1)} ({pct(t0, t1)})")
    was = t0 is None or slower(g0, t0, rule)
    now = slower(g0, t1, rule)
    if now and not was:
        return CaseVerdict("worse", f"a new regression: TOT {us(t1)} vs golden {us(g0)} ({pct(g0, t1)})")
    if was and not now:
        before = "failed" if t0 is None else pct(g0, t0) if g0 else us(t0)
        after = pct(g0, t1) if g0 else us(t1)
        if m.fix_unsure:
            return CaseVerdict(
                "unsure", f"TOT vs golden {before} → {after}, but ambiguous at the limit: not a sure fix"
            )
        return CaseVerdict("fixed", f"TOT vs golden {before} → {after}")
    if now:
        return CaseVerdict("still_regressed", f"TOT vs golden {pct(g0, t0)} → {pct(g0, t1)}")
    return CaseVerdict("ok", f"TOT {us(t0)} → {us(t1)}, golden {us(g0)} → {us(g1)}")


@dataclass(frozen=True)
class Decision:
    kept: bool
    why: str
    verdicts: tuple[tuple[Measured, CaseVerdict], ...]


def decide(measured: list[Measured], rule: Rule) -> Decision:
    """Keep the change iff no case got worse and at least one was fixed; ``why`` names the first case that got
    worse, or says that nothing was fixed."""
    verdicts = tuple((m, judge(m, rule)) for m in measured)
    worse = [(m, v) for m, v in verdicts if v.worse]
    if worse:
        m, v = worse[0]
        more = f" (and {len(worse) - 1} more)" if len(worse) > 1 else ""
        return Decision(False, f"{m.kernel} {m.case_id}: {v.why}{more}", verdicts)
    fixed = [m for m, v in verdicts if v.kind == "fixed"]
    if not fixed:
        unsure = sum(v.kind == "unsure" for _, v in verdicts)
        why = f" ({unsure} fixed by the point estimate only: ambiguous at the limit)" if unsure else ""
        return Decision(False, f"fixes nothing in the guard's measurements{why}", verdicts)
    return Decision(True, f"fixes {len(fixed)} of {len(verdicts)} cases it changes, none slower", verdicts)


def guard_referee(rule: Rule) -> Callable[[Mapping[str, list[dict[str, Any]]]], set[str]]:
    """The referee of a guard run (harness.verdict.remeasure): a case is decided when every comparison judge() makes
    of it is (golden old vs new, TOT old vs new, golden old vs TOT old and new), by the rule and the confidence
    interval as compare would see them."""

    def decided(cases: Mapping[str, list[dict[str, Any]]]) -> set[str]:
        done = set(cases)
        for a, b in GUARD_PAIRS:
            done &= decided_pairs({key: (rows[a], rows[b]) for key, rows in cases.items()}, rule)
        return done

    return decided

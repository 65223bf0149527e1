"""Do two comparisons of one suite reach the same verdicts? Two machines, two runner pools, two days: among the
cases both call *confident*, the share with the same verdict, and the opposite flips (a regression in one, an
improvement in the other). A gate whose verdicts flip between machines gets switched off; this is how to tell
before it is. Pure: tables in, an :class:`Agreement` and its lines out.

Only cases run with the same configs in both (golden's and TOT's) are compared unless asked otherwise: a config
file changed between the runs is a reason for another verdict, not a disagreement of the machines.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

KEY = ["kernel", "case_id"]
OPPOSITE = {("regression", "improvement"), ("improvement", "regression")}
CONFIG_COLUMNS = ("golden_config", "tot_config")


@dataclass(frozen=True)
class Differ:
    """A case both comparisons call confident, with other verdicts."""

    kernel: str
    case_id: str
    a_verdict: str
    a_delta_pct: float
    b_verdict: str
    b_delta_pct: float

    @property
    def flip(self) -> bool:
        return (self.a_verdict, self.b_verdict) in OPPOSITE


@dataclass(frozen=True)
class Agreement:
    only_a: int
    only_b: int
    #: cases in both
    both: int
    #: of them, run with other configs in A and B: left out
    other_config: int
    confident: int
    same: int
    differ: tuple[Differ, ...] = field(default_factory=tuple)

    @property
    def flips(self) -> tuple[Differ, ...]:
        return tuple(d for d in self.differ if d.flip)

    @property
    def compared(self) -> int:
        return self.both - self.other_config

    @property
    def share(self) -> float | None:
        """The share of confident-in-both verdicts that agree, %; None where there are none (nothing was compared,
        which is no agreement: never 100 %)."""
        return 100.0 * self.same / self.confident if self.confident else None


def _text(col: pd.Series) -> pd.Series:
    # a missing TOT config means "golden's": compare it as the empty string, not as NaN (NaN != NaN)
    return col.astype(object).where(col.notna(), "").astype(str)


def agreement(a: pd.DataFrame, b: pd.DataFrame, any_config: bool = False) -> Agreement:
    """Case by case agreement of compare tables ``a`` and ``b`` (columns kernel, case_id, verdict, confidence,
    delta_pct, and the config columns unless ``any_config``)."""
    a, b = a.drop_duplicates(KEY).set_index(KEY), b.drop_duplicates(KEY).set_index(KEY)
    both = a.index.intersection(b.index, sort=False)
    only_a, only_b = len(a.index) - len(both), len(b.index) - len(both)
    a, b = a.loc[both], b.loc[both]
    other = pd.Series(False, index=both)
    if not any_config:
        for c in CONFIG_COLUMNS:
            if c in a.columns and c in b.columns:
                other |= _text(a[c]) != _text(b[c])
    keep = ~other.to_numpy()
    a, b = a[keep], b[keep]
    sure = (a["confidence"] == "confident") & (b["confidence"] == "confident")
    same = sure & (a["verdict"] == b["verdict"])
    differ = tuple(
        Differ(
            k[0], k[1], a.at[k, "verdict"], float(a.at[k, "delta_pct"]), b.at[k, "verdict"], float(b.at[k, "delta_pct"])
        )
        for k in a.index[(sure & ~same).to_numpy()]
    )
    return Agreement(only_a, only_b, len(both), int(other.sum()), int(sure.sum()), int(same.sum()), differ)


def lines(ag: Agreement) -> list[str]:
    """What `harness agree` prints under its two header lines: counts, then each disagreement (flips first)."""
    out = [
        f"{ag.both} cases in both ({ag.only_a} only in A, {ag.only_b} only in B); {ag.other_config} of them "
        f"run with other configs, left out",
        f"confident in both: {ag.confident}; the same verdict: {ag.same} "
        + (f"({ag.share:.1f} %)" if ag.share is not None else "(no verdict is confident in both: nothing to agree on)")
        + f"; opposite flips: {len(ag.flips)}",
    ]
    if ag.differ:
        out.append("confident in both, other verdicts (A → B):")
    for d in sorted(ag.differ, key=lambda d: (not d.flip, d.kernel, d.case_id)):
        mark = "  FLIP" if d.flip else ""
        out.append(f"  {d.kernel}/{d.case_id}{mark}")
        out.append(f"    {d.a_verdict} {d.a_delta_pct:+.2f} % → {d.b_verdict} {d.b_delta_pct:+.2f} %")
    return out

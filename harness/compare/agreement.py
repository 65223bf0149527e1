"""Do two comparisons of one suite reach the same verdicts? Two machines, two runner pools, two days: among the
cases both call *confident*, the share with the same verdict, and the opposite flips (a regression in one, an
improvement in the other). A gate whose verdicts flip between machines gets switched off; this is how to tell
before it is. Pure: tables in, an :class:`Agreement` and its lines out; but :func:`agree`, `harness agree`'s work,
which reads the two compare files (store.load_compare) and says its lines through ``echo``.

Only cases run with the same configs in both (golden's and TOT's) are compared unless asked otherwise: a config
file changed between the runs is a reason for another verdict, not a disagreement of the machines.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from harness.errors import HarnessError

if TYPE_CHECKING:
    from harness.compare.compare import Comparison

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


def agree(
    a: Path, b: Path, *, any_config: bool, fail_on_flip: bool, min_agree: float | None, echo: Callable[[str], None]
) -> bool:
    """`harness agree A B`: what each ran, their agreement's lines and what they measured differently, through
    ``echo``; whether a gate failed (an opposite flip with ``fail_on_flip``, a share under ``min_agree`` %).
    Comparisons without a case in common are refused (one line)."""
    ca, cb = _load(a), _load(b)
    echo(f"A  {a}: {label(ca)}")
    echo(f"B  {b}: {label(cb)}")
    ag = agreement(ca.table, cb.table, any_config=any_config)
    if ag.both == 0:
        raise HarnessError(f"{a} and {b} have no case in common: comparisons of other suites, nothing to agree on")
    for line in [*lines(ag), *identity_warnings(ca, cb)]:
        echo(line)
    return bool(fail_on_flip and ag.flips) or (min_agree is not None and (ag.share is None or ag.share < min_agree))


def identity_warnings(ca: Comparison, cb: Comparison) -> list[str]:
    """What the two comparisons measured differently (results/identity.REPEAT), golden's side and TOT's: two GPU
    models or two config arches may be what the user wants to compare, but the agreement then measures more than
    the noise, and each difference is named."""
    from harness.results import identity

    out = []
    for side, (ea, eb) in (("golden", (ca.golden_env, cb.golden_env)), ("TOT", (ca.tot_env, cb.tot_env))):
        for d in identity.differences(ea, eb, identity.REPEAT):
            if d.facet == "gpu_model":
                if side == "TOT":  # said once: one GPU ran both stacks of a comparison
                    out.append(f"warning: A and B ran on other GPU models ({d.shown()}): a verdict can depend on "
                               "the model (docs/verdicts.md)")  # fmt: skip
                continue
            out.append("warning: " + d.text("A's " + side, "B's " + side))
    return out


def _load(path: Path) -> Comparison:
    from harness.compare.store import load_compare

    cmp = load_compare(path)
    if "confidence" not in cmp.table.columns:
        raise HarnessError(f"{path}: no confidence column (an older compare): run `harness compare` on its results")
    return cmp


def label(cmp: Comparison) -> str:
    """``NVIDIA H100 80GB HBM3 aff03334, triton 3.6.0 vs 3.9.0``: what ran, as far as the sidecars say."""
    from harness.results.gpu import gpu_name, gpu_uuid

    gpu = gpu_name(cmp.tot_env) or gpu_name(cmp.golden_env) or "GPU not recorded"
    uuid = gpu_uuid(cmp.tot_env) or gpu_uuid(cmp.golden_env)
    versions = " vs ".join(_triton(env) for env in (cmp.golden_env, cmp.tot_env))
    return f"{gpu}{' ' + uuid[:8] if uuid else ''}, triton {versions}"


def _triton(env: dict[str, Any]) -> str:
    triton = env.get("triton") if isinstance(env.get("triton"), dict) else {}
    return str(triton.get("version") or "?")

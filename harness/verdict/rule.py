"""The golden-vs-TOT regression rule, as data. Pure: numpy in, numpy out, no I/O.

AITER's rule (ROCm/aiter#3283): ignore cases whose golden time is under ``min_golden_us``; otherwise a case
regresses iff ``tot > rel * golden + abs_us``. Improvement is the mirror: ``golden > rel * tot + abs_us``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

from harness.errors import HarnessError
from harness.verdict.defaults import ABS_US, MIN_GOLDEN_US, REL

VERDICTS = (
    "regression",
    "failed_in_tot",
    "missing_in_tot",
    "skipped_in_tot",
    "improvement",
    "ok",
    "ignored",
    "new_in_tot",
    "failed_in_golden",
    "failed_in_both",
    "skipped_in_golden",
    "skipped_in_both",
)
#: verdicts that fail a gated check (``--fail-on-regression``). ``skipped_in_tot`` is not one: a skip is the
#: kernel's own ``supported()`` answer for that stack, given before anything is compiled or launched, so it says
#: the kernel's capability check changed its mind, not that TOT produced a slower or wrong kernel. It is shown
#: next to the blocking verdicts (terminal, markdown headline) so a lost kernel is never missed; see
#: docs/results-format.md.
BLOCKING = ("regression", "failed_in_tot")
#: verdicts where a stack declined the case (status ``skipped``: unsupported there), not a failure
SKIPPED = ("skipped_in_tot", "skipped_in_golden", "skipped_in_both")
#: verdicts listed with the regressions, worst first: what a reviewer must look at
ATTENTION = ("regression", "failed_in_tot", "missing_in_tot", "skipped_in_tot")


@dataclass(frozen=True)
class Rule:
    rel: float = REL
    abs_us: float = ABS_US
    min_golden_us: float = MIN_GOLDEN_US

    def __post_init__(self) -> None:
        for name, v in asdict(self).items():
            if not np.isfinite(v) or v < 0:
                raise ValueError(f"rule parameter {name} must be a finite non-negative number, got {v}")
        if self.rel < 1:
            raise ValueError(f"rule parameter rel must be >= 1, got {self.rel}")

    def limit_us(self, golden_us: np.ndarray) -> np.ndarray:
        return self.rel * np.asarray(golden_us, dtype=np.float64) + self.abs_us

    def limits_pct(self, golden_us: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The rule in Δ% = 100 (tot / golden − 1) terms: (regression above, improvement below) for each golden."""
        g = np.asarray(golden_us, dtype=np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            return 100.0 * (self.rel - 1.0) + 100.0 * self.abs_us / g, 100.0 * (
                (g - self.abs_us) / (self.rel * g) - 1.0
            )

    def record(self) -> dict[str, float]:
        """The rule as every file saves it (compare's meta.json, a sidecar's ``remeasure.rule``, a calibration,
        the history): its parameters by name."""
        return asdict(self)

    @classmethod
    def read(cls, saved: Any) -> Rule:
        """A saved rule back (:meth:`record`'s form); a parameter it lacks takes its default, one it does not know
        is refused (ValueError naming it), and so is anything but a mapping."""
        if saved is None:
            return cls()
        if not isinstance(saved, dict):
            raise ValueError(f"a saved rule is a mapping of its parameters, got {type(saved).__name__}")
        unknown = sorted(set(saved) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"a saved rule has unknown parameter {unknown[0]!r}")
        return cls(**{k: float(v) for k, v in saved.items()})

    def describe(self) -> str:
        return (
            f"ignore golden < {self.min_golden_us:g} us; regression iff tot > {self.rel:g} x golden + "
            f"{self.abs_us:g} us; improvement iff golden > {self.rel:g} x tot + {self.abs_us:g} us"
        )


def rule_of(rel: float, abs_us: float, min_golden_us: float) -> Rule:
    """The rule of ``--rel``, ``--abs-us`` and ``--min-golden-us``; a value it cannot be is one line (exit 2)."""
    try:
        return Rule(rel=rel, abs_us=abs_us, min_golden_us=min_golden_us)
    except ValueError as err:
        raise HarnessError(str(err)) from None


def is_verdict(verdict: Any, wanted: Iterable[str]) -> np.ndarray:
    """Which cells of a verdict column are one of ``wanted``. Compare's column is a categorical: one lookup of its
    code per row, where pandas' isin hashes every cell again (~20 ms a million rows, asked a dozen times)."""
    wanted = set(wanted)
    cat = getattr(verdict, "cat", None)
    if cat is None:
        return np.isin(np.asarray(verdict, dtype=object), list(wanted))
    hit = np.asarray([c in wanted for c in cat.categories] + [False], dtype=bool)  # code -1 (missing): the last
    return hit[cat.codes.to_numpy()]


#: relative tolerance of a limit comparison: 1 part per billion, far below any timer's resolution
EDGE_RTOL = 1e-9


def beyond(x: np.ndarray, limit: np.ndarray) -> np.ndarray:
    """``x > limit``, where an ``x`` equal to the limit *in decimal* is not beyond it.

    ``1.005 * 11.6 + 0.5`` is 12.157999999999998 in binary, so a measured 12.158 µs would be flagged by a
    bare ``>``. Times are written with at most a few decimals, so a 1e-9 relative tolerance absorbs the
    rounding of the product without ever hiding a real difference.
    """
    limit = np.asarray(limit, dtype=np.float64)
    return np.asarray(x, dtype=np.float64) > limit + EDGE_RTOL * np.abs(limit)


def timed_codes(golden_us: np.ndarray, tot_us: np.ndarray, rule: Rule) -> np.ndarray:
    """The rule itself, for cases timed under both stacks: indices into :data:`VERDICTS` of ignored (golden under
    the floor), regression, improvement or ok. The one copy every verdict comes from."""
    code = {v: i for i, v in enumerate(VERDICTS)}
    g = np.asarray(golden_us, dtype=np.float64)
    t = np.asarray(tot_us, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return np.select(
            [g < rule.min_golden_us, beyond(t, rule.rel * g + rule.abs_us), beyond(g, rule.rel * t + rule.abs_us)],
            [code["ignored"], code["regression"], code["improvement"]],
            default=code["ok"],
        ).astype(np.int8)


def timed_verdicts(golden_us: np.ndarray, tot_us: np.ndarray, rule: Rule) -> np.ndarray:
    """Verdicts for cases measured under both stacks: regression | improvement | ok | ignored."""
    return np.asarray(VERDICTS, dtype=object)[timed_codes(golden_us, tot_us, rule)]


def verdict_of(golden_us: float, tot_us: float, rule: Rule) -> str:
    """:func:`timed_verdicts` of one pair: regression | improvement | ok | ignored."""
    return str(timed_verdicts(np.array([golden_us]), np.array([tot_us]), rule)[0])


def _flags(flags: np.ndarray | None, like: np.ndarray) -> np.ndarray:
    return np.zeros(like.shape, dtype=bool) if flags is None else np.asarray(flags, dtype=bool)


def verdict_codes(
    golden_us: np.ndarray,
    tot_us: np.ndarray,
    in_golden: np.ndarray,
    in_tot: np.ndarray,
    golden_timed: np.ndarray,
    tot_timed: np.ndarray,
    rule: Rule,
    golden_skipped: np.ndarray | None = None,
    tot_skipped: np.ndarray | None = None,
) -> np.ndarray:
    """Like :func:`verdicts`, as int8 indices into :data:`VERDICTS` (which is ordered worst first)."""
    code = {v: i for i, v in enumerate(VERDICTS)}
    in_g = np.asarray(in_golden, dtype=bool)
    in_t = np.asarray(in_tot, dtype=bool)
    g_ok = in_g & np.asarray(golden_timed, dtype=bool)
    t_ok = in_t & np.asarray(tot_timed, dtype=bool)
    g_skip = in_g & ~g_ok & _flags(golden_skipped, in_g)
    t_skip = in_t & ~t_ok & _flags(tot_skipped, in_t)
    timed = timed_codes(golden_us, tot_us, rule)
    # a skip is a verdict of its own only where the other side is timed or skipped too: a failure beside a skip
    # is still news (failed_in_both), and its note names both statuses
    return np.select(
        [~in_t, ~in_g, g_ok & t_ok, g_ok & t_skip, g_ok, g_skip & t_ok, t_ok, g_skip & t_skip],
        [
            code["missing_in_tot"],
            code["new_in_tot"],
            timed,
            code["skipped_in_tot"],
            code["failed_in_tot"],
            code["skipped_in_golden"],
            code["failed_in_golden"],
            code["skipped_in_both"],
        ],
        default=code["failed_in_both"],
    ).astype(np.int8)


def verdicts(
    golden_us: np.ndarray,
    tot_us: np.ndarray,
    in_golden: np.ndarray,
    in_tot: np.ndarray,
    golden_timed: np.ndarray,
    tot_timed: np.ndarray,
    rule: Rule,
    golden_skipped: np.ndarray | None = None,
    tot_skipped: np.ndarray | None = None,
) -> np.ndarray:
    """The full verdict for each joined case.

    ``in_*``: the case has a row in that file; ``*_timed``: that row's status carries a time
    (``ok``, or ``unstable`` — the median of five reps, compared like any other time); ``*_skipped``: that row's
    status is ``skipped`` (the kernel declared the case unsupported under that stack; default: none).
    A side that is neither timed nor skipped failed.
    """
    codes = verdict_codes(
        golden_us, tot_us, in_golden, in_tot, golden_timed, tot_timed, rule, golden_skipped, tot_skipped
    )
    return np.asarray(VERDICTS, dtype=object)[codes]

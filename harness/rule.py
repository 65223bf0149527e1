"""The golden-vs-TOT regression rule, as data. Pure: numpy in, numpy out, no I/O.

AITER's rule (ROCm/aiter#3283): ignore cases whose golden time is under ``min_golden_us``; otherwise a case
regresses iff ``tot > rel * golden + abs_us``. Improvement is the mirror: ``golden > rel * tot + abs_us``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

VERDICTS = (
    "regression",
    "failed_in_tot",
    "missing_in_tot",
    "improvement",
    "ok",
    "ignored",
    "new_in_tot",
    "failed_in_golden",
    "failed_in_both",
)
#: verdicts that fail a gated check (``--fail-on-regression``)
BLOCKING = ("regression", "failed_in_tot")


@dataclass(frozen=True)
class Rule:
    rel: float = 1.005
    abs_us: float = 0.5
    min_golden_us: float = 4.0

    def __post_init__(self) -> None:
        for name, v in asdict(self).items():
            if not np.isfinite(v) or v < 0:
                raise ValueError(f"rule parameter {name} must be a finite non-negative number, got {v}")
        if self.rel < 1:
            raise ValueError(f"rule parameter rel must be >= 1, got {self.rel}")

    def limit_us(self, golden_us: np.ndarray) -> np.ndarray:
        return self.rel * np.asarray(golden_us, dtype=np.float64) + self.abs_us

    def describe(self) -> str:
        return (
            f"ignore golden < {self.min_golden_us:g} us; regression iff tot > {self.rel:g} x golden + "
            f"{self.abs_us:g} us; improvement iff golden > {self.rel:g} x tot + {self.abs_us:g} us"
        )


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


def timed_verdicts(golden_us: np.ndarray, tot_us: np.ndarray, rule: Rule) -> np.ndarray:
    """Verdicts for cases measured under both stacks: regression | improvement | ok | ignored."""
    g = np.asarray(golden_us, dtype=np.float64)
    t = np.asarray(tot_us, dtype=np.float64)
    regressed = beyond(t, rule.rel * g + rule.abs_us)
    improved = beyond(g, rule.rel * t + rule.abs_us)
    return np.select(
        [g < rule.min_golden_us, regressed, improved], ["ignored", "regression", "improvement"], default="ok"
    ).astype(object)


def verdict_codes(
    golden_us: np.ndarray,
    tot_us: np.ndarray,
    in_golden: np.ndarray,
    in_tot: np.ndarray,
    golden_timed: np.ndarray,
    tot_timed: np.ndarray,
    rule: Rule,
) -> np.ndarray:
    """Like :func:`verdicts`, as int8 indices into :data:`VERDICTS` (which is ordered worst first)."""
    code = {v: i for i, v in enumerate(VERDICTS)}
    in_g = np.asarray(in_golden, dtype=bool)
    in_t = np.asarray(in_tot, dtype=bool)
    g_ok = in_g & np.asarray(golden_timed, dtype=bool)
    t_ok = in_t & np.asarray(tot_timed, dtype=bool)
    g = np.asarray(golden_us, dtype=np.float64)
    t = np.asarray(tot_us, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        timed = np.select(
            [g < rule.min_golden_us, beyond(t, rule.rel * g + rule.abs_us), beyond(g, rule.rel * t + rule.abs_us)],
            [code["ignored"], code["regression"], code["improvement"]],
            default=code["ok"],
        )
    return np.select(
        [~in_t, ~in_g, g_ok & t_ok, g_ok & ~t_ok, ~g_ok & t_ok],
        [code["missing_in_tot"], code["new_in_tot"], timed, code["failed_in_tot"], code["failed_in_golden"]],
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
) -> np.ndarray:
    """The full verdict for each joined case.

    ``in_*``: the case has a row in that file; ``*_timed``: that row's status carries a time
    (``ok``, or ``unstable`` — the median of five reps, compared like any other time).
    """
    codes = verdict_codes(golden_us, tot_us, in_golden, in_tot, golden_timed, tot_timed, rule)
    return np.asarray(VERDICTS, dtype=object)[codes]

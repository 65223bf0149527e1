"""The bisection's decisions, as data: one measurement of a case under a release against golden → good or bad,
clean or not; the measurements of a (case, release) → good / bad / noisy; a case's states over the releases →
its history and the step(s) that made it slower. Pure: numbers in, words out, no I/O.

The rule is the comparison's (harness.verdict.rule): bad iff release > rel × golden + abs_us. A measurement is
*clean* when its verdict does not depend on which reps are taken: the release's slowest rep against golden's
fastest and its fastest against golden's slowest give the same verdict, and neither side's reps were
``unstable``. A (case, release) is decided by one clean measurement, or by its last two measurements agreeing
with at least one of them clean; otherwise it is ``noisy`` and measured again (up to a limit), then reported as
noisy. A failure (compile error, crash, wrong answer) or a skip under the release is a state of its own — unless
golden failed in the same run too, or the error says the GPU ran out of memory (the stacks' workers share it): that
is the measurement's failure, read as unknown and measured again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from harness.verdict.rule import Rule, verdict_of

#: the state of one (case, release), worst first
STATES = ("bad", "failed", "noisy", "skipped", "good")
#: what each state counts as in a history: bad (a release that is slower, or fails the case), good, unknown
SIDE = {"bad": "B", "failed": "B", "good": "G", "noisy": "?", "skipped": "?"}
TIMED = ("ok", "unstable")


@dataclass(frozen=True)
class Measurement:
    """One case under golden and one release, from the same interleaved run."""

    golden_us: float | None
    release_us: float | None
    golden_status: str = "ok"
    release_status: str = "ok"
    golden_reps: tuple[float, ...] = ()
    release_reps: tuple[float, ...] = ()
    error: str = ""


@dataclass(frozen=True)
class Reading:
    """What one measurement says: ``kind`` good / bad / failed / skipped / unknown (golden itself not timed),
    ``clean`` as the module says, and why (for the report)."""

    kind: str
    clean: bool
    why: str = ""


#: failures that say the measuring machine ran out of something (workers of every stack share one GPU)
RESOURCE_FAILURES = ("out of memory", "outofmemoryerror", "cuda_error_out_of_memory")


def is_resource_failure(error: str) -> bool:
    """A failure that says the measuring machine, not the release, ran out of something."""
    low = error.lower()
    return any(w in low for w in RESOURCE_FAILURES)


def _bad(golden_us: float, release_us: float, rule: Rule) -> bool:
    return verdict_of(golden_us, release_us, rule) == "regression"


def read(m: Measurement, rule: Rule) -> Reading:
    """One measurement's reading by the rule (see the module docstring)."""
    if m.release_status == "skipped":
        return Reading("skipped", True, m.error or "skipped under this release")
    if m.release_status not in TIMED or m.release_us is None:
        why = f"{m.release_status}: {m.error}".rstrip(": ")
        if (
            m.golden_status not in TIMED
            or is_resource_failure(m.error)
            or "instrument" in (m.release_status, m.golden_status)
        ):
            # the machine's failure (or the profiler's: instrument), not the release's: measured again, never a
            # culprit by itself
            return Reading("unknown", False, f"not the release's failure ({why[:160]})")
        return Reading("failed", True, why)
    if m.golden_status not in TIMED or m.golden_us is None:
        return Reading("unknown", False, f"golden {m.golden_status}")
    bad = _bad(m.golden_us, m.release_us, rule)
    g = m.golden_reps or (m.golden_us,)
    t = m.release_reps or (m.release_us,)
    worst, best = _bad(min(g), max(t), rule), _bad(max(g), min(t), rule)
    if worst != best:
        return Reading("bad" if bad else "good", False, "the reps' ranges straddle the limit")
    if "unstable" in (m.golden_status, m.release_status):
        return Reading("bad" if bad else "good", False, "unstable reps")
    return Reading("bad" if bad else "good", True, "")


def decide(readings: Sequence[Reading]) -> str:
    """The state of a (case, release) from its readings so far, oldest first (see the module docstring)."""
    if not readings:
        raise ValueError("no measurement to decide on")
    last = readings[-1]
    if last.kind in ("failed", "skipped"):
        return last.kind
    timed = [r for r in readings if r.kind in ("good", "bad")]
    if not timed or last.kind == "unknown":
        return "noisy"
    if len(timed) == 1:
        return timed[0].kind if timed[0].clean else "noisy"
    a, b = timed[-2:]
    return b.kind if a.kind == b.kind and (a.clean or b.clean) else "noisy"


def lean(readings: Sequence[Reading]) -> str:
    """For a case left noisy: how its measurements fell, e.g. '2 of 3 bad'."""
    timed = [r for r in readings if r.kind in ("good", "bad")]
    return f"{sum(r.kind == 'bad' for r in timed)} of {len(timed)} bad" if timed else "no time"


# ------------------------------------------------------------------------------------------------ history


@dataclass(frozen=True)
class Step:
    """A good → bad transition: ``good`` is the last release decided good before it, ``bad`` the first decided
    bad; ``between`` the undecided releases (noisy, skipped) in between, any of which may be the culprit."""

    good: str
    bad: str
    between: tuple[str, ...] = ()

    @property
    def culprits(self) -> tuple[str, ...]:
        return (*self.between, self.bad)

    def text(self) -> str:
        """'3.7.1', or '3.7.1 or 3.8.0' when 3.7.1 is undecided."""
        return " or ".join(self.culprits)


@dataclass(frozen=True)
class History:
    """``kind``: ``step`` (good up to one release, bad from it on), ``non-monotonic`` (bad, then good again,
    ...), ``not reproduced`` (bad nowhere, TOT included), ``undecided`` (no release bad, some not decided);
    ``culprit``: the step that brought the slowdown TOT has (the last good → bad), if any; ``steps``: every
    good → bad transition; ``fixes``: every bad → good one."""

    kind: str
    culprit: Step | None
    steps: tuple[Step, ...] = ()
    fixes: tuple[Step, ...] = ()
    text: str = ""
    series: tuple[tuple[str, str], ...] = field(default_factory=tuple)


def history(series: Sequence[tuple[str, str]]) -> History:
    """``series``: (release label, state) in release order, golden first (always good: the reference). The
    history it makes (see :class:`History`)."""
    steps: list[Step] = []
    fixes: list[Step] = []
    last: tuple[str, str] | None = None  # (label, side) of the last decided release
    pending: list[str] = []
    for label, state in series:
        side = SIDE[state]
        if side == "?":
            pending.append(label)
            continue
        if last is not None and last[1] != side:
            (steps if side == "B" else fixes).append(Step(last[0], label, tuple(pending)))
        last, pending = (label, side), []
    bad_at = [label for label, s in series if SIDE[s] == "B"]
    ends_bad = last is not None and last[1] == "B"
    culprit = steps[-1] if steps and ends_bad else None
    if not bad_at:
        kind = "undecided" if any(SIDE[s] == "?" for _, s in series) else "not reproduced"
    elif fixes:
        kind = "non-monotonic"
    else:
        kind = "step"
    return History(kind, culprit, tuple(steps), tuple(fixes), _text(kind, culprit, steps, fixes, series, pending),
                   tuple(series))  # fmt: skip


def _text(
    kind: str,
    culprit: Step | None,
    steps: list[Step],
    fixes: list[Step],
    series: Sequence[tuple[str, str]],
    trailing: list[str],
) -> str:
    """One line a compiler engineer reads first."""
    if kind == "not reproduced":
        return "good under every release measured: the regression did not reproduce"
    if kind == "undecided":
        return f"bad nowhere; undecided at {', '.join(lb for lb, s in series if SIDE[s] == '?')}"
    if kind == "step":
        assert culprit is not None
        text = f"{culprit.good} good → {culprit.bad} bad"
        if culprit.between:
            text += f", {' and '.join(culprit.between)} undecided between: the step is at {culprit.text()}"
        return text + (f"; {', '.join(trailing)} undecided after" if trailing else "")
    events = sorted(
        [(s.bad, "bad again" if i else "bad", s) for i, s in enumerate(steps)]
        + [(f.bad, "good again", f) for f in fixes],
        key=lambda e: [lb for lb, _ in series].index(e[0]),
    )
    parts = [f"{e[1]} at {e[2].text()}" for e in events]
    tail = "" if culprit else " (good at the end)"
    return "non-monotonic: " + ", ".join(parts) + tail

"""The bisection's decisions: a measurement's reading by the rule (clean or straddling), a (case, release)'s
state from its readings, and a case's history over the releases."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.bisect.search import SIDE, STATES, Measurement, Reading, Step, decide, history, lean, read
from harness.verdict.rule import Rule

RULE = Rule()


def m(g, t, greps=(), treps=(), gs="ok", ts="ok", error=""):
    return Measurement(g, t, gs, ts, tuple(greps), tuple(treps), error)


@pytest.mark.parametrize(
    "meas,kind,clean",
    [
        (m(100, 120, (99, 100, 101), (119, 120, 121)), "bad", True),
        (m(100, 90, (99, 100, 101), (89, 90, 91)), "good", True),
        (m(100, 100.4, (99.9, 100, 100.1), (100.3, 100.4, 100.5)), "good", True),  # under 1.005 x + 0.5
        (m(100, 101.2, (100, 100, 100), (101.1, 101.2, 101.3)), "bad", True),  # limit 101.0
        (m(100, 101.2, (100, 100.5), (100.8, 101.2)), "bad", False),  # slowest golden's limit 101.5025
        (m(100, 100.9, (99.5, 100), (100.9, 101.2)), "good", False),  # fastest golden's limit 100.4975
        (m(100, 130, (100,), (100, 130, 160)), "bad", False),  # the release's own reps straddle
        (m(100, 130, (100,), (130,), ts="unstable"), "bad", False),
        (m(100, 130, gs="unstable"), "bad", False),
        (m(100, 130), "bad", True),  # no reps recorded: the times themselves
    ],
)
def test_readings(meas, kind, clean):
    r = read(meas, RULE)
    assert (r.kind, r.clean) == (kind, clean)
    assert bool(r.why) == (not clean)


def test_failures_skips_and_a_failed_golden():
    assert read(m(100, None, ts="compile_error", error="boom"), RULE) == Reading("failed", True, "compile_error: boom")
    assert read(m(100, None, ts="skipped", error="needs 3.9"), RULE).kind == "skipped"
    assert read(m(None, 100, gs="timeout"), RULE) == Reading("unknown", False, "golden timeout")
    assert read(m(100, None, ts="missing"), RULE).kind == "failed"
    # the measuring machine's failures are not the release's: unknown, so measured again (H100, 2026-11-24: five
    # stacks' workers on one GPU, 16×8192×8192 mxfp4 inputs; golden and TOT both ran out of memory in one round)
    oom = "make_inputs: OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB."
    for r in (read(m(100, None, ts="runtime_error", error=oom), RULE),
              read(m(None, None, gs="runtime_error", ts="runtime_error", error="launch: illegal address"), RULE)):  # fmt: skip
        assert (r.kind, r.clean) == ("unknown", False) and "not the release's failure" in r.why
    assert decide([read(m(100, None, ts="runtime_error", error=oom), RULE)]) == "noisy"
    assert decide([read(m(100, None, ts="runtime_error", error=oom), RULE), B]) == "bad"
    # under the floor the rule ignores the case: not a regression, so good
    assert read(m(3.0, 30.0), RULE).kind == "good"


G, B = Reading("good", True), Reading("bad", True)
g, b = Reading("good", False), Reading("bad", False)  # straddling


@pytest.mark.parametrize(
    "readings,state",
    [
        ([G], "good"),
        ([B], "bad"),
        ([g], "noisy"),
        ([b], "noisy"),
        ([b, B], "bad"),  # agree, one clean
        ([g, B], "noisy"),  # disagree
        ([g, B, B], "bad"),  # the last two agree
        ([b, g, G], "good"),
        ([b, b], "noisy"),  # agree, neither clean
        ([b, b, b], "noisy"),
        ([B, g, B], "noisy"),  # the last two disagree
        ([g, Reading("failed", True)], "failed"),
        ([Reading("skipped", True)], "skipped"),
        ([Reading("unknown", False)], "noisy"),
        ([B, Reading("unknown", False)], "noisy"),
    ],
)
def test_states(readings, state):
    assert decide(readings) == state


def test_decide_needs_a_reading_and_lean_counts():
    with pytest.raises(ValueError):
        decide([])
    assert lean([b, g, B]) == "2 of 3 bad" and lean([Reading("failed", True)]) == "no time"


def series(*states, tot_label="3.9.0 (TOT)"):
    labels = ["3.6.0 (golden)", "3.7.0", "3.7.1", "3.8.0", tot_label][: len(states)]
    return list(zip(labels, states))


def test_one_step():
    h = history(series("good", "good", "bad", "bad", "bad"))
    assert h.kind == "step" and h.culprit == Step("3.7.0", "3.7.1") and h.text == "3.7.0 good → 3.7.1 bad"
    assert h.steps == (h.culprit,) and h.fixes == ()


def test_a_failure_counts_as_bad():
    h = history(series("good", "failed", "bad", "bad", "bad"))
    assert h.kind == "step" and h.culprit == Step("3.6.0 (golden)", "3.7.0")


def test_an_undecided_release_widens_the_step():
    h = history(series("good", "good", "noisy", "skipped", "bad"))
    assert h.culprit == Step("3.7.0", "3.9.0 (TOT)", ("3.7.1", "3.8.0"))
    assert h.culprit.text() == "3.7.1 or 3.8.0 or 3.9.0 (TOT)"
    assert h.text == (
        "3.7.0 good → 3.9.0 (TOT) bad, 3.7.1 and 3.8.0 undecided between: the step is at 3.7.1 or 3.8.0 or 3.9.0 (TOT)"
    )


def test_non_monotonic_histories_are_not_forced_into_one_step():
    h = history(series("good", "bad", "good", "good", "bad"))
    assert h.kind == "non-monotonic"
    assert h.steps == (Step("3.6.0 (golden)", "3.7.0"), Step("3.8.0", "3.9.0 (TOT)"))
    assert h.fixes == (Step("3.7.0", "3.7.1"),) and h.culprit == Step("3.8.0", "3.9.0 (TOT)")
    assert h.text == "non-monotonic: bad at 3.7.0, good again at 3.7.1, bad again at 3.9.0 (TOT)"
    fixed = history(series("good", "bad", "good"))
    assert fixed.kind == "non-monotonic" and fixed.culprit is None and fixed.text.endswith("(good at the end)")


def test_not_reproduced_and_undecided():
    h = history(series("good", "good", "good", "good", "good"))
    assert (h.kind, h.culprit) == ("not reproduced", None) and "did not reproduce" in h.text
    h = history(series("good", "good", "noisy", "good"))
    assert h.kind == "undecided" and h.text == "bad nowhere; undecided at 3.7.1"


def test_trailing_undecided_after_the_step():
    h = history(series("good", "bad", "bad", "noisy"))
    assert h.kind == "step" and h.culprit == Step("3.6.0 (golden)", "3.7.0")
    assert h.text.endswith("; 3.8.0 undecided after")


@given(st.lists(st.sampled_from(STATES), min_size=1, max_size=8))
def test_history_invariants(states):
    """Golden first: every step starts good and ends bad; steps and fixes alternate; the culprit is the last step
    exactly when the last decided release is bad."""
    s = [("golden", "good")] + [(f"r{i}", x) for i, x in enumerate(states)]
    h = history(s)
    side = dict((lb, SIDE[x]) for lb, x in s)
    assert all(side[x.good] == "G" and side[x.bad] == "B" for x in h.steps)
    assert all(side[x.good] == "B" and side[x.bad] == "G" for x in h.fixes)
    assert len(h.steps) - len(h.fixes) in (0, 1)
    decided = [SIDE[x] for _, x in s if SIDE[x] != "?"]
    assert (h.culprit is not None) == (decided[-1] == "B")
    if h.culprit is not None:
        assert h.culprit == h.steps[-1]
    assert (h.kind == "non-monotonic") == bool(h.fixes)

"""harness/retune/guard.py: a change is kept only if no case it moves gets slower and one is fixed."""

from __future__ import annotations

from harness.retune.guard import Measured, decide, judge, slower
from harness.verdict.rule import Rule

RULE = Rule()  # AITER's: ignore golden < 4 µs; regression iff tot > 1.005 x golden + 0.5 µs


def m(case, g0, t0, g1, t1, status=("ok", "ok", "ok", "ok")):
    return Measured("k", case, g0, t0, g1, t1, status)


def test_slower_is_the_compare_rule():
    assert slower(100.0, 101.0, RULE) is False  # 1.005 x 100 + 0.5 = 101.0: at the limit, not beyond
    assert slower(100.0, 101.01, RULE) is True
    assert slower(3.0, 30.0, RULE) is False  # under the 4 µs floor nothing counts
    assert slower(None, 5.0, RULE) is False and slower(5.0, None, RULE) is False


def test_case_verdicts():
    assert judge(m("a", 100, 120, 100, 100), RULE).kind == "fixed"
    assert judge(m("a", 100, 120, 100, 100), RULE).why == "TOT vs golden +20.0% → +0.0%"
    assert judge(m("a", 100, 120, 100, 110), RULE).kind == "still_regressed"
    assert judge(m("a", 100, 100, 100, 99), RULE).kind == "ok"
    assert judge(m("a", 100, None, 100, 100), RULE).why == "TOT vs golden failed → +0.0%"  # a TOT failure fixed
    worse = {
        "golden slower: 100 µs → 110 µs (+10.0%)": m("a", 100, 120, 110, 100),
        "TOT slower: 90 µs → 100 µs (+11.1%)": m("a", 100, 90, 100, 100),
        "a new regression: TOT 101.6 µs vs golden 100 µs (+1.6%)": m("a", 100, 101, 100, 101.6),
        "TOT fails with the new config (compile_error)": m("a", 100, 120, 100, None, ("ok",) * 3 + ("compile_error",)),
        "golden fails with the new config (incorrect)": m("a", 100, 120, None, 90, ("ok", "ok", "incorrect", "ok")),
    }
    for why, case in worse.items():
        assert (judge(case, RULE).kind, judge(case, RULE).why) == ("worse", why)


def test_a_change_that_slows_a_neighbour_is_rejected():
    target = m("M1024", 70.0, 86.1, 70.2, 69.0)  # the a8w8 regression, fixed
    neighbour = m("M512", 37.0, 30.0, 37.1, 33.0)  # an improvement it would take away (+10 %)
    d = decide([target, neighbour], RULE)
    assert not d.kept and d.why == "k M512: TOT slower: 30 µs → 33 µs (+10.0%)"
    assert decide([target], RULE).kept


def test_nothing_fixed_is_nothing_kept_and_a_still_regressed_case_does_not_block():
    assert decide([m("a", 100, 100, 100, 99)], RULE).why == "fixes nothing in the guard's measurements"
    d = decide([m("a", 100, 120, 100, 100), m("b", 100, 120, 100, 115)], RULE)
    assert d.kept and d.why == "fixes 1 of 2 cases it changes, none slower"
    assert [v.kind for _, v in d.verdicts] == ["fixed", "still_regressed"]
    d = decide([m("a", 100, 120, 100, 100), m("b", 100, 101, 100, 140), m("c", 100, 101, 200, 100)], RULE)
    assert d.why.endswith("(and 1 more)")


def test_a_fix_that_stays_ambiguous_at_the_limit_is_no_fix():
    """Below the limit by the point estimate, but compare's interval still straddles it after re-measuring: on
    another GPU of the model it may be a regression again (the H100 retune's 6 read 13 elsewhere), so it neither
    keeps a change nor counts as fixed."""
    from harness.retune.guard import FIX_PAIR

    sure = m("a", 100, 120, 100, 100.9)
    unsure = Measured("k", "a", 100, 120, 100, 100.9, unsure=frozenset({FIX_PAIR}))
    assert judge(sure, RULE).kind == "fixed"
    assert judge(unsure, RULE).kind == "unsure" and "ambiguous at the limit" in judge(unsure, RULE).why
    d = decide([unsure], RULE)
    assert not d.kept and d.why == (
        "fixes nothing in the guard's measurements (1 fixed by the point estimate only: ambiguous at the limit)"
    )
    assert decide([unsure, sure], RULE).kept  # a sure fix beside it keeps the change
    # another pair ambiguous does not make the fix unsure
    assert judge(Measured("k", "a", 100, 120, 100, 100.9, unsure=frozenset({(0, 2)})), RULE).kind == "fixed"


def test_the_measurer_finds_the_pairs_still_ambiguous_from_the_cached_reps():
    import json

    from harness.retune.cache import Entry, make_key
    from harness.retune.guard import FIX_PAIR
    from harness.retune.measure import _unsure

    def entry(t, reps):
        ev = {"reps": len(reps), "rep_times_us": json.dumps(reps), "spread_pct": 100 * (max(reps) - min(reps)) / t}
        return Entry(make_key("k", "s", "a", {}, "st", "g", "x"), "ok", t, "", {**ev, "sm_clock_mhz": None})

    golden_old, golden_new = entry(100.0, [99.9, 100.0, 100.1]), entry(100.0, [99.95, 100.0, 100.05])
    tot_old = entry(120.0, [119.9, 120.0, 120.1])
    near = entry(100.9, [100.5, 100.9, 101.3])  # 0.1 µs under the limit of 101.0, reps across it
    far = entry(100.0, [99.95, 100.0, 100.05])
    old = Entry(near.key, "ok", 100.9)  # cached before reps were kept: nothing known
    found = {"near": ("k", [golden_old, tot_old, golden_new, near]), "far": ("k", [golden_old, tot_old, golden_new, far]),
             "old": ("k", [golden_old, tot_old, golden_new, old])}  # fmt: skip
    assert _unsure(found, RULE) == {"near": frozenset({FIX_PAIR}), "far": frozenset(), "old": frozenset()}

"""The 3-run / 5% stability rule with fixed numbers, plus properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.verdict.stability import decide


def test_needs_three():
    assert decide([10.0]).need_more and decide([10.0, 10.0]).need_more


def test_all_three_within_5pct_mean():
    d = decide([10.0, 10.2, 10.4])
    assert not d.need_more and d.status == "ok"
    assert d.value == pytest.approx(10.2)
    assert d.used == (10.0, 10.2, 10.4)


def test_closest_pair():
    d = decide([10.0, 10.3, 12.0])  # 12/10 > 1.05; pairs: (10, 10.3) 3%, (10.3, 12) 16%
    assert d.value == pytest.approx(10.15) and d.used == (10.0, 10.3)


def test_closest_pair_not_first_pair():
    d = decide([10.0, 11.0, 11.2])  # (10,11) 10%, (11,11.2) 1.8%
    assert d.value == pytest.approx(11.1)


def test_no_pair_takes_two_more():
    assert decide([10.0, 11.0, 12.2]).need_more  # 10%, 10.9%, 22%
    assert decide([10.0, 11.0, 12.2, 13.0]).need_more  # 4 and 5 together
    d = decide([10.0, 11.0, 12.2, 13.6, 12.3])
    assert d.status == "ok" and d.value == pytest.approx(12.25)  # 12.2 and 12.3


def test_closest_pair_of_five():
    d = decide([10.0, 11.0, 12.2, 10.4, 10.3])
    assert d.status == "ok" and d.used == (10.4, 10.3) and d.value == pytest.approx(10.35)


def test_unstable_uses_median():
    d = decide([10.0, 11.0, 12.2, 13.6, 15.0])
    assert d.status == "unstable" and d.value == 12.2 and len(d.used) == 5


def test_exactly_five_percent_is_within():
    assert decide([100.0, 105.0, 102.0]).value == pytest.approx(102.333333)


def test_bad_reps():
    with pytest.raises(ValueError):
        decide([1.0, 0.0, 1.0])


@given(st.lists(st.floats(1.0, 1e6), min_size=3, max_size=3))
def test_decision_is_within_the_reps(reps):
    d = decide(reps)
    if d.need_more:
        more = decide([*reps, reps[0] * 1.5, reps[0] * 2.5])
        assert not more.need_more
        d = more
        reps = [*reps, reps[0] * 1.5, reps[0] * 2.5]
    assert min(reps) <= d.value <= max(reps)
    if d.status == "ok":
        assert max(d.used) <= min(d.used) * 1.05 + 1e-9

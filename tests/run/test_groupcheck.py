"""The guard on multi-GPU times (harness/verdict/groupcheck.py): ranks that disagree, or a rep that cannot tell itself
from itself, make the case unstable with the reason; agreeing ranks pass."""

from __future__ import annotations

import pytest

from harness.run.cases import CaseState, group_problem, rejudged
from harness.verdict.groupcheck import MAX_SKEW_PCT, RELEASE_SKEW_US, SELF_CHECK_PCT, halves_pct, refused
from harness.verdict.groupcheck import group_problem as problem


def test_halves_compare_the_even_and_the_odd_launches():
    assert halves_pct([10.0, 10.2, 10.0, 10.2, 10.0, 10.2]) == pytest.approx(2.0)
    assert halves_pct([10.0, 10.0, 12.0, 12.0]) == pytest.approx(0.0)  # drift reaches both halves alike
    assert halves_pct([1.0, 2.0, 3.0]) is None  # too few launches to split


def test_ranks_apart_beyond_the_bound_are_no_verdict():
    assert problem(1.0, [0.3, 0.5, 0.2]) == ""
    why = problem(255.0, [0.3])  # what the issue saw at W = 2 with each rank launching on its own
    assert why.startswith("ranks disagree: skew 255.0 %") and f"> {MAX_SKEW_PCT:g} %" in why
    assert problem(MAX_SKEW_PCT, []) == ""  # at the bound: still judged


def test_ranks_within_the_barriers_release_skew_agree_whatever_the_percentage():
    """At W = 4 the rank barrier releases the ranks one NVLink hop (1.4-2.0 µs) apart, and an op opening with a
    barrier of its own carries that hop on the ranks released first: 9.7 % on a 20 µs case is the method's, the
    same for both stacks (reports/h200x4-world-size-4). Beyond the hop the % bound stands."""
    assert problem(9.7, [0.3], skew_us=1.79) == ""  # gemm_all_scatter M1 N4096 K4096 fp16 W4, rank_clock.py
    why = problem(9.7, [0.3], skew_us=RELEASE_SKEW_US + 0.5)
    assert why.startswith("ranks disagree: skew 9.7 % > 5 %, 2.50 µs > 2 µs")
    assert problem(255.0, [0.3], skew_us=60.0).startswith("ranks disagree")  # host arrival: tens of µs
    assert problem(4.0, [0.3], skew_us=40.0) == ""  # within the % bound: µs alone never refuses


def test_a_case_state_skew_is_judged_in_percent_and_in_microseconds():
    class _Case:
        name, case_id = "k", "c"

    st = CaseState(case=_Case(), request={})  # type: ignore[arg-type]
    for r in ([18.5, 20.2, 19.2, 18.4], [18.6, 20.3, 19.2, 18.5], [18.5, 20.2, 19.3, 18.4]):
        st.add_rep(max(r), None, None, r, 0.2)
    assert group_problem(st) == ""  # 9.8 % but 1.8 µs: the barrier's hop
    for r in ([18.5, 21.5, 19.2, 18.4], [18.6, 21.6, 19.2, 18.5], [18.5, 21.5, 19.3, 18.4], [18.5, 21.5, 19, 18.4]):
        st.add_rep(max(r), None, None, r, 0.2)
    assert "µs > 2 µs" in group_problem(st)  # 3.1 µs: more than the hop


def test_a_rep_that_differs_from_itself_is_no_verdict():
    why = problem(0.5, [3.0, 4.0, 0.1])
    assert why.startswith("A/A self-check failed") and "3.0 %" in why and f"> {SELF_CHECK_PCT:g} %" in why
    assert problem(0.5, [3.0, 0.1, 0.2]) == ""  # the median rep decides: one rough rep is not enough
    assert problem(None, [None, None]) == ""  # wallclock groups under the interpreter: nothing to check


def test_a_case_state_is_judged_by_its_ranks_only_when_it_has_them():
    class _Case:
        name, case_id = "k", "c"

    st = CaseState(case=_Case(), request={})  # type: ignore[arg-type]
    st.add_rep(10.0, None, None)
    assert group_problem(st) == ""  # a single-GPU case
    for r in ([10.0, 14.0], [10.0, 14.2], [10.1, 14.1]):
        st.add_rep(14.0, None, None, r, 0.2)
    assert group_problem(st).startswith("ranks disagree: skew 41.0 %")
    assert st.halves == [0.2, 0.2, 0.2]


def test_one_worker_group_whose_ranks_disagree_is_not_the_ops_imbalance():
    """Reps of two worker groups: the guard refuses the case only when every group's ranks disagree."""

    class _Case:
        name, case_id = "k", "c"

    def state(second: list[float]) -> CaseState:
        st = CaseState(case=_Case(), request={}, label_procs=True)  # type: ignore[arg-type]
        for ranks, proc in (([100.0, 106.0], 0), ([100.0, 107.0], 0), (second, 1)):
            st.add_rep(max(ranks), None, None, ranks, 0.2, proc)
        return st

    assert group_problem(state([100.0, 101.0])) == ""  # group 0 6-7 % apart, group 1 1 %: a group's placement
    assert group_problem(state([100.0, 106.5])).startswith("ranks disagree: skew 6.5 %")  # every group


def test_every_refusal_reads_as_one_that_another_group_may_lift():
    """The board re-measures what this guard refused (remeasure.Board.undecided): each reason it gives must be
    recognised as its own, and no other unstable row."""
    for why in (problem(6.0, []), problem(0.5, [3.0, 3.0])):
        assert why and refused({"status": "unstable", "error": why})
    assert not refused({"status": "unstable", "error": "reps spread 9 % > 5 %"})
    assert not refused({"status": "ok", "error": problem(6.0, [])})


def test_a_refused_case_is_judged_again_with_the_groups_that_measured_it_since():
    class _Case:
        name, case_id = "k", "c"

    st = CaseState(case=_Case(), request={}, label_procs=True)  # type: ignore[arg-type]
    for ranks in ([100.0, 106.0], [100.0, 107.0]):
        st.add_rep(max(ranks), None, None, ranks, 0.2, 0)
    row = {"status": "unstable", "error": group_problem(st)}
    assert rejudged(st, row) == ("unstable", row["error"])  # one group so far, 6-7 % apart
    st.add_rep(101.0, None, None, [100.0, 101.0], 0.2, 5)  # a fresh group, its ranks 1 % apart
    assert rejudged(st, row) == ("ok", "")
    noisy = {"status": "unstable", "error": "reps spread 9 %"}
    assert rejudged(st, noisy) == ("unstable", "reps spread 9 %")  # the stability rule's verdict stands

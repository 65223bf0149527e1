"""The referee a re-measuring run gets: decided exactly where compare would not call the pair ambiguous."""

from __future__ import annotations

import numpy as np

from harness.retune.guard import guard_referee
from harness.verdict.confidence import CONFIDENCE, evidence, rep_stats
from harness.verdict.referee import pair_decided, rule_referee
from harness.verdict.rule import Rule, timed_codes

RULE = Rule()


def row(t: float, spread: float = 0.001, status: str = "ok", n: int = 3) -> dict:
    reps = [t * (1 + spread * ((i % 3) - 1)) for i in range(n)]
    return {"status": status, "time_us": t, "reps": n, "rep_times_us": reps}


def test_near_the_limit_noise_decides():
    g = row(10.0)  # the limit at 10 µs: 0.5 % + 0.5 µs = 5.5 %
    assert pair_decided(g, row(10.7), RULE)  # 7 %, quiet reps: a confident regression
    assert not pair_decided(g, row(10.7, spread=0.03), RULE)  # 3 % noise: the interval straddles 5.5 %
    assert pair_decided(g, row(10.7, spread=0.03, n=30), RULE)  # the same noise over 30 reps: decided


def test_agrees_with_compare_evidence():
    g = row(10.0)
    for t, spread in ((10.2, 0.02), (10.6, 0.01), (10.9, 0.02), (10.3, 0.001)):
        tot = row(t, spread)
        gs, ts = (rep_stats(np.array([str(r["rep_times_us"])], dtype=object)) for r in (g, tot))
        code = timed_codes(np.array([10.0]), np.array([t]), RULE)
        conf = CONFIDENCE[int(evidence(np.array([10.0]), np.array([t]), gs, ts, code, RULE)["confidence"][0])]
        assert pair_decided(g, tot, RULE) == (conf != "ambiguous"), (t, spread, conf)


def test_nothing_to_decide_for_failures_far_cases_and_the_floor():
    assert pair_decided(row(10.0), row(10.7, spread=0.03, status="runtime_error"), RULE)
    assert pair_decided(row(10.0), row(30.0, spread=0.03), RULE)  # 200 % slower: far from any limit
    assert pair_decided(row(3.0), row(3.3, spread=0.05), RULE)  # golden under 4 µs: ignored


def test_several_envs_each_against_the_first():
    ref = rule_referee(RULE)
    assert ref({"k": [row(10.0), row(10.7), row(20.0)]}) == {"k"}
    assert ref({"k": [row(10.0), row(20.0), row(10.7, spread=0.03)]}) == set()


def test_the_guard_referee_reads_the_guards_pairs():
    """golden_old, tot_old, golden_new, tot_new: undecided when TOT new vs golden old straddles the limit."""
    ref = guard_referee(RULE)
    quiet = [row(10.0), row(10.0), row(10.0), row(10.0)]
    assert ref({"k": quiet}) == {"k"}
    assert ref({"k": [row(10.0), row(10.0), row(10.0), row(10.7, spread=0.03)]}) == set()
    assert ref({"k": [row(10.0), row(10.0), row(10.7, spread=0.03), row(10.0)]}) == set()  # golden old vs new

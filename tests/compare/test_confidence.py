"""How sure a verdict is (harness/verdict/confidence.py): the rule decides, the reps of both stacks say whether
the measurement could tell; a verdict whose 95 % interval straddles its limit is ambiguous, and the gates treat
it as the user asked (--fail-on-regression: confident only; --fail-on-ambiguous: also what may regress)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.compare.compare import compare_files
from harness.verdict.confidence import NOISE_FLOOR_PCT, evidence, may_regress, rep_stats, t975
from harness.verdict.rule import VERDICTS, Rule, timed_codes
from tests.conftest import cli

HEADER = "kernel,case_id,B,M,N,K,dtype,time_us,status,config,reps,rep_times_us,spread_pct,tflops,error\n"


def test_rep_times_parse_in_one_pass():
    n, mean, sd = rep_stats(np.array(["[1.0,2.0,3.0]", "[5]", "", "[2.0, 2.0]"], dtype=object))
    assert n.tolist() == [3, 1, 0, 2]
    assert mean[0] == pytest.approx(2.0) and mean[1] == 5.0 and np.isnan(mean[2])
    assert sd[0] == pytest.approx(1.0) and np.isnan(sd[1]) and sd[3] == 0.0
    bad, _, _ = rep_stats(np.array(["[1.0,x]", "[2.0]"], dtype=object))
    assert bad.tolist() == [0, 1]  # a cell that is not a list of numbers: no estimate for it, never a guess


def test_student_t_quantiles():
    assert t975(np.array([2.0, 4.0, 30.0])) == pytest.approx([4.303, 2.776, 2.042])
    assert 1.96 < float(t975(np.array([1000.0]))[0]) < 1.97


def _judge(g_reps, t_reps, rule=Rule()):
    g, t = np.array([float(np.mean(g_reps))]), np.array([float(np.mean(t_reps))])
    codes = timed_codes(g, t, rule)
    fmt = lambda r: np.array(["[" + ",".join(map(str, r)) + "]"], dtype=object)  # noqa: E731
    ev = evidence(g, t, rep_stats(fmt(g_reps)), rep_stats(fmt(t_reps)), codes, rule)
    return VERDICTS[codes[0]], ["confident", "ambiguous", "unknown", ""][ev["confidence"][0]], ev


def test_a_clear_regression_is_confident_and_one_near_the_limit_is_not():
    verdict, conf, ev = _judge([100.0, 100.1, 99.9], [103.0, 103.1, 102.9])  # +3 %, reps within 0.2 %
    assert (verdict, conf) == ("regression", "confident")
    assert ev["delta_lo_pct"][0] > 1.0 > 0.0 and ev["delta_hi_pct"][0] < 3.5
    verdict, conf, ev = _judge([100.0, 101.0, 99.0], [101.5, 102.5, 100.5])  # +1.5 %, reps spread 2 %
    assert (verdict, conf) == ("regression", "ambiguous")  # limit +1.0 % lies inside the interval
    assert ev["delta_lo_pct"][0] < 1.0 < ev["delta_hi_pct"][0]
    assert ev["noise_pct"][0] == pytest.approx(1.0)  # the noisier stack: golden's 1 µs of 100


def test_ok_is_ambiguous_when_the_interval_reaches_a_limit_and_confident_when_not():
    assert _judge([100.0, 100.05, 99.95], [100.2, 100.25, 100.15])[:2] == ("ok", "confident")
    verdict, conf, ev = _judge([100.0, 102.0, 98.0], [100.5, 102.5, 98.5])
    assert (verdict, conf) == ("ok", "ambiguous")
    limit_pct = np.array([100 * (1.005 * 100.0 + 0.5) / 100.0 - 100])
    assert may_regress(np.array(["ok"]), np.array(["ambiguous"]), ev["delta_hi_pct"], limit_pct).tolist() == [True]


def test_one_rep_gives_no_estimate_and_equal_reps_are_not_exact():
    assert _judge([100.0], [103.0, 103.0])[1] == "unknown"
    _, conf, ev = _judge([100.0, 100.0, 100.0], [100.8, 100.8, 100.8])  # +0.8 %, limit +1.0 %
    assert ev["noise_pct"][0] == pytest.approx(NOISE_FLOOR_PCT)
    assert conf == "confident"


def _files(tmp_path, g_reps, t_reps):
    g, t = tmp_path / "g.csv", tmp_path / "t.csv"
    for path, reps in ((g, g_reps), (t, t_reps)):
        rows = "".join(
            f'bf16,{cid},1,16,512,128,bf16,{np.mean(r):.4f},ok,,{len(r)},"[{",".join(map(str, r))}]",,,\n'
            for cid, r in reps.items()
        )
        path.write_text(HEADER + rows)
    return g, t


def test_the_gates_fail_on_what_they_promise(tmp_path, capsys):
    g, t = _files(
        tmp_path,
        {"clear": [100.0, 100.1, 99.9], "near": [100.0, 101.0, 99.0]},
        {"clear": [100.0, 100.1, 99.9], "near": [101.5, 102.5, 100.5]},
    )
    cmp = compare_files(g, t)
    assert cmp.counts()["regression"] == 1 and cmp.ambiguous_counts() == {"regression": 1}
    assert cmp.blocking == 0 and cmp.strict_blocking == 1
    run = lambda *a: cli(capsys, "compare", g, t, *a)  # noqa: E731 - in process: (exit code, stdout, stderr)
    (loose, said, _), (strict, _, _) = run("--fail-on-regression"), run("--fail-on-ambiguous")
    assert loose == 0 and "1 regression (1 ambiguous)" in said
    assert strict == 1
    md = tmp_path / "c.md"
    run("--markdown", str(md))
    text = md.read_text()
    assert "**regression** (ambiguous)" in text and "1 verdicts are ambiguous" in text


def test_a_case_far_from_every_limit_is_judged_by_its_interval_all_the_same(tmp_path):
    """No verdict is confident without the interval that earns it (issue 43): +15 % is 14 points past the limit,
    but TOT's two reps sit 30 % apart, and the interval says so."""
    g, t = _files(tmp_path, {"far": [100.0, 100.1], "alone": [100.0], "sure": [100.0, 100.1]},
                  {"far": [130.0, 100.0], "alone": [130.0], "sure": [115.0, 115.1]})  # fmt: skip
    table = compare_files(g, t).table.set_index("case_id")
    assert table.loc["far", "verdict"] == "regression" and table.loc["far", "confidence"] == "ambiguous"
    assert table.loc["far", "noise_pct"] > 10 and table.loc["far", "delta_lo_pct"] < 0.6
    assert table.loc["sure", "confidence"] == "confident" and table.loc["sure", "delta_lo_pct"] > 10
    assert table.loc["alone", "confidence"] == "unknown"  # one rep: no interval, so nothing claimed


def test_reps_the_stability_rule_did_not_bound_are_read_however_far_the_limit(tmp_path):
    """A row whose reps spread past the stability rule's 5 % (a re-measured case pools all its reps and stays
    `ok`: 7 reps spread 90 % in a stranger's run) is judged by its reps, not waved through as far from the limit;
    the referee of a re-measuring run judges it the same way."""
    from harness.verdict.referee import pair_decided

    g, t = _files(tmp_path, {"far": [100.0, 100.1, 99.9]}, {"far": [150.0, 80.0, 115.0, 145.0, 85.0]})
    spread = 100 * (150 / 80 - 1)
    t.write_text(t.read_text().replace('85.0]",,,', f'85.0]",{spread},,'))
    row = compare_files(g, t).table.set_index("case_id").loc["far"]
    assert row["verdict"] == "regression" and row["confidence"] == "ambiguous"
    assert row["delta_lo_pct"] < 0.6 < row["delta_hi_pct"]  # its interval straddles the limit (~0.6 %)
    golden = {"status": "ok", "time_us": 100.0, "reps": 3, "rep_times_us": "[100.0, 100.1, 99.9]", "spread_pct": 0.2}
    tot = {"status": "ok", "time_us": 115.0, "reps": 5, "rep_times_us": "[150.0, 80.0, 115.0, 145.0, 85.0]"}
    # recorded spread or not, the reps are read: nothing is assumed of reps the rule did not bound
    assert not pair_decided(golden, tot, Rule())
    assert not pair_decided(golden, {**tot, "spread_pct": spread}, Rule())


def test_a_difference_that_does_not_hold_in_sm_cycles_is_not_confident():
    """nvbench's robust compare confirms a difference in cycles: TOT 3 % slower at a 3 % lower SM clock did the
    same work in the same cycles."""
    from harness.verdict.confidence import clock_explains

    g, t = np.array([1000.0, 1000.0]), np.array([1030.0, 1030.0])
    codes = timed_codes(g, t, Rule())
    moved = clock_explains(g, t, np.array([1980.0, 1980.0]), np.array([1922.0, 1980.0]), codes, Rule())
    assert moved.tolist() == [True, False]
    assert not clock_explains(g, t, np.array([np.nan] * 2), np.array([1922.0] * 2), codes, Rule()).any()


def test_missing_cells_of_any_kind_give_no_estimate():
    import pandas as pd

    cells = pd.array(["[1.0,1.2]", pd.NA, "", "[2.0,2.0,2.0]"], dtype="string").to_numpy(dtype=object)
    n, _, _ = rep_stats(np.concatenate([cells, np.array([None, float("nan")], dtype=object)]))
    assert n.tolist() == [2, 0, 0, 3, 0, 0]

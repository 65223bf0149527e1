"""Process noise from an A/A of the same run (harness/verdict/process_noise.py) and the interval it widens
(confidence.py): a kernel whose two golden processes disagree by more than its reps do cannot call a small
difference confident; one whose processes agree keeps its verdicts; the verdicts themselves never change."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from harness.verdict.confidence import CONFIDENCE, Z95, assess, evidence, rep_stats, widened
from harness.verdict.process_noise import MAD_NORMAL, aa_delta_pct, case_sigma, family_noise
from harness.verdict.rule import VERDICTS, Rule, timed_codes


def _frame(rows: list[tuple[str, str, float, str]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["kernel", "case_id", "time_us", "status"])


def test_the_aa_delta_is_taken_only_where_both_timed_ok_above_the_floor():
    golden = _frame([("k", "a", 100.0, "ok"), ("k", "b", 100.0, "ok"), ("k", "c", 2.0, "ok"),
                     ("k", "d", 100.0, "unstable"), ("k", "e", 100.0, "ok")])  # fmt: skip
    aa = _frame([("k", "e", 90.0, "failed"), ("k", "b", 97.0, "ok"), ("k", "a", 102.0, "ok"), ("k", "c", 3.0, "ok"),
                 ("k", "d", 100.0, "ok")])  # fmt: skip
    d = aa_delta_pct(golden, aa, Rule())
    assert d[:2] == pytest.approx([2.0, -3.0])  # matched by case, not by row
    assert np.isnan(d[2:]).all()  # under the 4 us floor; golden unstable; the A/A's row failed


def test_sigma_is_the_median_absolute_delta_about_zero():
    kernels = np.array(["a8w8"] * 4 + ["bf16"] * 3 + ["x"])
    delta = np.array([2.0, 3.0, 4.0, 5.0, 0.1, -0.2, 0.3, np.nan])  # a8w8: all shifted one way
    noise = family_noise(kernels, delta)
    assert noise.index.tolist() == ["a8w8", "bf16"]  # x has no A/A delta: no estimate
    assert noise.loc["a8w8", "cases"] == 4 and noise.loc["bf16", "cases"] == 3
    # about zero, not about the A/A's median (3.5): the common shift is process noise too
    assert noise.loc["a8w8", "sigma_pct"] == pytest.approx(3.5 / MAD_NORMAL)
    assert noise.loc["bf16", "sigma_pct"] == pytest.approx(0.2 / MAD_NORMAL)
    sigma = case_sigma(np.array(["bf16", "a8w8", "a8w8", "x"]), np.array([True, True, False, True]), noise)
    assert sigma[:2] == pytest.approx([0.2 / MAD_NORMAL, 3.5 / MAD_NORMAL])
    assert np.isnan(sigma[2:]).all()  # a case missing from the A/A, a kernel without any: no widening


def test_widening_adds_in_quadrature_and_nan_adds_nothing():
    assert widened(np.array([0.3, 0.3]), np.array([1.0, np.nan])) == pytest.approx([np.hypot(0.3, Z95 * 1.0), 0.3])


def _cases(deltas: list[float], golden: float = 1000.0) -> tuple[np.ndarray, ...]:
    """Cases of one kernel: golden reps within 0.1 %, TOT the same reps moved by each delta (%)."""
    g_reps = [golden * 0.999, golden, golden * 1.001]
    g = np.full(len(deltas), golden)
    t = g * (1 + np.asarray(deltas) / 100.0)
    fmt = lambda x: "[" + ",".join(f"{v:.4f}" for v in x) + "]"  # noqa: E731
    g_txt = np.array([fmt(g_reps)] * len(deltas), dtype=object)
    t_txt = np.array([fmt([r * (1 + d / 100.0) for r in g_reps]) for d in deltas], dtype=object)
    return g, t, g_txt, t_txt


def _judge(deltas: list[float], sigma: float | None) -> tuple[list[str], list[str], dict]:
    g, t, g_txt, t_txt = _cases(deltas)
    rule = Rule()
    codes = timed_codes(g, t, rule)
    process = None if sigma is None else np.full(len(deltas), sigma)
    read: list[np.ndarray] = []

    def rep_texts(near: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        read.append(near)
        return g_txt[near], t_txt[near]

    ev = assess(g, t, codes, rule, rep_texts, None, process)
    ev["read"] = read[0] if read else np.zeros(len(deltas), dtype=bool)
    return [VERDICTS[c] for c in codes], [CONFIDENCE[c] for c in ev["confidence"]], ev


def test_big_process_noise_turns_confident_regressions_ambiguous_and_never_changes_a_verdict():
    deltas = [3.0, 5.0, 0.0, -4.0, 25.0]  # limit at 1 ms: +0.55 %
    verdicts, before, _ = _judge(deltas, None)
    assert verdicts == ["regression", "regression", "ok", "improvement", "regression"]
    assert before == ["confident"] * 5  # reps within 0.1 %: the rep interval alone is sure of each
    same, after, ev = _judge(deltas, 2.7)  # the a8w8 H200 A/A's σ_p
    assert same == verdicts  # the rule decides; the A/A only says how sure
    # ±5.3 points: +3 and +5 % cannot be told from process noise, nor can 0 % and -4 %; +25 % can
    assert after == ["ambiguous", "ambiguous", "ambiguous", "ambiguous", "confident"]
    assert ev["by_process"].tolist() == [True, True, True, True, False]
    half = Z95 * 2.7  # the reps' own half-width (~0.2 points) adds in quadrature: a little
    assert 3.0 - ev["delta_lo_pct"][0] == pytest.approx(half, rel=0.01)
    assert ev["delta_hi_pct"][0] - 3.0 == pytest.approx(half, rel=0.01)


def test_small_process_noise_keeps_the_verdicts_confident():
    deltas = [3.0, 6.0, 0.0, -4.0]
    _, after, ev = _judge(deltas, 0.05)
    assert after == ["confident"] * 4 and not ev["by_process"].any()


def test_a_case_far_from_the_limit_is_judged_by_its_interval_with_process_noise():
    # +13 %: far past the limit, confident by its reps (they are read, as every judged case's are) ...
    _, before, ev = _judge([13.0], None)
    assert before == ["confident"] and ev["read"].all()
    # ... but a kernel whose processes differ by σ_p = 8 % (±15.7 points) cannot tell it from noise
    _, after, ev = _judge([13.0], 8.0)
    assert after == ["ambiguous"] and ev["read"].all() and ev["by_process"].all()


def test_evidence_without_process_noise_is_unchanged():
    g, t, g_txt, t_txt = _cases([3.0, 0.2])
    codes = timed_codes(g, t, Rule())
    plain = evidence(g, t, rep_stats(g_txt), rep_stats(t_txt), codes, Rule())
    nan = evidence(g, t, rep_stats(g_txt), rep_stats(t_txt), codes, Rule(), np.full(2, np.nan))
    assert "by_process" not in plain and not nan["by_process"].any()
    for k in ("confidence", "delta_lo_pct", "delta_hi_pct", "noise_pct"):
        assert np.array_equal(plain[k], nan[k])

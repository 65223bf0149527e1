"""The arithmetic of a calibration (resolution.py) and compare's use of it (compare/calibration.py), with fixed
numbers."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from harness.compare.calibration import apply_calibration, unresolved_note
from harness.verdict.resolution import judge_pair, parse_slowdown, summarize
from harness.verdict.rule import Rule

RULE = Rule()


def results(times: dict[str, list[float]]) -> pd.DataFrame:
    """A results frame: case id → its reps; the time is their mean."""
    return pd.DataFrame(
        {
            "kernel": "k",
            "case_id": list(times),
            "status": "ok",
            "time_us": [float(np.mean(r)) for r in times.values()],
            "rep_times_us": [json.dumps(r) for r in times.values()],
        }
    )


def test_slowdowns_parse_and_size():
    assert [parse_slowdown(t).label for t in ("2us", "8µs", "1.5%", "limit")] == ["2us", "8us", "1.5%", "limit"]
    assert parse_slowdown("1%").delay_us(200.0, RULE) == pytest.approx(2.0)
    # the rule's slack: 0.5 % + 0.5 µs, the smallest slowdown the rule flags
    assert parse_slowdown("limit").delay_us(100.0, RULE) == pytest.approx(1.0)
    for bad in ("2", "-1us", "0%", "fast"):
        with pytest.raises(ValueError, match="expected a positive slowdown"):
            parse_slowdown(bad)


def test_a_quiet_and_a_noisy_case():
    """quiet: 100 µs, reps within 0.1 %; noisy: 100 µs, reps spread 3 %. Two repeats; 1 µs (the limit) and 8 µs
    injected. The quiet case catches 1 µs each time, so it resolves the rule's 1 % slack; the noisy one catches
    8 µs only, and once flags its A/A."""
    quiet = [100.0, 100.1, 99.9]
    noisy = [100.0, 103.0, 97.0]
    golden = results({"quiet": quiet, "noisy": noisy})

    def shifted(dq: float, dn: float) -> pd.DataFrame:
        return results({"quiet": [x + dq for x in quiet], "noisy": [x + dn for x in noisy]})

    aa = [judge_pair(golden, shifted(0.0, 0.0), RULE), judge_pair(golden, shifted(0.0, 2.0), RULE)]
    slowed = {
        "limit": [judge_pair(golden, shifted(1.0, 1.0), RULE), judge_pair(golden, shifted(1.0, 1.0), RULE)],
        "8us": [judge_pair(golden, shifted(8.0, 8.0), RULE), judge_pair(golden, shifted(8.0, 8.0), RULE)],
    }
    idx = pd.MultiIndex.from_tuples([("k", "quiet"), ("k", "noisy")], names=["kernel", "case_id"])
    injected = {"limit": pd.Series([1.0, 1.0], index=idx), "8us": pd.Series([8.0, 8.0], index=idx)}
    t = summarize(aa, slowed, injected, RULE).set_index("case_id")
    assert t.loc["quiet", "resolution_pct"] == 1.0 and bool(t.loc["quiet", "resolves"])
    assert t.loc["noisy", "resolution_pct"] == 8.0 and not bool(t.loc["noisy", "resolves"])
    assert t.loc["quiet", "caught"] == "limit:2/2;8us:2/2" and t.loc["noisy", "caught"] == "limit:0/2;8us:2/2"
    # the noisy case's second A/A read +2 %: over the 1 % limit, a flag, and a false positive
    assert (t.loc["noisy", "aa_flags"], t.loc["noisy", "aa_fp_rate"], t.loc["quiet", "aa_flags"]) == (1, 0.5, 0)
    assert t.loc["noisy", "noise_pct"] == pytest.approx(3.0, rel=0.01)
    assert t.loc["quiet", "limit_pct"] == pytest.approx(1.0)


def test_compare_marks_what_a_case_cannot_resolve():
    table = pd.DataFrame(
        {
            "kernel": ["k", "k", "k"],
            "case_id": ["noisy", "quiet", "other"],
            "golden_us": [100.0, 100.0, 100.0],
            "verdict": ["regression", "regression", "ok"],
            "note": ["", "", ""],
            "confidence": pd.Categorical(
                ["confident", "confident", "confident"], categories=["confident", "ambiguous"]
            ),
        }
    )
    cal = pd.DataFrame(
        {
            "kernel": ["k", "k", "k"],
            "case_id": ["noisy", "quiet", "other"],
            "noise_pct": [1.4, 0.1, 1.4],
            "resolution_pct": [8.0, 1.0, np.nan],
            "resolves": [False, True, False],
        }
    )
    out = apply_calibration(table, cal, RULE).set_index("case_id")
    assert out.loc["noisy", "confidence"] == "ambiguous" and out.loc["quiet", "confidence"] == "confident"
    assert out.loc["other", "confidence"] == "confident"  # an ok is no flag: it stays, with the note
    assert out.loc["noisy", "note"] == "noise 1.4 %: this case cannot resolve 1.0 % (calibrated: catches 8.0 %)"
    assert out.loc["other", "note"] == unresolved_note(1.4, 1.0, np.nan) and out.loc["quiet", "note"] == ""
    assert list(table["confidence"]) == ["confident"] * 3  # the input is not changed

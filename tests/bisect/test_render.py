"""The bisection's outputs from known measurements: the markdown (culprits, steps with their git ranges, the time
series, the pairs measured again), culprits.csv, series.csv, the plot and bisect.json."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from harness.bisect.bisect import culprit_steps, explain_steps, run_rounds
from harness.bisect.render import write_outputs
from tests.bisect.known_times import KnownTimes, by_round, comparison, const, plan

GOLDEN, BAD, GOOD, STRADDLE = [40.0, 40.2, 40.1], [60.0, 60.1, 60.2], [30.0, 30.1, 30.2], [30.0, 60.0, 30.0]


@pytest.fixture
def outcome(tmp_path):
    cmp_csv = comparison(
        tmp_path,
        {c: GOLDEN for c in ("step380", "bgb", "settles")},
        {c: BAD for c in ("step380", "bgb", "settles")},
    )
    times = {
        "step380": {"golden": GOLDEN, "3.7.1": GOOD, "3.8.0": BAD, "tot": BAD},
        "bgb": {"golden": GOLDEN, "3.7.1": BAD, "3.8.0": GOOD, "tot": BAD},
        "settles": {"golden": GOLDEN, "3.7.1": GOOD, "3.8.0": by_round(STRADDLE, BAD), "tot": BAD},
    }
    meas = KnownTimes({(s, c): const(*r) if isinstance(r, list) else r for c, t in times.items() for s, r in t.items()})
    res = run_rounds(plan(tmp_path, cmp_csv, ["3.7.1", "3.8.0"]), meas, log=lambda m: None)
    res.steps = culprit_steps(res)
    explain_steps(res, log=lambda m: None)
    write_outputs(res)
    return res


def test_markdown(outcome):
    md = (outcome.plan.out / "bisect.md").read_text()
    assert md.startswith("# Which Triton release made each case slower\n")
    assert "Stacks, in order: 3.6.0 (golden) · 3.7.1 · 3.8.0 · 3.9.0 (TOT) (TOT measured again)." in md
    assert "| `versioned/step380` | +49.9 % | 3.8.0 | 3.7.1 good → 3.8.0 bad |" in md
    assert "| `versioned/bgb` | +49.9 % | 3.9.0 (TOT) | non-monotonic: bad at 3.7.1, good again at 3.8.0, bad again at " \
           "3.9.0 (TOT) |" in md  # fmt: skip
    assert "Cases per culprit: 3.8.0: 2; non-monotonic: 1." in md
    assert "### 3.7.1 → 3.8.0\n\n2 cases got slower here; 2 of 2 stayed slower up to TOT (this step is their cul" in md
    assert "### 3.6.0 (golden) → 3.7.1\n\n1 case got slower here; 0 of 1 stayed slower" in md
    assert "Triton git range `v3.7.1..v3.8.0` ([compare view](https://github.com/triton-lang/triton/compare/v3.7.1..." \
           "v3.8.0); release branches release/3.7.x, release/3.8.x)" in md  # fmt: skip
    assert "    git bisect start v3.8.0 v3.7.1" in md
    assert "Compiled kernels: not explained: run the bisection with --artifacts to keep the compiled kernels." in md
    # settles: good but straddling, then bad (they disagree: once more), then bad again
    assert "| `versioned/settles` | 40.10 | ✓ -24.9 % | ✗ +49.9 % (3×) | ✗ +49.9 % |" in md
    assert "| `versioned/settles` | 3.8.0 | -25.2 % ✓ (straddles), +49.9 % ✗, +49.9 % ✗ | bad |" in md
    assert "round 2: 1 case × 2 stacks" in md
    assert "![Δ vs golden per release](timeline.png)" in md


def test_culprits_and_series(outcome):
    out = outcome.plan.out
    cul = pd.read_csv(out / "culprits.csv").set_index("case_id")
    assert list(cul.index) == ["step380", "bgb", "settles"]
    assert cul.loc["bgb", "culprit"] == "3.9.0 (TOT)" and cul.loc["bgb", "git_range"] == "v3.8.0..v3.9.0"
    assert cul.loc["bgb", "compare_url"] == "https://github.com/triton-lang/triton/compare/v3.8.0...v3.9.0"
    assert [cul.loc["bgb", f"state {s}"] for s in ("3.7.1", "3.8.0", "3.9.0 (TOT)")] == ["bad", "good", "bad"]
    assert cul.loc["step380", "us 3.6.0 (golden)"] == pytest.approx(40.1)
    assert cul.loc["step380", "delta_pct 3.8.0"] == pytest.approx(100 * (60.1 / 40.1 - 1))
    series = pd.read_csv(out / "series.csv")
    assert len(series) == 3 * 3 + 2  # every (case, release) once, settles at 3.8.0 three times
    s = series[(series["case_id"] == "settles") & (series["stack"] == "3.8.0")]
    assert list(s["round"]) == [1, 2, 3] and list(s["clean"]) == [False, True, True] and set(s["state"]) == {"bad"}
    assert s["why"].iloc[0] == "the reps' ranges straddle the limit"
    assert json.loads(s["release_reps_us"].iloc[0]) == STRADDLE
    assert s["limit_us"].iloc[0] == pytest.approx(1.005 * 40.1 + 0.5)


def test_plot_and_summary(outcome):
    out = outcome.plan.out
    assert (out / "timeline.png").read_bytes()[:4] == b"\x89PNG"
    summary = json.loads((out / "bisect.json").read_text())
    assert [s["label"] for s in summary["stacks"]] == ["3.6.0 (golden)", "3.7.1", "3.8.0", "3.9.0 (TOT)"]
    assert summary["states"] == {"bad": 6, "failed": 0, "noisy": 0, "skipped": 0, "good": 3}
    assert summary["cases"]["versioned/bgb"]["history"] == "non-monotonic"
    assert [(s["good"], s["bad"]) for s in summary["steps"]] == [
        ("3.6.0 (golden)", "3.7.1"),
        ("3.7.1", "3.8.0"),
        ("3.8.0", "3.9.0 (TOT)"),
    ]
    assert [r["round"] for r in summary["rounds"]] == [1, 2, 3]
    assert (out / "steps" / "3.7.1..3.8.0" / "compare.csv").exists()

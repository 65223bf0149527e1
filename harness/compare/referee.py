"""The referee a re-measuring run is given (harness.run.remeasure): the rule and confidence.py judge a case's
rows under each env the way ``harness compare`` will judge the files, and say whether it is decided. Golden is
the first env; every other env is compared with it (bisect runs several), and a case is decided when every
comparison is. Pure: rows in, a bool out."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np

from harness.compare.confidence import CONFIDENCE, clock_explains, evidence, near_limit, rep_stats
from harness.compare.rule import VERDICTS, Rule, timed_codes
from harness.results.schema import TIMED_STATUSES

_JUDGED = (VERDICTS.index("regression"), VERDICTS.index("improvement"), VERDICTS.index("ok"))


def rule_referee(rule: Rule) -> Callable[[list[dict[str, Any]]], bool]:
    """A referee for ``rule``: decided unless some env's comparison with the first is ambiguous."""

    def decided(rows: list[dict[str, Any]]) -> bool:
        return all(pair_decided(rows[0], other, rule) for other in rows[1:])

    return decided


def pair_decided(golden: dict[str, Any], tot: dict[str, Any], rule: Rule) -> bool:
    """Whether compare would call this pair of rows anything but ``ambiguous`` (as compare._evidence does: only
    cases near a limit, or unstable under a stack, are judged from their reps)."""
    if golden.get("status") not in TIMED_STATUSES or tot.get("status") not in TIMED_STATUSES:
        return True  # a failure or a skip: nothing that more reps could decide
    g, t = _one(golden.get("time_us")), _one(tot.get("time_us"))
    code = timed_codes(g, t, rule)
    if int(code[0]) not in _JUDGED:
        return True  # under the floor: ignored
    unstable = "unstable" in (golden.get("status"), tot.get("status"))
    if not (unstable or near_limit(g, t, code, rule)[0]):
        return True
    ev = evidence(g, t, _reps(golden), _reps(tot), code, rule)
    conf = CONFIDENCE[int(ev["confidence"][0])]
    if conf == "confident":
        fg, ft = _one(golden.get("sm_clock_mhz")), _one(tot.get("sm_clock_mhz"))
        conf = "ambiguous" if clock_explains(g, t, fg, ft, code, rule)[0] else conf
    return conf != "ambiguous"


def _one(v: Any) -> np.ndarray:
    try:
        return np.array([float(v)], dtype=np.float64)
    except (TypeError, ValueError):
        return np.array([np.nan])


def _reps(row: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    reps = row.get("rep_times_us")
    text = reps if isinstance(reps, str) else json.dumps(list(reps or []))
    return rep_stats(np.array([text], dtype=object))

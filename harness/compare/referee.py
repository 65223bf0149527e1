"""The referee a re-measuring run is given (harness.run.remeasure): the rule and confidence.py judge a case's
rows under each env the way ``harness compare`` will judge the files, and say whether it is decided. Golden is
the first env; every other env is compared with it (bisect runs several), and a case is decided when every
comparison is. Pure: rows in, a bool out."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np

from harness.compare.confidence import CONFIDENCE, assess, unbounded
from harness.compare.rule import Rule, timed_codes
from harness.results.schema import TIMED_STATUSES


def rule_referee(rule: Rule) -> Callable[[list[dict[str, Any]]], bool]:
    """A referee for ``rule``: decided unless some env's comparison with the first is ambiguous."""

    def decided(rows: list[dict[str, Any]]) -> bool:
        return all(pair_decided(rows[0], other, rule) for other in rows[1:])

    return decided


def pair_decided(golden: dict[str, Any], tot: dict[str, Any], rule: Rule) -> bool:
    """Whether compare would call this pair of rows anything but ``ambiguous`` (confidence.assess, as compare
    judges its files)."""
    if golden.get("status") not in TIMED_STATUSES or tot.get("status") not in TIMED_STATUSES:
        return True  # a failure or a skip: nothing that more reps could decide
    g, t = _one(golden.get("time_us")), _one(tot.get("time_us"))
    code = timed_codes(g, t, rule)
    unstable = unbounded(
        np.array(["unstable" in (golden.get("status"), tot.get("status"))]),
        _one(golden.get("spread_pct")),
        _one(tot.get("spread_pct")),
    )
    texts = tuple(_texts(row) for row in (golden, tot))
    counted = (_one(golden.get("reps")), _one(tot.get("reps")))
    clocks = (_one(golden.get("sm_clock_mhz")), _one(tot.get("sm_clock_mhz")))
    ev = assess(g, t, code, rule, unstable, lambda near: texts, counted, clocks)
    return CONFIDENCE[int(ev["confidence"][0])] != "ambiguous"


def _one(v: Any) -> np.ndarray:
    try:
        return np.array([float(v)], dtype=np.float64)
    except (TypeError, ValueError):
        return np.array([np.nan])


def _texts(row: dict[str, Any]) -> np.ndarray:
    reps = row.get("rep_times_us")
    return np.array([reps if isinstance(reps, str) else json.dumps(list(reps or []))], dtype=object)

"""The referee a re-measuring run is given (harness.verdict.remeasure): the rule, confidence.py and confirm.py judge the
cases' rows under each env the way ``harness compare`` will judge the files, and say which are decided. Golden is
the first env; every other env is compared with it (bisect runs several), and a case is decided when every
comparison is. Judged all at once, so that a case's between-process spread is moderated by its kernel's, as
compare moderates it. Pure: rows in, keys out."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from harness.results.schema import TIMED_STATUSES
from harness.verdict.confidence import CONFIDENCE, assess, clock_explains
from harness.verdict.confirm import Side, judge, overlay
from harness.verdict.rule import Rule, timed_codes

#: a case's key → its results row under each env of the run, golden first → the keys decided
Referee = Callable[[Mapping[str, list[dict[str, Any]]]], set[str]]


def rule_referee(rule: Rule) -> Referee:
    """A referee for ``rule``: a case is decided unless some env's comparison with the first is ambiguous."""

    def decided(cases: Mapping[str, list[dict[str, Any]]]) -> set[str]:
        done = set(cases)
        for k in range(1, max((len(rows) for rows in cases.values()), default=1)):
            done &= decided_pairs({key: (rows[0], rows[k]) for key, rows in cases.items() if len(rows) > k}, rule)
        return done

    return decided


def pair_decided(golden: dict[str, Any], tot: dict[str, Any], rule: Rule) -> bool:
    """Whether compare would call this pair of rows anything but ``ambiguous`` (judged alone: no family beside
    it to moderate its spread)."""
    return bool(decided_pairs({"": (golden, tot)}, rule))


def decided_pairs(pairs: Mapping[str, tuple[dict[str, Any], dict[str, Any]]], rule: Rule) -> set[str]:
    """The keys of ``pairs`` (golden row, TOT row) that compare would call anything but ``ambiguous``: a failure
    or a skip has nothing more reps could decide."""
    keys = list(pairs)
    if not keys:
        return set()
    golden = [pairs[k][0] for k in keys]
    tot = [pairs[k][1] for k in keys]
    conf = confidences(golden, tot, rule)
    return {k for k, c in zip(keys, conf, strict=True) if c != "ambiguous"}


def confidences(golden: list[dict[str, Any]], tot: list[dict[str, Any]], rule: Rule) -> list[str]:
    """compare's confidence of each (golden row, TOT row) pair: '' where either is not timed."""
    timed = np.array([g.get("status") in TIMED_STATUSES and t.get("status") in TIMED_STATUSES
                      for g, t in zip(golden, tot, strict=True)])  # fmt: skip
    g, t = _numbers(golden, "time_us"), _numbers(tot, "time_us")
    code = timed_codes(np.where(timed, g, np.nan), np.where(timed, t, np.nan), rule)
    texts = (_texts(golden, "rep_times_us"), _texts(tot, "rep_times_us"))
    clocks = (_numbers(golden, "sm_clock_mhz"), _numbers(tot, "sm_clock_mhz"))
    ev = assess(g, t, code, rule, lambda rows: (texts[0][rows], texts[1][rows]), clocks)
    kernels = np.array([str(r.get("kernel", "")) for r in golden], dtype=object)
    sides = [Side.parse(list(_texts(rows, "rep_times_us")), list(_texts(rows, "rep_procs"))) for rows in (golden, tot)]
    lab = judge(kernels, sides[0], sides[1], g, t, code, rule)
    conf = overlay(ev["confidence"], lab, clock_explains(g, t, *clocks, code, rule))
    return [CONFIDENCE[int(c)] if ok else "" for c, ok in zip(conf, timed, strict=True)]


def _numbers(rows: list[dict[str, Any]], name: str) -> np.ndarray:
    out = np.full(len(rows), np.nan)
    for i, r in enumerate(rows):
        with contextlib.suppress(TypeError, ValueError):
            out[i] = float(r.get(name))
    return out


def _texts(rows: list[dict[str, Any]], name: str) -> np.ndarray:
    """A list column's cells as the files hold them (JSON text; '' where the row has none)."""
    cells = []
    for r in rows:
        v = r.get(name)
        cells.append(v if isinstance(v, str) else json.dumps(list(v)) if v is not None else "")
    return np.array(cells, dtype=object)

"""The arithmetic of a calibration, pure (frames in, frames out; no I/O).

A calibration measures each case R times as an interleaved run of golden against itself (A/A) and against golden
with a known slowdown injected inside the op (harness/worker/delay.py). Per repeat and per slowed env, each
case's Δ% and its 95 % interval come from confidence.py, exactly as compare computes them, but for every case
(compare skips the interval of cases far from a limit, whose verdict it cannot change; here it is the point).

Per case:

* ``aa_flags``: A/A repeats the rule flagged (regression or improvement): each is a false positive, so
  ``aa_fp_rate`` = aa_flags / repeats;
* a slowdown is *caught* in a repeat when its interval lies wholly above 0 (the measurement tells it from no
  change); ``resolution_pct`` is the smallest injected slowdown, in % of the case's time, caught in every repeat
  (NaN: none was);
* ``resolves``: resolution_pct <= the rule's slack at the case's time (100 (rel - 1) + 100 abs / golden %): the
  case can judge a difference the size of the rule's. The grid bounds it from above: a case that caught only 8 µs
  may resolve less; the default ``limit`` slowdown injects exactly the slack, so the question is asked directly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.results.schema import TIMED_STATUSES
from harness.verdict.confidence import CONFIDENCE, evidence, rep_stats
from harness.verdict.rule import VERDICTS, Rule, timed_codes

#: the slowdowns a calibration injects unless told otherwise: the earlier probe's 2 and 8 µs, 1 %, the rule's slack
DEFAULT_SLOWDOWNS = ("2us", "8us", "1%", "limit")
_FLAGS = (VERDICTS.index("regression"), VERDICTS.index("improvement"))


@dataclass(frozen=True)
class Slowdown:
    """``us``: that many µs per launch; ``pct``: that % of the case's time; ``limit``: the rule's slack."""

    kind: str
    value: float
    label: str

    def delay_us(self, golden_us: float, rule: Rule) -> float:
        if self.kind == "us":
            return self.value
        if self.kind == "pct":
            return golden_us * self.value / 100.0
        return (rule.rel - 1.0) * golden_us + rule.abs_us  # tot > rel·g + abs: the smallest flagged slowdown


def parse_slowdown(text: str) -> Slowdown:
    """``2us`` / ``2µs``, ``1%`` or ``limit``; ValueError naming what is expected."""
    t = text.strip().lower().replace("µs", "us")
    if t == "limit":
        return Slowdown("limit", 0.0, "limit")
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(us|%)", t)
    if not m or float(m.group(1)) <= 0:
        raise ValueError(f"{text!r}: expected a positive slowdown in µs (2us), in % of the case's time (1%) or 'limit'")
    value = float(m.group(1))
    return Slowdown("us" if m.group(2) == "us" else "pct", value, f"{m.group(1)}{m.group(2)}")


def judge_pair(golden: pd.DataFrame, other: pd.DataFrame, rule: Rule) -> pd.DataFrame:
    """One repeat of one env against golden: per case timed under both, golden_us, Δ%, its interval, the rule's
    verdict and its confidence. Frames: results files as loaded (kernel, case_id, status, time_us,
    rep_times_us)."""
    key = ["kernel", "case_id"]
    labelled = all("rep_procs" in df.columns for df in (golden, other))
    cols = [*key, "status", "time_us", "rep_times_us", *(["rep_procs"] if labelled else [])]
    m = golden[cols].merge(other[cols], on=key, suffixes=("_g", "_t"))
    m = m[m["status_g"].isin(TIMED_STATUSES) & m["status_t"].isin(TIMED_STATUSES)].reset_index(drop=True)
    g, t = m["time_us_g"].to_numpy(dtype=np.float64), m["time_us_t"].to_numpy(dtype=np.float64)
    code = timed_codes(g, t, rule)
    gs = rep_stats(m["rep_times_us_g"].to_numpy(dtype=object))
    ts = rep_stats(m["rep_times_us_t"].to_numpy(dtype=object))
    ev = evidence(g, t, gs, ts, code, rule)
    if labelled:  # reps of several processes: the interval compare gives them (between-process spread included)
        ev = _labelled(m, g, t, code, rule, ev)
    return pd.DataFrame(
        {
            "kernel": m["kernel"],
            "case_id": m["case_id"],
            "golden_us": g,
            "delta_pct": 100.0 * (t / g - 1.0),
            "delta_lo_pct": ev["delta_lo_pct"],
            "delta_hi_pct": ev["delta_hi_pct"],
            "noise_pct": ev["noise_pct"],
            "flagged": np.isin(code, _FLAGS),
            "confident": np.asarray(ev["confidence"]) == CONFIDENCE.index("confident"),
        }
    )


def _labelled(
    m: pd.DataFrame, g: np.ndarray, t: np.ndarray, code: np.ndarray, rule: Rule, ev: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """``ev`` with confirm.judge's figures where both rows label their reps by process (the rest keep theirs)."""
    from harness.verdict.confirm import Side, judge, overlay

    def cells(name: str) -> list[str]:
        return m[name].fillna("").astype(str).tolist()

    sides = [Side.parse(cells(f"rep_times_us_{k}"), cells(f"rep_procs_{k}")) for k in ("g", "t")]
    lab = judge(m["kernel"].astype(str).to_numpy(dtype=object), sides[0], sides[1], g, t, code, rule)
    rows = lab["labelled"]
    out = {name: np.where(rows, lab[name], ev[name]) for name in ("delta_lo_pct", "delta_hi_pct", "noise_pct")}
    out["confidence"] = overlay(ev["confidence"], lab, np.zeros(len(rows), dtype=bool))  # compare's, less the clock
    return out


def summarize(
    aa: list[pd.DataFrame], slowed: dict[str, list[pd.DataFrame]], injected_pct: dict[str, pd.Series], rule: Rule
) -> pd.DataFrame:
    """Per case, from judge_pair frames: ``aa`` one per repeat; ``slowed`` per slowdown label one per repeat;
    ``injected_pct`` per label, the slowdown as injected, in % of each case's time (indexed by kernel/case_id)."""
    key = ["kernel", "case_id"]
    a = pd.concat(aa, ignore_index=True)
    out = a.groupby(key, sort=False).agg(
        golden_us=("golden_us", "median"),
        repeats=("flagged", "size"),
        aa_flags=("flagged", "sum"),
        noise_pct=("noise_pct", "max"),
    )
    out["aa_confident_flags"] = a[a["flagged"] & a["confident"]].groupby(key).size().reindex(out.index).fillna(0)
    out["aa_fp_rate"] = out["aa_flags"] / out["repeats"]
    caught, resolution = _resolution(slowed, injected_pct, out.index)
    out["resolution_pct"] = resolution
    out["resolution_us"] = out["resolution_pct"] * out["golden_us"] / 100.0
    out["limit_pct"] = rule.limits_pct(out["golden_us"].to_numpy(dtype=np.float64))[0]
    out["resolves"] = out["resolution_pct"] <= out["limit_pct"] * (1 + 1e-9)
    out["caught"] = caught
    for c in ("repeats", "aa_flags", "aa_confident_flags"):
        out[c] = out[c].astype(np.int64)
    return out.reset_index()


def _resolution(
    slowed: dict[str, list[pd.DataFrame]], injected_pct: dict[str, pd.Series], index: pd.Index
) -> tuple[pd.Series, pd.Series]:
    """Per case: ``label:caught/repeats`` of every slowdown (text), and the smallest injected % caught in every
    repeat (NaN where none was)."""
    best = pd.Series(np.nan, index=index)
    parts = pd.Series("", index=index, dtype=object)
    for label, frames in slowed.items():
        d = pd.concat(frames, ignore_index=True)
        d["caught"] = d["delta_lo_pct"] > 0  # NaN (no reps to judge from) is not caught
        g = d.groupby(["kernel", "case_id"]).agg(n=("caught", "size"), hit=("caught", "sum")).reindex(index)
        n, hit = g["n"].fillna(0).astype(int), g["hit"].fillna(0).astype(int)
        parts = parts + np.where(parts == "", "", ";") + f"{label}:" + hit.astype(str) + "/" + n.astype(str)
        pct = injected_pct[label].reindex(index)
        always = (n > 0) & (hit == n)
        best = best.where(~always | (best <= pct), pct)
    return parts, best

"""How sure a verdict is. Pure: numpy in, numpy out, no I/O. The rule stays the rule (rule.py decides every
verdict); this module puts the evidence beside it (docs/verdicts.md derives the error rates).

Each stack's time of a case is the stability rule's mean of its reps; its uncertainty comes from the spread of
*all* its reps (sample standard deviation, at least NOISE_FLOOR_PCT of the time: three equal reps do not make a
timer exact). The TOT/golden difference Δ% = 100 (tot / golden − 1) then has a standard error by the delta method,
and a two-sided 95 % interval with Student's t at the Welch–Satterthwaite degrees of freedom (3 + 3 reps: about
t = 2.8, not 1.96: three reps know their own spread poorly).

In Δ% terms the rule's regression limit is L = 100 (rel − 1) + 100 abs / golden, and its improvement limit
I = 100 ((golden − abs) / (rel · golden) − 1). A verdict is

- ``confident`` when the interval lies wholly on the verdict's side: regression lo > L; improvement hi < I; ok
  I ≤ lo and hi ≤ L;
- ``ambiguous`` when it straddles a limit the verdict depends on: the measurement cannot tell which side the case
  is on (measure it again: more reps decide it);
- ``unknown`` when a stack has fewer than 2 reps (no spread to estimate the noise from);
- ``''`` for verdicts that are not a timed comparison (failures, skips, ignored cases).

Process noise: given each case's between-process noise σ_p (``process_pct``, % of Δ, estimated from an A/A of the
same run: process_noise.py), the half-width h becomes sqrt(h² + (Z95 · σ_p)²) before the verdict is judged; NaN
where the case has no such estimate (no widening).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from harness.verdict.reps import Column, cells_of, rep_stats_arrow, text_array
from harness.verdict.rule import VERDICTS, Rule

CONFIDENCE = ("confident", "ambiguous", "unknown", "")
#: the verdict codes of a timed comparison, the only ones a confidence is judged for
JUDGED = (VERDICTS.index("regression"), VERDICTS.index("improvement"), VERDICTS.index("ok"))
#: a rep's relative noise is taken as at least this (%): timers and clocks are never exact
NOISE_FLOOR_PCT = 0.05
#: the two-sided 95 % normal quantile: σ_p is estimated from many cases, its own quantile is the normal's
Z95 = 1.959964
#: two-sided 95 % quantiles of Student's t by degrees of freedom (1..30); above 30, interpolated to 1.96
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
         2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)  # fmt: skip


def t975(df: np.ndarray) -> np.ndarray:
    """Student's t two-sided 95 % quantile at (possibly fractional) degrees of freedom ``df`` >= 1."""
    df = np.clip(np.asarray(df, dtype=np.float64), 1.0, None)
    table = np.asarray(_T975)
    inside = np.interp(df, np.arange(1, 31), table)
    return np.where(df <= 30, inside, 1.96 + (table[-1] - 1.96) * 30.0 / df)


def rep_stats(texts: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(count, mean, sample standard deviation) of each row's rep times, given as lists ("[1.0, 2.0]"); an empty
    or unparsable cell gives count 0 (no estimate, never a guess). ``texts``: Python strings (any other value an
    empty cell), an Arrow text array (what compare takes from its files) or reps.Cells, all read by the one
    parser of rep cells (reps.py): Arrow for a runner's lists, its Python readers for the odd cells."""
    cells = cells_of(texts)
    if cells is None:
        cells = Column(text_array(texts)).at(None)
    return rep_stats_arrow(cells)


def evidence(
    golden_us: np.ndarray,
    tot_us: np.ndarray,
    golden_reps: tuple[np.ndarray, np.ndarray, np.ndarray],
    tot_reps: tuple[np.ndarray, np.ndarray, np.ndarray],
    verdict_codes: np.ndarray,
    rule: Rule,
    process_pct: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Per case: ``noise_pct`` (the larger of the two stacks' relative rep noise, %), ``delta_lo_pct`` and
    ``delta_hi_pct`` (the 95 % interval of Δ%), and ``confidence`` (module docstring). ``*_reps`` are
    :func:`rep_stats` triples. With ``process_pct`` (each case's σ_p, NaN: none) the interval is widened by it,
    and ``by_process`` marks the cases it made ambiguous (confident from their reps alone)."""
    g, t = np.asarray(golden_us, dtype=np.float64), np.asarray(tot_us, dtype=np.float64)
    (ng, _, sdg), (nt, _, sdt) = golden_reps, tot_reps
    code = {v: i for i, v in enumerate(VERDICTS)}
    v = np.asarray(verdict_codes)
    judged = np.isin(v, JUDGED)
    # only cases with 2+ reps a side can be known: the arithmetic runs on those alone (often none of a million)
    rows = np.flatnonzero(judged & (ng >= 2) & (nt >= 2))
    noise, delta, half, reg_lim, imp_lim = _interval(g[rows], t[rows], ng[rows], sdg[rows], nt[rows], sdt[rows], rule)
    lo, hi = delta - half, delta + half
    vr = v[rows]

    def sure_of(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        return np.select(
            [vr == code["regression"], vr == code["improvement"], vr == code["ok"]],
            [lo > reg_lim, hi < imp_lim, (lo >= imp_lim) & (hi <= reg_lim)],
            default=False,
        )

    sure = sure_of(lo, hi)
    by_process = np.zeros(len(v), dtype=bool)
    if process_pct is not None:
        wide = widened(half, np.asarray(process_pct, dtype=np.float64)[rows])
        lo, hi = delta - wide, delta + wide
        was, sure = sure, sure_of(lo, hi)
        by_process[rows] = was & ~sure & np.isfinite(half)
    known = np.isfinite(half)
    conf = np.where(judged, 2, 3).astype(np.int8)
    conf[rows] = np.where(known, np.where(sure, 0, 1), 2)
    out = {"confidence": conf}
    if process_pct is not None:
        out["by_process"] = by_process
    for name, values in (("noise_pct", noise), ("delta_lo_pct", lo), ("delta_hi_pct", hi)):
        out[name] = np.full(len(v), np.nan)
        out[name][rows] = np.where(known, values, np.nan)
    return out


def _interval(
    g: np.ndarray, t: np.ndarray, ng: np.ndarray, sdg: np.ndarray, nt: np.ndarray, sdt: np.ndarray, rule: Rule
) -> tuple[np.ndarray, ...]:
    """(noise %, Δ%, half-width of Δ%'s 95 % interval, regression limit, improvement limit) per case."""
    with np.errstate(invalid="ignore", divide="ignore"):
        rg = np.fmax(sdg / g, NOISE_FLOOR_PCT / 100)  # relative noise of one rep
        rt = np.fmax(sdt / t, NOISE_FLOOR_PCT / 100)
        a, b = rt**2 / nt, rg**2 / ng  # relative variances of the two means
        ratio = t / g
        se = 100.0 * ratio * np.sqrt(a + b)
        df = (a + b) ** 2 / (a**2 / np.fmax(nt - 1, 1) + b**2 / np.fmax(ng - 1, 1))
        half = t975(np.nan_to_num(df, nan=1.0)) * se
        delta = 100.0 * (ratio - 1.0)
        reg_lim, imp_lim = rule.limits_pct(g)
        return 100.0 * np.fmax(rg, rt), delta, half, reg_lim, imp_lim


def widened(half: np.ndarray, process_pct: np.ndarray) -> np.ndarray:
    """The 95 % half-width of Δ% with the between-process noise σ_p added: sqrt(h² + (Z95 · σ_p)²); ``half`` where
    σ_p is NaN (no estimate for that case). Golden and TOT are two processes, as the A/A's two are, so σ_p (the
    spread of an A/A's Δ%) is the spread this adds to Δ% directly."""
    return np.sqrt(np.asarray(half, dtype=np.float64) ** 2 + _process_term(process_pct) ** 2)


def _process_term(process_pct: np.ndarray) -> np.ndarray:
    """Z95 · σ_p: what the process noise adds to a half-width at most; 0 where σ_p is NaN (no estimate)."""
    return np.nan_to_num(Z95 * np.asarray(process_pct, dtype=np.float64), nan=0.0)


def clock_explains(
    golden_us: np.ndarray,
    tot_us: np.ndarray,
    golden_mhz: np.ndarray,
    tot_mhz: np.ndarray,
    verdict_codes: np.ndarray,
    rule: Rule,
) -> np.ndarray:
    """Flagged cases whose difference does not hold in SM cycles (time × the mean SM clock NVML saw while the
    launches ran, as nvbench's robust compare checks): the time moved with the clock, so the verdict may be the
    GPU's power state, not the code. False where either clock is unknown."""
    g, t = np.asarray(golden_us, dtype=np.float64), np.asarray(tot_us, dtype=np.float64)
    fg, ft = np.asarray(golden_mhz, dtype=np.float64), np.asarray(tot_mhz, dtype=np.float64)
    code = {v: i for i, v in enumerate(VERDICTS)}
    with np.errstate(invalid="ignore", divide="ignore"):
        known = (fg > 0) & (ft > 0)
        if not known.any():  # no clocks recorded (CPU runs, files without them): nothing can have moved
            return known
        cycles = 100.0 * (t * ft / (g * fg) - 1.0)
        reg_lim, imp_lim = rule.limits_pct(g)
        v = np.asarray(verdict_codes)
        return known & (
            ((v == code["regression"]) & (cycles <= reg_lim)) | ((v == code["improvement"]) & (cycles >= imp_lim))
        )


def may_regress(
    verdict: np.ndarray, confidence: np.ndarray, delta_hi_pct: np.ndarray, limit_pct: np.ndarray
) -> np.ndarray:
    """Cases a strict gate must fail: every regression, and every ambiguous ``ok`` whose interval reaches past the
    regression limit (it may be one)."""
    v, c = np.asarray(verdict, dtype=object), np.asarray(confidence, dtype=object)
    hi = np.asarray(delta_hi_pct, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return (v == "regression") | ((v == "ok") & (c == "ambiguous") & (hi > np.asarray(limit_pct)))


def assess(
    golden_us: np.ndarray,
    tot_us: np.ndarray,
    verdict_codes: np.ndarray,
    rule: Rule,
    rep_texts: Callable[[np.ndarray], tuple[np.ndarray | None, np.ndarray | None]],
    clocks: tuple[np.ndarray, np.ndarray] | None = None,
    process_pct: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """``evidence`` for every row, judged as compare does: every timed verdict by its interval, never assumed
    (``rep_texts(rows)``: each stack's rep-time cells of those rows, None without; or reps.Cells of every row,
    whose figures are taken at those rows): a case without 2 reps a stack is ``unknown``, however far from a
    limit; a confident verdict whose time moved with the SM clock (``clocks``: each stack's MHz) is ambiguous.
    ``process_pct``: each case's between-process noise σ_p (NaN: none), which widens its interval
    (:func:`widened`); ``by_process`` then marks the cases it made ambiguous. The one copy of this judgement, for
    compare's files and for the referee of a re-measuring run."""
    judged = np.isin(verdict_codes, JUDGED)
    stats = []
    none = None  # a stack without rep times: no reps anywhere (one set of arrays for both, only read)
    for texts in rep_texts(judged) if judged.any() else (None, None):
        if texts is None and none is not None:
            stats.append(none)
            continue
        if hasattr(texts, "stats_where"):  # reps.Cells of every row: the figures in place, nothing taken
            stats.append(texts.stats_where(judged))
            continue
        full = (np.zeros(len(judged), dtype=np.int64), np.full(len(judged), np.nan), np.full(len(judged), np.nan))
        if texts is not None:
            for out, part in zip(full, rep_stats(texts)):
                out[judged] = part
        else:
            none = full
        stats.append(full)
    ev = _evidence_halves(golden_us, tot_us, stats[0], stats[1], verdict_codes, rule, process_pct)
    conf = ev["confidence"]
    if clocks is not None:
        moved = clock_explains(golden_us, tot_us, clocks[0], clocks[1], verdict_codes, rule)
        conf[moved & (conf == CONFIDENCE.index("confident"))] = CONFIDENCE.index("ambiguous")
        if "by_process" in ev:  # the clock would have made these ambiguous anyway
            ev["by_process"] &= ~moved
    return ev


#: cases with 2+ reps a side from which assess works out ``evidence`` in two halves at once, on two threads
#: (numpy's arithmetic runs without the GIL; every figure is the case's own, so the halves joined are the
#: whole's, bit for bit)
HALVES = 200_000


def _evidence_halves(
    golden_us: np.ndarray,
    tot_us: np.ndarray,
    golden_reps: tuple[np.ndarray, np.ndarray, np.ndarray],
    tot_reps: tuple[np.ndarray, np.ndarray, np.ndarray],
    verdict_codes: np.ndarray,
    rule: Rule,
    process_pct: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    n = len(verdict_codes)
    if n < HALVES or int(((golden_reps[0] >= 2) & (tot_reps[0] >= 2)).sum()) < HALVES:  # little arithmetic
        return evidence(golden_us, tot_us, golden_reps, tot_reps, verdict_codes, rule, process_pct)
    from concurrent.futures import ThreadPoolExecutor

    g, t, v = (np.asarray(a) for a in (golden_us, tot_us, verdict_codes))
    p = None if process_pct is None else np.asarray(process_pct)

    def part(s: slice) -> dict[str, np.ndarray]:
        return evidence(
            g[s], t[s], tuple(a[s] for a in golden_reps), tuple(a[s] for a in tot_reps), v[s], rule,
            None if p is None else p[s],
        )  # fmt: skip

    with ThreadPoolExecutor(1) as pool:
        second = pool.submit(part, slice(n // 2, None))
        first = part(slice(0, n // 2))
        rest = second.result()
    return {k: np.concatenate([first[k], rest[k]]) for k in first}

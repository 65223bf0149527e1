"""Confident means confirmed: the between-process spread in every interval, and a flag that must repeat in fresh
processes. Pure: arrays in, arrays out, no I/O (docs/verdicts.md, "Confirmed verdicts", derives the choices).

A run labels every rep with the worker process that timed it (``rep_procs``; run/schedule.py): each env's first
reps come from two or more processes, and every re-measuring pass after the stability rule (``procs`` at or above
results.schema.FIRST_EXTRA_EPOCH) from fresh ones. For each case and stack:

- each process's mean rep time, and the stack's time as the mean of those (every process one vote);
- the relative deviation of each process's mean from it; their squares over (processes − 1), pooled over both
  stacks, is the case's own estimate ``s²`` of the variance of one process's mean, with ``d`` degrees of freedom
  (2 processes a stack: d = 2);
- **moderated** by its kernel's (limma's empirical Bayes, with a prior of PRIOR_DF degrees of freedom): the prior
  ``s0²`` is the family's median ``s²`` over the median of χ²_d / d (the median, so that a few cases with
  pathological placement do not set their family's noise), and the case's variance is
  ``(PRIOR_DF·s0² + d·s²) / (PRIOR_DF + d)`` with ``PRIOR_DF + d`` degrees of freedom: a case that agrees with
  itself by luck is not taken at its word, a case that disagrees keeps most of its own spread;
- Δ's standard error ``100 · (tot / golden) · s · sqrt(1 / k_golden + 1 / k_tot)`` (k: processes a stack), the
  95 % half-width Student's t at those degrees of freedom times it; ``noise_pct`` is ``100 · s``.

The interval is judged by the rule's limits as confidence.evidence judges it. A regression or an improvement is
``confident`` only when, beyond that, the rule applied to the re-measured processes alone gives the same flag: a
flag that does not repeat there is ``ambiguous`` with a note, and one never measured again is ``ambiguous`` too
("not confirmed"): a flag is a claim that must survive being measured again.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from harness.results.schema import FIRST_EXTRA_EPOCH
from harness.verdict.alike import Alike, alike
from harness.verdict.confidence import CONFIDENCE, JUDGED, NOISE_FLOOR_PCT, Z95, t975
from harness.verdict.rule import VERDICTS, Rule, timed_codes

#: degrees of freedom of the family's prior on a case's between-process variance (limma's d0)
PRIOR_DF = 4.0
#: a family pools its cases' spreads into a prior only from this many cases with two processes a stack on
MIN_FAMILY = 5

_CODE = {v: i for i, v in enumerate(VERDICTS)}
_FLAGS = (_CODE["regression"], _CODE["improvement"])


@dataclass(frozen=True)
class Side:
    """One stack's reps of each row, flat: ``values`` (µs), ``rows`` (the row each belongs to), ``procs`` (its
    process); rows without labelled reps hold none. ``unlabelled``: in a side some of whose ``rep_procs`` cells
    are filled, the rows whose rep times read but are not labelled with their processes (a ``rep_procs`` cell
    empty, unreadable or of another length): their flags cannot be confirmed."""

    values: np.ndarray
    rows: np.ndarray
    procs: np.ndarray
    n: int
    unlabelled: np.ndarray | None = None
    #: the rows whose list of processes many rows share, judged a list position at a time (alike.py), and so not
    #: in the flat arrays; None: every row is there
    alike: Alike | None = None

    @classmethod
    def parse(cls, times: Any, procs: Any, rows: np.ndarray | None = None) -> Side:
        """From the cells of ``rep_times_us`` and ``rep_procs``: Python strings (any other value an empty cell),
        Arrow text arrays, or the times as a reps.Column (parsed once, for the interval too). ``rows``: the cell
        of each row (-1: none; None: every cell, in order). A row whose two lists do not parse as positive times
        and whole numbers of the same length holds no reps here (it is judged as a file without labels is).
        Arrow reads the plain cells (reps.py, procs.py), _pair the few others."""
        from harness.verdict import reps
        from harness.verdict.procs import Labels

        column = times if isinstance(times, reps.Column) else reps.Column(reps.text_array(times))
        filled, plain, count = column.parsed()[:3]
        by = procs if isinstance(procs, Labels) else Labels(reps.text_array(procs))
        pf, pp, pn = by.parsed()
        column_counts, names_any = pn, bool(pf.any())  # the column's, before rows are taken
        if rows is not None and len(rows) == len(filled) and reps.in_order(rows):
            rows = None  # every cell, in order (golden and TOT of one suite): no cell taken
        if len(filled) == 0:  # no cell at all: every row without reps
            return cls(np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64), 0 if rows is None else len(rows))
        n = len(filled) if rows is None else len(rows)
        at = None if rows is None else np.asarray(rows, dtype=np.int64)
        there = np.ones(n, bool) if at is None else at >= 0
        if at is not None:
            at = np.where(there, at, 0)
            filled, plain, count, pf, pp, pn = (a[at] for a in (filled, plain, count, pf, pp, pn))
        both_plain = there & plain & pp
        usable = both_plain & (count == pn)
        cells = np.arange(n) if at is None else at
        distinct = by.distinct()  # where given, alike needs no process a rep
        labelled = (column_counts, None if distinct is not None else by.values())
        same = alike(n, np.flatnonzero(usable), cells[usable], column.flat(), labelled, FIRST_EXTRA_EPOCH, distinct)
        usable &= ~same.taken
        values, labels = _plain_reps(column.flat(), (column_counts, by), usable, None if at is None else at[usable])
        owner = np.repeat(np.flatnonzero(usable), count[usable])
        odd = np.flatnonzero(there & filled & pf & ~both_plain)
        if len(odd):
            values, owner, labels = _with_odd(values, owner, labels, odd, column, by, cells)
        unlabelled = _unlabelled_rows(there & filled & names_any & ~same.taken, plain, owner, column, cells)
        return cls(values.astype(np.float64, copy=False), owner.astype(np.int64, copy=False),
                   labels.astype(np.int64, copy=False), n, unlabelled, same)  # fmt: skip

    @cached_property
    def by_process(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(row, process, mean rep time) of each process of each row, row after row, each row's processes in
        order: made once for every question (a process's reps are all of one pass)."""
        first, inverse = _groups(_key(self.rows, self.procs))
        sums = np.bincount(inverse, weights=self.values, minlength=len(first))
        return self.rows[first], self.procs[first], sums / np.bincount(inverse, minlength=len(first))

    def processes(self, which: str = "all") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(row of each process, its mean, the row's mean over its processes at that row) over the processes of
        ``which``: 'all', 'first' (the first pass) or 'again' (the re-measuring passes); of the rows in the flat
        arrays only (``alike``'s have their figures there)."""
        grow, proc, means = self.by_process
        if which != "all":
            keep = {"first": proc < FIRST_EXTRA_EPOCH, "again": proc >= FIRST_EXTRA_EPOCH}[which]
            grow, means = grow[keep], means[keep]
        count = np.bincount(grow, minlength=self.n)
        with np.errstate(invalid="ignore", divide="ignore"):
            row_mean = np.bincount(grow, weights=means, minlength=self.n) / count
        return grow, means, row_mean

    def stack_time(self, which: str = "all") -> np.ndarray:
        """Each row's time over the processes of ``which`` (NaN where it has none)."""
        time = self.processes(which)[2]
        return time if self.alike is None else np.where(self.alike.taken, self.alike.time[which], time)


def _unlabelled_rows(
    candidates: np.ndarray, plain: np.ndarray, owner: np.ndarray, column: Any, at: np.ndarray
) -> np.ndarray:
    """The rows of ``candidates`` (rep times there, in a side some of whose rows name processes) whose reps are
    readable (plain, or an odd cell the one rule reads) but got no labels (``owner``: the rows that did)."""
    from harness.verdict import reps

    out = candidates.copy()
    out[owner] = False
    odd = np.flatnonzero(out & ~plain)
    if len(odd):
        out[odd] = [reps.odd_values(c) is not None for c in reps.texts_at(column.arr, at[odd])]
    return out


def _plain_reps(
    times: tuple[np.ndarray, np.ndarray], procs: tuple[np.ndarray, Any], usable: np.ndarray,
    cells: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """The reps and their processes of the ``usable`` rows, flat, row after row: (count, values) of the column's
    cells, and (count, procs.Labels) of their processes; ``cells``: the cell of each usable row (None: row i is
    cell i, the flat values only masked)."""
    from harness.verdict import reps

    if not usable.any():  # every row judged alike (alike.py), or none holds reps
        return np.zeros(0), np.zeros(0, np.int64)
    procs = (procs[0], procs[1].values())
    if cells is None:
        return tuple(v[np.repeat(usable, c)] for c, v in (times, procs))  # type: ignore[return-value]
    return reps.gather(*times, cells), reps.gather(*procs, cells)


def _with_odd(
    values: np.ndarray, owner: np.ndarray, labels: np.ndarray, odd: np.ndarray, column: Any, procs: Any,
    at: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """The plain rows' reps with those of the odd rows (``odd``: rows whose cells Arrow did not read) that _pair
    reads, every rep in row order."""
    from harness.verdict import reps

    times = reps.texts_at(column.arr, at[odd])
    labelled = reps.texts_at(procs.arr, at[odd])
    v, r, p = [values], [owner], [labels]
    for i, tc, pc in zip(odd, times, labelled, strict=True):
        got = _pair(tc, pc)
        if got is not None:
            v.append(np.asarray(got[0], dtype=np.float64))
            p.append(np.asarray(got[1], dtype=np.int64))
            r.append(np.full(len(got[0]), i, dtype=np.int64))
    rows = np.concatenate(r)
    order = np.argsort(rows, kind="stable")
    return np.concatenate(v)[order], rows[order], np.concatenate(p)[order]


def _pair(times: Any, procs: Any) -> tuple[list[float], list[int]] | None:
    """An odd row's reps and their processes (reps.odd_values, procs.odd_ints), or None where either cell holds
    none or the two lists differ in length."""
    from harness.verdict.procs import odd_ints
    from harness.verdict.reps import odd_values

    t, p = odd_values(times), odd_ints(procs)
    if t is None or p is None or len(t) != len(p):
        return None
    return t, p


def _key(rows: np.ndarray, procs: np.ndarray) -> np.ndarray:
    """One int64 per (row, process), in their order: the processes as they are where the product fits (a run's
    are under 100), else their ranks (a hand-edited 18-digit process would wrap round)."""
    if len(procs) and int(procs.max()) + 1 > (2**62) // (int(rows.max(initial=0)) + 1):
        _, procs = np.unique(procs, return_inverse=True)
        procs = procs.reshape(-1)
    return rows * (int(procs.max(initial=0)) + 1) + procs


def _groups(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(where each distinct key first occurs, each key's group), groups in the keys' order, as np.unique gives
    them: in one pass where the keys are in order, as a run writes its reps (row after row, each row's processes
    in turn), else by sorting them."""
    if len(key) and (key[1:] >= key[:-1]).all():
        new = np.concatenate(([True], key[1:] != key[:-1]))
        return np.flatnonzero(new), np.cumsum(new, dtype=np.int64) - 1
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return first, inverse.reshape(-1)


def spread(side: Side) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(processes, sum of squared relative deviations of the process means from the row's time, that sum's
    degrees of freedom) per row."""
    grow, means, row_mean = side.processes()
    k = np.bincount(grow, minlength=side.n)
    with np.errstate(invalid="ignore", divide="ignore"):
        dev = means / row_mean[grow] - 1.0
    ss = np.bincount(grow, weights=dev**2, minlength=side.n)
    if side.alike is not None:
        k, ss = (np.where(side.alike.taken, mine, flat) for mine, flat in ((side.alike.k, k), (side.alike.ss, ss)))
    return k, ss, np.maximum(k - 1, 0)


def moderated(kernels: np.ndarray, s2: np.ndarray, d: np.ndarray, usable: np.ndarray) -> tuple[np.ndarray, ...]:
    """(variance, degrees of freedom, the family's prior) per row: each row's own ``s2`` on ``d`` degrees of
    freedom, pulled towards its kernel's prior (module docstring); NaN variance where there is neither."""
    prior = np.full(len(s2), np.nan)
    # -1: no name, no family; a pandas column of names factorized as it is (no Python string a row)
    names = (
        kernels
        if isinstance(kernels, (pd.Series, pd.api.extensions.ExtensionArray))
        else np.asarray(kernels, dtype=object)
    )
    family = pd.factorize(names)[0]
    own = usable & (d >= 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        scaled = s2 / (1.0 - 2.0 / (9.0 * np.maximum(d, 1))) ** 3  # over the median of χ²_d / d
    for k in np.unique(family[own & (family >= 0)]):
        mine = own & (family == k)
        if mine.sum() >= MIN_FAMILY:
            prior[usable & (family == k)] = float(np.median(scaled[mine]))
    d0 = np.where(np.isfinite(prior), PRIOR_DF, 0.0)
    df = d0 + np.where(own, d, 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        var = (np.nan_to_num(prior) * d0 + np.where(own, s2, 0.0) * np.where(own, d, 0)) / df
    return np.where(df > 0, var, np.nan), df, prior


def judge(
    kernels: np.ndarray,
    golden: Side,
    tot: Side,
    golden_us: np.ndarray,
    tot_us: np.ndarray,
    verdict_codes: np.ndarray,
    rule: Rule,
    process_pct: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """The evidence of every row whose stacks both carry labelled reps (``labelled``): ``noise_pct`` (100 · the
    moderated between-process spread), ``delta_lo_pct``/``delta_hi_pct``, ``confidence`` (codes into CONFIDENCE),
    ``first_pct``/``again_pct`` (Δ% of the first pass and of the re-measured processes alone; NaN where none) and
    ``unconfirmed`` (a flag that the re-measuring did not repeat, or that was never measured again: never
    confident, whatever its interval). ``process_pct``: an A/A's σ_p per row (NaN: none), added as
    confidence.widened adds it; ``by_process`` marks the verdicts that widening made ambiguous."""
    g, t = np.asarray(golden_us, dtype=np.float64), np.asarray(tot_us, dtype=np.float64)
    v = np.asarray(verdict_codes)
    (kg, ssg, dg), (kt, sst, dt) = spread(golden), spread(tot)
    labelled = np.isin(v, JUDGED) & (kg >= 1) & (kt >= 1) & (kg + kt >= 3)
    with np.errstate(invalid="ignore", divide="ignore"):
        s2 = (ssg + sst) / (dg + dt)
    var, df, _ = moderated(kernels, s2, dg + dt, labelled)
    s = np.fmax(np.sqrt(var), NOISE_FLOOR_PCT / 100)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = t / g
        delta = 100.0 * (ratio - 1.0)
        se = 100.0 * ratio * s * np.sqrt(1.0 / kg + 1.0 / kt)
        own = t975(np.nan_to_num(df, nan=1.0)) * se
        half = own
        if process_pct is not None:
            half = np.sqrt(own**2 + np.nan_to_num(Z95 * np.asarray(process_pct, dtype=np.float64)) ** 2)
        reg_lim, imp_lim = rule.limits_pct(g)
    lo, hi = delta - half, delta + half
    known = labelled & np.isfinite(half)
    sure = _sure(v, lo, hi, reg_lim, imp_lim)
    ag, at = golden.stack_time("again"), tot.stack_time("again")
    first, again = _delta(golden.stack_time("first"), tot.stack_time("first")), _delta(ag, at)
    repeats = timed_codes(ag, at, rule) == v  # NaN times: 'ok', never a flag
    flagged = np.isin(v, _FLAGS)
    unconfirmed = known & flagged & ~(np.isfinite(ag) & np.isfinite(at) & repeats)
    unlabelled = flagged & ~known & (_unlabelled(golden) | _unlabelled(tot))
    conf = np.full(len(v), CONFIDENCE.index(""), dtype=np.int8)
    conf[np.isin(v, JUDGED)] = CONFIDENCE.index("unknown")
    conf[known] = np.where(sure[known] & ~unconfirmed[known], 0, 1)
    # the verdicts the A/A's widening made ambiguous (compare --aa says how many, and notes them)
    by_process = known & ~sure & _sure(v, delta - own, delta + own, reg_lim, imp_lim) & ~unconfirmed
    nan = np.full(len(v), np.nan)
    return {
        "labelled": known,
        "confidence": conf,
        "noise_pct": np.where(known, 100.0 * s, nan),
        "delta_lo_pct": np.where(known, lo, nan),
        "delta_hi_pct": np.where(known, hi, nan),
        "first_pct": first,
        "again_pct": again,
        "unconfirmed": unconfirmed,
        "unlabelled": unlabelled,
        "by_process": by_process,
        "processes": np.minimum(kg, kt),
    }


def _sure(v: np.ndarray, lo: np.ndarray, hi: np.ndarray, reg_lim: np.ndarray, imp_lim: np.ndarray) -> np.ndarray:
    """Where the interval [lo, hi] lies wholly on its verdict's side of the rule's limits."""
    with np.errstate(invalid="ignore"):
        return np.select(
            [v == _CODE["regression"], v == _CODE["improvement"], v == _CODE["ok"]],
            [lo > reg_lim, hi < imp_lim, (lo >= imp_lim) & (hi <= reg_lim)],
            default=False,
        )


def _unlabelled(side: Side) -> np.ndarray:
    return side.unlabelled if side.unlabelled is not None else np.zeros(side.n, dtype=bool)


def _delta(golden_us: np.ndarray, tot_us: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return 100.0 * (tot_us / golden_us - 1.0)


def note(verdict: str, first_pct: float, again_pct: float) -> str:
    """Why a flag is not confirmed: it did not repeat in fresh processes, or it was never measured there."""
    if not np.isfinite(again_pct):
        return f"{verdict} not confirmed: never measured again in fresh processes"
    return f"{verdict} did not repeat in fresh processes: first pass {first_pct:+.2f} %, again {again_pct:+.2f} %"


def unlabelled_note(verdict: str) -> str:
    """Why a flag of a row whose reps are not labelled with their processes is not confident."""
    return f"{verdict} not confirmed: rep_procs does not name the process of each rep on this row"


def overlay(confidence: np.ndarray, labelled: dict[str, np.ndarray], moved: np.ndarray) -> np.ndarray:
    """``confidence`` (codes, confidence.assess's) with confirm.judge's in place for the rows it judged, a
    confident flag among them whose time moved with the SM clock made ambiguous, as assess makes its own, and a
    flag of a labelled file's row whose reps are not labelled never confident (it cannot be confirmed)."""
    out = np.asarray(confidence).copy()
    rows = labelled["labelled"]
    out[rows] = labelled["confidence"][rows]
    out[labelled["unlabelled"] & (out == CONFIDENCE.index("confident"))] = CONFIDENCE.index("ambiguous")
    out[rows & moved & (out == CONFIDENCE.index("confident"))] = CONFIDENCE.index("ambiguous")
    return out

"""compare.csv's ``note`` column: a note for each of the few failed, unstable, unconfirmed or flagged rows (the
texts notes.py writes, several joined by "; "), '' for every other row, as codes into a small list of notes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd

from harness.compare import join as J
from harness.compare.notes import clock_note, first_line, overlap_note
from harness.results.schema import STATUSES, TIMED_STATUSES
from harness.verdict.groupcheck import REFUSALS
from harness.verdict.rule import VERDICTS


def note_column(
    j: J.Joined, vcode: np.ndarray, pct: np.ndarray, labelled: dict[str, np.ndarray] | None = None
) -> pd.Categorical:
    """A note only for the few failed, unstable or flagged rows: codes into a small category list, '' elsewhere.
    ``labelled``: confirm.judge's evidence, whose unconfirmed flags say why they are not confident."""
    note_of: dict[int, str] = {}

    def add(i: int, text: str, join: bool = True) -> None:
        if i in note_of and join:
            note_of[i] = f"{note_of[i]}; {text}"
        else:
            note_of.setdefault(i, text)

    def add_all(rows: np.ndarray, text: str) -> None:  # add(i, text) for each of rows, a dict's work at once
        new = dict.fromkeys(rows.tolist(), text)
        for i in note_of.keys() & new.keys():
            add(i, new.pop(i))
        note_of.update(new)

    _failure_notes(j, add)
    _unstable_notes(j, add)
    flagged = np.flatnonzero(np.isin(vcode, [VERDICTS.index("regression"), VERDICTS.index("improvement")]))
    if labelled is not None:
        from harness.verdict.confirm import note, unlabelled_note

        rows = np.flatnonzero(labelled["unconfirmed"])
        again = labelled["again_pct"][rows]
        never = ~np.isfinite(again)  # a flag never measured again: its note names no figure, one text a verdict
        for v in np.unique(vcode[rows[never]]).tolist():
            add_all(rows[never & (vcode[rows] == v)], note(VERDICTS[v], np.nan, np.nan))
        rows = rows[~never]  # as Python numbers at once: no numpy scalar a note
        for i, v, first, again in zip(rows.tolist(), vcode[rows].tolist(), labelled["first_pct"][rows].tolist(),
                                      labelled["again_pct"][rows].tolist(), strict=True):  # fmt: skip
            add(i, note(VERDICTS[v], first, again))
        for i in np.flatnonzero(labelled["unlabelled"]):
            add(int(i), unlabelled_note(VERDICTS[vcode[i]]))
    if len(flagged):
        _flag_notes(j, flagged, vcode, pct, add)
    cats = ["", *sorted(set(note_of.values()))]
    pos = {c: k for k, c in enumerate(cats)}
    codes = np.zeros(len(j.gi), dtype=np.int32)
    codes[np.fromiter(note_of, np.int64, len(note_of))] = np.fromiter(
        map(pos.__getitem__, note_of.values()), np.int32, len(note_of)
    )
    return pd.Categorical.from_codes(codes, categories=cats)


def guard_refused(j: J.Joined) -> np.ndarray:
    """Rows where either side's time is one the multi-GPU guard refused (verdict/groupcheck.refused: ranks that
    disagree beyond the barrier's release, a rep that differs from itself); the stability rule's ``unstable`` (the
    median of five disagreeing reps) is judged like any time."""
    out = np.zeros(len(j.gi), dtype=bool)
    for _, hit, errors in _unstable_rows(j):
        out[hit] |= np.asarray([e.startswith(REFUSALS) for e in errors], dtype=bool)
    return out


def _unstable_rows(j: J.Joined) -> Iterator[tuple[str, np.ndarray, list[str]]]:
    """Per side ('golden', 'TOT'): the output rows whose status is ``unstable``, and each one's error ('' none)."""
    u = STATUSES.index("unstable")
    for label, sc, df, rows in (("golden", j.gsc, j.golden, j.gi), ("TOT", j.tsc, j.tot, j.ti)):
        hit = np.flatnonzero(sc == u)
        errors = J.col(df, "error", rows[hit]) if "error" in df.columns and len(hit) else [""] * len(hit)
        yield label, hit, [e if isinstance(e, str) else "" for e in errors]


def _unstable_notes(j: J.Joined, add: Any) -> None:
    """'unstable reps', or the guard's reason where the results give one (a multi-GPU case whose ranks disagree:
    'golden unstable: ranks disagree: skew 6.0 % > 5 %')."""
    for label, hit, errors in _unstable_rows(j):
        for i, e in zip(hit, errors, strict=True):
            why = first_line(e) if e.strip() else ""
            add(int(i), f"{label} unstable: {why}" if why else "unstable reps", join=bool(why))


def _failure_notes(j: J.Joined, add: Any) -> None:
    status_names = np.asarray([*STATUSES, ""], dtype=object)  # code -1 → ""
    timed_codes = [STATUSES.index(s_) for s_ in TIMED_STATUSES]
    for label, sc, df, rows in (("TOT", j.tsc, j.tot, j.ti), ("golden", j.gsc, j.golden, j.gi)):
        failed = np.flatnonzero(~np.isin(sc, timed_codes) & (sc >= 0))
        if len(failed):
            for i, e in zip(failed, J.col(df, "error", rows[failed]), strict=True):
                # neither side timed: both statuses (a skip beside a failure reads failed_in_both)
                add(int(i), f"{label} {status_names[sc[i]]}: {first_line(str(e))}".rstrip(": "))


def _flag_notes(j: J.Joined, flagged: np.ndarray, vcode: np.ndarray, pct: np.ndarray, add: Any) -> None:
    """Why a flagged case may be noise: overlapping rep ranges, an SM clock that moved with the time."""
    g, t = j.golden, j.tot
    gc, tc = j.reps("golden"), j.reps("tot")
    if gc is not None and tc is not None:  # else no case has rep times a side (overlap_note needs both)
        from harness.verdict.reps import overlapping

        g_reps, t_reps = gc.at(j.gi[flagged]), tc.at(j.ti[flagged])
        both = (g_reps.lengths() > 2) & (t_reps.lengths() > 2)  # bytes: over 2 where characters are
        regression = vcode[flagged] == VERDICTS.index("regression")
        if both.any():  # overlap_note asked only where it may write a note (the rest are plain lists apart)
            both &= overlapping(g_reps, t_reps, regression)
        asked = np.flatnonzero(both)
        for i, gr, tr in zip(flagged[asked], g_reps.lists(asked), t_reps.lists(asked), strict=True):
            note = overlap_note(gr, tr, VERDICTS[vcode[i]] == "regression")
            if note:
                add(int(i), note, join=False)
    if "sm_clock_mhz" in g.columns and "sm_clock_mhz" in t.columns:
        g_clk = J.col(g, "sm_clock_mhz", j.gi[flagged], np.nan)
        t_clk = J.col(t, "sm_clock_mhz", j.ti[flagged], np.nan)
        known = (g_clk > 0) & (t_clk > 0)  # clock_note says nothing without both clocks: ask it only here
        known &= _clock_moved(g_clk, t_clk, pct[flagged])
        for i, gc, tc in zip(flagged[known], g_clk[known], t_clk[known], strict=True):
            note = clock_note(float(gc), float(tc), float(pct[i]))
            if note:
                add(int(i), note)


def _clock_moved(golden_mhz: np.ndarray, tot_mhz: np.ndarray, delta_pct: np.ndarray) -> np.ndarray:
    """Where notes.clock_note may write a note, by its own tests on whole columns (the same float operations):
    False only where it would say nothing."""
    with np.errstate(invalid="ignore", divide="ignore"):
        clock_pct = 100.0 * (golden_mhz / tot_mhz - 1.0)
        quiet = (np.abs(clock_pct) < 0.3) | (clock_pct * delta_pct <= 0) | (np.abs(clock_pct) < 0.5 * np.abs(delta_pct))
    return ~np.isnan(delta_pct) & ~quiet

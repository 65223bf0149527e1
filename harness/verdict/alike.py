"""Rows whose reps are labelled alike, judged a list position at a time. A run labels every case's reps with one
list of processes ("[0,0,1]"; after the stability rule "[0,0,1,5,6]"): for the rows that share a list, each
process's mean, the row's time over its processes and the squared deviations from it are sums over a few columns
of one value a row, with no value a rep for its row and process (confirm.Side's flat arrays, which a million rows
make 3,000,000 long, each several times over). Pure: arrays in, arrays out.

The figures are confirm's bit for bit: the same additions in the same order, each sum from 0.0, as its bincounts
make them (a process's reps in their order in the cell, the processes of a row in ascending order)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

#: a list shared by fewer rows is left to confirm.Side's flat arrays, as is any list of more reps, or with a process
#: above MAX_PROCESS: the key of a list (a length and 7 bits a process) must fit one int64
MIN_ROWS = 64
MAX_REPS = 8
MAX_PROCESS = 127
_BITS = 7


@dataclass(frozen=True)
class Alike:
    """Per output row: whether it is judged here (``taken``), its number of processes (``k``), the sum of squared
    relative deviations of its process means from its time (``ss``), and its time over the processes of 'all',
    'first' (below ``first_epoch``) and 'again' (NaN where it has none; 0 and 0.0 for the others)."""

    taken: np.ndarray
    k: np.ndarray
    ss: np.ndarray
    time: dict[str, np.ndarray]


def alike(
    n: int, rows: np.ndarray, cells: np.ndarray, times: tuple[np.ndarray, np.ndarray],
    labels: tuple[np.ndarray, np.ndarray | None], first_epoch: int, distinct: Any = None,
) -> Alike:  # fmt: skip
    """The rows of ``rows`` (output rows, of ``n``; ``cells`` their cells) whose list of processes MIN_ROWS of them
    share. ``times`` and ``labels``: (count, values) per cell, flat, as reps.Column.flat and procs.Labels give them;
    each of ``rows`` holds as many of each. ``distinct``: procs.Labels.distinct, where the labels were read a
    distinct cell at a time (each list's key is then made once, not once a row; the labels' values unread)."""
    from harness.verdict.reps import starts_of

    out = Alike(np.zeros(n, dtype=bool), np.zeros(n, dtype=np.int64), np.zeros(n),
                {w: np.full(n, np.nan) for w in ("all", "first", "again")})  # fmt: skip
    t_at = starts_of(times[0])[cells]
    if distinct is not None:  # each of ``cells`` is plain: it has a distinct cell
        index, count_d, values_d = distinct
        key = _keys(count_d, values_d, starts_of(count_d))[index[cells]]
    else:
        key = _keys(labels[0][cells], labels[1], starts_of(labels[0])[cells])
    codes, keys = pd.factorize(key)
    sizes = np.bincount(codes, minlength=len(keys))
    order = np.argsort(codes, kind="stable")  # each list's rows in their order
    ends = np.concatenate(([0], np.cumsum(sizes)))
    for p in np.flatnonzero((sizes >= MIN_ROWS) & (keys >= 0)):
        mine, labels = order[ends[p] : ends[p + 1]], _labels(int(keys[p]))
        _judge(out, rows[mine], [times[1][t_at[mine] + j] for j in range(len(labels))], labels, first_epoch)
    return out


def _keys(count: np.ndarray, values: np.ndarray, at: np.ndarray) -> np.ndarray:
    """One int64 a row naming its list of processes: its length, then 7 bits a process; -1 for a list this module
    leaves to the flat arrays (empty, longer than MAX_REPS, or with a process above MAX_PROCESS)."""
    key = count.astype(np.int64)
    ok = (count >= 1) & (count <= MAX_REPS)
    for j in range(MAX_REPS):
        has = ok & (count > j)
        if not has.any():
            break
        label = np.where(has, values[np.where(has, at + j, 0)] if len(values) else 0, 0)
        ok &= (label >= 0) & (label <= MAX_PROCESS)
        key |= np.where(has & ok, label, 0).astype(np.int64) << (4 + _BITS * j)
    return np.where(ok, key, -1)


def _labels(key: int) -> list[int]:
    return [(key >> (4 + _BITS * j)) & MAX_PROCESS for j in range(key & 15)]


def _judge(out: Alike, rows: np.ndarray, reps: list[np.ndarray], labels: list[int], first_epoch: int) -> None:
    """The figures of ``rows``, which share ``labels`` (the process of each of ``reps``, a column each)."""
    means = []
    for proc in sorted(set(labels)):
        at = [j for j, p in enumerate(labels) if p == proc]
        means.append((proc, _sum([reps[j] for j in at]) / len(at)))
    out.taken[rows] = True
    for which, keep in (("all", None), ("first", True), ("again", False)):
        mine = [m for proc, m in means if keep is None or (proc < first_epoch) == keep]
        if which == "all":
            out.k[rows] = len(mine)
        with np.errstate(invalid="ignore", divide="ignore"):  # none: 0.0 / 0, the flat arrays' NaN
            out.time[which][rows] = _sum(mine, len(rows)) / np.full(len(rows), len(mine))
    row_mean = out.time["all"][rows]
    with np.errstate(invalid="ignore", divide="ignore"):
        out.ss[rows] = _sum([(m / row_mean - 1.0) ** 2 for _, m in means])


def _sum(columns: list[np.ndarray], n: int | None = None) -> np.ndarray:
    """The columns added in order, from 0.0 (as a bincount adds its weights); ``n`` zeros where there are none."""
    total = np.zeros(len(columns[0]) if columns else n)
    for c in columns:
        total += c
    return total

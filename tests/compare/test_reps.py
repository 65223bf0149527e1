"""Rep-time cells parsed with Arrow (reps.py), the one reader of rep cells, against every cell read in Python by the
one rule (python_rep_stats, the oracle): rep_stats' counts, means and deviations bit for bit, the rep-range and
clock notes, odd cells included, in every position."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from harness.compare import compare as C
from harness.compare import join as J
from harness.compare import note_column as N
from harness.compare.notes import clock_note, overlap_note
from harness.verdict.confidence import evidence, rep_stats
from harness.verdict.procs import distinct_int_lists, int_lists
from harness.verdict.reps import Column, odd_values, overlapping, parse_plain

#: inf - inf, 1e200 squared in rep_stats' moments (an "[inf, 2]" cell), before and after alike
pytestmark = [
    pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning"),
    pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning"),
]

#: cells a file may hold: a runner's lists, and everything else the loader lets through
EDGE = [
    "",
    None,
    "[]",
    "[ ]",
    "[1.5]",
    "[12.5,12.51,12.49]",
    "[12.5, 12.51, 12.49]",
    "[12.5,  12.51]",
    " [1,2] ",
    "[ 1 , 2 ]",
    "[1,2]\n",
    "[\t1,2]",
    "[1e3,2E-2,3e+1]",
    "[1.5e400, 2]",
    "[1e-400, 2]",
    "[1e999]",
    "[0, 1]",
    "[0.0,1]",
    "[-1, 2]",
    "[-1.0]",
    "[-1]",
    "[-2, 3]",
    "[NaN, 1]",
    "[nan,1]",
    "[inf, 2]",
    "[Infinity, 2]",
    "[-Infinity, 2]",
    "n/a",
    "[12.5,12.51",
    "12.5,12.51]",
    "12.5",
    "[1,,2]",
    "[1,2,]",
    "[1;2]",
    "[1_0, 2]",
    "[01, 2]",
    "[.5, 2]",
    "[1., 2]",
    "[+1, 2]",
    "[0x10, 2]",
    '"[1,2]"',
    '["1","2"]',
    "[true, 2]",
    "[[1,2],[3,4]]",
    '{"a": 1}',
    "[１, 2]",  # a fullwidth digit: float() reads it, json does not
    "éé",  # 2 characters, 4 bytes: too short for a rep range, as pandas counts
    "ééé",
    "[é]",
    "[1234567890123456789012345, 2]",
    "[12345678901234567890, 2]",
    "[1.234567890123456789012345, 2]",
    "[" + ",".join(str(1 + k / 1000) for k in range(2000)) + "]",
    "[" + "1" * 5000 + "]",
]


def _arrow(cells: list) -> pa.Array:
    return pa.array(cells, type=pa.large_string())


def python_rep_stats(texts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The oracle: every cell read in Python by the one rule (reps.odd_values: a JSON list of good times, or no
    reps), plain cells too, each on its own."""
    from harness.verdict.reps import odd_values, stats_of

    return stats_of([(odd_values(c) if isinstance(c, str) else None) or [] for c in np.asarray(texts, dtype=object)])


def _same_stats(cells: list) -> None:
    old = python_rep_stats(np.array(cells, dtype=object))
    for new in (rep_stats(_arrow(cells)), rep_stats(cells), rep_stats(np.array(cells, dtype=object))):
        _equal(old, new, cells)


def _equal(old: tuple, new: tuple, cells: list) -> None:
    for a, b in zip(old, new, strict=True):
        assert a.dtype == b.dtype
        assert np.array_equal(a, b, equal_nan=True), (cells, a, b)
        assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("cell", EDGE)
def test_each_cell_alone_first_middle_last(cell):
    plain = ["[10.0,10.1,9.9]", "[5.25,5.5]", "[7.1]"]
    for cells in ([cell], [cell, *plain], [plain[0], cell, *plain[1:]], [*plain, cell], [cell, cell, plain[0]]):
        _same_stats(cells)


def test_mixed_batches_fuzz():
    rng = np.random.default_rng(7)
    for _ in range(400):
        n = int(rng.integers(1, 12))
        cells = []
        for _ in range(n):
            if rng.random() < 0.6:
                k = int(rng.integers(1, 6))
                vals = np.round(rng.lognormal(2, 2, k), int(rng.integers(0, 6)))
                sep = "," if rng.random() < 0.7 else ", "
                cells.append("[" + sep.join(map(repr, vals.tolist())) + "]")
            else:
                cells.append(EDGE[int(rng.integers(len(EDGE)))])
        _same_stats(cells)


def test_plain_values_are_pythons():
    rng = np.random.default_rng(3)
    texts = [f"{x:.{int(d)}e}" for x, d in zip(rng.lognormal(0, 8, 5000), rng.integers(0, 25, 5000), strict=True)]
    texts += [repr(x) for x in rng.lognormal(0, 8, 5000).tolist()]
    _, plain, count, values = parse_plain(_arrow([f"[{t}]" for t in texts]))
    assert plain.sum() > 8000 and (count == plain).all()  # more than 20 digits after the point: odd
    assert values.tolist() == [float(t) for t, p in zip(texts, plain, strict=True) if p]


def test_large_batch_without_odd_cells_takes_no_python_parse(monkeypatch):
    from harness.verdict import reps

    def refuse(*_a, **_k):
        raise AssertionError("parsed in Python")

    monkeypatch.setattr(reps, "odd_values", refuse)
    cells = [f"[{k + 1}.5,{k + 1}.25,{k + 1}.75]" for k in range(1000)] + ["", None]
    n, mean, sd = rep_stats(_arrow(cells))
    assert n[:1000].tolist() == [3] * 1000 and mean[0] == 1.5 and np.isnan(mean[-1])


@pytest.mark.parametrize("regression", [True, False])
def test_overlapping_is_false_only_where_overlap_note_is_silent(regression):
    cells = [c for c in EDGE if c is not None] + ["[10.0,10.5]", "[10.4,11.0]", "[11.0,12.0]", "[9.0,9.5,10.2]"]
    g = [a for a in cells for _ in cells]
    t = [b for _ in cells for b in cells]
    may = overlapping(Column(_arrow(g)).at(None), Column(_arrow(t)).at(None), np.full(len(g), regression))
    for a, b, m in zip(g, t, may, strict=True):
        if not m:
            assert overlap_note(odd_values(a), odd_values(b), regression) == "", (a, b)
    plain_notes = [overlap_note(odd_values(a), odd_values(b), regression) != "" for a, b in zip(g, t, strict=True)]
    assert sum(plain_notes) and sum(may) < len(g)


def test_clock_moved_is_false_only_where_clock_note_is_silent():
    rng = np.random.default_rng(5)
    n = 20000
    g = rng.choice([1980.0, 1950.0, 1900.0, 2000.0, np.nan, 0.0, -5.0, np.inf], n) * rng.normal(1, 0.01, n)
    t = rng.choice([1980.0, 1950.0, 1900.0, np.nan, np.inf], n) * rng.normal(1, 0.01, n)
    pct = rng.choice([np.nan, 0.0, 1.0], n) * rng.normal(0, 3, n)
    known = (g > 0) & (t > 0)
    moved = N._clock_moved(g, t, pct)
    for a, b, d, k, m in zip(g, t, pct, known, moved, strict=True):
        if k and not m:
            assert clock_note(float(a), float(b), float(d)) == ""
    assert (known & moved).sum() > 100


def _old_rep_texts(j, side, rows, near):
    """compare._rep_texts before Arrow: Python strings."""
    df = j.golden if side == "golden" else j.tot
    if "rep_times_us" not in df.columns or not J.holds_text(df["rep_times_us"]):
        return None
    texts = J.col(df, "rep_times_us", rows[near])
    return texts.to_numpy(dtype=object) if texts.str.len().any() else None


def _old_flag_notes(j, flagged, vcode, pct, add):
    """note_column._flag_notes before Arrow: every flagged case's notes asked of notes.py."""
    g, t = j.golden, j.tot
    if "rep_times_us" in g.columns and "rep_times_us" in t.columns:
        g_reps = J.col(g, "rep_times_us", j.gi[flagged])
        t_reps = J.col(t, "rep_times_us", j.ti[flagged])
        both = ((g_reps.str.len() > 2) & (t_reps.str.len() > 2)).to_numpy()
        for i, gr, tr in zip(flagged[both], g_reps[both], t_reps[both], strict=True):
            note = overlap_note(odd_values(gr), odd_values(tr), C.VERDICTS[vcode[i]] == "regression")
            if note:
                add(int(i), note, join=False)
    if "sm_clock_mhz" in g.columns and "sm_clock_mhz" in t.columns:
        g_clk = J.col(g, "sm_clock_mhz", j.gi[flagged], np.nan)
        t_clk = J.col(t, "sm_clock_mhz", j.ti[flagged], np.nan)
        known = (g_clk > 0) & (t_clk > 0)
        for i, gc, tc in zip(flagged[known], g_clk[known], t_clk[known], strict=True):
            note = clock_note(float(gc), float(tc), float(pct[i]))
            if note:
                add(int(i), note)


def _results(path, n, seed, odd, base=None, order=None):
    rng = np.random.default_rng(seed)
    t = rng.lognormal(3, 1, n) if base is None else base * rng.normal(1.0, 0.02, n)
    reps = [
        "[" + ",".join(map(repr, np.round(x * (1 + rng.normal(0, 0.01, k)), 4).tolist())) + "]"
        for x, k in zip(t, rng.choice([1, 3, 5], n, p=[0.05, 0.8, 0.15]), strict=True)
    ]
    for k, cell in enumerate(odd):
        reps[(k * 37 + seed) % n] = cell
    status = np.where(rng.random(n) < 0.02, "compile_error", "ok")
    df = pd.DataFrame(
        {
            "kernel": "k",
            "case_id": [f"c{k}" for k in range(n)],
            "B": 1,
            "M": 1,
            "N": 1,
            "K": 1,
            "dtype": "bf16",
            "time_us": np.where(status == "ok", np.round(t, 4).astype(str), ""),
            "status": status,
            "reps": 3,
            "rep_times_us": np.where(status == "ok", reps, ""),
            "sm_clock_mhz": np.round(1980 * (1 - np.abs(rng.normal(0, 0.01, n))), 1),
            "error": np.where(status == "ok", "", "boom"),
        }
    )
    if order is not None:
        df = df.iloc[order]
    df.to_csv(path, index=False)
    return t


@pytest.mark.parametrize(
    ("n", "odd", "shuffle"),
    [
        (3000, [], False),  # a runner's lists only: rep_stats' one-pass parse
        (3000, ["[12.5, 12.51, 12.49]", "[12.5,12.51", "[-3, 4]", "[nan, 2]"], False),  # still one pass
        (3000, ["[]", "n/a", "[-3, 4]", "[0, 1]", "[1e999, 2]", "[NaN, 5]"], False),  # the fallback, cell by cell
        (3000, ["[]", "[1, 2]"], True),  # other order: the cells taken
        (60000, ["[ ]", "[-1]", "x", "éé", "[1e200, 3e200]"], False),  # over 1 MB: the fast reader
    ],
)
def test_compare_table_as_before(tmp_path, monkeypatch, n, odd, shuffle):
    g, t = tmp_path / "g.csv", tmp_path / "t.csv"
    base = _results(g, n, 1, odd)
    order = np.random.default_rng(0).permutation(n) if shuffle else None
    _results(t, n, 2, odd[::-1], base, order)
    from harness.compare.compare import compare_files

    new = compare_files(g, t).table
    monkeypatch.setattr(C, "_rep_texts", _old_rep_texts)
    monkeypatch.setattr(N, "_flag_notes", _old_flag_notes)
    old = compare_files(g, t).table
    pd.testing.assert_frame_equal(new, old)
    assert (new["note"].astype(str).str.startswith("rep ranges overlap")).any()
    assert (new["note"].astype(str).str.startswith("NVML SM clock")).any()
    assert set(new["confidence"].astype(str)) >= {"confident", "ambiguous"}


def test_moments_bit_for_bit():
    from harness.verdict.reps import _moments, figures

    rng = np.random.default_rng(11)
    for _ in range(50):
        count = rng.choice([0, 1, 2, 3, 3, 3, 5, 8, 9, 40], int(rng.integers(0, 300)))
        values = rng.lognormal(3, 2, int(count.sum())) * rng.choice([1.0, 1.0, 1.0, -1.0], int(count.sum()))
        if len(values) and rng.random() < 0.5:
            values[rng.integers(len(values), size=3)] = rng.choice([np.inf, -np.inf, np.nan, 1e200, 0.0, -0.0], 3)
        _, m0, s0 = _moments(values, np.repeat(np.arange(len(count)), count), count)
        m1, s1 = figures(values, count)[:2]
        assert m0.tobytes() == m1.tobytes() and s0.tobytes() == s1.tobytes()


@pytest.mark.parametrize("batch", [65536, 7, 120])
def test_cells_at_rows_as_the_cells_taken(monkeypatch, batch):
    from harness.verdict import reps

    monkeypatch.setattr(reps, "BATCH", batch)  # chunks joined, chunks sliced
    rng = np.random.default_rng(2)
    cells = [EDGE[int(k)] for k in rng.integers(len(EDGE), size=300)] + ["[1.5,2.5]", "[3e1, 4, 5]"] * 100
    col = Column(pa.chunked_array([_arrow(cells[:250]), _arrow(cells[250:])]))
    for rows in (
        np.arange(len(cells)),
        np.sort(rng.choice(len(cells), 120, replace=False)),  # some rows, in order
        rng.permutation(len(cells))[:200],
        np.where(rng.random(150) < 0.2, -1, rng.integers(len(cells), size=150)),  # -1: no row
        np.array([], dtype=np.int64),
    ):
        taken = [cells[r] if r >= 0 else None for r in rows]
        want = parse_plain(_arrow(taken))[:3]
        got = col.at(rows).parsed()[:3]
        for a, b in zip(want, got, strict=True):
            assert a.tobytes() == b.tobytes()
        for a, b in zip(python_rep_stats(np.array(taken, dtype=object)), rep_stats(col.at(rows)), strict=True):
            assert a.tobytes() == b.tobytes()


def test_stats_where_as_assess_scattered_them():
    rng = np.random.default_rng(4)
    for _ in range(200):
        n = int(rng.integers(1, 40))
        cells = [
            EDGE[int(rng.integers(len(EDGE)))] if rng.random() < 0.3 else f"[{rng.random() + 1:.3f},{rng.random() + 1}]"
            for _ in range(n)
        ]
        near = rng.random(n) < 0.7
        rows = None if rng.random() < 0.5 else rng.permutation(n)
        taken = cells if rows is None else [cells[r] for r in rows]
        want = (np.zeros(n, dtype=np.int64), np.full(n, np.nan), np.full(n, np.nan))
        if near.any():
            for out, part in zip(want, python_rep_stats(np.array(taken, dtype=object)[near]), strict=True):
                out[near] = part
        got = Column(_arrow(cells)).at(rows).stats_where(near)
        for a, b in zip(want, got, strict=True):
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("process", [False, True])
def test_evidence_in_halves_is_the_whole(monkeypatch, process):
    from harness.verdict import confidence
    from harness.verdict.rule import Rule

    monkeypatch.setattr(confidence, "HALVES", 1000)
    calls = []
    monkeypatch.setattr(confidence, "evidence", lambda *a, **k: calls.append(len(a[0])) or evidence(*a, **k))
    rng = np.random.default_rng(9)
    n = 5001
    g = rng.lognormal(3, 1.5, n)
    t = g * rng.normal(1, 0.01, n)
    reps = [(rng.choice([0, 1, 2, 3, 5], n), g * (1 + rng.normal(0, 0.003, n)), g * np.abs(rng.normal(0, 0.003, n)))]
    reps.append((rng.choice([0, 2, 3], n), t, t * np.abs(rng.normal(0, 0.004, n))))
    codes = rng.choice(np.arange(len(confidence.VERDICTS)), n).astype(np.int8)
    sigma = np.where(rng.random(n) < 0.5, np.nan, rng.random(n)) if process else None
    whole = evidence(g, t, reps[0], reps[1], codes, Rule(), sigma)
    halves = confidence._evidence_halves(g, t, reps[0], reps[1], codes, Rule(), sigma)
    assert sorted(calls) == [2500, 2501]  # two halves, on two threads
    assert whole.keys() == halves.keys()
    for k in whole:
        assert whole[k].dtype == halves[k].dtype and whole[k].tobytes() == halves[k].tobytes(), k


@pytest.mark.parametrize("other", ["[10.0,10.1]", "[]", "fast", "true", "[1,2"])
def test_an_odd_cell_reads_the_same_whatever_the_other_cells_hold(other):
    # a negative, zero, NaN or infinite rep, a nested list or a cell cut short: no reps, never some of them
    cells = ["[39.7,-39.7,39.7,39.7]", "[39.7,0,39.7]", "[39.7,NaN,39.7]", "[[39.7],39.7]", "[39.7,39.7,39.7",
             "[true,39.7]", "[39.7,Infinity]", "[1e400,39.7]", "[39.7, 39.8]"]  # fmt: skip
    n, mean, _ = rep_stats([*cells, other])
    assert n[:-1].tolist() == [0, 0, 0, 0, 0, 0, 0, 0, 2] and mean[-2] == pytest.approx(39.75)


def test_plain_numbers_read_alike_from_any_arrow_layout():
    """The numbers are cut from the cells' bytes (reps._numbers): a slice of a longer array, a chunked one, 32-bit
    offsets, nulls and odd cells that hold bytes between plain ones read as the same cells written alone."""
    mixed = ["[1.5,2.25]", None, "n/a", "[3e2, 4]", "", "[12.5,12.51", "[0.001,7,8.5]", "[5]"]
    want = [a.tolist() for a in parse_plain(pa.array(mixed, type=pa.large_string()))]
    assert want[2] == [2, 0, 0, 2, 0, 0, 3, 1] and want[3] == [1.5, 2.25, 300.0, 4.0, 0.001, 7.0, 8.5, 5.0]
    for cells in (mixed, [c for c in mixed if c not in ("n/a", "[12.5,12.51")]):  # odd bytes between, or none
        want = [a.tolist() for a in parse_plain(pa.array(cells, type=pa.large_string()))]
        padded = pa.array(["[9,9]", *cells, "[8]"], type=pa.large_string()).slice(1, len(cells))
        halves = [pa.array(part, type=pa.large_string()) for part in (cells[:3], cells[3:])]
        for arr in (pa.array(cells, type=pa.string()), padded, pa.chunked_array(halves)):
            assert [a.tolist() for a in parse_plain(arr)] == want


@pytest.mark.parametrize("distinct", [False, True])
def test_a_column_of_few_lists_reads_as_each_cell_alone(distinct):
    """rep_procs read a distinct cell at a time (a run writes one list for a whole pass) gives int_lists' arrays,
    dtype and values, cell for cell: empty and missing cells, odd ones, a chunked column, and a column of mostly
    distinct cells (read cell by cell)."""
    rng = np.random.default_rng(7)
    few = ["[0,0,1]", "[0,0,1,5,6]", None, "", "[0, 0, 1]", "[0,x]", "[]", "[3]", "[18446744073709551616]"]
    cells = [few[i] for i in rng.integers(0, len(few), 3000)]
    if distinct:
        cells = [f"[{i},{i + 1}]" if i % 3 else c for i, c in enumerate(cells)]
    for arr in (pa.array(cells, type=pa.large_string()),
                pa.chunked_array([pa.array(cells[:1000], type=pa.large_string()),
                                  pa.array(cells[1000:], type=pa.large_string())])):  # fmt: skip
        want, got = int_lists(arr), distinct_int_lists(arr)
        assert [(a.dtype, a.tolist()) for a in got] == [(a.dtype, a.tolist()) for a in want]
    assert distinct_int_lists(pa.array([], type=pa.large_string()))[2].tolist() == []
    for cells in ([None] * 10, [""] * 10):  # no distinct cell at all (an empty dictionary), or one that is empty
        arr = pa.array(cells, type=pa.large_string())
        assert [a.tolist() for a in distinct_int_lists(arr)] == [a.tolist() for a in int_lists(arr)]

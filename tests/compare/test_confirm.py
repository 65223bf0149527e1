"""Confident means confirmed (verdict/confirm.py): the between-process spread of every case in its interval,
moderated by its kernel's, and a flag that must repeat in fresh processes; through compare on results files."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from harness.compare.compare import compare_files
from harness.compare.notes import UNCONFIRMED
from harness.results.schema import FIRST_EXTRA_EPOCH
from harness.results.write import write_results
from harness.verdict.confidence import CONFIDENCE
from harness.verdict.confirm import Side, judge
from harness.verdict.rule import Rule, timed_codes

RULE = Rule()
AGAIN = FIRST_EXTRA_EPOCH


def side(*cases: list[tuple[int, float]]) -> Side:
    """One stack's rows, each a list of (process, rep time)."""
    return Side.parse([json.dumps([t for _, t in c]) for c in cases], [json.dumps([p for p, _ in c]) for c in cases])


def reps(*means: tuple[int, float], each: int = 2, jitter: float = 0.001) -> list[tuple[int, float]]:
    """``each`` reps per (process, mean), spread ±jitter around it."""
    return [(p, m * (1 + jitter * (k - (each - 1) / 2))) for p, m in means for k in range(each)]


def run_judge(golden: list, tot: list, kernel: str = "k") -> dict[str, np.ndarray]:
    g, t = side(*golden), side(*tot)
    gu, tu = g.stack_time(), t.stack_time()
    code = timed_codes(gu, tu, RULE)
    return {**judge(np.array([kernel] * len(golden), dtype=object), g, t, gu, tu, code, RULE), "code": code}


def conf(ev: dict, i: int = 0) -> str:
    return CONFIDENCE[int(ev["confidence"][i])]


def test_a_regression_that_every_process_and_its_confirmation_show_is_confident():
    ev = run_judge([reps((0, 100.0), (1, 100.1), (AGAIN, 100.0))], [reps((0, 110.0), (1, 110.2), (AGAIN, 110.1))])
    assert conf(ev) == "confident" and not ev["unconfirmed"][0]
    assert ev["first_pct"][0] == pytest.approx(10.05, abs=0.1) and ev["again_pct"][0] == pytest.approx(10.1, abs=0.1)


def test_a_flag_that_does_not_repeat_in_fresh_processes_is_ambiguous():
    # the first pass: +6 % in both processes; measured again in fresh processes: +0.1 %
    ev = run_judge([reps((0, 100.0), (1, 100.0), (AGAIN, 100.0))], [reps((0, 106.0), (1, 106.1), (AGAIN, 100.1))])
    assert ev["code"][0] == 0  # still a regression by the rule on every process's mean
    assert conf(ev) == "ambiguous" and ev["unconfirmed"][0]
    assert ev["again_pct"][0] == pytest.approx(0.1, abs=0.05)


def test_a_flag_never_measured_again_is_not_confirmed():
    ev = run_judge([reps((0, 100.0), (1, 100.0))], [reps((0, 110.0), (1, 110.1))])
    assert conf(ev) == "ambiguous" and ev["unconfirmed"][0] and np.isnan(ev["again_pct"][0])


def test_processes_that_disagree_widen_the_interval_their_reps_alone_would_not():
    """Golden's two processes 8 % apart, each quiet inside: the reps of one process say nothing of it."""
    ev = run_judge([reps((0, 100.0), (1, 108.0), (AGAIN, 100.0))], [reps((0, 110.0), (1, 110.0), (AGAIN, 110.0))])
    assert conf(ev) == "ambiguous" and not ev["unconfirmed"][0]  # the interval itself straddles the limit
    assert ev["noise_pct"][0] > 3.0


def test_an_ok_case_is_confident_only_inside_both_limits():
    quiet = run_judge([reps((0, 100.0), (1, 100.0))], [reps((0, 100.1), (1, 100.0))])
    assert conf(quiet) == "confident"  # an ok needs no confirmation: nothing is claimed
    noisy = run_judge([reps((0, 100.0), (1, 104.0))], [reps((0, 100.0), (1, 104.0))])
    assert conf(noisy) == "ambiguous"


def test_a_family_prior_keeps_a_case_that_agrees_with_itself_by_luck_from_overclaiming():
    """Nine cases of one kernel whose processes sit 3 % apart, and one whose two processes happened to agree: alone
    its own spread (zero) would make a 4 % slowdown confident before confirmation; moderated by its family's
    it is not."""
    noisy = [[*reps((0, 100.0), (1, 103.0))], [*reps((0, 100.0), (1, 103.0))]]
    golden = [noisy[0]] * 9 + [reps((0, 100.0), (1, 100.0), (AGAIN, 100.0))]
    tot = [noisy[1]] * 9 + [reps((0, 104.0), (1, 104.0), (AGAIN, 104.0))]
    ev = run_judge(golden, tot)
    assert conf(ev, 9) == "ambiguous"
    alone = run_judge(golden[9:], tot[9:])
    assert conf(alone) == "confident"


def test_a_column_of_missing_labels_labels_no_rep():
    side = Side.parse(["[1.0, 1.1]", "[2.0]"], [None, np.nan])
    assert side.n == 2 and len(side.values) == 0 and not side.unlabelled.any()


def test_rows_without_labels_are_left_to_the_reps():
    g, t = side(reps((0, 100.0), (1, 100.0))), Side.parse(["[110.0, 110.1, 110.0]"], [""])
    ev = judge(np.array(["k"], dtype=object), g, t, g.stack_time(), np.array([110.0]), np.array([0]), RULE)
    assert not ev["labelled"][0]


# -- through compare, on results files -----------------------------------------------------------------------


def _write(path, cases: dict[str, list[tuple[int, float]]], labelled: bool = True):
    rows = []
    for cid, rs in cases.items():
        times = [t for _, t in rs]
        row = {"kernel": "k", "case_id": cid, "params": json.dumps({"i": cid}), "status": "ok",
               "time_us": float(side(rs).stack_time()[0]) if labelled else float(np.mean(times)),
               "reps": len(times), "rep_times_us": times, "flops": 1.0, "bytes": 1.0}  # fmt: skip
        if labelled:
            row["rep_procs"] = [p for p, _ in rs]
        rows.append(row)
    write_results(path, rows)


def test_compare_confirms_flags_and_says_why_one_is_not(tmp_path):
    g, t = tmp_path / "g.csv", tmp_path / "t.csv"
    _write(g, {"real": reps((0, 100.0), (1, 100.1), (AGAIN, 100.0)), "gone": reps((0, 100.0), (1, 100.0), (AGAIN, 100.0)),
               "flat": reps((0, 50.0), (1, 50.0))})  # fmt: skip
    _write(t, {"real": reps((0, 110.0), (1, 110.1), (AGAIN, 110.0)), "gone": reps((0, 106.0), (1, 106.0), (AGAIN, 100.0)),
               "flat": reps((0, 50.0), (1, 50.01))})  # fmt: skip
    cmp = compare_files(g, t)
    table = cmp.table.set_index("case_id")
    assert table.loc["real", "confidence"] == "confident" and table.loc["real", "verdict"] == "regression"
    assert table.loc["gone", "confidence"] == "ambiguous"
    assert "did not repeat in fresh processes: first pass +6.00 %, again +0.00 %" in table.loc["gone", "note"]
    assert table.loc["flat", "confidence"] == "confident" and table.loc["flat", "verdict"] == "ok"
    assert UNCONFIRMED not in cmp.warnings and cmp.blocking == 1  # the ambiguous one does not block


def test_each_unconfirmed_flag_gets_its_note_beside_the_others(tmp_path):
    """Flags never measured again share one note a verdict, a flag that did not repeat names its figures, and a
    row that already has a note (unstable) gets the confirmation's joined after it."""
    g, t = tmp_path / "g.csv", tmp_path / "t.csv"
    slow, fast = reps((0, 100.0), (1, 100.0)), reps((0, 110.0), (1, 110.0))
    _write(g, {"up1": slow, "up2": slow, "down": fast, "shaky": slow,
               "gone": reps((0, 100.0), (1, 100.0), (AGAIN, 100.0))})  # fmt: skip
    _write(t, {"up1": fast, "up2": fast, "down": slow, "shaky": fast,
               "gone": reps((0, 106.0), (1, 106.0), (AGAIN, 100.0))})  # fmt: skip
    tot = pd.read_csv(t)
    tot.loc[tot["case_id"] == "shaky", "status"] = "unstable"
    tot.to_csv(t, index=False)
    notes = compare_files(g, t).table.set_index("case_id")["note"].astype(str)
    never = "not confirmed: never measured again in fresh processes"
    assert notes["up1"] == notes["up2"] == f"regression {never}" and notes["down"] == f"improvement {never}"
    assert notes["gone"] == "regression did not repeat in fresh processes: first pass +6.00 %, again +0.00 %"
    assert notes["shaky"] == f"unstable reps; regression {never}"


def test_compare_of_files_without_labels_warns_that_their_flags_are_unconfirmed(tmp_path):
    g, t = tmp_path / "g.csv", tmp_path / "t.csv"
    _write(g, {"a": reps((0, 100.0), each=3)}, labelled=False)
    _write(t, {"a": reps((0, 110.0), each=3)}, labelled=False)
    cmp = compare_files(g, t)
    assert cmp.table["confidence"].tolist() == ["confident"] and UNCONFIRMED in cmp.warnings
    assert "rep_procs" not in pd.read_csv(g).dropna(axis=1, how="all").columns


def test_compare_names_suites_of_other_content_whatever_their_names(tmp_path):
    from harness.compare.notes import part_differences

    one = {"suite": "suites/batched_gemm.yaml", "suite_content": "aa"}
    assert part_differences(one, {**one, "suite": "/elsewhere/batched_gemm.yaml"}) == []
    other = part_differences(one, {"suite": "examples/aiter/batched_gemm.yaml", "suite_content": "bb"})
    assert other and "hold other entries (batched_gemm.yaml and batched_gemm.yaml)" in other[0]
    assert part_differences(one, {"suite": "ci.yaml", "suite_content": "aa"}) == []  # a copy by another name


# Side.parse reads plain cells with Arrow (reps.py) and hands the rest to _pair: the same reps as _pair reading
# every cell, which is how it read them before (the oracle below)

TIMES = ["[1.5,2.5]", "[1.5, 2.5]", "[3e1,4,5]", "[38]", "[1.5]", "[1.5,2.5", "[]", "", None, float("nan"), " [1,2]",
         "[0, 1]", "[-1, 2]", "[1e-400, 2]", "[1e999, 2]", "[true, 2]", "[1.0 ,2.0]", "n/a", "[NaN, 1]", "[01, 2]"]  # fmt: skip
PROCS = ["[0,1]", "[0, 1]", "[0,0,1]", "[5]", "[0]", "[0,1", "[]", "", None, "[1.0, 2]", "[-1, 0]", "[true, 0]",
         "[0 ,1]", "[01, 1]", "[99999999999999999999, 0]", "[999999999999999999, 5]", " [0,1]", "[0,5,6]"]  # fmt: skip


def _oracle(times: list, procs: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    from harness.verdict.confirm import _pair

    v, r, p = [], [], []
    for i, (tc, pc) in enumerate(zip(times, procs, strict=True)):
        got = _pair(tc, pc)
        if got is not None:
            v += got[0]
            p += got[1]
            r += [i] * len(got[0])
    return np.asarray(v, dtype=np.float64), np.asarray(r, dtype=np.int64), np.asarray(p, dtype=np.int64)


@pytest.mark.parametrize("seed", range(6))
def test_side_reads_every_cell_as_its_json_reader_does(seed):
    import pyarrow as pa

    from harness.verdict import reps

    rng = np.random.default_rng(seed)
    n = 400
    times = [TIMES[k] for k in rng.integers(len(TIMES), size=n)]
    procs = [PROCS[k] for k in rng.integers(len(PROCS), size=n)]
    for k in np.flatnonzero(rng.random(n) < 0.5):  # most rows as a run writes them: lists of one length
        m = int(rng.integers(1, 6))
        times[k] = json.dumps([round(float(x), 4) for x in rng.uniform(1, 100, m)])
        procs[k] = json.dumps(sorted(int(x) for x in rng.choice([0, 1, 5, 6], m)))
    rows = [None, rng.permutation(n), np.where(rng.random(n) < 0.2, -1, rng.integers(n, size=n))][seed % 3]
    chunked = pa.chunked_array([reps.text_array(times[:150]), reps.text_array(times[150:])])
    for given in (times, reps.Column(chunked)):
        got = Side.parse(given, procs, rows)
        taken = (times, procs) if rows is None else ([times[r] if r >= 0 else "" for r in rows],
                                                     [procs[r] if r >= 0 else "" for r in rows])  # fmt: skip
        want = _oracle(*taken)
        assert got.n == n
        for a, b in zip((got.values, got.rows, got.procs), want, strict=True):
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes()


def test_processes_group_unordered_reps_as_ordered_ones():
    a = side([(0, 10.0), (1, 11.0), (0, 10.2), (5, 12.0)], [(1, 3.0), (0, 2.0)])
    b = side([(0, 10.0), (0, 10.2), (1, 11.0), (5, 12.0)], [(0, 2.0), (1, 3.0)])
    for which in ("all", "first", "again"):
        for x, y in zip(a.processes(which), b.processes(which), strict=True):
            assert np.allclose(x, y, equal_nan=True)


@pytest.mark.parametrize("cell", ["[0.0, 0.0, 1.0, 1.0, 5.0, 5.0]", "[0, 0, 1]", "[]", "first", "", "[-1,0,1,1,5,5]"])
def test_a_flag_whose_reps_are_not_labelled_in_a_labelled_file_is_never_confident(tmp_path, cell):
    from harness.results.schema import sidecar_path

    g, t = tmp_path / "g.csv", tmp_path / "t.csv"
    _write(g, {"real": reps((0, 100.0), (1, 100.1), (AGAIN, 100.0)), "b": reps((0, 50.0), (1, 50.0), (AGAIN, 50.0))})
    _write(t, {"real": reps((0, 110.0), (1, 110.1), (AGAIN, 110.0)), "b": reps((0, 50.0), (1, 50.0), (AGAIN, 50.0))})
    assert compare_files(g, t).table.set_index("case_id").loc["real", "confidence"] == "confident"
    sidecar_path(t).unlink(missing_ok=True)  # a hand edit, as a user makes one (the sidecar would refuse it)
    df = pd.read_csv(t, dtype=str, keep_default_na=False)
    df.loc[df["case_id"] == "real", "rep_procs"] = cell
    df.to_csv(t, index=False)
    row = compare_files(g, t).table.set_index("case_id").loc["real"]
    assert row["verdict"] == "regression" and row["confidence"] == "ambiguous"
    assert "regression not confirmed: rep_procs does not name the process of each rep on this row" in row["note"]


def test_an_aa_that_makes_a_labelled_verdict_ambiguous_says_so(tmp_path):
    g, t, a = tmp_path / "g.csv", tmp_path / "t.csv", tmp_path / "a.csv"
    base = {f"c{i}": 100.0 + i for i in range(10)}
    off = [0.03, -0.03, 0.025, -0.025, 0.03, -0.03, 0.02, -0.02, 0.03, -0.03]  # the A/A: ~3 % between processes
    for path, scale in ((g, {}), (t, {"c0": 1.05}), (a, {c: 1 + o for c, o in zip(base, off, strict=True)})):
        _write(path, {c: reps((0, m * scale.get(c, 1)), (1, m * scale.get(c, 1)), (AGAIN, m * scale.get(c, 1)))
                      for c, m in base.items()})  # fmt: skip
    plain = compare_files(g, t).table.set_index("case_id").loc["c0"]
    assert plain["verdict"] == "regression" and plain["confidence"] == "confident"
    cmp = compare_files(g, t, aa=a)
    row = cmp.table.set_index("case_id").loc["c0"]
    assert row["confidence"] == "ambiguous" and "(A/A)" in row["note"]
    assert cmp.process_noise["kernels"]["k"]["ambiguous"] >= 1


def test_a_row_whose_rep_times_do_not_read_is_not_blamed_on_its_processes(tmp_path):
    g, t = tmp_path / "g.csv", tmp_path / "t.csv"
    _write(g, {"real": reps((0, 100.0), (1, 100.1), (AGAIN, 100.0)), "b": reps((0, 50.0), (1, 50.0), (AGAIN, 50.0))})
    _write(t, {"real": reps((0, 110.0), (1, 110.1), (AGAIN, 110.0)), "b": reps((0, 50.0), (1, 50.0), (AGAIN, 50.0))})
    df = pd.read_csv(t, dtype=str, keep_default_na=False)
    df.loc[df["case_id"] == "real", "rep_times_us"] = "[110.0, 110.0, 110.1, 110.1, 110.0, 110.0"  # cut short
    df.to_csv(t, index=False)
    row = compare_files(g, t).table.set_index("case_id").loc["real"]
    assert row["confidence"] == "unknown" and "rep_procs" not in row["note"]


def test_sides_of_unusual_cells_read_without_a_crash():
    from harness.verdict.confidence import rep_stats

    assert Side.parse([], [], rows=np.array([-1, -1])).n == 2  # an empty column, rows taking nothing
    assert rep_stats(np.array(["[1.5]", "[2\ud800]"], dtype=object))[0].tolist() == [1, 0]  # a lone surrogate
    huge = Side.parse(["[1.0,2.0,3.0]"] * 12, ["[999999999999999999,0,0]"] * 12)  # an 18-digit process
    grow, means, row_mean = huge.processes()
    assert grow.tolist() == [r for r in range(12) for _ in range(2)] and means[:2].tolist() == [2.5, 1.0]


@pytest.mark.parametrize("seed", range(4))
def test_rows_labelled_alike_give_the_flat_arrays_figures_bit_for_bit(seed, monkeypatch):
    """alike.py judges the rows that share a list of processes a list position at a time: each row's processes,
    spread and times over all, the first and the re-measured processes are those of confirm's flat arrays, bit for
    bit, whatever the lists (unordered, a process repeated, past 127, more than 8 reps) and the rows taken."""
    from harness.verdict import alike, reps

    rng = np.random.default_rng(seed)
    lists = [[0, 0, 1], [0, 0, 1, AGAIN, AGAIN + 1], [1, 0, 0], [AGAIN], [0, 1, 0, 1, 2, 2, 1, 0], [3, 200, 3],
             [0] * 9, [0, AGAIN, 0, AGAIN]]  # fmt: skip
    n = 3000
    which = rng.integers(len(lists), size=n)
    times = [json.dumps(rng.lognormal(3, 2, len(lists[w])).round(int(rng.integers(0, 6))).tolist()) for w in which]
    procs = [json.dumps(lists[w]) for w in which]
    rows = [None, rng.permutation(n), np.where(rng.random(n) < 0.2, -1, rng.integers(n, size=n))][seed % 3]
    col = reps.Column(reps.text_array(times))
    fast = Side.parse(col, procs, rows)
    assert fast.alike is not None and fast.alike.taken.sum() > n / 2  # most rows: the lists of up to 8 reps
    monkeypatch.setattr(alike, "MIN_ROWS", n + 1)
    flat = Side.parse(col, procs, rows)
    assert not flat.alike.taken.any()
    for a, b in zip(confirm_spread(fast), confirm_spread(flat), strict=True):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    for w in ("all", "first", "again"):
        assert fast.stack_time(w).tobytes() == flat.stack_time(w).tobytes()
    assert fast.unlabelled.tobytes() == flat.unlabelled.tobytes()


def confirm_spread(side: Side) -> tuple[np.ndarray, ...]:
    from harness.verdict.confirm import spread

    return spread(side)

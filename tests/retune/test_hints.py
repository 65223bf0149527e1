"""harness/retune/hints.py and the search's first step with hints: another retune's timings choose candidates,
the times here decide."""

from __future__ import annotations

import pytest

from harness.errors import HarnessError
from harness.retune.cache import Cache, Entry, make_key
from harness.retune.hints import cache_file, load_hints
from harness.retune.search import SlotCase, SlotSearch
from harness.retune.space import Space
from harness.verdict.rule import Rule

RULE = Rule()
SPACE = Space({"BN": (16, 32, 64, 128), "W": (1, 2, 4)})
TOT = "triton 3.9.0 at /tmp/t/triton; reps 3, launches auto"


def entry(case, config, t, gpu="GPU-a", stack=TOT, tag="search", status="ok"):
    return Entry(make_key("k", "src", case, config, stack, gpu, tag), status, t)


def write(path, entries):
    Cache(path).add(entries)
    return path


def test_only_search_timings_of_the_same_release_count_and_gpus_are_pooled(tmp_path):
    f = write(tmp_path / "cache.jsonl", [
        entry("M16", {"BN": 64}, 10.0), entry("M16", {"BN": 64}, 14.0, gpu="GPU-b"),
        entry("M16", {"BN": 64}, 12.0, gpu="GPU-c"),
        entry("M16", {"BN": 32}, 5.0, stack="triton 3.8.0 at /x; reps 3, launches auto"),
        entry("M16", {"BN": 16}, 5.0, tag="guard:abc:tot_new"),
        entry("M16", {"BN": 128}, None, status="compile_error"),
    ])  # fmt: skip
    hints = load_hints([tmp_path], "3.9.0")  # a retune's folder names its cache
    assert hints.times == {("k/M16", '{"BN":64}'): 12.0}  # the median of three GPUs
    assert load_hints([f], "3.6.0").times == {}


def test_the_best_hints_slow_no_case_of_the_slot_against_the_seed():
    f = [
        # seed BN 16: M16 regressed (60 against golden 30), M32 fine (30)
        ("M16", {"BN": 16}, 60.0), ("M32", {"BN": 16}, 30.0),
        ("M16", {"BN": 64}, 30.0), ("M32", {"BN": 64}, 50.0),  # fixes M16, slows M32: never a hint
        ("M16", {"BN": 32}, 45.0), ("M32", {"BN": 32}, 30.0),
        ("M16", {"BN": 32, "W": 4}, 30.0), ("M32", {"BN": 32, "W": 4}, 29.0),
        ("M16", {"BN": 128}, 20.0),  # not timed on M32: cannot be judged for the slot
    ]  # fmt: skip
    from harness.retune.hints import Hints
    from harness.retune.space import config_key

    h = Hints({(f"k/{c}", config_key(cfg)): t for c, cfg, t in f}, {config_key(cfg): cfg for _, cfg, _ in f})
    cases = [SlotCase("k/M16", 30.0, True), SlotCase("k/M32", 30.0, False)]
    assert h.best(cases, {"BN": 16}, RULE) == [{"BN": 32, "W": 4}, {"BN": 32}]
    assert h.best(cases, {"BN": 16}, RULE, n=1) == [{"BN": 32, "W": 4}]


def test_a_missing_hints_path_is_refused(tmp_path):
    with pytest.raises(HarnessError, match=r"--hints .*: no such file \(no cache.jsonl in it\)"):
        cache_file(tmp_path)
    with pytest.raises(HarnessError, match=r"--hints .*none.jsonl: no such file$"):
        cache_file(tmp_path / "none.jsonl")


def time_of(table):
    return lambda cid, cfg: ("ok", table(cfg)) if table(cfg) is not None else ("compile_error", None)


def test_a_hint_is_timed_with_the_seed_and_the_search_starts_from_it():
    # BN 64 with W 4 is the optimum, three moves from the seed: the hint gets there in the first step
    table = lambda cfg: 30.0 if (cfg["BN"], cfg["W"]) == (64, 4) else 60.0 - cfg["BN"] / 8  # noqa: E731
    prune = lambda c, cfg: "too big" if cfg["BN"] == 128 else None  # noqa: E731
    hints = [{"BN": 64, "W": 4}, {"BN": 128, "W": 1}, {"BN": 16, "W": 1}]  # a pruned one; the seed again
    s = SlotSearch("s", [SlotCase("t", 30.0, True)], {"BN": 16, "W": 1}, SPACE, RULE, prune, hints=hints)
    assert s.wants() == [{"BN": 16, "W": 1}, {"BN": 64, "W": 4}]
    assert s.pruned == {'{"BN":128,"W":1}': "too big"}
    s.advance(time_of(table))
    assert s.moves == [(0, {"BN": 64, "W": 4})] and s.current == {"BN": 64, "W": 4}
    while s.wants():
        s.advance(time_of(table))
    assert s.moves == [(0, {"BN": 64, "W": 4})] and s.finalists()[0] == {"BN": 64, "W": 4}


def test_a_hint_that_is_no_better_here_is_not_taken():
    # elsewhere BN 64 was best; here it is slower than the seed, and BN 32, one move away, is best
    table = lambda cfg: {16: 60.0, 32: 30.0, 64: 62.0, 128: 70.0}[cfg["BN"]]  # noqa: E731
    s = SlotSearch("s", [SlotCase("t", 30.0, True)], {"BN": 16, "W": 1}, SPACE, RULE, lambda c, cfg: None,
                   hints=[{"BN": 64, "W": 1}])  # fmt: skip
    s.advance(time_of(table))
    assert s.moves == [] and s.current == {"BN": 16, "W": 1} and s.score_of({"BN": 64, "W": 1}).geo > 1
    while s.wants():
        s.advance(time_of(table))
    assert s.moves[0] == (1, {"BN": 32, "W": 1}) and s.finalists()[0] == {"BN": 32, "W": 1}


def test_hints_of_a_slot_that_is_no_regression_now_are_timed_and_left():
    s = SlotSearch("s", [SlotCase("t", 30.0, True)], {"BN": 64, "W": 1}, SPACE, RULE, lambda c, cfg: None,
                   hints=[{"BN": 32, "W": 1}])  # fmt: skip
    s.advance(time_of(lambda cfg: 30.0 if cfg["BN"] == 64 else 20.0))
    assert s.done and s.moves == [] and s.regressed_now == 0 and s.finalists() == []


def test_a_file_that_is_no_retune_cache_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("a,b\n1,2\n")
    with pytest.raises(HarnessError, match=r"--hints .*notes.txt: not a retune's cache.jsonl \(none of its 2 lines"):
        cache_file(tmp_path / "notes.txt")
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(HarnessError, match=r"not a retune's cache.jsonl \(it is empty\)"):
        cache_file(tmp_path / "empty.jsonl")
    (tmp_path / "bin").write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(HarnessError, match=r"not a retune's cache.jsonl"):
        cache_file(tmp_path / "bin")


def test_a_hint_without_a_key_the_seed_has_is_timed_as_it_runs_with_the_seeds_value():
    # a cache from before EPILOGUE_SUBTILE existed: the worker runs the hint on top of the file's bucket, so the
    # candidate must name the seed's value, or the measurer sees another config than it asked for (the 2026-11-26
    # H200 retune stopped with an internal error there)
    from harness.retune.hints import Hints
    from harness.retune.space import config_key

    f = [
        ("M16", {"BN": 16, "SUB": 1}, 60.0),
        ("M16", {"BN": 64}, 30.0),  # timed elsewhere without SUB
        ("M16", {"BN": 16}, 40.0),  # the seed once SUB is filled in: not a candidate
    ]
    h = Hints({(f"k/{c}", config_key(cfg)): t for c, cfg, t in f}, {config_key(cfg): cfg for _, cfg, _ in f})
    cases = [SlotCase("k/M16", 30.0, True)]
    assert h.best(cases, {"BN": 16, "SUB": 1}, RULE) == [{"BN": 64, "SUB": 1}]

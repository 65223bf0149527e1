"""harness/retune/search.py: coordinate descent, pattern moves and widening over a landscape known in advance."""

from __future__ import annotations

from harness.retune.search import SlotCase, SlotSearch
from harness.retune.space import Space, config_key
from harness.verdict.rule import Rule

RULE = Rule()
SPACE = Space({"BN": (16, 32, 64, 128), "W": (1, 2, 4)})


def run(search: SlotSearch, time) -> list[list[dict]]:
    """Drive a search to its end; ``time(case, config)`` is the landscape. Returns what each step asked for."""
    asked = []
    while search.wants():
        asked.append(search.wants())
        search.advance(lambda cid, cfg: ("ok", t) if (t := time(cid, cfg)) is not None else ("compile_error", None))
    return asked


def test_two_coordinate_moves_reach_the_optimum():
    # TOT: BN 16 → 60 µs, 32 → 45, 64 → 30 (golden 30): two moves from the seed; W does nothing
    s = SlotSearch("s", [SlotCase("t", 30.0, True)], {"BN": 16, "W": 1}, SPACE, RULE, lambda c, cfg: None)
    asked = run(s, lambda c, cfg: {16: 60.0, 32: 45.0, 64: 30.0, 128: 40.0}[cfg["BN"]])
    assert asked[0] == [{"BN": 16, "W": 1}]  # the seed first
    assert asked[1] == [{"BN": 32, "W": 1}, {"BN": 16, "W": 2}]
    assert [(lvl, cfg["BN"]) for lvl, cfg in s.moves] == [(1, 32), (1, 64)]
    assert s.done == "no neighbour is better (converged)"
    assert s.finalists()[0] == {"BN": 64, "W": 1} and s.regressed_now == 1
    assert len({config_key(c) for step in asked for c in step}) == sum(map(len, asked))  # nothing asked twice


def test_a_config_that_slows_a_neighbour_is_neither_taken_nor_proposed():
    # BN 64 fixes the target (60 → 30 µs) but slows its neighbour in the bucket (30 → 50)
    def time(case, cfg):
        if case == "t":
            return 30.0 if cfg["BN"] >= 64 else 60.0
        return 50.0 if cfg["BN"] >= 64 else 30.0

    cases = [SlotCase("t", 30.0, True), SlotCase("n", 30.0, False)]
    s = SlotSearch("s", cases, {"BN": 32, "W": 1}, SPACE, RULE, lambda c, cfg: None)
    run(s, time)
    assert s.moves == [] and s.finalists() == []
    assert s.score_of({"BN": 64, "W": 1}).worse == 1 and s.score_of({"BN": 64, "W": 1}).unfixed == 0


def test_a_pattern_move_finds_what_no_single_move_shows():
    # only BN 64 *and* W 4 together is fast; each alone is no faster than the seed (W 4 the least slow)
    def time(case, cfg):
        if (cfg["BN"], cfg["W"]) == (64, 4):
            return 30.0
        return 60.0 + (cfg["BN"] != 32) + {1: 2.0, 2: 0.0, 4: 0.3}.get(cfg["W"], 3.0)

    s = SlotSearch("s", [SlotCase("t", 30.0, True)], {"BN": 32, "W": 2}, SPACE, RULE, lambda c, cfg: None)
    run(s, time)
    assert s.moves[0] == (2, {"BN": 64, "W": 4})


def test_pruned_configs_are_never_asked_for_and_a_failing_seed_is_left():
    prune = lambda case, cfg: "too big" if cfg["BN"] == 128 else None  # noqa: E731
    fails = lambda case, cfg: None if cfg["BN"] == 16 else 50.0 - cfg["BN"] / 16 + cfg["W"]  # noqa: E731 - the seed: a TOT failure
    s = SlotSearch("s", [SlotCase("t", 30.0, True)], {"BN": 16, "W": 1}, SPACE, RULE, prune)
    asked = run(s, fails)
    assert all(cfg["BN"] != 128 for step in asked for cfg in step)
    assert s.pruned and all(why == "too big" for why in s.pruned.values())
    assert s.score_of({"BN": 16, "W": 1}) is None and s.current["BN"] != 16


def test_nothing_to_fix_when_the_seed_is_no_regression_now():
    s = SlotSearch("s", [SlotCase("t", 30.0, True)], {"BN": 64, "W": 1}, SPACE, RULE, lambda c, cfg: None)
    run(s, lambda c, cfg: 30.0 if cfg["BN"] == 64 else 45.0)
    assert s.regressed_now == 0 and s.finalists() == []


def test_stopping_from_outside():
    s = SlotSearch("s", [SlotCase("t", 30.0, True)], {"BN": 16, "W": 1}, SPACE, RULE, lambda c, cfg: None)
    s.stop("budget")
    assert s.wants() == [] and s.done == "budget"

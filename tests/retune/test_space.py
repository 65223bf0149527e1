"""harness/retune/space.py: a kernel's search space from its files and sweeps, and the three levels of moves."""

from __future__ import annotations

from harness.retune.space import (
    Space,
    backend_of,
    build_space,
    config_key,
    pattern_moves,
    single_moves,
    widening_moves,
    with_value,
)

FILES = [
    {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "num_warps": 4, "num_stages": 3, "waves_per_eu": 2},
    {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 64, "num_warps": 8, "cache_modifier": ".cg"},
]


def test_the_space_is_the_kernels_keys_over_the_values_its_files_and_sweeps_use():
    s = build_space(("BLOCK_SIZE_M", "BLOCK_SIZE_N", "cache_modifier", "NUM_KSPLIT"), "sm90", FILES,
                    {"BLOCK_SIZE_N": [256, 64], "NUM_KSPLIT": [1, 2], "TYPO": [1]})  # fmt: skip
    assert s.values == {
        "BLOCK_SIZE_M": (64, 128),
        "BLOCK_SIZE_N": (128, 64, 256),
        "cache_modifier": (".cg",),
        "NUM_KSPLIT": (1, 2),
        "num_warps": (4, 8),
        "num_stages": (3,),
    }  # waves_per_eu is AMD's: not a key of an sm90 config; TYPO is no key of the kernel
    assert "waves_per_eu" in build_space((), "gfx942", FILES, {}).values
    assert (backend_of("sm90"), backend_of("gfx950"), backend_of("interp")) == ("cuda", "hip", "interp")


def test_level_one_moves_one_key_one_step():
    s = Space({"BLOCK_SIZE_N": (128, 64, 256), "cache_modifier": (None, ".cg"), "NUM_KSPLIT": (1, 2, 4)})
    cfg = {"BLOCK_SIZE_N": 128, "cache_modifier": None}
    assert s.steps(cfg, "BLOCK_SIZE_N") == [64, 256]
    assert s.steps({"BLOCK_SIZE_N": 256}, "BLOCK_SIZE_N") == [128]
    assert s.steps({"BLOCK_SIZE_N": 96}, "BLOCK_SIZE_N") == [64, 128]  # a seed value no file uses
    assert s.steps(cfg, "cache_modifier") == [".cg"]  # not a number: every other value
    assert s.steps(cfg, "NUM_KSPLIT") == [1, 2, 4]  # a key the config does not set: each value, added
    assert single_moves(s, cfg) == [
        ("BLOCK_SIZE_N", 64), ("BLOCK_SIZE_N", 256), ("cache_modifier", ".cg"),
        ("NUM_KSPLIT", 1), ("NUM_KSPLIT", 2), ("NUM_KSPLIT", 4),
    ]  # fmt: skip
    assert list(with_value(cfg, "NUM_KSPLIT", 2)) == ["BLOCK_SIZE_N", "cache_modifier", "NUM_KSPLIT"]


def test_level_two_combines_the_best_single_moves():
    cfg = {"A": 1, "B": 1, "C": 1}
    best = [("A", 2), ("A", 0), ("B", 2), ("C", 2)]  # best first; only the first three count
    assert pattern_moves(cfg, best) == [{"A": 2, "B": 2, "C": 1}, {"A": 0, "B": 2, "C": 1}]
    assert pattern_moves(cfg, [("A", 2), ("B", 2), ("C", 2)])[-1] == {"A": 2, "B": 2, "C": 2}


def test_level_three_widens_past_the_values_seen():
    s = Space({"BLOCK_SIZE_K": (32, 64), "num_stages": (2, 3), "num_warps": (1, 2)})
    assert widening_moves(s, {"BLOCK_SIZE_K": 64, "num_stages": 2, "num_warps": 1}) == [
        ("BLOCK_SIZE_K", 128),  # powers of two double
        ("num_stages", 1),  # other integers step by one
    ]  # num_warps 1 would halve to 0: no
    assert widening_moves(s, {"BLOCK_SIZE_K": 48}) == []


def test_config_key_ignores_order():
    assert config_key({"b": 1, "a": None}) == config_key({"a": None, "b": 1}) == '{"a":null,"b":1}'

"""Balanced, deterministic parts of a suite: --shard I/N over machines, --gpus over a node's GPUs."""

from __future__ import annotations

import pytest

from harness.errors import HarnessError
from harness.inputs.suite import load_suite
from harness.run.shards import expected_us, parse_shard, partition, shard
from tests.conftest import ROOT

CASES = load_suite(ROOT / "suites" / "library.yaml")


@pytest.mark.parametrize("n", [1, 2, 3, 4, 8])
def test_parts_cover_the_suite_once_and_are_balanced(n):
    parts = partition(CASES, n)
    keys = [c.key for p in parts for c in p]
    assert sorted(keys) == sorted(c.key for c in CASES) and len(set(keys)) == len(keys)
    loads = [sum(expected_us(c) for c in p) for p in parts]
    biggest = max(expected_us(c) for c in CASES)
    assert max(loads) - min(loads) <= biggest  # longest first, to the least loaded: within one case
    assert parts == partition(CASES, n), "the same parts on every machine"


def test_a_previous_run_sets_the_costs():
    first, second = CASES[0], CASES[1]
    prev = {first.key: 1e9}  # one case known to be very long
    a, b = partition([first, second], 2, prev)
    assert {c.key for c in a} == {first.key} and {c.key for c in b} == {second.key}
    assert expected_us(first, prev) > expected_us(first)


def test_shard_numbers_count_from_one():
    assert parse_shard("2/4") == (2, 4) and parse_shard(" 1 / 1 ") == (1, 1)
    for bad in ("0/4", "5/4", "2", "a/b", "-1/2", ""):
        with pytest.raises(HarnessError, match="expected I/N"):
            parse_shard(bad)
    parts = [shard(CASES, f"{i}/3") for i in (1, 2, 3)]
    assert sum(map(len, parts)) == len(CASES) and parts[0] == partition(CASES, 3)[0]

"""harness/retune/configtext.py: one bucket replaced and a note added, every other byte as it was."""

from __future__ import annotations

import json

import pytest

from harness.retune.configtext import ConfigTextError, members, replace_bucket, tuned_for, value_text, with_note

FILE = (
    "{\n"
    '  "M_LEQ_16": {"BLOCK_SIZE_M": 16, "num_warps": 4},\n'
    '  "M_LEQ_64":   {"BLOCK_SIZE_M": 64,"num_warps":4},\n'
    '  "any": {"BLOCK_SIZE_M": 128, "cache_modifier": null}\n'
    "}\n"
)
STAMP = {"triton": "3.9.0", "gpu": "H100"}


def test_members_locate_each_value_exactly():
    ms = members(FILE)
    assert [m.key for m in ms] == ["M_LEQ_16", "M_LEQ_64", "any"]
    assert FILE[ms[1].value_start : ms[1].value_end] == '{"BLOCK_SIZE_M": 64,"num_warps":4}'
    assert value_text(FILE, "any") == '{"BLOCK_SIZE_M": 128, "cache_modifier": null}'
    assert value_text(FILE, "M_LEQ_8") is None and members("{}") == []


def test_replacing_a_bucket_leaves_every_other_byte():
    out = replace_bucket(FILE, "M_LEQ_16", {"BLOCK_SIZE_M": 32, "num_warps": 8})
    old, new = FILE.splitlines(), out.splitlines()
    assert new[1] == '  "M_LEQ_16": {"BLOCK_SIZE_M": 32, "num_warps": 8},'
    assert [a for a, b in zip(old, new) if a != b] == [old[1]]  # the odd spacing of M_LEQ_64 kept too
    assert json.loads(out)["M_LEQ_16"] == {"BLOCK_SIZE_M": 32, "num_warps": 8}
    with pytest.raises(ConfigTextError, match="no bucket 'M_LEQ_8'"):
        replace_bucket(FILE, "M_LEQ_8", {})


def test_the_note_goes_first_on_its_own_line_and_merges():
    out = with_note(FILE, "any", STAMP)
    lines = out.splitlines()
    assert lines[1] == '  "_tuned_for": {"any": {"triton": "3.9.0", "gpu": "H100"}},'
    assert lines[:1] + lines[2:] == FILE.splitlines()  # the buckets' lines untouched
    again = with_note(out, "M_LEQ_16", {"triton": "3.9.0"})
    assert tuned_for(again) == {"any": STAMP, "M_LEQ_16": {"triton": "3.9.0"}}
    assert again.count("_tuned_for") == 1 and again.splitlines()[2:] == FILE.splitlines()[1:]


def test_other_layouts():
    one_line = '{"any": {"BLOCK_N": 16}}'
    assert json.loads(with_note(one_line, "any", STAMP)) == {"_tuned_for": {"any": STAMP}, "any": {"BLOCK_N": 16}}
    assert json.loads(with_note("{}", "any", STAMP)) == {"_tuned_for": {"any": STAMP}}
    for bad in ("[1]", '{"a" 1}', '{"a": 1 "b": 2}', '{"a": tru}'):
        with pytest.raises(ConfigTextError):
            members(bad)

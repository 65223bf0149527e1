"""Config files as text: one bucket's config replaced, a note added, every other byte left as it was. Pure.

A retune changes one bucket at a time, and a per-shape file it writes must hold the default file's other buckets
*byte for byte* (a reviewer diffs the two files and sees one line; AITER PR #4469 did the same by hand), so files
are never re-serialized: the members of the top-level object are located in the text (:func:`members`) and only
the span of the changed value is replaced. Configs are written the way ``benchmarks/tune_pick.py`` writes them,
one bucket a line: ``{"BLOCK_SIZE_M": 64, "num_warps": 4}``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from harness.kernel_api.configs import NOTES

#: the note a retune writes: per bucket, the Triton and GPU it was tuned for
TUNED_FOR = NOTES[0]
_DECODER = json.JSONDecoder()


class ConfigTextError(ValueError):
    """The text is not a JSON object of members (the message says where)."""


@dataclass(frozen=True)
class Member:
    """One member of the file's top-level object: its key and where its key and value sit in the text."""

    key: str
    start: int  # the key's opening quote
    value_start: int
    value_end: int


def _ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def members(text: str) -> list[Member]:
    """The top-level object's members in file order, with their spans (ConfigTextError if it is not an object)."""
    i = _ws(text, 0)
    if i >= len(text) or text[i] != "{":
        raise ConfigTextError("expected a JSON object")
    found: list[Member] = []
    i = _ws(text, i + 1)
    if i < len(text) and text[i] == "}":
        return found
    while True:
        if i >= len(text) or text[i] != '"':
            raise ConfigTextError(f"expected a key at offset {i}")
        key, j = json.decoder.scanstring(text, i + 1)
        j = _ws(text, j)
        if j >= len(text) or text[j] != ":":
            raise ConfigTextError(f"expected ':' after {key!r}")
        v = _ws(text, j + 1)
        try:
            _, end = _DECODER.raw_decode(text, v)
        except json.JSONDecodeError as err:
            raise ConfigTextError(f"{key!r}: {err.msg}") from None
        found.append(Member(key, i, v, end))
        i = _ws(text, end)
        if i < len(text) and text[i] == ",":
            i = _ws(text, i + 1)
            continue
        if i < len(text) and text[i] == "}":
            return found
        raise ConfigTextError(f"expected ',' or '}}' after {key!r}")


def config_json(config: dict[str, Any]) -> str:
    """A config as one line, keys in the order given (tune_pick's style)."""
    return json.dumps(config)


def value_text(text: str, key: str) -> str | None:
    """The exact text of member ``key``'s value, None when there is no such member."""
    m = next((m for m in members(text) if m.key == key), None)
    return None if m is None else text[m.value_start : m.value_end]


def replace_bucket(text: str, bucket: str, config: dict[str, Any]) -> str:
    """``text`` with bucket ``bucket``'s config replaced; every other byte unchanged."""
    m = next((m for m in members(text) if m.key == bucket), None)
    if m is None:
        raise ConfigTextError(f"no bucket {bucket!r}")
    return text[: m.value_start] + config_json(config) + text[m.value_end :]


def tuned_for(text: str) -> dict[str, Any]:
    """The file's ``_tuned_for`` note ({} without one)."""
    raw = value_text(text, TUNED_FOR)
    note = json.loads(raw) if raw is not None else {}
    return note if isinstance(note, dict) else {}


def with_note(text: str, bucket: str, stamp: dict[str, Any]) -> str:
    """``text`` with ``_tuned_for[bucket] = stamp`` (other buckets' stamps kept). A file without the note gets it
    as its first member, on a line of its own indented like the others: the bucket lines stay as they were."""
    note = {**tuned_for(text), bucket: stamp}
    body = json.dumps(note)
    ms = members(text)
    old = next((m for m in ms if m.key == TUNED_FOR), None)
    if old is not None:
        return text[: old.value_start] + body + text[old.value_end :]
    entry = f"{json.dumps(TUNED_FOR)}: {body}"
    if not ms:
        return "{\n  " + entry + "\n}\n"
    first = ms[0]
    line_start = text.rfind("\n", 0, first.start) + 1
    indent = text[line_start : first.start]
    if indent.strip():  # the first member shares the brace's line: keep that layout
        return text[: first.start] + entry + ", " + text[first.start :]
    return text[:line_start] + indent + entry + ",\n" + text[line_start:]

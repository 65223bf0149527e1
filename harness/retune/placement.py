"""Where a new config goes, by the lookup rule of harness/kernel_api/configs.py. Pure: config files as texts in,
texts out.

AITER's lookup reads ``{arch}-{family}-N=..-K=...json`` when it exists, else ``{arch}-{family}.json``, never
merged, and in it the first bucket that matches. So a bucket of the default file serves every M in its range
*and* every (N, K) without a file of its own. A retune therefore

* edits a shared bucket only if every case that resolves to it is no worse (the guard measures them all);
* otherwise writes a per-shape file for the regressed case's (N, K): the default file's text with that one
  bucket's config replaced, every other bucket a byte-identical copy, so the other M of that shape keep exactly
  the configs they had;
* edits a bucket of an existing per-shape file in place: it serves that shape only.

:func:`changes` says which cases a new state of the files changes, by resolving every case in both: the set the
guard must measure, and the proof (tests, and every retune) that nothing else moved.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.kernel_api.configs import config_paths, is_note, pick_bucket
from harness.retune.configtext import replace_bucket, with_note

#: config files by name → their text
Files = Mapping[str, str]


@dataclass(frozen=True)
class Lookup:
    """How one case finds its config: its kernel's ConfigLookup applied to its parameters."""

    family: str
    arch: str
    key: str  # the per-shape suffix, e.g. N=512-K=128 ('' when the lookup specializes on nothing)
    param: str  # the bucket parameter (M)
    value: int


@dataclass(frozen=True)
class Where:
    file: str
    bucket: str
    config: dict[str, Any]

    @property
    def slot(self) -> tuple[str, str]:
        return self.file, self.bucket


def file_names(lookup: Lookup) -> tuple[str, str | None]:
    """(the default file's name, the per-shape file's name or None)."""
    default, specific = config_paths(lookup.family, lookup.arch, lookup.key, Path())
    return default.name, specific.name if specific is not None else None


def buckets(text: str) -> dict[str, dict[str, Any]]:
    """A file's buckets (its notes left out), as the lookup reads them."""
    data = json.loads(text)
    return {k: v for k, v in data.items() if not is_note(k)}


def resolve(files: Files, lookup: Lookup) -> Where | None:
    """The file, bucket and config a case gets from ``files`` (harness.kernel_api.configs.resolve's rule); None when its
    default file is missing or no bucket matches."""
    default, specific = file_names(lookup)
    if default not in files:
        return None
    name = specific if specific is not None and specific in files else default
    found = buckets(files[name])
    bucket = pick_bucket(found, lookup.value, lookup.param)
    return None if bucket is None else Where(name, bucket, dict(found[bucket]))


def changes(before: Files, after: Files, lookups: Mapping[str, Lookup]) -> dict[str, tuple[Where, Where]]:
    """The cases (by id) whose resolved config differs between two states of the files: (before, after)."""
    out = {}
    for cid, lk in lookups.items():
        a, b = resolve(before, lk), resolve(after, lk)
        if a is not None and b is not None and a.config != b.config:
            out[cid] = (a, b)
    return out


@dataclass(frozen=True)
class Option:
    """One way to place a new config: ``kind`` is ``shared`` (a default file's bucket), ``per-shape`` (a new
    file for one shape) or ``edit`` (a bucket of an existing per-shape file); ``files`` the texts it writes."""

    kind: str
    file: str
    bucket: str
    files: dict[str, str]

    def apply(self, state: Files) -> dict[str, str]:
        return {**state, **self.files}


def options(
    state: Files, lookup: Lookup, config: dict[str, Any], stamp: dict[str, Any], base: Files | None = None
) -> list[Option]:
    """The ways to give the case of ``lookup`` the config ``config``, in the order the rule tries them: a bucket
    of its per-shape file (``edit``), or the default file's bucket (``shared``) and then a new per-shape file
    copying the default (``per-shape``). ``base``: the state whose default text a new per-shape file copies
    (default: ``state``)."""
    where = resolve(state, lookup)
    if where is None:
        return []
    default, specific = file_names(lookup)
    edited = with_note(replace_bucket(state[where.file], where.bucket, config), where.bucket, stamp)
    if where.file != default:
        return [Option("edit", where.file, where.bucket, {where.file: edited})]
    found = [Option("shared", default, where.bucket, {default: edited})]
    if specific is not None:
        text = per_shape_text((base or state)[default], where.bucket, config, stamp)
        found.append(Option("per-shape", specific, where.bucket, {specific: text}))
    return found


def per_shape_text(default_text: str, bucket: str, config: dict[str, Any], stamp: dict[str, Any]) -> str:
    """A per-shape file: the default file's text with one bucket's config replaced and the note added."""
    return with_note(replace_bucket(default_text, bucket, config), bucket, stamp)

"""Hints for the search (``--hints``): the timings of another retune — its ``cache.jsonl``, from another GPU of
the same model, a CI machine, yesterday's run — choose which configs the search times first, next to the seed.

A time measured elsewhere is never used as a time here (two machines of one model disagree by more than the
rule: the cache is keyed by GPU for that reason); it only ranks candidates. Only the search's timings (tag
``search``) of the same Triton release count. Where several GPUs timed a (case, config), their median ranks it.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.results.schema import TIMED_STATUSES
from harness.retune.cache import Cache
from harness.retune.search import SlotCase, Timing, score
from harness.retune.space import config_key
from harness.verdict.rule import Rule

#: hinted configs per slot: as many as the golden check takes finalists
PER_SLOT = 3


@dataclass
class Hints:
    """Times by (case key ``kernel/case_id``, config key); configs by key."""

    times: dict[tuple[str, str], float] = field(default_factory=dict)
    configs: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.times)

    def time_of(self, case_key: str, config: dict[str, Any]) -> Timing | None:
        t = self.times.get((case_key, config_key(config)))
        return None if t is None else ("ok", t)

    def best(self, cases: list[SlotCase], seed: dict[str, Any], rule: Rule, n: int = PER_SLOT) -> list[dict[str, Any]]:
        """The ``n`` configs timed on every case of a slot that score best against the seed (timed there too, or
        not at all), none that made a case slower than the seed there."""
        seed_times = {c.case_id: (t[1] if (t := self.time_of(c.case_id, seed)) else None) for c in cases}
        ranked = []
        for key, cfg in self.configs.items():
            if key == config_key(seed):
                continue
            s = score(cases, seed_times, cfg, self.time_of, rule)
            if s is not None and s.worse == 0:
                ranked.append((s.unfixed, s.geo, key))
        picked: dict[str, dict[str, Any]] = {}
        for _, _, key in sorted(ranked):
            cfg = complete(self.configs[key], seed)
            if config_key(cfg) != config_key(seed):
                picked.setdefault(config_key(cfg), cfg)
        return list(picked.values())[:n]


def complete(hint: dict[str, Any], seed: dict[str, Any]) -> dict[str, Any]:
    """A hinted config with the keys it does not name taken from the slot's seed: what the worker runs (a case's
    config is an override on top of its file's bucket), so the timing is cached under the config that ran. A
    cache from before a key existed (EPILOGUE_SUBTILE) holds configs without it."""
    return {**seed, **hint}


def cache_file(path: Path) -> Path:
    """A --hints path: a cache.jsonl, or a retune's --out folder holding one."""
    file = path / "cache.jsonl" if path.is_dir() else path
    if not file.is_file():
        raise HarnessError(f"--hints {path}: no such file" + (" (no cache.jsonl in it)" if path.is_dir() else ""))
    try:
        cache = Cache(file)
    except OSError as err:
        raise HarnessError(f"--hints {path}: cannot read {file}: {err.strerror}") from None
    if not cache.loaded:
        what = f"none of its {cache.lines} lines is a timing" if cache.lines else "it is empty"
        raise HarnessError(f"--hints {path}: not a retune's cache.jsonl ({what}): give a retune's --out or its cache")
    return file


def load_hints(paths: Iterable[Path], triton: str) -> Hints:
    """The search timings of Triton ``triton`` in ``paths`` (cache files or retune folders)."""
    seen: dict[tuple[str, str], list[float]] = {}
    hints = Hints()
    for path in paths:
        for e in Cache(cache_file(Path(path))).entries.values():
            k = e.key
            if k.tag != "search" or not k.stack.startswith(f"triton {triton} ") or e.time_us is None:
                continue
            if e.status not in TIMED_STATUSES or e.time_us <= 0:
                continue
            seen.setdefault((f"{k.kernel}/{k.case_id}", k.config), []).append(e.time_us)
            hints.configs.setdefault(k.config, json.loads(k.config))
    hints.times = {key: statistics.median(ts) for key, ts in seen.items()}
    return hints

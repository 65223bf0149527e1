"""Where a retune looks: the values each config key may take, and the neighbours of a config. Pure.

A kernel's search space is its own: the keys its SPEC reads (``config_keys``) and the launch options of the
backend, each over the values its config files (every arch) and its sweep suites already use, plus the value the
seed has. Those are values someone has compiled for this kernel, so the search spends its budget near configs
that are known to make sense instead of on a grid. Neighbours come in three widening levels:

1. one key moved one step along its values (coordinate moves: ``BLOCK_SIZE_N`` 128 → 64 or 256);
2. the best two or three single moves of level 1 combined (a pattern move: a larger ``BLOCK_SIZE_M`` *and* fewer
   stages, which neither move alone may show);
3. one key moved one step past the values seen (a power-of-two key doubled past its largest value or halved
   below its smallest; another integer key by one): the space itself widens.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.kernel_api.configs import LAUNCH_OPTIONS

#: how many of level 1's best single moves level 2 combines
PATTERN_MOVES = 3


def backend_of(arch: str) -> str:
    """The backend whose launch options a config file for ``arch`` may hold: sm90 → cuda, gfx942 → hip."""
    if arch.startswith("gfx"):
        return "hip"
    return "interp" if arch == "interp" else "cuda"


def config_key(config: Mapping[str, Any]) -> str:
    """A config's canonical text (keys sorted): what the cache and the search compare configs by."""
    return json.dumps(dict(config), sort_keys=True, separators=(",", ":"))


def _numeric(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _power_of_two(v: Any) -> bool:
    return _numeric(v) and v > 0 and v & (v - 1) == 0


@dataclass(frozen=True)
class Space:
    """The values of each key, in order: ascending for integer keys, as first seen for the others."""

    values: dict[str, tuple[Any, ...]] = field(default_factory=dict)

    def ladder(self, key: str, current: Any = None, present: bool = False) -> list[Any]:
        """The key's values with ``current`` among them (a seed may hold a value no file uses)."""
        vals = list(self.values.get(key, ()))
        if present and current not in vals:
            vals.append(current)
        if vals and all(_numeric(v) for v in vals):
            vals.sort()
        return vals

    def steps(self, config: Mapping[str, Any], key: str) -> list[Any]:
        """Level 1: the values one step from the config's value of ``key``: the neighbours in an integer ladder;
        every other value of a key that is not one (strings, booleans, null) or that the config does not set."""
        present = key in config
        vals = self.ladder(key, config.get(key), present)
        if not present:
            return vals
        cur = config[key]
        if all(_numeric(v) for v in vals):
            i = vals.index(cur)
            return [vals[j] for j in (i - 1, i + 1) if 0 <= j < len(vals)]
        return [v for v in vals if v != cur]

    def beyond(self, config: Mapping[str, Any], key: str) -> list[Any]:
        """Level 3: one step past the ladder's end where the config sits at an end (integer keys only)."""
        if key not in config or not _numeric(config[key]):
            return []
        vals = self.ladder(key, config[key], True)
        if not all(_numeric(v) for v in vals):
            return []
        cur, out = config[key], []
        doubling = all(_power_of_two(v) for v in vals)
        if cur == vals[-1]:
            out.append(cur * 2 if doubling else cur + 1)
        if cur == vals[0] and (cur // 2 if doubling else cur - 1) >= (1 if doubling else 0):
            out.append(cur // 2 if doubling else cur - 1)
        return out


def build_space(
    keys: Iterable[str], arch: str, configs: Iterable[Mapping[str, Any]], suite_values: Mapping[str, Iterable[Any]]
) -> Space:
    """The space of a kernel: for each of its ``keys`` (its config_keys) and each launch option of ``arch``'s
    backend, the values its config files' buckets (``configs``) and sweep suites (``suite_values``) use. Keys
    with no value anywhere are left out: nothing says what they could be."""
    allowed = list(dict.fromkeys([*keys, *LAUNCH_OPTIONS[backend_of(arch)]]))
    seen: dict[str, list[Any]] = {k: [] for k in allowed}
    for cfg in configs:
        for k, v in cfg.items():
            if k in seen and v not in seen[k]:
                seen[k].append(v)
    for k, vals in suite_values.items():
        for v in vals:
            if k in seen and v not in seen[k]:
                seen[k].append(v)
    return Space({k: tuple(v) for k, v in seen.items() if v})


def with_value(config: Mapping[str, Any], key: str, value: Any) -> dict[str, Any]:
    """``config`` with ``key`` set (a key it did not have is added last: the seed's keys keep their order)."""
    out = dict(config)
    out[key] = value
    return out


def single_moves(space: Space, config: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """Level 1 as (key, value) moves."""
    return [(k, v) for k in space.values for v in space.steps(config, k)]


def pattern_moves(config: Mapping[str, Any], best: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    """Level 2: the best single moves (best first) combined two at a time and all together, one move per key."""
    best = best[:PATTERN_MOVES]
    out = []
    for n in range(2, len(best) + 1):
        for combo in itertools.combinations(best, n):
            if len({k for k, _ in combo}) < n:
                continue
            cfg = dict(config)
            for k, v in combo:
                cfg[k] = v
            out.append(cfg)
    return out


def widening_moves(space: Space, config: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """Level 3 as (key, value) moves."""
    return [(k, v) for k in space.values for v in space.beyond(config, k)]

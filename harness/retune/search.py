"""The search for one slot: coordinate descent, then pattern moves, then a wider space, seeded with the config
the slot has now. Pure: the caller times what :meth:`SlotSearch.wants` asks for and calls :meth:`advance`.

A *slot* is the smallest thing a config file can change on its own: one bucket as one ``specialize`` value
(``N=512-K=128``) sees it — the cases of COMPARE that resolve to the same file and bucket with the same
specialize values. The search times every case of the slot under TOT (the regressed ones and their neighbours in
the bucket), so a config that fixes one M but slows another is seen as such before the guard measures it.

A config's score, smallest best: (cases it makes slower than the seed by the rule, regressed cases it leaves
regressed against golden's time (``SlotCase.golden_us``), geometric mean of its time over the seed's). A config
that fails on any case of the slot has no score. A move is taken only when it is better by the rule's own margin
(``rel``), so timing noise does not walk the search around.

Hints (``--hints``: the best configs of another retune's timings, e.g. on another GPU of the same model) are timed
here with the seed in the first step, and the best of them, if better by the margin, is where the neighbour search
starts (a move of level 0). Their times elsewhere only choose them; what decides is their time here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.retune.guard import slower
from harness.retune.space import Space, config_key, pattern_moves, single_moves, widening_moves, with_value
from harness.verdict.rule import Rule

#: (status, time in µs or None): what a timing lookup answers; None when the config was not timed on the case
Timing = tuple[str, "float | None"]
TimeOf = Callable[[str, Mapping[str, Any]], "Timing | None"]
#: a config to prune answers why it cannot run the case, or None
Prune = Callable[[str, Mapping[str, Any]], "str | None"]
MAX_LEVEL = 3
MAX_MOVES = 10
FINALISTS = 3


@dataclass(frozen=True)
class SlotCase:
    case_id: str
    golden_us: float | None  # golden's time with the config users have now (this GPU's, once timed)
    target: bool  # a regression or TOT failure in COMPARE


@dataclass(frozen=True)
class Score:
    worse: int
    unfixed: int
    geo: float

    def better_than(self, other: Score | None, rel: float) -> bool:
        if other is None:
            return True
        if (self.worse, self.unfixed) != (other.worse, other.unfixed):
            return (self.worse, self.unfixed) < (other.worse, other.unfixed)
        return self.geo * rel < other.geo


def score(
    cases: list[SlotCase],
    seed_times: Mapping[str, float | None],
    config: Mapping[str, Any],
    time_of: TimeOf,
    rule: Rule,
) -> Score | None:
    """``config``'s score over ``cases`` against the seed's times (None: it failed or was not timed on one)."""
    worse = unfixed = 0
    logs = []
    for c in cases:
        got = time_of(c.case_id, config)
        t = got[1] if got else None
        if t is None or t <= 0:
            return None
        base = seed_times.get(c.case_id)
        worse += slower(base, t, rule)
        if c.target and (c.golden_us is None or slower(c.golden_us, t, rule)):
            unfixed += 1
        ref = base or c.golden_us or t
        logs.append(math.log(t / ref))
    return Score(worse, unfixed, math.exp(sum(logs) / len(logs)))


@dataclass
class SlotSearch:
    name: str
    cases: list[SlotCase]
    seed: dict[str, Any]
    space: Space
    rule: Rule
    prune: Prune
    max_moves: int = MAX_MOVES
    #: every config asked for so far, by its key: its score (None: failed on some case), or why it was pruned
    scores: dict[str, Score | None] = field(default_factory=dict)
    configs: dict[str, dict[str, Any]] = field(default_factory=dict)
    pruned: dict[str, str] = field(default_factory=dict)
    current: dict[str, Any] | None = None
    level: int = 1
    moves: list[tuple[int, dict[str, Any]]] = field(default_factory=list)  # (level, config moved to); level 0: a hint
    pending: list[dict[str, Any]] = field(default_factory=list)
    done: str = ""  # why the search ended ('' while it goes on)
    seed_times: dict[str, float | None] = field(default_factory=dict)
    #: configs timed with the seed in the first step (--hints: the best of another retune's timings)
    hints: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.pending = [dict(self.seed)]
        for cfg in self.hints:
            key = config_key(cfg)
            if any(config_key(p) == key for p in self.pending):
                continue
            why = next((w for c in self.cases if (w := self.prune(c.case_id, cfg))), None)
            if why:
                self.pruned[key], self.configs[key] = why, dict(cfg)
            else:
                self.pending.append(dict(cfg))

    # ------------------------------------------------------------------------------------------ scoring
    def _score(self, config: Mapping[str, Any], time_of: TimeOf) -> Score | None:
        return score(self.cases, self.seed_times, config, time_of, self.rule)

    def score_of(self, config: Mapping[str, Any]) -> Score | None:
        return self.scores.get(config_key(config))

    # ----------------------------------------------------------------------------------------- stepping
    def wants(self) -> list[dict[str, Any]]:
        """The configs to time next, on every case of the slot ([] when the search is over)."""
        return [] if self.done else list(self.pending)

    def advance(self, time_of: TimeOf) -> None:
        """Score what :meth:`wants` asked for (every case timed, or failed) and take the next step."""
        if self.done:
            return
        if self.current is None:  # the seed's round, with the hints
            for c in self.cases:
                got = time_of(c.case_id, self.seed)
                self.seed_times[c.case_id] = got[1] if got else None
            self._record(self.seed, time_of)
            self.current = dict(self.seed)
            if self.regressed_now == 0:  # COMPARE predates the files, or its regression was noise
                for cfg in self.pending[1:]:
                    self._record(cfg, time_of)
                self._finish("its current config is no regression under TOT timed now")
                return
            self._take_best(self.pending[1:], time_of, level=0)
            self._next(1)
            return
        if not self._take_best(self.pending, time_of, self.level):
            self._next(self.level + 1)
        elif len(self.moves) >= self.max_moves:
            self._finish(f"stopped after {self.max_moves} moves")
        else:
            self._next(1)

    def _take_best(self, configs: list[dict[str, Any]], time_of: TimeOf, level: int) -> bool:
        """Score ``configs``; move to the best if it beats the current config by the rule's margin."""
        best = None
        for cfg in configs:
            s = self._record(cfg, time_of)
            if s is not None and s.better_than(self.score_of(best) if best else None, 1.0):
                best = cfg
        if best is None or not self.score_of(best).better_than(self.score_of(self.current), self.rule.rel):
            return False
        self.current = best
        self.moves.append((level, best))
        return True

    def _record(self, cfg: dict[str, Any], time_of: TimeOf) -> Score | None:
        key = config_key(cfg)
        self.configs[key] = cfg
        self.scores[key] = self._score(cfg, time_of)
        return self.scores[key]

    def _next(self, level: int) -> None:
        """The candidates of the first level from ``level`` on that has any left to try."""
        while level <= MAX_LEVEL:
            self.level = level
            fresh = []
            for cfg in self._candidates(level):
                key = config_key(cfg)
                if key in self.scores or key in self.pruned or any(config_key(f) == key for f in fresh):
                    continue
                why = next((w for c in self.cases if (w := self.prune(c.case_id, cfg))), None)
                if why:
                    self.pruned[key] = why
                    self.configs[key] = cfg
                    continue
                fresh.append(cfg)
            if fresh:
                self.pending = fresh
                return
            level += 1
        self._finish("no neighbour is better (converged)")

    def _finish(self, why: str) -> None:
        self.pending, self.done = [], why

    def _candidates(self, level: int) -> list[dict[str, Any]]:
        cur = self.current or self.seed
        if level == 1:
            return [with_value(cur, k, v) for k, v in single_moves(self.space, cur)]
        if level == 2:
            ranked = []
            for k, v in single_moves(self.space, cur):
                s = self.score_of(with_value(cur, k, v))
                if s is not None:
                    ranked.append(((s.worse, s.unfixed, s.geo), k, v))
            best = [(k, v) for _, k, v in sorted(ranked, key=lambda r: r[0])]
            return pattern_moves(cur, best)
        return [with_value(cur, k, v) for k, v in widening_moves(self.space, cur)]

    def stop(self, why: str) -> None:
        """End the search from outside (the budget ran out)."""
        if not self.done:
            self._finish(why)

    # ---------------------------------------------------------------------------------------- results
    @property
    def targets(self) -> int:
        return sum(c.target for c in self.cases)

    @property
    def regressed_now(self) -> int:
        """Regressed cases the seed leaves regressed, timed now (all targets when the seed fails or is untimed)."""
        base = self.score_of(self.seed)
        return base.unfixed if base is not None else self.targets

    def finalists(self, n: int = FINALISTS) -> list[dict[str, Any]]:
        """The best configs predicted to leave fewer cases regressed than the seed does and to slow none, best
        first ([] when the seed itself is no longer a regression: nothing to fix)."""
        seed = config_key(self.seed)
        ranked = [
            (s.unfixed, s.geo, key)
            for key, s in self.scores.items()
            if s is not None and key != seed and s.worse == 0 and s.unfixed < self.regressed_now
        ]
        return [self.configs[key] for _, _, key in sorted(ranked)[:n]]

    @property
    def timed(self) -> int:
        return len(self.scores)

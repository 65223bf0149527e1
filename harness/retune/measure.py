"""Timing candidates with the machinery of `harness run`: the same worker, timing and stability rule.

A batch of (case, config) pairs is a list of suite cases whose config overrides are the whole candidate config
(``Case(kernel, params, overrides=config)``), measured through the run driver (``harness.run.orchestrate``) into
``DIR/runs/<name>.csv``; a guard interleaves four environments — golden and TOT, each pointed at a folder of
config files (``HARNESS_CONFIG_DIR``) — measuring the changed cases exactly as a suite names them, so the worker resolves each
case's config from the files the retune would write. A batch's file name is a hash of what it measures: a retune
killed in the middle of a batch asks for the same batch again and ``--resume`` finishes it, and every finished
batch's timings go to the cache before the search reads them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.envs.spec import EnvSpec
from harness.fsutil import write_text
from harness.inputs.suite import Case
from harness.results.cells import missing, number
from harness.results.load import load_results
from harness.results.schema import TIMED_STATUSES
from harness.retune.cache import EVIDENCE, Cache, Entry, Key, digest, make_key, source_hash
from harness.retune.guard import GUARD_PAIRS, Measured
from harness.run.options import RunOptions
from harness.run.orchestrate import Driver
from harness.verdict.referee import decided_pairs
from harness.verdict.rule import Rule

#: the four measurements of a guard, in run order
ROLES = ("golden_old", "tot_old", "golden_new", "tot_new")


@dataclass(frozen=True)
class Stack:
    """One environment as the retune knows it: its spec, and what identifies its timings."""

    label: str  # golden | tot
    spec: EnvSpec
    triton: str  # version
    ident: str  # 'triton VERSION at PATH'
    gpu: str  # UUID, else model @ host


@dataclass
class Cost:
    """What the measuring cost: configs compiled (prepared by a worker), cases timed, failures by status,
    timings served from the cache, seconds per phase."""

    compiled: int = 0
    timed: int = 0
    failed: dict[str, int] = field(default_factory=dict)
    cached: int = 0
    runs: int = 0
    seconds: dict[str, float] = field(default_factory=dict)

    def add_rows(self, statuses: list[str]) -> None:
        for s in statuses:
            self.compiled += s != "skipped"
            if s in TIMED_STATUSES:
                self.timed += 1
            else:
                self.failed[s] = self.failed.get(s, 0) + 1

    @property
    def minutes(self) -> float:
        return sum(self.seconds.values()) / 60.0


@dataclass(frozen=True)
class Item:
    """A case (as the suite names it, no overrides) and the config to time it with."""

    case: Case
    config: dict[str, Any]


@dataclass(frozen=True)
class GuardCase:
    """A case whose config a change moves: golden's config before the retune, TOT's before this change, new."""

    case: Case
    golden_old: dict[str, Any]
    tot_old: dict[str, Any]
    new: dict[str, Any]

    @property
    def tag(self) -> str:
        return "guard:" + digest(self.golden_old, self.tot_old, self.new)

    def config(self, role: str) -> dict[str, Any]:
        return {"golden_old": self.golden_old, "tot_old": self.tot_old}.get(role, self.new)


def with_configs(spec: EnvSpec, folder: Path) -> EnvSpec:
    """The env reading its config files from ``folder``."""
    return replace(spec, env={**spec.env, "HARNESS_CONFIG_DIR": str(folder)})


def _entry(key: Key, row: dict[str, Any], reps: bool = False) -> Entry:
    """The cache's entry of one results row; with ``reps`` (a guard's timings, which the guard judges by
    compare's confidence) its EVIDENCE too, an empty cell as None."""
    status = str(row.get("status") or "runtime_error")
    t = number(row.get("time_us"))
    error = str(row.get("error") or "").strip().splitlines()
    evidence = {k: None if missing(row.get(k)) else row.get(k) for k in EVIDENCE} if reps else None
    return Entry(key, status, t if status in TIMED_STATUSES else None, error[0][:300] if error else "", evidence)


def _unsure(founds: dict[str, tuple[str, list[Entry | None]]], rule: Rule) -> dict[str, frozenset[tuple[int, int]]]:
    """Per case (key → its kernel and its four timings), the guard pairs compare would still call ambiguous, all
    cases judged together as the guard run's referee judged them (a case beside its kernel's others; none where a
    timing was cached without its reps)."""
    rows = {}
    for key, (kernel, found) in founds.items():
        if all(e is not None and e.evidence is not None for e in found):
            rows[key] = [{**e.row(), "kernel": kernel} for e in found]
    out: dict[str, set[tuple[int, int]]] = {key: set() for key in founds}
    for a, b in GUARD_PAIRS:
        done = decided_pairs({key: (r[a], r[b]) for key, r in rows.items()}, rule)
        for key in set(rows) - done:
            out[key].add((a, b))
    return {key: frozenset(v) for key, v in out.items()}


def _worker_config(row: dict[str, Any]) -> dict[str, Any] | None:
    cell = row.get("config")
    try:
        found = json.loads(cell) if isinstance(cell, str) and cell.strip() else None
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


class Measurer:
    """Runs batches and guards into ``DIR/runs/``, through the cache, and counts what they cost."""

    def __init__(
        self,
        out: Path,
        stacks: dict[str, Stack],
        cache: Cache,
        opts: RunOptions,
        driver: Driver | None = None,
        cost: Cost | None = None,
    ):
        self.runs_dir = Path(out) / "runs"
        self.stacks, self.cache, self.opts = stacks, cache, replace(opts, resume=True)
        # each run checks and locks its own file: retune holds the lock on OUT, and a rerun resumes every run
        self.driver = driver or Driver()
        self.cost = cost or Cost()
        self.progress: Callable[[Cost], None] | None = None  # told after every run (retune.py keeps the total)
        self._sources: dict[str, str] = {}

    def key(self, case: Case, config: dict[str, Any], stack: str, tag: str) -> Key:
        src = self._sources.setdefault(case.kernel.source, source_hash(case.kernel.source))
        s = self.stacks[stack]
        return make_key(case.name, src, case.case_id, config, s.ident, s.gpu, tag)

    def lookup(self, case: Case, config: dict[str, Any], stack: str, tag: str = "search") -> Entry | None:
        return self.cache.get(self.key(case, config, stack, tag))

    # ------------------------------------------------------------------------------------------ batches
    def batch(self, stack: str, items: list[Item], configs: Path, phase: str) -> None:
        """Time every item not in the cache under ``stack`` (its cases' config files read from ``configs``)."""
        todo: dict[str, tuple[Item, Key]] = {}
        for it in items:
            key = self.key(it.case, it.config, stack, "search")
            if self.cache.get(key) is None:
                cand = Case(it.case.kernel, it.case.params, dict(it.config))
                todo.setdefault(cand.key, (it, key))
        self.cost.cached += len(items) - len(todo)
        if not todo:
            return
        name = f"{phase}-{stack}-{digest(sorted(todo))}"
        cases = [Case(it.case.kernel, it.case.params, dict(it.config)) for it, _ in todo.values()]
        manifest = self._manifest(name, [[it.case.key, it.config] for it, _ in todo.values()])
        spec = with_configs(self.stacks[stack].spec, configs)
        out = self.runs_dir / f"{name}.csv"
        with self._clock(phase):
            self.driver.measure([(spec, out)], cases, self.opts, str(manifest), names=[f"{phase} {stack}"], lock=False)
        rows = load_results(out).to_dict("records")
        by_id = {f"{r['kernel']}/{r['case_id']}": r for r in rows}
        entries = []
        for cid, (it, key) in todo.items():
            row = by_id[cid]
            seen = _worker_config(row)
            if seen is not None and seen != it.config and row.get("status") in TIMED_STATUSES:
                raise RuntimeError(f"{cid}: the worker ran {seen}, not the candidate {it.config}")
            entries.append(_entry(key, row))
        self.cost.add_rows([e.status for e in entries])
        self.cache.add(entries)

    # -------------------------------------------------------------------------------------------- guard
    def guard(
        self, cases: list[GuardCase], dirs: dict[str, Path], phase: str = "guard", rule: Rule | None = None
    ) -> dict[str, Measured]:
        """The four measurements of every case, interleaved in one run (only cases without all four cached);
        ``dirs``: the config folder of each role. Returns Measured by case key (kernel/case_id), with the pairs
        still ambiguous by ``rule`` (none without one)."""
        need = [g for g in cases if any(self.lookup(g.case, g.config(r), _stack(r), _tag(g, r)) is None for r in ROLES)]
        self.cost.cached += 4 * (len(cases) - len(need))
        if need:
            self._guard_run(need, dirs, phase)
        founds = {g.case.key: (g.case.name, [self.lookup(g.case, g.config(r), _stack(r), _tag(g, r)) for r in ROLES])
                  for g in cases}  # fmt: skip
        unsure = _unsure(founds, rule) if rule else {}
        out = {}
        for g in cases:
            found = founds[g.case.key][1]
            t = [e.time_us if e else None for e in found]
            st = tuple(e.status if e else "missing" for e in found)
            out[g.case.key] = Measured(g.case.name, g.case.case_id, *t, st, unsure.get(g.case.key, frozenset()))
        return out

    def _guard_run(self, need: list[GuardCase], dirs: dict[str, Path], phase: str) -> None:
        name = f"{phase}-{digest(sorted((g.case.key, g.tag) for g in need))}"
        manifest = self._manifest(name, [[g.case.key, g.golden_old, g.tot_old, g.new] for g in need])
        runs = [(with_configs(self.stacks[_stack(r)].spec, dirs[r]), self.runs_dir / f"{name}-{r}.csv") for r in ROLES]
        cases = [g.case for g in need]
        names = [r.replace("_", " ") for r in ROLES]
        quiet = replace(self.driver, warn=_ignore)  # the guard's verdicts are its findings, not the run's warnings
        with self._clock(phase):
            quiet.measure(runs, cases, self.opts, str(manifest), names=names, lock=False)
        entries = []
        for role, (_, out) in zip(ROLES, runs):
            # by kernel and case: two kernels of one run may share a case id (a8w8 and a16wfp4 B128_M512_N512_K128)
            rows = {(r["kernel"], r["case_id"]): r for r in load_results(out).to_dict("records")}
            for g in need:
                row = rows[(g.case.name, g.case.case_id)]
                seen = _worker_config(row)
                if seen is not None and seen != g.config(role):
                    raise RuntimeError(
                        f"{g.case.key} ({role}): the worker resolved {seen} from {dirs[role]}, expected {g.config(role)}"
                    )
                entries.append(_entry(self.key(g.case, g.config(role), _stack(role), _tag(g, role)), row, reps=True))
        self.cost.add_rows([e.status for e in entries])
        self.cache.add(entries)

    # ------------------------------------------------------------------------------------------ helpers
    def _manifest(self, name: str, body: list[Any]) -> Path:
        """What a run measures, named by its hash (the runs' --resume checks the suite name)."""
        p = self.runs_dir / f"{name}.json"
        if not p.exists():
            write_text(p, json.dumps(body, indent=1, default=str) + "\n")
        return p.resolve()

    @contextmanager
    def _clock(self, phase: str) -> Iterator[None]:
        """Charge a run's wall time (compiling included: the GPU is held all the while) to ``phase``, also when
        it is cut: a retune killed or cut by a deadline again and again must still see its budget run out."""
        t0 = time.monotonic()
        try:
            yield
        finally:
            self.cost.runs += 1
            self.cost.seconds[phase] = self.cost.seconds.get(phase, 0.0) + time.monotonic() - t0
            if self.progress:
                self.progress(self.cost)


def _ignore(message: str) -> None:
    return None


def _stack(role: str) -> str:
    return role.split("_")[0]


def _tag(g: GuardCase, role: str) -> str:
    return f"{g.tag}:{role}"

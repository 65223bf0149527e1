"""`harness retune`: remove TOT regressions by changing configs, keeping only changes that slow no case.

The stages, each resumable through the timing cache (cache.py):

1. **Targets**: COMPARE's regressions and TOT failures, each located in the config files (file, bucket), grouped
   into slots (search.py): the cases one bucket of one shape serves.
2. **Search** under TOT, per slot, seeded with its current config (search.py), over the kernel's own space
   (space.py), configs that cannot work pruned first (prune.py); while the search share of the budget lasts.
3. **Golden check**: the best few configs of each slot timed under golden; any that slows golden is dropped.
4. **Guard**, in rounds: each slot's best config placed by the lookup rule (placement.py: a shared bucket first,
   else a per-shape file), every case whose resolved config changes measured under golden and TOT, old and new,
   interleaved (measure.py), and the change kept or rejected (guard.py). Independent changes share a round.
5. **Output**: the files (in place, or DIR/configs with --dry-run) with their ``_tuned_for`` note, a diff, and the
   report (report.py).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from harness.compare.store import load_compare
from harness.errors import HarnessError, did_you_mean
from harness.fsutil import write_text
from harness.kernel_api.configs import config_dir
from harness.retune import inputs as I
from harness.retune.cache import Cache, digest
from harness.retune.guard import Decision, Measured, decide, guard_referee, pct, slower, us
from harness.retune.hints import cache_file, load_hints
from harness.retune.measure import Cost, GuardCase, Item, Measurer, Stack
from harness.retune.model import Change, Options, Slot, diff_text
from harness.retune.outputs import Outputs, measured_row
from harness.retune.placement import Option, changes, file_names, options, per_shape_text, resolve
from harness.retune.prune import Learned, static_problem
from harness.retune.search import SlotCase, SlotSearch
from harness.retune.space import backend_of, build_space, config_key
from harness.run.locks import lock_output
from harness.run.orchestrate import Driver
from harness.run.workers import WorkerPool, resolve_timing
from harness.verdict.rule import Rule

Log = Callable[[str], None]
#: what only a retune folder holds: a folder with one of them was written by an older harness retune (no marker)
OWN = ("cache.jsonl", "progress.json", "retune.json", "states", "logs")


class Retune(Outputs):
    def __init__(self, opts: Options, log: Log, driver: Driver | None = None):
        self.opts, self.log, self.driver = opts, log, driver
        self.notes: list[str] = []
        self.kept: list[Change] = []
        self.rejected: list[dict[str, Any]] = []
        self.learned = Learned()
        self.after: dict[str, Measured] = {}  # case key → its last kept change's guard measurement
        self.after_verdict: dict[str, str] = {}  # case key → verdict with its current config timed now
        self.golden_here: dict[str, float] = {}  # case key → golden's time with its current config on this GPU

    # --------------------------------------------------------------------------------------------- open
    def open(self) -> None:
        """COMPARE, the two stacks (a worker's hello each), the config files as they are, the measurer."""
        cmp = load_compare(self.opts.compare)
        self.rule: Rule = cmp.rule
        names = list(dict.fromkeys(str(k) for k in cmp.table["kernel"]))
        for k in self.opts.kernels:
            if k not in names:
                raise HarnessError(f"--kernel {k!r}: no such kernel in {self.opts.compare}{did_you_mean(k, names)}")
        self.table = cmp.table
        kernels, notes = I.load_kernels(names, I.kernel_sources(cmp))
        tunable = [k for k in self.opts.kernels if k in kernels and kernels[k].spec.config is not None]
        if self.opts.kernels and not tunable:  # before any worker starts: nothing could be retuned
            why = "; ".join(n for n in notes if n.split(":", 1)[0] in self.opts.kernels) or "no config files to change"
            raise HarnessError(f"--kernel {' '.join(self.opts.kernels)}: its kernels look up no config files "
                               f"({why}): nothing to retune")  # fmt: skip
        tinfo = self._open_stacks()
        self.config_dir = config_dir()
        self.original = I.snapshot(self.config_dir)
        self.state = dict(self.original)
        self.before_dir = self.state_dir(self.original)
        self.cases, more = I.case_infos(cmp, kernels, self.original, self.arch)
        self.notes += notes + more
        self.by_key = {c.key: c for c in self.cases}
        self.lookups = {c.key: c.lookup for c in self.cases}
        self._open_measurer(tinfo)
        self.hints = load_hints(self.opts.hints, self.tot.triton)
        if self.opts.hints:
            self.notes.append(f"hints: {len(self.hints)} (case, config) timings of triton {self.tot.triton} read")
        self.stamp = {"triton": self.tot.triton, "gpu": self.gpu_name, "by": "harness retune"}
        self.stamp["date"] = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d")

    def _open_stacks(self) -> dict[str, Any]:
        logs = self.opts.out / "logs"
        self.tot, tinfo = I.open_stack("tot", self.opts.tot_env, logs)
        self.golden, ginfo = I.open_stack("golden", self.opts.golden_env, logs)
        self.arch = str(tinfo.get("arch"))
        if ginfo.get("arch") != self.arch:
            raise HarnessError(f"--golden-env runs on {ginfo.get('arch')}, --env on {self.arch}: one GPU kind, please")
        if self.golden.ident == self.tot.ident:  # retuned against itself, every regression would read as fixed
            raise HarnessError(f"--golden-env {self.opts.golden_env} and --env {self.opts.tot_env} run the same "
                               f"Triton ({self.tot.ident}): retune needs TOT's stack in --env and golden's in "
                               "--golden-env")  # fmt: skip
        self.backend, self.gpu_name = backend_of(self.arch), (tinfo.get("gpu") or {}).get("name", "")
        return tinfo

    def _open_measurer(self, tinfo: dict[str, Any]) -> None:
        run = self.opts.run
        if run.timing is None:  # resolved once, from TOT's hello: every run of the retune starts its workers so
            run = replace(run, timing=resolve_timing(self.tot.spec.timing, tinfo))
        method = f"; reps {run.reps}, launches {run.launches or 'auto'}"
        stacks = {s.label: Stack(s.label, s.spec, s.triton, s.ident + method, s.gpu) for s in (self.tot, self.golden)}
        cache = Cache(self.opts.out / "cache.jsonl")
        if run.remeasure is not None:  # the guard's own pairs decide whether a case needs more reps
            run = replace(
                run, remeasure=replace(run.remeasure, referee=guard_referee(self.rule), rule=self.rule.record())
            )
        self.measurer = Measurer(self.opts.out, stacks, cache, run, self.driver, self._cost_so_far())
        self.measurer.progress = self._save_cost
        self._learn_cached({s.ident for s in stacks.values()})

    # a retune cut short (a kill, a deadline) goes on with the budget it had left: OUT/progress.json keeps what the
    # unfinished retune spent; a retune that finished leaves it marked done, and the next one starts afresh
    def _cost_so_far(self) -> Cost:
        try:
            saved = json.loads((self.opts.out / "progress.json").read_text())
        except (OSError, ValueError):
            return Cost()
        if not isinstance(saved, dict) or saved.get("finished") or not isinstance(saved.get("cost"), dict):
            return Cost()
        try:
            return Cost(**saved["cost"])
        except TypeError:
            return Cost()

    def _save_cost(self, cost: Cost, finished: bool = False) -> None:
        write_text(self.opts.out / "progress.json", json.dumps({"finished": finished, "cost": asdict(cost)}) + "\n")

    def state_dir(self, files: dict[str, str]) -> Path:
        """A folder holding ``files``, named by their content (written once; a half-written one is redone)."""
        d = self.opts.out / "states" / digest(sorted(files.items()))
        if not (d / ".complete").exists():
            for name, text in files.items():
                write_text(d / name, text)
            write_text(d / ".complete", "")
        return d

    # -------------------------------------------------------------------------------------------- slots
    def slots(self) -> list[Slot]:
        groups: dict[tuple[str, str, str, str], list[I.CaseInfo]] = {}
        for c in self.cases:
            groups.setdefault((c.lookup.family, c.lookup.key, c.where.file, c.where.bucket), []).append(c)
        wanted = set(self.opts.kernels)
        found = []
        for (family, key, file, bucket), cases in groups.items():
            s = Slot(family, key, file, bucket, cases)
            if not any(c.target and (not wanted or c.case.name in wanted) for c in cases):
                continue
            cases = self._slot_cases(s)
            hints = self.hints.best(cases, s.seed, self.rule)
            s.search = SlotSearch(s.name, cases, dict(s.seed), self._space(s), self.rule, self._pruner(s), hints=hints)
            found.append(s)
        return sorted(found, key=lambda s: -s.severity)

    def _slot_cases(self, s: Slot) -> list[SlotCase]:
        return [SlotCase(c.key, self.golden_ref(c), c.target) for c in s.searched]

    def golden_ref(self, c: I.CaseInfo) -> float | None:
        """Golden's time of a case with the config users have now, timed on this GPU by the search's first step
        (COMPARE's golden time until then, or where golden fails here): two machines of one model disagree by
        more than the rule, so a regression is judged against this GPU's golden."""
        return self.golden_here.get(c.key) or c.golden_us

    def _space(self, s: Slot):  # noqa: ANN202
        kernels = list({c.case.kernel.source: c.case.kernel for c in s.cases}.values())
        keys = tuple(dict.fromkeys(k for kern in kernels for k in kern.spec.config_keys))
        configs = I.family_configs(s.family, self.before_dir)
        return build_space(keys, self.arch, configs, I.suite_values({k.name for k in kernels}))

    def _pruner(self, s: Slot):  # noqa: ANN202
        by_key = s.by_key

        def prune(cid: str, cfg: dict[str, Any]) -> str | None:
            case = by_key[cid].case
            peak = case.spec.peak_of(case.params)
            why = static_problem(cfg, case.params, self.arch, self.backend, peak)
            return why or self.learned.problem(case.name, cfg)

        return prune

    # ------------------------------------------------------------------------------------------- search
    def time_of(self, s: Slot, stack: str) -> Callable[[str, dict[str, Any]], tuple[str, float | None] | None]:
        by_key = s.by_key

        def look(cid: str, cfg: dict[str, Any]) -> tuple[str, float | None] | None:
            e = self.measurer.lookup(by_key[cid].case, cfg, stack)
            return (e.status, e.time_us) if e else None

        return look

    def search(self, slots: list[Slot]) -> None:
        """Every slot's search, one TOT batch a step for all of them, while the search budget lasts (the seeds
        are always timed: without them nothing can be judged)."""
        budget = self.opts.search_budget
        step = 0
        while True:
            live = [s for s in slots if s.search and s.search.wants()]
            if not live:
                return
            if step and self.measurer.cost.minutes >= budget:
                for s in live:
                    s.search.stop(f"the search budget ({budget:.3g} min) ran out")
                return
            if step == 0:
                self._golden_seeds(live)
            items = [Item(c.case, cfg) for s in live for cfg in s.search.wants() for c in s.searched]
            n = sum(len(s.search.wants()) for s in live)
            self.log(f"search step {step + 1}: {n} configs over {len(live)} slots ({len(items)} timings)")
            self.measurer.batch("tot", items, self.before_dir, "search")
            self._learn(items, "tot")
            for s in live:
                s.search.advance(self.time_of(s, "tot"))
            step += 1

    def _golden_seeds(self, slots: list[Slot]) -> None:
        """Golden with every slot's current config on this GPU: the reference the search judges regressions by."""
        items = [Item(c.case, s.seed) for s in slots for c in s.searched]
        self.log(f"golden reference: {len(items)} timings")
        self.measurer.batch("golden", items, self.before_dir, "search")
        for s in slots:
            for c in s.searched:
                e = self.measurer.lookup(c.case, s.seed, "golden")
                if e is not None and e.time_us is not None:
                    self.golden_here[c.key] = e.time_us
            s.search.cases = self._slot_cases(s)

    def _learn_cached(self, idents: set[str]) -> None:
        """Resource failures an earlier retune of this folder saw on these stacks: a tile that ran out still does."""
        for e in self.measurer.cache.entries.values():
            if e.status == "compile_error" and e.key.stack in idents:
                self.learned.note(e.key.kernel, json.loads(e.key.config), e.error)

    def _learn(self, items: list[Item], stack: str) -> None:
        for it in items:
            e = self.measurer.lookup(it.case, it.config, stack)
            if e is not None and e.status == "compile_error":
                self.learned.note(it.case.name, it.config, e.error)

    # ------------------------------------------------------------------------------------- golden check
    def check_golden(self, slots: list[Slot]) -> None:
        """The seed and the finalists of every slot under golden; a finalist that slows golden is dropped."""
        items = []
        for s in slots:
            finals = s.search.finalists() if s.search else []
            if not finals and s.search and s.search.regressed_now == 0:
                self._not_regressed(s)
                continue
            if not finals:
                self._reject(s, "search", None, self._search_why(s))
                continue
            s.candidates = finals
            items += [Item(c.case, cfg) for cfg in [s.seed, *finals] for c in s.searched]
        if items:
            self.log(f"golden check: {len(items)} timings")
            self.measurer.batch("golden", items, self.before_dir, "golden-check")
        for s in slots:
            if not s.candidates:
                continue
            why = {config_key(cfg): self._golden_why(s, cfg) for cfg in s.candidates}
            for cfg in s.candidates:
                if why[config_key(cfg)]:
                    self._reject(s, "golden", cfg, why[config_key(cfg)], final=False)
            s.candidates = [cfg for cfg in s.candidates if not why[config_key(cfg)]]
            if not s.candidates:
                s.outcome, s.why = "rejected", "every config that fixes it under TOT slows golden"

    def _not_regressed(self, s: Slot) -> None:
        """The slot's current config is no regression under TOT when timed now (COMPARE predates the files, or
        was noise, or came from another machine): nothing to change; the search's TOT time against golden's on this
        GPU is its 'after'."""
        look = self.time_of(s, "tot")
        shown = []
        for c in s.targets:
            t = look(c.key, s.seed)
            self.after_verdict[c.key] = "ok"
            if t and t[1] is not None and (g := self.golden_ref(c)):
                shown.append(f"{c.case.case_id} {pct(g, t[1])}")
        s.outcome = "not regressed"
        s.why = "its current config is no regression under TOT timed now: " + ", ".join(shown)

    def _golden_why(self, s: Slot, cfg: dict[str, Any]) -> str:
        look = self.time_of(s, "golden")
        for c in s.searched:
            g0, g1 = look(c.key, s.seed), look(c.key, cfg)
            if g0 is None or g0[1] is None:
                continue
            if g1 is None or g1[1] is None:
                return f"{c.key}: golden fails with it ({g1[0] if g1 else 'not timed'})"
            if slower(g0[1], g1[1], self.rule):
                return f"{c.key}: golden slower {us(g0[1])} → {us(g1[1])} ({pct(g0[1], g1[1])})"
        return ""

    def _search_why(self, s: Slot) -> str:
        srch = s.search
        if srch is None:
            return "not searched"
        n, pruned = srch.timed, len(srch.pruned)
        best = [(sc.unfixed, sc.geo, k) for k, sc in srch.scores.items() if sc is not None and sc.worse == 0]
        tail = ""
        if best:
            cfg = srch.configs[min(best)[2]]
            look = self.time_of(s, "tot")
            shown = []
            for c in s.targets:
                t = look(c.key, cfg)
                if t and t[1] is not None and (g := self.golden_ref(c)):
                    shown.append(f"{c.case.case_id} {pct(g, t[1])}")
            tail = f"; the best ({diff_text(s.seed, cfg)}) leaves TOT vs golden at " + ", ".join(shown)
        ended = srch.done or "stopped"
        return f"no config of {n} timed ({pruned} pruned) fixes a regression without slowing another ({ended}){tail}"

    # -------------------------------------------------------------------------------------------- guard
    def guard(self, slots: list[Slot]) -> None:
        """Rounds of guarded changes, worst regression first, until every slot is decided (a rejected slot tries
        its next candidate in a later round while the budget lasts; the first round always runs)."""
        queue = sorted([s for s in slots if s.candidates], key=lambda s: -s.severity)
        rounds = 0
        while queue:
            if rounds and self.measurer.cost.minutes >= self.opts.budget_min:
                for s in queue:
                    s.outcome = "rejected"
                    s.why += f" (the budget ran out before {len(s.candidates)} more configs were guarded)"
                return
            rounds += 1
            queue = self._round(queue, rounds)

    def _round(self, queue: list[Slot], n: int) -> list[Slot]:
        picked: list[tuple[Slot, dict[str, Any], Option]] = []
        taken: set[tuple[str, str]] = set()
        new = dict(self.state)
        for s in queue:
            if self._fixed_elsewhere(s):
                continue
            cfg = s.candidates[0]
            lookup = s.targets[0].lookup
            now = resolve(self.state, lookup)
            if now is not None and now.config == cfg:
                s.outcome, s.why = "fixed elsewhere", "a change kept for another slot gave it this config"
                continue
            if resolve(new, lookup) != now:
                continue  # a change of this round moves this slot's cases: the next round, once it is decided
            first = options(new, lookup, cfg, self.stamp)[0]
            if (first.file, first.bucket) in taken:
                continue  # another slot of this round edits this bucket: the next round
            taken.add((first.file, first.bucket))
            new = first.apply(new)
            picked.append((s, cfg, first))
        if not picked:
            return [s for s in queue if not s.outcome]
        moved = changes(self.state, new, self.lookups)
        owner = {
            cid: next(p for p in picked if (a.file, a.bucket) == (p[2].file, p[2].bucket))
            for cid, (a, _) in moved.items()
        }
        guard_cases = [
            GuardCase(self.by_key[cid].case, self.by_key[cid].where.config, a.config, b.config)
            for cid, (a, b) in moved.items()
        ]
        self.log(f"guard round {n}: {len(picked)} changes, {len(guard_cases)} cases × golden/TOT × old/new")
        cur, nxt = self.state_dir(self.state), self.state_dir(new)
        dirs = {"golden_old": self.before_dir, "tot_old": cur, "golden_new": nxt, "tot_new": nxt}
        measured = self.measurer.guard(guard_cases, dirs, f"guard{n}", self.rule)
        self._settle(picked, moved, owner, measured)
        return [s for s in queue if not s.outcome]

    def _settle(self, picked, moved, owner, measured) -> None:  # noqa: ANN001
        """Decide each change of a round; build the files it leaves; check that they move exactly the cases the
        kept changes were measured on, to the configs they were measured with."""
        state = dict(self.state)
        per_shape, expect = [], {}
        for p in picked:
            s, cfg, opt = p
            mine = [cid for cid in moved if owner[cid] is p]
            d = decide([measured[cid] for cid in mine], self.rule)
            if d.kept:
                state = options(state, s.targets[0].lookup, cfg, self.stamp)[0].apply(state)
                self._keep(s, opt.kind, opt.file, cfg, d, mine, moved, expect)
                continue
            sub = [cid for cid in mine if self.lookups[cid].key == s.key]
            d2 = decide([measured[cid] for cid in sub], self.rule) if opt.kind == "shared" and s.key else None
            if d2 is not None and d2.kept and len(sub) < len(mine):
                per_shape.append((s, cfg, d, d2, sub))
                continue
            why = f"{opt.kind} {opt.file}:{opt.bucket}: {d.why}"
            if d2 is not None and len(sub) < len(mine):
                why += f"; a per-shape file: {d2.why}"
            self._reject(s, "guard", cfg, why, decision=d)
        for s, cfg, d, d2, sub in per_shape:
            default, specific = file_names(s.targets[0].lookup)
            state[specific] = per_shape_text(state.get(specific, state[default]), s.bucket, cfg, self.stamp)
            self.notes.append(f"{s.name}: shared edit rejected ({d.why}); wrote {specific} instead")
            self._keep(s, "per-shape", specific, cfg, d2, sub, moved, expect, shared_why=d.why)
        got = {cid: b.config for cid, (_, b) in changes(self.state, state, self.lookups).items()}
        if got != expect:
            raise RuntimeError(f"the files would move {sorted(got)} but the guard kept {sorted(expect)}")
        self.state = state

    def _keep(self, s, kind, file, cfg, d, mine, moved, expect, shared_why: str = "") -> None:  # noqa: ANN001
        s.outcome, s.why = "kept", d.why
        old = moved[mine[0]][0].config
        self.kept.append(Change(s.name, kind, file, s.bucket, old, cfg, d))
        if shared_why:
            self.rejected.append(
                {"slot": s.name, "stage": "guard", "config": cfg, "why": f"shared {s.file}:{s.bucket}: {shared_why}"}
            )
        for m, _ in d.verdicts:
            self.after[f"{m.kernel}/{m.case_id}"] = m
        for cid in mine:
            expect[cid] = moved[cid][1].config

    def _reject(self, s: Slot, stage: str, cfg, why: str, final: bool = True, decision: Decision | None = None) -> None:  # noqa: ANN001
        entry: dict[str, Any] = {"slot": s.name, "stage": stage, "config": cfg, "why": why}
        if decision is not None:
            entry["cases"] = [measured_row(m, v) for m, v in decision.verdicts]
        self.rejected.append(entry)
        if stage == "guard" and cfg is not None and s.candidates and s.candidates[0] == cfg:
            s.candidates.pop(0)
            final = not s.candidates
        if final:
            s.outcome, s.why = "rejected", why

    def _fixed_elsewhere(self, s: Slot) -> bool:
        done = [self.after.get(c.key) for c in s.targets]
        if all(
            m is not None and m.tot_new is not None and not slower(m.golden_old, m.tot_new, self.rule) for m in done
        ):
            s.outcome, s.why = "fixed elsewhere", "every regressed case was fixed by a change kept for another slot"
            return True
        return False

    # ------------------------------------------------------------------------------------------- output


def retune(opts: Options, log: Log, driver: Driver | None = None) -> dict[str, Any]:
    """Run a retune into ``opts.out`` (locked while it runs); returns the report's data, also written to
    DIR/retune.json, DIR/retune.md and DIR/retune.html."""
    from harness.retune.report import write_reports

    if not opts.budget_min > 0:
        raise HarnessError(f"--budget-min {opts.budget_min:g}: expected a number of minutes > 0")
    if opts.search_min is not None and not 0 <= opts.search_min <= opts.budget_min:
        raise HarnessError(f"--search-min {opts.search_min:g}: expected minutes from 0 to --budget-min")
    for path in opts.hints:
        cache_file(path)
    from harness.compare.store import meta_path
    from harness.outdir import prepare_out_dir

    inputs = [opts.compare, meta_path(opts.compare), config_dir(), *opts.hints]
    prepare_out_dir("--out", opts.out, "retune", inputs=inputs, own=OWN, create=False)
    load_compare(opts.compare)  # a bad comparison or env spec is refused before OUT is made
    from harness.envs.spec import load_env_spec
    from harness.envs.venv import check_venv

    for name in (opts.tot_env, opts.golden_env):
        check_venv(load_env_spec(name))
    prepare_out_dir("--out", opts.out, "retune", inputs=inputs, own=OWN)
    # one worker per stack and config folder for all the runs, not one per run: a search batch times a few cases
    with lock_output(opts.out / "retune"), WorkerPool() as workers:
        r = Retune(opts, log, replace(driver or Driver(), workers=workers))
        r.open()
        slots = r.slots()
        asked = r._asked(slots)
        alone = f"; {asked['left_alone']} more left alone (no config files to change: see the report)"
        log(
            f"{asked['searched']} regressed or failed cases in {len(slots)} slots"
            + (alone if asked["left_alone"] else "")
        )
        r.search(slots)
        r.check_golden(slots)
        r.guard(slots)
        written = r.write()
        data = r.summary(slots, written)
        write_reports(data, opts.out)
        r._save_cost(r.measurer.cost, finished=True)
    return data

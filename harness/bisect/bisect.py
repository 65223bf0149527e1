"""`harness bisect`: for every regressed case of a comparison at once, the first Triton release at which it is
slower than golden by the comparison's rule.

Plan (nothing measured yet): the cases (the comparison's regressions and TOT failures, or ``--case`` regexes),
their suite (the one golden ran), the golden env (the one golden ran), one env per release (a spec file, or
``triton: VERSION`` made from golden's env: the same interpreter, knobs and timing, another Triton, as a venv or
an unpacked overlay) and TOT (its env measured again, or its verdict taken from the comparison). Every env is
probed first: a release whose worker imports another Triton than the one named is refused.

Rounds: round 1 times every case under golden, every release and TOT in one interleaved run (run_interleaved:
each rep of a case under every env back to back, the order reversed each round), with the stability rule; each
(case, release) is read against golden of the same run (search.read). Noisy pairs are measured again, golden
and their releases on their cases only, up to ``remeasure`` more rounds (runs/round-N/). Then each case's
history (search.history), the compiled kernels explained at each culprit step (round 1's artifacts, with
``--artifacts``) and the Triton git range of each step (gitrange).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from harness.bisect import gitrange
from harness.bisect.model import Outcome, Plan, Stack, key_of
from harness.bisect.search import Measurement, Reading, decide, history, read
from harness.compare.compare import Comparison, worst_first
from harness.compare.store import load_compare, locate_results
from harness.envs.schema import same_version
from harness.envs.spec import EnvSpec, load_env_spec, release_env
from harness.envs.venv import check_venv, create_env, probe
from harness.errors import HarnessError
from harness.inputs.suite import Case, load_suite
from harness.results import identity
from harness.results.cells import number
from harness.results.load import load_env, load_results
from harness.results.schema import artifacts_dir, sidecar_path
from harness.run.options import RunOptions
from harness.run.orchestrate import Driver
from harness.run.sidecar import code_record
from harness.verdict.referee import rule_referee
from harness.verdict.remeasure import Remeasure
from harness.verdict.rule import Rule

DEFAULT_VERDICTS = ("regression", "failed_in_tot")
RESERVED = ("golden", "tot")  # the stack keys of golden and TOT
#: what only a bisection folder holds: a folder with it was written by an older harness bisect (before its marker)
OWN = ("bisect.json", "bisect.md", "runs", "options.json")


# -------------------------------------------------------------------------------------------------- plan


def select_targets(cmp: Comparison, patterns: list[str] | None, where: str) -> pd.DataFrame:
    """The comparison's rows to bisect, worst first: ``patterns`` (regexes over kernel/case_id, any verdict) or
    the regressions and TOT failures."""
    table = cmp.table.iloc[worst_first(cmp.table)]
    keys = (table["kernel"].astype(str) + "/" + table["case_id"].astype(str)).tolist()
    if patterns:
        try:
            rx = [re.compile(p) for p in patterns]
        except re.error as err:
            raise HarnessError(f"--case: not a valid regular expression: {err}") from None
        picked = table[[any(r.search(k) for r in rx) for k in keys]]
        if picked.empty:
            raise HarnessError(f"--case {' '.join(patterns)}: no case of {where} matches")
        return picked
    picked = table[table["verdict"].isin(DEFAULT_VERDICTS)]
    if picked.empty:
        raise HarnessError(f"{where}: no regression or TOT failure to bisect (pick cases with --case)")
    return picked


def _existing(named: str | None, *more: Path) -> Path | None:
    for p in [Path(named)] if named else []:
        if p.is_file():
            return p
    return next((p for p in more if p.is_file()), None)


def find_suite(cmp: Comparison, compare_csv: Path, given: str | None) -> Path:
    if given:
        return Path(given)
    env = cmp.golden_env or {}
    named = env.get("suite") or (env.get("run_options") or {}).get("suite") or ""
    found = _existing(named, Path.cwd() / named, compare_csv.parent / Path(named).name) if named else None
    if found is None:
        raise HarnessError(f"{compare_csv}: the suite its golden run measured ({named or 'not recorded'}) is not here: "
                           "pass --suite")  # fmt: skip
    return found


def find_spec(cmp_env: dict[str, Any], given: str | None) -> EnvSpec | None:
    """The env spec a side of the comparison ran (its sidecar's file, else envs/<same name>); None if neither
    exists. ``given`` wins."""
    if given:
        return load_env_spec(given)
    file = ((cmp_env or {}).get("env_spec") or {}).get("file") or ""
    found = _existing(file, Path("envs") / Path(file).name) if file else None
    if found is None:
        return None
    return load_env_spec(found)


def match_cases(targets: pd.DataFrame, suite: Path) -> list[Case]:
    by_key = {c.key: c for c in load_suite(suite)}
    out = []
    for kernel, case_id in zip(targets["kernel"], targets["case_id"]):
        k = key_of(kernel, case_id)
        if k not in by_key:
            raise HarnessError(f"{suite}: has no case {k} (pass --suite: the suite the comparison's runs measured)")
        out.append(by_key[k])
    return out


def check_items(versions: list[str], mode: str) -> None:
    """Before anything is read: --mode is one harness knows, and each --versions item a release or a spec file."""
    from harness.envs.schema import MODES, release_version

    if mode not in MODES:
        raise HarnessError(f"--mode: expected one of {', '.join(MODES)}, got {mode!r}")
    for item in versions:
        if item.endswith((".yaml", ".yml")):
            if not Path(item).is_file():
                raise HarnessError(f"--versions: {item}: no such env spec file")
        elif not Path(item).is_file():
            release_version(item, "--versions")


def release_stacks(items: list[str], mode: str, golden: EnvSpec, out: Path, log) -> list[Stack]:
    """One stack per --versions item: an env spec file as it is, or a release made from golden's env (a venv is
    created if it is not complete yet: that needs the package index)."""
    stacks, seen = [], set()
    for item in items:
        if item.endswith((".yaml", ".yml")) or Path(item).is_file():
            spec = load_env_spec(item)
            check_venv(spec)
            asked = spec.triton or ""
        else:
            spec = release_env(item, mode, golden, out / "envs")
            asked = item
            try:
                check_venv(spec)
            except HarnessError:
                if mode != "venv":
                    raise
                log(f"creating the venv of triton {item} ({spec.venv_dir()})")
                create_env(spec, log=log)
        key = asked or spec.name
        if key in RESERVED:  # golden's and TOT's files are runs/round-N/golden.csv and tot.csv
            key = f"release-{key}"
        if key in seen:
            raise HarnessError(f"--versions: {key} is named twice")
        seen.add(key)
        stacks.append(Stack(key=key, role="release", spec=spec, asked=asked))
    return stacks


def probe_stacks(stacks: list[Stack], cmp: Comparison, log) -> None:
    """Which Triton each env's worker imports. A release env importing another release than the one it names,
    or two envs importing one Triton, is refused; a golden other than the comparison's is a warning."""
    for s in stacks:
        if s.spec is None:
            t = cmp.tot_env.get("triton") or {}
            s.version, s.path, s.commit = str(t.get("version") or "?"), str(t.get("path") or ""), t.get("commit")
            continue
        info = probe(s.spec)
        s.version, s.path = info["triton"]["version"], info["triton"]["path"]
        if s.asked and not same_version(s.version, s.asked):
            raise HarnessError(
                f"{s.spec.path}: its worker imports Triton {s.version} from {s.path}, not {s.asked} "
                "(an overlay behind site-packages? a venv without its own Triton?)"
            )
    seen: dict[tuple[str, str], Stack] = {}
    for s in stacks:
        if s.spec is None:
            continue
        other = seen.setdefault((s.version, s.path), s)
        if other is not s:
            raise HarnessError(f"{other.spec.path} and {s.spec.path} both run Triton {s.version} from {s.path}")
    labels = [s.label for s in stacks]
    twice = next((lb for lb in labels if labels.count(lb) > 1), None)
    if twice is not None:
        raise HarnessError(f"two stacks run Triton {twice}: a bisection takes one stack per release")
    want = (cmp.golden_env.get("triton") or {}).get("version")
    if want and not same_version(stacks[0].version, str(want)):
        log(f"warning: golden now runs Triton {stacks[0].version}; the comparison's golden ran {want}")


def _release(version: str) -> Any:
    """The comparable release of a Triton version ('3.8.0+git1a2b' → 3.8.0), or None when it is not one."""
    try:
        from packaging.version import InvalidVersion, Version
    except ImportError:
        return None
    try:
        return Version(version)
    except InvalidVersion:
        return None


def check_order(stacks: list[Stack]) -> None:
    """Each release strictly between golden and TOT and after the one before it, as --versions promises: a release
    equal to golden's or TOT's version would be blamed for an empty step, one out of order for the wrong one."""
    golden, tot, releases = stacks[0], stacks[-1], stacks[1:-1]
    for r in releases:
        for end, role in ((golden, "golden"), (tot, "TOT")):
            if end.version not in ("", "?") and same_version(r.version, end.version):
                raise HarnessError(
                    f"--versions: {r.asked or r.spec.path} runs Triton {r.version}, {role}'s version: name only the "
                    "releases between golden and TOT"
                )
    known = [(s, _release(s.version)) for s in stacks if s.version not in ("", "?")]
    if any(v is None for _, v in known):
        return  # a version that is no release (a git build's own label): its place cannot be checked
    for (a, va), (b, vb) in zip(known, known[1:]):
        if not va < vb:
            raise HarnessError(
                f"--versions: Triton {a.label} is not older than {b.label}: give the releases in order, oldest "
                "first, between golden and TOT"
            )


def make_plan(
    compare_csv: Path,
    versions: list[str],
    out: Path,
    *,
    patterns: list[str] | None = None,
    suite: str | None = None,
    golden: str | None = None,
    tot: str | None = None,
    mode: str = "venv",
    opts: RunOptions | None = None,
    remeasure: int = 2,
    log: Callable[[str], None] = print,
) -> Plan:
    """Everything decided before anything is measured (see the module docstring). ``tot``: an env spec, 'none'
    (the comparison's verdicts), or None (the comparison's TOT spec when it is here, else 'none')."""
    if not versions:
        raise HarnessError("--versions: name at least one release between golden and TOT (e.g. 3.7.0,3.8.0)")
    if remeasure < 0:
        raise HarnessError(f"--remeasure {remeasure}: expected 0 or more rounds")
    twice = next((v for v in versions if versions.count(v) > 1), None)
    if twice is not None:
        raise HarnessError(f"--versions: {twice} is named twice")
    check_items(versions, mode)
    cmp = load_compare(compare_csv)
    targets = select_targets(cmp, patterns, str(compare_csv))
    suite_path = find_suite(cmp, compare_csv, suite)
    cases = match_cases(targets, suite_path)
    g = find_spec(cmp.golden_env, golden)
    if g is None:
        raise HarnessError(f"{compare_csv}: the env spec its golden run used is not here: pass --golden ENV")
    check_venv(g)
    t = None if tot == "none" else find_spec(cmp.tot_env, tot)
    if t is None and tot not in (None, "none"):
        raise HarnessError(f"--tot {tot}: no such env spec")
    if t is not None:
        check_venv(t)
    stacks = [Stack("golden", "golden", g), *release_stacks(versions, mode, g, out, log), Stack("tot", "tot", t)]
    if t is None:
        log("TOT is not measured again: its verdicts are the comparison's (pass --tot ENV to measure it)")
    probe_stacks(stacks, cmp, log)
    check_order(stacks)
    plan = Plan(compare_csv, cmp, targets, cases, suite_path, stacks, out, opts or RunOptions(), remeasure)
    same_identity(plan, code_record(cases), "the code here", log)
    return plan


def same_identity(plan: Plan, now: dict[str, Any], what: str, log: Callable[[str], None]) -> None:
    """What the bisection measures (``now``: its code record before round 1, golden's sidecar after it) against
    the comparison's golden run (results/identity.BISECT): a warning each, logged once and kept for the report;
    other code than the comparison's while TOT's verdicts are the comparison's is one line and exit 2."""
    by_verdict = plan.stacks[-1].spec is None
    relation = identity.BISECT_BY_VERDICT if by_verdict else identity.BISECT
    for d in identity.differences(plan.cmp.golden_env or {}, now, relation):
        text = d.text("the comparison's golden run", what)
        if d.severity == identity.REFUSE:
            raise HarnessError(f"{plan.compare_csv}: {text}; TOT's verdicts would be the comparison's, on other code: "
                               "pass --tot ENV to measure TOT again")  # fmt: skip
        if (d.facet, d.field) not in plan.said:
            plan.said.add((d.facet, d.field))
            plan.warnings.append(text)
            log(f"warning: {text}")


def inputs_of(compare_csv: Path, cmp: Comparison | None = None) -> list[Path | None]:
    """The files a bisection reads: the comparison, its metadata and the results it names (kept off --out)."""
    from harness.compare.store import meta_path

    named = [locate_results(n, compare_csv) for n in (cmp.golden_path, cmp.tot_path)] if cmp is not None else []
    return [compare_csv, meta_path(compare_csv), *named]


def options_record(plan: Plan, versions: list[str], options: dict[str, Any]) -> dict[str, Any]:
    """What a bisection in OUT was asked, for --resume to check (OUT/options.json)."""
    o = plan.opts
    return {
        "compare": str(plan.compare_csv.resolve()),
        "versions": list(versions),
        "cases": [c.key for c in plan.cases],
        "suite": str(plan.suite),
        "stacks": [str(s.spec.path) if s.spec else None for s in plan.stacks],
        "mode": options.get("mode", "venv"),
        "reps": o.reps,
        "launches": o.launches,
        "artifacts": o.artifacts,
        "remeasure": plan.remeasure,
    }


#: the option a field of options.json comes from, to name it when a --resume differs
OPTION_OF = {"compare": "COMPARE", "versions": "--versions", "cases": "--case", "suite": "--suite",
             "stacks": "--golden/--tot/--versions", "mode": "--mode", "reps": "--reps", "launches": "--launches",
             "artifacts": "--artifacts", "remeasure": "--remeasure"}  # fmt: skip


def check_options(out: Path, record: dict[str, Any], resume: bool) -> None:
    """A --resume goes on only with the options OUT's bisection was started with (else one line naming the first
    that differs); a new bisection records its options in OUT/options.json."""
    import json

    from harness.fsutil import write_text

    path = out / "options.json"
    if resume and path.is_file():
        try:
            before = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise HarnessError(f"{path}: unreadable ({err}): start a new bisection in another --out") from None
        for k, v in record.items():
            if k in before and json.loads(json.dumps(v)) != before[k]:
                raise HarnessError(
                    f"--resume: {OPTION_OF.get(k, k)} differs from the bisection in {out} (was {before[k]}, now {v}): "
                    "resume with the same options, or choose another --out"
                )
    write_text(path, json.dumps(record, indent=2) + "\n")


# ------------------------------------------------------------------------------------------------ rounds


def _complete(path: Path, cases: list[Case]) -> bool:
    if not path.is_file() or not path.stat().st_size:
        return False
    try:
        df = load_results(path)
    except HarnessError:
        return False
    have = set(df["kernel"] + "/" + df["case_id"])
    return all(c.key in have for c in cases)


def _add_seconds(folder: Path, seconds: float) -> float:
    """The time spent measuring a round, over every call that measured it (runs/round-N/seconds.json)."""
    import json

    from harness.fsutil import write_text

    path = folder / "seconds.json"
    try:
        before = json.loads(path.read_text())
    except (OSError, ValueError):
        before = {}
    total = float(before.get("seconds", 0.0)) + seconds
    calls = int(before.get("calls", 0)) + (seconds > 0)
    write_text(path, json.dumps({"seconds": round(total, 1), "calls": calls}) + "\n")
    return round(total, 1)


def _reps(text: Any) -> tuple[float, ...]:
    import json

    try:
        vals = json.loads(text) if isinstance(text, str) and text else []
    except ValueError:
        return ()
    return tuple(float(v) for v in vals if isinstance(v, (int, float)) and v > 0)


def _rows(path: Path) -> dict[str, dict[str, Any]]:
    df = load_results(path)
    return {key_of(k, c): r for k, c, r in zip(df["kernel"], df["case_id"], df.to_dict("records"))}


def measurement(golden: dict[str, Any] | None, release: dict[str, Any] | None) -> Measurement:
    """One (case, release) from its golden and release rows of one run (a missing row: not measured)."""
    g, t = golden or {"status": "missing"}, release or {"status": "missing", "error": "no row"}
    return Measurement(
        golden_us=number(g.get("time_us")),
        release_us=number(t.get("time_us")),
        golden_status=str(g.get("status")),
        release_status=str(t.get("status")),
        golden_reps=_reps(g.get("rep_times_us")),
        release_reps=_reps(t.get("rep_times_us")),
        error=_first_line(t.get("error")),
    )


def _first_line(text: Any) -> str:
    lines = text.strip().splitlines() if isinstance(text, str) else []
    return lines[0][:200] if lines else ""


def _refereed(opts: RunOptions, rule: Rule) -> Remeasure | None:
    """The run's re-measuring policy refereed by the comparison's rule: each release (and TOT) against golden,
    the first env of every round, as search.read reads them."""
    if opts.remeasure is None:
        return None
    return replace(opts.remeasure, referee=rule_referee(rule), rule=rule.record())


def run_rounds(plan: Plan, driver: Driver, log: Callable[[str], None] = print) -> Outcome:
    """Round 1 over every case and stack, then the re-measurement rounds of the noisy pairs."""
    res = Outcome(plan)
    rule = plan.cmp.rule
    stacks, cases = plan.measured, plan.cases
    for rnd in range(1, plan.remeasure + 2):
        if not cases:
            break
        folder = plan.out / "runs" / f"round-{rnd}"
        runs = [(s.spec, folder / f"{s.key}.csv") for s in stacks]
        opts = replace(plan.opts, artifacts=plan.opts.artifacts and rnd == 1, remeasure=_refereed(plan.opts, rule))
        done = opts.resume and all(_complete(p, cases) for _, p in runs)
        t0 = time.time()
        try:
            if not done:
                log(f"round {rnd}: {len(cases)} cases under {', '.join(s.label for s in stacks)}")
                driver.measure(runs, cases, opts, str(plan.suite))
        finally:  # an interrupted round's time counts too: a resumed bisection adds to it
            seconds = _add_seconds(folder, 0.0 if done else time.time() - t0)
        res.rounds.append({"round": rnd, "cases": len(cases), "stacks": [s.label for s in stacks],
                           "seconds": seconds})  # fmt: skip
        if rnd == 1:  # the machine and the method are known once golden has run
            same_identity(plan, load_env(runs[0][1]), "this bisection's golden run", log)
        golden_rows = _rows(runs[0][1])
        for s, (_, path) in zip(stacks[1:], runs[1:]):
            rows = _rows(path)
            for c in cases:
                pair = (c.key, s.key)
                if rnd > 1 and res.states.get(pair) != "noisy":
                    continue  # measured again only because another release of the case was noisy
                m = measurement(golden_rows.get(c.key), rows.get(c.key))
                res.measurements.setdefault(pair, []).append((rnd, m))
                res.readings.setdefault(pair, []).append(read(m, rule))
                res.states[pair] = decide(res.readings[pair])
        noisy = {k for k, st in res.states.items() if st == "noisy"}
        cases = [c for c in plan.cases if any((c.key, s.key) in noisy for s in stacks[1:])]
        stacks = [stacks[0]] + [s for s in stacks[1:] if any((c.key, s.key) in noisy for c in cases)]
    _tot_from_comparison(plan, res)
    for c in plan.cases:
        series = [(plan.stacks[0].label, "good")] + [(s.label, res.states[(c.key, s.key)]) for s in plan.stacks[1:]]
        res.histories[c.key] = history(series)
    return res


def _tot_from_comparison(plan: Plan, res: Outcome) -> None:
    """TOT's state of each case from the comparison's verdict, when TOT is not measured again."""
    tot = plan.stacks[-1]
    if tot.spec is not None:
        return
    state = {"regression": "bad", "failed_in_tot": "failed", "skipped_in_tot": "skipped"}
    for rec in plan.targets.to_dict("records"):
        k = key_of(rec["kernel"], rec["case_id"])
        st = state.get(str(rec["verdict"]), "good")
        res.states[(k, tot.key)] = st
        res.readings[(k, tot.key)] = [Reading(st if st != "good" else "good", True, "the comparison's verdict")]
        m = Measurement(number(rec.get("golden_us")), number(rec.get("tot_us")), str(rec.get("golden_status") or "ok"),
                        str(rec.get("tot_status") or "ok"))  # fmt: skip
        res.measurements[(k, tot.key)] = [(0, m)]


# ------------------------------------------------------------------------------------------ culprit steps


def results_of(plan: Plan, stack: Stack) -> Path | None:
    """Round 1's results file of a stack; for TOT from the comparison, the comparison's TOT file."""
    if stack.spec is not None:
        return plan.out / "runs" / "round-1" / f"{stack.key}.csv"
    return locate_results(plan.cmp.tot_path, plan.compare_csv)


def culprit_steps(res: Outcome) -> list[dict[str, Any]]:
    """Every distinct good → bad step of the cases' histories, with its cases, in release order."""
    plan = res.plan
    by_label = {s.label: s for s in plan.stacks}
    order = [s.label for s in plan.stacks]
    steps: dict[tuple[str, str], dict[str, Any]] = {}
    for c in plan.cases:
        for st in res.histories[c.key].steps:
            entry = steps.setdefault((st.good, st.bad), {"good": by_label[st.good], "bad": by_label[st.bad],
                                                         "cases": [], "culprit_of": []})  # fmt: skip
            entry["cases"].append(c.key)
            if res.histories[c.key].culprit == st:
                entry["culprit_of"].append(c.key)
    out = sorted(steps.values(), key=lambda e: (order.index(e["bad"].label), order.index(e["good"].label)))
    for e in out:
        g, b = e["good"], e["bad"]
        e["git"] = gitrange.git_range(g.version, b.version, g.commit, b.commit)
        e["slug"] = f"{_slug(g.version)}..{_slug(b.version)}"
    return out


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)


def explain_steps(res: Outcome, log: Callable[[str], None] = print) -> None:
    """At each step of ``res.steps``: compare the two stacks' round-1 results, and `harness explain` the step's
    cases (their compiled kernels before and after the step) into steps/GOOD..BAD/."""
    from harness.compare.compare import compare_files
    from harness.compare.store import write_compare
    from harness.explain.explain import explain_cases, write_explain

    plan = res.plan
    for e in res.steps:
        folder = plan.out / "steps" / e["slug"]
        before, after = results_of(plan, e["good"]), results_of(plan, e["bad"])
        e["folder"] = folder
        if before is None or after is None:
            e["explain_problem"] = "the results of one side are not here"
            continue
        write_compare(compare_files(before, after, plan.cmp.rule), folder / "compare.csv")
        if not plan.opts.artifacts:
            e["explain_problem"] = "not explained: run the bisection with --artifacts to keep the compiled kernels"
            continue
        if _backend(before) == "interp":
            e["explain_problem"] = "not explained: Triton's CPU interpreter compiles no kernels"
            continue
        pats = ["^" + re.escape(k) + "$" for k in e["cases"]]
        try:
            cases = explain_cases(folder / "compare.csv", pats, artifacts_dir(before), artifacts_dir(after), len(pats))
        except HarnessError as err:
            e["explain_problem"] = f"not explained: {err}"
            continue
        title = f"Triton {e['good'].version} → {e['bad'].version}: the compiled kernels of the cases it made slower"
        e["explain"] = write_explain(cases, folder / "explain", title=title)
        log(f"explained {len(cases)} cases of the step {e['good'].label} → {e['bad'].label}: {e['explain']}")


def _backend(results: Path) -> str:
    import json

    try:
        return str(json.loads(sidecar_path(results).read_text()).get("backend") or "")
    except (OSError, ValueError, AttributeError):
        return ""


def bisect(
    compare_csv: Path,
    versions: list[str],
    out: Path,
    driver: Driver,
    log: Callable[[str], None] = print,
    **options: Any,
) -> Outcome:
    """Plan, measure, decide, explain each step, write the outputs (render.write_outputs); ``options`` are
    make_plan's."""
    from harness.bisect.render import can_plot, write_outputs
    from harness.outdir import prepare_out_dir

    compare_csv, out = Path(compare_csv), Path(out)
    prepare_out_dir("--out", out, "bisect", inputs=inputs_of(compare_csv), own=OWN, create=False)
    if not can_plot():  # checked before measuring: the plot comes last, but say now that it will be missing
        log("matplotlib is not installed: timeline.png will not be drawn (pip install matplotlib); all else will")
    fresh = not out.exists() or not any(out.iterdir())
    plan = make_plan(compare_csv, versions, out, log=log, **options)
    # the plan writes the releases' env specs into OUT/envs: in a folder that was new or empty, they are its own
    own = (*OWN, "envs") if fresh else OWN
    prepare_out_dir("--out", out, "bisect", inputs=inputs_of(compare_csv, plan.cmp), own=own)
    check_options(out, options_record(plan, versions, options), plan.opts.resume)
    res = run_rounds(plan, driver, log)
    res.steps = culprit_steps(res)
    explain_steps(res, log)
    write_outputs(res)
    return res

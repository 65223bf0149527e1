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

from harness.bisect import gitrange
from harness.bisect.model import Outcome, Plan, Stack, key_of
from harness.bisect.plan import (
    check_options,
    inputs_of,
    make_plan,
    options_record,
    same_identity,
)
from harness.bisect.search import Measurement, Reading, decide, history, read
from harness.compare.store import locate_results
from harness.errors import HarnessError
from harness.inputs.suite import Case
from harness.results.cells import number
from harness.results.load import load_env, load_results
from harness.results.schema import artifacts_dir, sidecar_path
from harness.run.options import RunOptions
from harness.run.orchestrate import Driver
from harness.verdict.referee import rule_referee
from harness.verdict.remeasure import Remeasure
from harness.verdict.rule import Rule

#: what only a bisection folder holds: a folder with it was written by an older harness bisect (before its marker)
OWN = ("bisect.json", "bisect.md", "runs", "options.json")


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
    """A row's rep times by the one rule of every reader of them (verdict/reps.py): all its reps, or none."""
    from harness.verdict.reps import odd_values

    return tuple(odd_values(text) or ()) if isinstance(text, str) else ()


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
    from harness.explain.explain import explain_cases
    from harness.explain.pages import write_explain

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

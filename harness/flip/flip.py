"""`harness flip`: for each confident regression of a comparison, which single compiler knob brings TOT back within
the rule (issue 47 item 3).

Plan: the cases (the comparison's regressions, worst first, at most ``limit``, or ``--case`` regexes), their suite
and golden's and TOT's env specs (the ones the runs used, as bisect finds them), and the knobs (knobs.py: the
backend's candidates TOT's Triton declares, and any given). Then one interleaved run: golden, TOT as it was, and
TOT with each knob changed, every rep of a case back to back under every env, with the run's confirmed verdicts
(processes, re-measuring of what is not decided against golden). Then each variant is compared with golden as
`harness compare` would, and TOT of this run too: a regression that does not repeat here is said, not flipped.
Resumable: the same command with ``--resume`` goes on with the run in OUT/runs.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.bisect.plan import find_spec, find_suite, inputs_of, match_cases, select_targets
from harness.compare.compare import compare_files
from harness.compare.store import load_compare
from harness.envs.spec import EnvSpec
from harness.errors import HarnessError
from harness.flip import knobs as K
from harness.flip.model import Flip
from harness.fsutil import write_text
from harness.outdir import prepare_out_dir
from harness.results.cells import number
from harness.run.options import RunOptions
from harness.run.orchestrate import Driver
from harness.verdict.referee import rule_referee

#: what only a flip folder holds (outdir.prepare_out_dir)
OWN = ("flip.json", "flip.md", "runs", "options.json")
#: the declared knobs of a Triton: every env var its triton.knobs names (None where it has no such module)
_DECLARED = (
    "import inspect, json, re\n"
    "try:\n"
    "    import triton.knobs as k\n"
    "    print(json.dumps(sorted(set(re.findall(r'env_\\w+\\(\\s*\"([A-Za-z0-9_]+)\"', inspect.getsource(k))))))\n"
    "except Exception:\n"
    "    print('null')\n"
)


def declared_knobs(spec: EnvSpec) -> list[str] | None:
    """The env vars TOT's Triton declares, asked of its own interpreter (None where it cannot say)."""
    try:
        r = subprocess.run([spec.interpreter(), "-c", _DECLARED], capture_output=True, text=True, timeout=120,
                           env=spec.environ())  # fmt: skip
        names = json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 and r.stdout.strip() else None
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
        return None
    return names if isinstance(names, list) else None


def variant(tot: EnvSpec, knob: K.Knob, out: Path) -> EnvSpec:
    """TOT with one knob changed, its compile cache its own (a cached kernel of TOT would hide the knob)."""
    name = f"{tot.name}+{knob.key}"  # a file name: a worker's log is named after it (a value may hold a '/')
    return replace(tot, name=name, env={**tot.env, knob.name: knob.value},
                   cache_dir=str((out / "cache" / knob.key).resolve()))  # fmt: skip


def plan(
    compare_csv: Path,
    out: Path,
    given: list[K.Knob],
    *,
    patterns: list[str] | None = None,
    limit: int = 10,
    suite: str | None = None,
    golden: str | None = None,
    tot: str | None = None,
    log: Callable[[str], None] = print,
) -> Flip:
    cmp = load_compare(compare_csv)
    if not patterns and not (cmp.table["verdict"] == "regression").any():
        raise HarnessError(f"{compare_csv}: no regression to flip (pick cases with --case)")
    targets = select_targets(cmp, patterns, str(compare_csv))
    if not patterns:
        targets = targets[targets["verdict"] == "regression"]
        if targets.empty:
            raise HarnessError(f"{compare_csv}: no regression to flip (pick cases with --case)")
    if len(targets) > limit:
        log(f"{len(targets)} cases; flipping the {limit} worst (--limit)")
        targets = targets.head(limit)
    suite_path = find_suite(cmp, compare_csv, suite)
    cases = match_cases(targets, suite_path)
    g, t = find_spec(cmp.golden_env, golden), find_spec(cmp.tot_env, tot)
    for side, spec, option in (("golden", g, "--golden"), ("TOT", t, "--tot")):
        if spec is None:
            raise HarnessError(f"{compare_csv}: the env spec its {side} run used is not here: pass {option} ENV")
    backend = str((cmp.tot_env or {}).get("backend") or "")
    declared = declared_knobs(t)
    if declared is None and K.CANDIDATES.get(backend):
        log("TOT's Triton does not say which knobs it reads (no triton.knobs): trying every candidate")
    chosen = K.candidates(backend, declared, given, t.summary()["env"])
    if not chosen:
        raise HarnessError(f"no knob to try on {backend or 'this'} backend: name one with --knob NAME=VALUE")
    return Flip(Path(compare_csv), out, cases, g, t, chosen, cmp.rule, suite_path)


def measure(fl: Flip, driver: Driver, opts: RunOptions, log: Callable[[str], None] = print) -> None:
    """One interleaved run of golden, TOT and every variant over the cases, re-measured against golden."""
    import time

    runs = [(fl.golden, _path(fl, "golden")), (fl.tot, _path(fl, "tot"))]
    runs += [(variant(fl.tot, k, fl.out), _path(fl, k.key)) for k in fl.knobs]
    remeasure = (
        replace(opts.remeasure, referee=rule_referee(fl.rule), rule=fl.rule.record()) if opts.remeasure else None
    )
    log(f"{len(fl.cases)} cases under golden, TOT and {len(fl.knobs)} variants of TOT: "
        + ", ".join(k.label for k in fl.knobs))  # fmt: skip
    t0 = time.time()
    driver.measure(runs, fl.cases, replace(opts, remeasure=remeasure), str(fl.suite),
                   names=["golden", "tot", *(k.label for k in fl.knobs)])  # fmt: skip
    fl.seconds = time.time() - t0


def _path(fl: Flip, key: str) -> Path:
    return fl.out / "runs" / f"{key}.csv"


def judge(fl: Flip) -> None:
    """Each variant against golden, and TOT of this run against golden, as `harness compare` judges them."""
    golden = _path(fl, "golden")
    tables = {"tot": _table(golden, _path(fl, "tot"), fl.rule)}
    for k in fl.knobs:
        tables[k.label] = _table(golden, _path(fl, k.key), fl.rule)
    for c in fl.cases:
        tot_row = tables["tot"].get(c.key, {})
        entry: dict[str, Any] = {"tot": _reading(tot_row), "knobs": {}}
        for k in fl.knobs:
            row = tables[k.label].get(c.key, {})
            entry["knobs"][k.label] = {**_reading(row), "state": K.state(row.get("verdict", ""),
                                                                        row.get("confidence", ""))}  # fmt: skip
        fl.results[c.key] = entry


def _table(golden: Path, other: Path, rule: Any) -> dict[str, dict[str, Any]]:
    table = compare_files(golden, other, rule).table
    return {f"{r['kernel']}/{r['case_id']}": r for r in table.to_dict("records")}


def _reading(row: dict[str, Any]) -> dict[str, Any]:
    def num(v: Any) -> float | None:
        f = number(v)
        return None if f is None else round(f, 3)

    return {"verdict": str(row.get("verdict") or ""), "confidence": str(row.get("confidence") or ""),
            "delta_pct": num(row.get("delta_pct")), "tot_us": num(row.get("tot_us")),
            "golden_us": num(row.get("golden_us")), "note": str(row.get("note") or "")[:300]}  # fmt: skip


def options_record(fl: Flip, opts: RunOptions) -> dict[str, Any]:
    """What a flip measures and how: a resumed one must do the same, or its runs would mix two flips."""
    return {"comparison": str(fl.compare_csv.resolve()), "suite": str(Path(fl.suite).resolve()),
            "cases": [c.key for c in fl.cases], "golden": fl.golden.name, "tot": fl.tot.name,
            "knobs": [k.label for k in fl.knobs],
            "method": {"reps": opts.reps, "launches": opts.launches, "timeout_s": opts.timeout_s}}  # fmt: skip


def check_options(fl: Flip, opts: RunOptions) -> None:
    """A folder that holds an earlier flip is gone on with only under --resume, and only with the same cases,
    envs and knobs; a new one records them (OUT/options.json)."""
    path, now = fl.out / "options.json", options_record(fl, opts)
    if path.is_file():
        if not opts.resume:
            raise HarnessError(f"--out {fl.out}: holds an earlier flip: pass --resume to go on with it, or choose a "
                               "new --out")  # fmt: skip
        try:
            before = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError):
            before = {}
        differs = [
            k
            for k in now
            if before.get(k) != now[k]
            and not (k == "knobs" and isinstance(before.get(k), list) and sorted(before[k]) == sorted(now[k]))
        ]
        if differs == ["knobs"]:
            raise HarnessError(f"--resume: {fl.out} is a flip of the knobs {', '.join(before['knobs'])}, not "
                               f"{', '.join(now['knobs'])}: run it as it was, or choose a new --out")  # fmt: skip
        if differs:
            raise HarnessError(f"--resume: {fl.out} is a flip of other {', '.join(differs)}: run it as it was, or "
                               "choose a new --out")  # fmt: skip
        return
    write_text(path, json.dumps(now, indent=1) + "\n")


def flip(
    compare_csv: Path,
    out: Path,
    driver: Driver,
    opts: RunOptions,
    given: list[K.Knob],
    log: Callable[[str], None] = print,
    **options: Any,
) -> Flip:
    """Plan, measure, judge, write flip.json and flip.md; ``options`` are plan()'s."""
    from harness.flip.render import markdown, summary

    compare_csv, out = Path(compare_csv), Path(out)
    prepare_out_dir("--out", out, "flip", inputs=inputs_of(compare_csv), own=OWN, create=False)
    fl = plan(compare_csv, out, given, log=log, **options)
    prepare_out_dir("--out", out, "flip", inputs=inputs_of(compare_csv), own=(*OWN, "cache"))
    check_options(fl, opts)
    measure(fl, driver, opts, log)
    if opts.resume:  # the seconds measured before the interruption count too
        with contextlib.suppress(OSError, ValueError, TypeError, AttributeError):
            fl.seconds += float(json.loads((out / "flip.json").read_text(encoding="utf-8")).get("seconds") or 0.0)
    judge(fl)
    write_text(out / "flip.json", json.dumps(summary(fl), indent=1) + "\n")
    write_text(out / "flip.md", markdown(fl))
    return fl

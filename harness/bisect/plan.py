"""`harness bisect`'s plan, decided before anything is measured: the cases (the comparison's regressions and TOT
failures, or ``--case`` regexes), their suite, the golden env, one env per release and TOT, each probed; the
identity of what is bisected against the comparison's (results/identity.BISECT); the options a resumed bisection
must share."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from harness.bisect.model import Plan, Stack, key_of
from harness.compare.compare import Comparison, worst_first
from harness.compare.store import load_compare, locate_results
from harness.envs.schema import same_version
from harness.envs.spec import EnvSpec, load_env_spec, release_env
from harness.envs.venv import check_venv, create_env, probe
from harness.errors import HarnessError
from harness.inputs.suite import Case, load_suite
from harness.results import identity
from harness.run.options import RunOptions
from harness.run.sidecar import code_record

DEFAULT_VERDICTS = ("regression", "failed_in_tot")
RESERVED = ("golden", "tot")  # the stack keys of golden and TOT


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
    recorded = (cmp_env or {}).get("env_spec") or {}
    file = recorded.get("file") or ""
    found = _existing(file, Path("envs") / Path(file).name) if file else None
    if found is None:
        return None
    spec = load_env_spec(found)
    if not Path(file).is_file():  # the file the run used is gone: one of the same name must be the same spec
        now = spec.summary()
        differs = [
            key for key in ("env", "pythonpath", "timing", "venv") if key in recorded and now.get(key) != recorded[key]
        ]
        if differs:
            raise HarnessError(f"{found}: not the env spec the comparison's {recorded.get('name') or 'run'} ran ({file}, "
                               f"now gone): its {', '.join(differs)} differ; pass the spec it ran")  # fmt: skip
    return spec


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

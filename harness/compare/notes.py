"""What compare says beside the verdicts: why a flagged case may be noise, why two runs may not be comparable, and
when nothing was compared at all. Pure: frames and sidecar dicts in, one-line texts out."""

from __future__ import annotations

import math

import pandas as pd

from harness.results import identity
from harness.results.gpu import gpu_name, gpu_uuid, several_gpus
from harness.verdict.rule import Rule, is_verdict


def first_line(error: str, limit: int = 300) -> str:
    """An error's first non-blank line, at most ``limit`` characters: what a note or a summary line shows. The
    worker puts the exception, the user's file and line and the chained cause there (worker._error_text)."""
    line = next((ln.strip() for ln in str(error).splitlines() if ln.strip()), "")
    return line if len(line) <= limit else line[: limit - 3] + "..."


def overlap_note(golden_reps: list[float] | None, tot_reps: list[float] | None, regression: bool) -> str:
    """A note when a flagged case's rep times overlap (the slower side's fastest rep is faster than the other
    side's slowest): the verdict stands, as the rule says, but it may be noise, e.g. a kernel whose speed
    depends on the process (placement) more than the rule's 0.5 % + 0.5 µs. The reps as reps.Cells.lists reads
    them (None: a cell that is not a list of good times)."""
    g, t = golden_reps or [], tot_reps or []
    if len(g) < 2 or len(t) < 2:
        return ""
    slow, fast = (t, g) if regression else (g, t)
    if min(slow) > max(fast):
        return ""
    return f"rep ranges overlap (golden {min(g):.4g}-{max(g):.4g}, TOT {min(t):.4g}-{max(t):.4g} us): may be noise"


def clock_note(golden_mhz: float, tot_mhz: float, delta_pct: float) -> str:
    """A note when a flagged case's mean SM clock (NVML, sampled while its launches ran) moved the same way as
    its time by at least half as much: at a power cap the clock sets a GEMM's speed. Between two runs of the
    same kernel (A/A) that is noise; between two compilers it may also be the new code's own power draw. NVML
    refreshes its clock about every 100 ms on an H100, so for a rep of ~40 ms this is a hint, not a measure."""
    if not (golden_mhz > 0 and tot_mhz > 0) or math.isnan(delta_pct):
        return ""
    clock_pct = 100.0 * (golden_mhz / tot_mhz - 1.0)  # > 0: TOT ran at a lower clock, so expect it slower
    if abs(clock_pct) < 0.3 or clock_pct * delta_pct <= 0 or abs(clock_pct) < 0.5 * abs(delta_pct):
        return ""
    return f"NVML SM clock {golden_mhz:.0f} -> {tot_mhz:.0f} MHz ({100.0 * (tot_mhz / golden_mhz - 1.0):+.1f} %)"


def method_differences(golden_env: dict, tot_env: dict) -> list[str]:
    """One warning per difference of the two sidecars' identities that golden vs TOT should not have
    (results/identity.PAIR: the timing method, the kernels' source files, the config arch) and of their GPUs:
    their deltas would mix the compiler change with another. What a sidecar does not record is not compared."""
    out = []
    for d in identity.differences(golden_env, tot_env, identity.PAIR):
        if d.facet == "method":
            out.append(f"golden and TOT were measured differently: {d.field} {d.shown()}")
        elif d.facet == "kernels":
            out.append(f"golden and TOT ran other code under the same kernel names ({d.shown()}, "
                       "kernel_content): the deltas mix a kernel edit with the compiler change")  # fmt: skip
        else:
            out.append(d.text("golden", "TOT"))
    gpu = other_gpu(golden_env, tot_env)
    if gpu:
        out.append(gpu)
    out += part_differences(golden_env, tot_env)
    return out


def part_differences(golden_env: dict, tot_env: dict) -> list[str]:
    """Warnings where the two files are not results of one selection: other suites (by file name: machines check
    the repository out in different folders), or other shards of one."""
    out = []
    gs, ts = identity.suite_name(golden_env), identity.suite_name(tot_env)
    gc, tc = golden_env.get("suite_content"), tot_env.get("suite_content")
    if gc and tc:  # what the suites hold decides, not where they sat or what they were called
        if gc != tc:
            out.append(f"golden and TOT ran suites that hold other entries ({gs or '?'} and {ts or '?'}): only the "
                       "cases of both are compared")  # fmt: skip
    elif gs and ts and gs != ts:
        out.append(f"golden ran suite {gs} but TOT ran {ts}: only the cases of both are compared")
    gsh, tsh = golden_env.get("shard"), tot_env.get("shard")
    if (gsh or tsh) and gsh != tsh:
        out.append(
            f"golden is shard {gsh or '(none: the whole selection)'} but TOT is shard {tsh or '(none)'}: "
            "compare the merged files (harness merge), or the same shard of both"
        )
    return out


#: the warning of a comparison with flags whose files label no rep with its worker process (compare_files)
UNCONFIRMED = (
    "the flags are not confirmed: these files label no rep with its worker process (--processes 1, or an older "
    "harness), so each flag is one process's claim, never measured again in fresh processes; `harness run` with "
    "--with-env measures both stacks interleaved and confirms every flag"
)


#: why results of two physical GPUs are not compared (reports/h100-triton-3.6.0-vs-3.9.0, issue 21 item 17)
SAME_GPU_WHY = (
    "golden and TOT must share a GPU: results from two H200 machines flagged 41 of 120 cases against each other "
    "where golden vs golden on one GPU flags 0"
)


def other_gpu(golden_env: dict, tot_env: dict) -> str:
    """A warning when the two sidecars name different GPUs (model, UUID) or hosts, saying why that matters;
    ``''`` when they agree or do not record it (older files, CPU runs have no UUID)."""
    gg, tg = gpu_name(golden_env), gpu_name(tot_env)
    if gg and tg and gg != tg:
        return f"golden and TOT ran on different GPUs: {gg} vs {tg}"
    if several_gpus(golden_env) or several_gpus(tot_env):
        return ""  # merged from parts on several GPUs: the sidecar names only the first; the rows' gpu column decides
    gu, tu = gpu_uuid(golden_env), gpu_uuid(tot_env)
    gh, th = str(golden_env.get("host") or ""), str(tot_env.get("host") or "")
    if gu and tu and gu != tu:
        where = f" (hosts {gh} vs {th})" if gh and th and gh != th else f" (host {gh})" if gh else ""
        return f"golden and TOT ran on different physical GPUs: GPU-{gu} vs GPU-{tu}{where}; {SAME_GPU_WHY}"
    if gh and th and gh != th:
        return f"golden and TOT ran on different hosts: {gh} vs {th}; {SAME_GPU_WHY}"
    return ""


def swapped(golden_env: dict, tot_env: dict) -> str:
    """A warning when the file given as golden was measured by an env named TOT and the other by one named
    golden (the arguments in the wrong order: every regression would read as an improvement)."""
    g, t = (str(e.get("env_name") or "").lower() for e in (golden_env, tot_env))
    if (g, t) != ("tot", "golden"):
        return ""
    return "the GOLDEN file was measured by the env 'tot' and the TOT file by 'golden': are the two swapped?"


def same_triton(golden_env: dict, tot_env: dict) -> str:
    """A warning when golden and TOT ran one and the same Triton (same version at the same path): the
    comparison measures a stack against itself, so a gate on it passes every regression."""
    g, t = golden_env.get("triton"), tot_env.get("triton")
    if not (isinstance(g, dict) and isinstance(t, dict)):
        return ""
    if (golden_env.get("libraries") or {}) != (tot_env.get("libraries") or {}):
        return ""  # one Triton, two checkouts of the kernels' library (a PR against main): a real comparison
    if g.get("version") and g.get("path") and (g.get("version"), g.get("path")) == (t.get("version"), t.get("path")):
        return (
            f"golden and TOT ran the same Triton ({g['version']} at {g['path']}): this compares a stack with "
            f"itself, so it cannot find a regression (is the TOT overlay set?)"
        )
    return ""


def remeasured_under(golden_env: dict, tot_env: dict, rule: Rule) -> str:
    """A warning when a run re-measured its undecided cases against another rule than ``rule`` (its sidecar's
    ``remeasure.rule``, docs/verdicts.md): the cases near this comparison's limit were not the ones it measured
    again, so more of them may be ambiguous here. ``''`` when they agree or a sidecar does not record it."""
    mine = (rule.rel, rule.abs_us, rule.min_golden_us)
    other: dict[str, str] = {}
    for side, env in (("golden", golden_env), ("TOT", tot_env)):
        rec = env.get("remeasure") if isinstance(env.get("remeasure"), dict) else {}
        got = rec.get("rule") if isinstance(rec.get("rule"), dict) else None
        if got is None:
            continue
        try:
            theirs = tuple(float(got[k]) for k in ("rel", "abs_us", "min_golden_us"))
        except (KeyError, TypeError, ValueError):
            other[side] = f"an unreadable rule ({got})"
            continue
        if theirs != mine:
            other[side] = _limit(*theirs)
    if not other:
        return ""
    sides = " and ".join(other)
    return (
        f"{sides} re-measured undecided cases against another rule ({'; '.join(sorted(set(other.values())))}) than "
        f"this comparison's ({_limit(*mine)}): give harness run the same --rel/--abs-us/--min-golden-us"
    )


def _limit(rel: float, abs_us: float, min_golden_us: float) -> str:
    return f"tot > {rel:g} x golden + {abs_us:g} us, golden >= {min_golden_us:g} us"


#: verdicts whose case was timed under both stacks and judged by the rule
COMPARED_VERDICTS = ("regression", "improvement", "ok")


def nothing_compared(table: pd.DataFrame, rule: Rule) -> str:
    """The headline of a comparison in which the rule judged no case, ``''`` otherwise: a table of failures
    (or of cases all under the floor) is not 'no regressions'."""
    verdicts = table["verdict"]  # a categorical as compare made it: compared by its codes, not as 1M strings
    if is_verdict(verdicts, COMPARED_VERDICTS).any():
        return ""
    timed = int(is_verdict(verdicts, ["ignored"]).sum())
    if timed:
        return (
            f"nothing compared: the {timed} of {len(table)} cases with a time under both stacks are all under "
            f"the {rule.min_golden_us:g} us floor"
        )
    return f"nothing compared: 0 of {len(table)} cases have a time under both stacks"

"""A case on its way through a run: what the worker is sent for it, what has been measured, and the results row it
becomes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.inputs.suite import Case
from harness.kernel_api.spec import ConfigLookup
from harness.verdict import groupcheck, stability


def worker_case(case: Case) -> dict[str, Any]:
    """The case as the worker receives it: everything its SPEC decides, resolved here, so the worker only runs
    the kernel's code (harness/worker/cases.py)."""
    s, p = case.spec, case.params
    return {
        "kernel": case.name,
        "case_id": case.case_id,
        "source": case.kernel.source,
        "params": p,
        "overrides": case.overrides,
        "lookup": _lookup(case, s.config) if s.config is not None else None,
        "config_arch": case.config_arch,  # for a kernel's own lookup_config (the ConfigLookup's is in "lookup")
        "library": case.library.request() if case.library is not None else None,
        "default_config": dict(s.default_config),
        "tolerance": s.tolerance_of(p),
        "dtype": s.dtype_of(p),
        "hooks": list(s.hooks),
        "config_keys": list(s.config_keys),
        "world_size": s.world_size_of(p),
    }


def _lookup(case: Case, c: ConfigLookup) -> dict[str, Any]:
    """How the worker finds the case's config: the folders and arch given here, so that the driver's checks, `suite
    show` and the worker search the same files (kernels/_config.resolve_in)."""
    p = case.params
    bounds = c.search_bounds()
    return {
        "family": c.family,
        "bucket": c.bucket,
        "value": p[c.bucket],
        "key": c.file_key(p),
        "keys": list(c.file_keys(p)),
        "layout": c.layout,
        "bounds": list(bounds) if bounds is not None else None,
        "folders": list(case.folders),
        "harness_configs": case.harness_configs,
        "arch": case.config_arch,
        "backends": [list(b) for b in c.backends],
    }


@dataclass
class CaseState:
    """What a run knows of one case: the worker's prepare answer, the reps so far, the final row."""

    case: Case
    request: dict[str, Any]
    prep: dict[str, Any] | None = None
    reps: list[float] = field(default_factory=list)
    dispatch: list[dict[str, float]] = field(default_factory=list)
    telemetry: list[dict[str, Any]] = field(default_factory=list)  # per rep, when the worker had NVML
    rank_times: list[list[float]] = field(default_factory=list)  # per rep, each rank's time (multi-GPU cases)
    halves: list[float | None] = field(default_factory=list)  # per rep, the A/A self-check (multi-GPU, lockstep)
    final: dict[str, Any] | None = None
    #: the reps the stability rule decided on (any beyond them were taken to decide the comparison)
    base_reps: int = 0
    #: per rep, the worker process epoch that timed it (run/schedule.py), and whether the row records them
    procs: list[int] = field(default_factory=list)
    label_procs: bool = False

    @classmethod
    def of(cls, case: Case, label_procs: bool = False) -> CaseState:
        return cls(case, worker_case(case), label_procs=label_procs)

    @property
    def key(self) -> str:
        return f"{self.case.name}\x1f{self.case.case_id}"

    def add_journaled(self, entry: dict[str, Any]) -> None:
        """A rep as the journal holds it (runner._record writes it, a resumed run replays it)."""
        self.add_rep(entry["time_us"], entry.get("dispatch_us"), entry.get("telemetry"), entry.get("rank_times_us"),
                     entry.get("halves_pct"), int(entry.get("proc") or 0))  # fmt: skip

    def add_rep(
        self,
        time_us: float,
        dispatch: dict[str, float] | None,
        telemetry: dict[str, Any] | None,
        rank_times: list[float] | None = None,
        halves_pct: float | None = None,
        proc: int = 0,
    ) -> None:
        self.reps.append(time_us)
        self.procs.append(proc)
        if rank_times and halves_pct is not None:
            self.halves.append(halves_pct)
        if dispatch:
            self.dispatch.append(dispatch)
        if telemetry:
            self.telemetry.append(telemetry)
        if rank_times:
            self.rank_times.append(rank_times)


def result_row(
    st: CaseState,
    status: str,
    *,
    time_us: float | None = None,
    error: str = "",
    decision: stability.Decision | None = None,
    timing: str = "",
) -> dict[str, Any]:
    """The results row of a finished case (columns of harness/results/schema.py)."""
    c, p = st.case, st.prep or {}
    flops, nbytes = c.spec.flops_of(c.params), c.spec.bytes_of(c.params)
    row: dict[str, Any] = {
        "kernel": c.name,
        "case_id": c.case_id,
        "params": c.params_json(),
        "dtype": st.request["dtype"],
        "world_size": st.request["world_size"],
        "status": status,
        "config": p.get("config"),
        "config_source": p.get("config_source"),
        "flops": flops,
        "bytes": nbytes,
        "peak": c.spec.peak_of(c.params),
        "compile_s": p.get("compile_s"),
        "rel_err": p.get("rel_err"),
        "timing": timing,
        "error": error[-1500:] if error else "",
        "artifacts": ";".join(p.get("artifacts") or []),
    }
    if st.reps:
        row["reps"] = len(st.reps)
        row["rep_times_us"] = [round(r, 4) for r in st.reps]
        if st.label_procs:
            row["rep_procs"] = list(st.procs)
    if time_us is not None:
        row["time_us"] = time_us
        row["tflops"] = flops / (time_us * 1e-6) / 1e12 if flops else None
        row["gbps"] = nbytes / (time_us * 1e-6) / 1e9 if nbytes else None
    if decision is not None and decision.spread_pct is not None:
        row["spread_pct"] = decision.spread_pct
    row.update(telemetry_columns(st.telemetry))
    row.update(rank_columns(st.rank_times))
    if st.dispatch and len(st.dispatch[0]) > 1:
        names = st.dispatch[-1].keys()
        row["dispatch_us"] = {
            n: round(sorted(d.get(n, 0.0) for d in st.dispatch)[len(st.dispatch) // 2], 4) for n in names
        }
    return row


def group_problem(st: CaseState) -> str:
    """Why a multi-GPU case's time must not become a verdict ('' when it may, and for single-GPU cases). Where
    its reps came from several worker groups, the ranks' skew is each group's and the case is refused only when
    every group's ranks disagree: how far apart the ranks sit is a property of the group (its placement), not of
    the op — on four H200s one golden group's reps had a median skew of 2.4 %, the next one's of golden's 1.2 %,
    an A/A group's 0.8 % (reports/h200x4-confirmed-verdicts) — and a group's slower rank slows its op, which
    the between-process spread carries into the interval."""
    if not st.rank_times:
        return ""
    pct, us = group_skew(st)
    return groupcheck.group_problem(pct, st.halves, skew_us=us)


def rejudged(st: CaseState, row: dict[str, Any]) -> tuple[str, str]:
    """A held case's status and error once it has more reps: a time the multi-GPU guard refused is judged again
    over every worker group that has measured it by now (the re-measuring passes bring fresh ones)."""
    if not groupcheck.refused(row):
        return row["status"], row["error"]
    why = group_problem(st)
    return ("unstable" if why else "ok"), why


def group_skew(st: CaseState) -> tuple[float | None, float | None]:
    """The skew the guard judges, in % and in µs: the worker group's whose ranks agree best (rank_columns of each
    group's reps); the skew over all reps where they came from one group, or are not labelled."""
    whole = _skew(rank_columns(st.rank_times))
    if not st.label_procs or len(st.procs) != len(st.rank_times) or len(set(st.procs)) < 2:
        return whole
    groups: dict[int, list[list[float]]] = {}
    for proc, ranks in zip(st.procs, st.rank_times, strict=True):
        groups.setdefault(proc, []).append(ranks)
    known = [s for s in (_skew(rank_columns(g)) for g in groups.values()) if s[0] is not None]
    return min(known, key=lambda s: s[0]) if known else whole  # type: ignore[arg-type, return-value]


def _skew(cols: dict[str, Any]) -> tuple[float | None, float | None]:
    """(skew in %, in µs) of rank_columns' answer: the slowest rank's median against the fastest's."""
    ranks = cols.get("rank_times_us")
    return cols.get("skew_pct"), (max(ranks) - min(ranks)) if ranks else None


def rank_columns(reps: list[list[float]]) -> dict[str, Any]:
    """A multi-GPU case's ranks: each rank's median over the reps, and the skew between the slowest and the fastest
    (the case's time is the slowest's: the collective ends when it does)."""
    if not reps:
        return {}
    per_rank = [sorted(r[i] for r in reps)[len(reps) // 2] for i in range(len(reps[0]))]
    out: dict[str, Any] = {"rank_times_us": [round(t, 4) for t in per_rank]}
    if min(per_rank) > 0:
        out["skew_pct"] = 100.0 * (max(per_rank) / min(per_rank) - 1.0)
    return out


def telemetry_columns(reps: list[dict[str, Any]]) -> dict[str, Any]:
    """The results columns from each rep's GPU telemetry (worker's telemetry.summarize): the SM clock per rep and
    its mean, the clock-lowering reasons seen in any rep, the hottest temperature."""
    clocks = [t.get("sm_clock_mhz") for t in reps]
    if not any(clocks):
        return {}
    seen = [c for c in clocks if c]
    reasons = sorted({r for t in reps for r in (t.get("throttle") or "").split(";") if r})
    temps = [t["temp_c"] for t in reps if t.get("temp_c") is not None]
    out: dict[str, Any] = {
        "sm_clock_mhz": round(sum(seen) / len(seen), 1),
        "rep_clocks_mhz": [c if c is None else round(c, 1) for c in clocks],
        "throttle": ";".join(reasons),
    }
    if temps:
        out["gpu_temp_c"] = float(max(temps))
    return out

"""Compare stage: two results files → one verdict table (plus the metadata needed to render it)."""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.errors import HarnessError
from harness.fsutil import atomic_write, write_text
from harness.results.format import SHAPE_COLUMNS, STATUSES, TIMED_STATUSES, case_key, load_results
from harness.compare.rule import BLOCKING, VERDICTS, Rule, verdict_codes

COMPARE_COLUMNS = (
    "kernel",
    "case_id",
    *SHAPE_COLUMNS,
    "golden_us",
    "tot_us",
    "delta_us",
    "delta_pct",
    "limit_us",
    "verdict",
    "golden_status",
    "tot_status",
    "golden_config",
    "tot_config",
    "note",
)
KEY = ["kernel", "case_id"]
#: worst first: how compare tables are ordered
SEVERITY = {v: i for i, v in enumerate(VERDICTS)}


@dataclass
class Comparison:
    table: pd.DataFrame
    rule: Rule
    golden_env: dict[str, Any] = field(default_factory=dict)
    tot_env: dict[str, Any] = field(default_factory=dict)
    golden_path: str = ""
    tot_path: str = ""
    warnings: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        vc = self.table["verdict"].value_counts()
        return {v: int(vc.get(v, 0)) for v in VERDICTS}

    def per_kernel(self) -> pd.DataFrame:
        """Cases per (kernel, verdict), kernels as rows, only verdicts that occur as columns."""
        kcodes, kernels = pd.factorize(self.table["kernel"], sort=True)
        vcodes = pd.Categorical(self.table["verdict"], categories=list(VERDICTS)).codes
        counts = np.bincount(kcodes * len(VERDICTS) + vcodes, minlength=len(kernels) * len(VERDICTS))
        ct = pd.DataFrame(
            counts.reshape(len(kernels), len(VERDICTS)), index=pd.Index(kernels, name="kernel"), columns=list(VERDICTS)
        )
        return ct.loc[:, ct.sum(axis=0) > 0]

    @property
    def blocking(self) -> int:
        return int(self.table["verdict"].isin(BLOCKING).sum())

    @property
    def nothing_compared(self) -> str:
        """The headline when no case was compared by the rule (see :func:`nothing_compared`), else ``''``."""
        return nothing_compared(self.table, self.rule)

    @property
    def same_triton(self) -> str:
        return same_triton(self.golden_env, self.tot_env)

    @property
    def other_gpu(self) -> str:
        return other_gpu(self.golden_env, self.tot_env)

    def meta(self) -> dict[str, Any]:
        return {
            "rule": asdict(self.rule),
            "golden": {"path": self.golden_path, "env": self.golden_env},
            "tot": {"path": self.tot_path, "env": self.tot_env},
            "counts": self.counts(),
        }


def _col(df: pd.DataFrame, name: str, rows: np.ndarray, fill: object = "") -> pd.Series | np.ndarray:
    """``df[name]`` taken at ``rows`` (-1 = no row → ``fill``). Floats come back as numpy; text stays in
    pandas' (arrow-backed) string arrays, whose ``take`` is cheap, unlike object arrays."""
    if fill != "":
        if name not in df.columns:
            return np.full(len(rows), np.nan)
        vals = df[name].to_numpy(dtype=np.float64, na_value=np.nan)
        out = vals[np.where(rows >= 0, rows, 0)] if len(vals) else np.full(len(rows), np.nan)
        return np.where(rows >= 0, out, np.nan)
    if name not in df.columns:
        return pd.Series([""] * len(rows), dtype="str")
    col = df[name].astype("str")
    if len(rows) == len(df) and rows[0] == 0 and rows[-1] == len(df) - 1 and (np.diff(rows) == 1).all():
        return col.reset_index(drop=True).fillna("")  # identity: the usual same-suite case, no copy
    return pd.Series(col.array.take(rows, allow_fill=True)).fillna("")


def _status_codes(df: pd.DataFrame, rows: np.ndarray) -> np.ndarray:
    """Index into STATUSES of each taken row's status; -1 where there is no row."""
    try:
        import pyarrow as pa
        import pyarrow.compute as pc

        arr = pa.array(df["status"].astype("str").array)
        codes = pc.index_in(arr, value_set=pa.array(list(STATUSES))).to_numpy(zero_copy_only=False)
        codes = np.nan_to_num(codes.astype(np.float64), nan=-1).astype(np.int8)
    except ImportError:
        codes = pd.Categorical(df["status"], categories=list(STATUSES)).codes.astype(np.int8)
    return np.where(rows >= 0, codes[np.where(rows >= 0, rows, 0)], -1).astype(np.int8)


def _same_cases_same_order(golden: pd.DataFrame, tot: pd.DataFrame) -> bool:
    if len(golden) != len(tot):
        return False
    return all(
        bool((golden[c].reset_index(drop=True) == tot[c].reset_index(drop=True)).all()) for c in ("case_id", "kernel")
    )


def first_line(error: str, limit: int = 300) -> str:
    """An error's first non-blank line, at most ``limit`` characters: what a note or a summary line shows. The
    worker puts the exception, the user's file and line and the chained cause there (worker._error_text)."""
    line = next((ln.strip() for ln in str(error).splitlines() if ln.strip()), "")
    return line if len(line) <= limit else line[: limit - 3] + "..."


def compare_frames(
    golden: pd.DataFrame,
    tot: pd.DataFrame,
    rule: Rule,
    *,
    unstable: str = "compare",
    golden_name: str = "golden",
    tot_name: str = "tot",
) -> tuple[pd.DataFrame, list[str]]:
    """Join two validated results frames on (kernel, case_id) and label each case.

    Vectorized throughout: keys become int64 codes, the join is an index lookup, and every output column is
    one take (none at all when both files list the same cases in the same order). Rows stay in golden's order,
    then TOT-only cases; :func:`worst_first` orders them for display.
    """
    warnings: list[str] = []
    keys = case_key(golden["kernel"], golden["case_id"], (tot["kernel"], tot["case_id"]))
    gk, tk = keys[: len(golden)], keys[len(golden) :]
    t_of_g = pd.Index(tk).get_indexer(gk)  # TOT row of each golden row, -1 if none
    only_t = np.flatnonzero(~np.isin(tk, gk))
    # every output row: (golden row or -1, TOT row or -1)
    gi = np.concatenate([np.arange(len(golden)), np.full(len(only_t), -1)])
    ti = np.concatenate([t_of_g, only_t])
    in_g, in_t = gi >= 0, ti >= 0
    common = int((in_g & in_t).sum())
    if common == 0:
        raise HarnessError(
            f"{golden_name} and {tot_name} have no (kernel, case_id) in common "
            f"({len(golden)} vs {len(tot)} cases): are they results of the same suite?"
        )
    if common < 0.5 * max(len(golden), len(tot)):
        warnings.append(f"only {common} of {len(golden)} golden / {len(tot)} TOT cases are in both files")

    # statuses as small ints: "" (no row) is code -1
    gsc = _status_codes(golden, gi)
    tsc = _status_codes(tot, ti)
    gu, tu = _col(golden, "time_us", gi, np.nan), _col(tot, "time_us", ti, np.nan)
    timed = [STATUSES.index(s_) for s_ in (TIMED_STATUSES if unstable == "compare" else ("ok",))]
    skip = STATUSES.index("skipped")
    vcode = verdict_codes(gu, tu, in_g, in_t, np.isin(gsc, timed), np.isin(tsc, timed), rule, gsc == skip, tsc == skip)
    with np.errstate(invalid="ignore", divide="ignore"):
        delta = tu - gu
        pct = 100.0 * delta / gu
    limit = rule.limit_us(gu)

    status_names = np.asarray([*STATUSES, ""], dtype=object)  # code -1 → ""
    gs, ts = status_names[gsc], status_names[tsc]

    cols: dict[str, np.ndarray] = {}
    for c in ("kernel", "case_id"):
        cols[c] = _col(golden, c, gi).where(gi >= 0, _col(tot, c, ti))
    for c in SHAPE_COLUMNS:
        if c not in golden.columns and c not in tot.columns:
            continue
        fill = "" if c == "dtype" else np.nan
        gv, tv = _col(golden, c, gi, fill), _col(tot, c, ti, fill)
        if c == "dtype":
            gv, tv = gv.to_numpy(dtype=object), tv.to_numpy(dtype=object)
        missing_g = (gv == "") if c == "dtype" else np.isnan(gv)
        missing_t = (tv == "") if c == "dtype" else np.isnan(tv)
        clash = ~missing_g & ~missing_t & (gv != tv)
        if clash.any():
            i = int(np.flatnonzero(clash)[0])
            show = (lambda v: v) if c == "dtype" else (lambda v: int(v))
            raise HarnessError(
                f"case ({cols['kernel'][i]}, {cols['case_id'][i]}): column '{c}' is {show(gv[i])} in "
                f"{golden_name} but {show(tv[i])} in {tot_name}; same case_id, different case"
            )
        merged = np.where(missing_g, tv, gv)
        cols[c] = merged if c == "dtype" else pd.array(merged, dtype="Float64").astype("Int64")
    cols.update(
        golden_us=gu,
        tot_us=tu,
        delta_us=delta,
        delta_pct=pct,
        limit_us=np.where(np.isnan(gu), np.nan, limit),
        verdict=pd.Categorical.from_codes(vcode, categories=list(VERDICTS)),
        golden_status=pd.Categorical.from_codes(np.where(gsc < 0, len(STATUSES), gsc), categories=[*STATUSES, ""]),
        tot_status=pd.Categorical.from_codes(np.where(tsc < 0, len(STATUSES), tsc), categories=[*STATUSES, ""]),
        golden_config=_col(golden, "config", gi),
    )
    tot_cfg = _col(tot, "config", ti)
    # TOT's config only where it differs: the same config files serve both stacks, so this is usually empty
    cols["tot_config"] = tot_cfg.where(tot_cfg != cols["golden_config"], "")

    # notes only for the few failed/unstable rows: codes into a small category list, "" everywhere else
    note_of: dict[int, str] = {}
    timed_codes = [STATUSES.index(s_) for s_ in TIMED_STATUSES]
    for label, st, sc, df, rows in (("TOT", ts, tsc, tot, ti), ("golden", gs, gsc, golden, gi)):
        failed = np.flatnonzero(~np.isin(sc, timed_codes) & (sc >= 0))
        if len(failed):
            errs = _col(df, "error", rows[failed])
            for i, e in zip(failed, errs, strict=True):
                text = f"{label} {st[i]}: {first_line(str(e))}".rstrip(": ")
                # neither side timed: both statuses (a skip beside a failure reads failed_in_both)
                note_of[int(i)] = f"{note_of[int(i)]}; {text}" if int(i) in note_of else text
    u = STATUSES.index("unstable")
    for i in np.flatnonzero((gsc == u) | (tsc == u)):
        note_of.setdefault(int(i), "unstable reps")
    flagged = np.flatnonzero(np.isin(vcode, [VERDICTS.index("regression"), VERDICTS.index("improvement")]))
    if len(flagged) and "rep_times_us" in golden.columns and "rep_times_us" in tot.columns:
        g_reps = pd.Series(_col(golden, "rep_times_us", gi[flagged]), dtype=object).astype(str)
        t_reps = pd.Series(_col(tot, "rep_times_us", ti[flagged]), dtype=object).astype(str)
        both = ((g_reps.str.len() > 2) & (t_reps.str.len() > 2)).to_numpy()  # files without rep times: skip
        for i, gr, tr in zip(flagged[both], g_reps[both], t_reps[both], strict=True):
            note = overlap_note(str(gr), str(tr), VERDICTS[vcode[i]] == "regression")
            if note:
                note_of.setdefault(int(i), note)
    if len(flagged) and "sm_clock_mhz" in golden.columns and "sm_clock_mhz" in tot.columns:
        g_clk = _col(golden, "sm_clock_mhz", gi[flagged], np.nan)
        t_clk = _col(tot, "sm_clock_mhz", ti[flagged], np.nan)
        for i, gc, tc in zip(flagged, g_clk, t_clk, strict=True):
            note = clock_note(float(gc), float(tc), float(pct[i]))
            if note:
                note_of[int(i)] = f"{note_of[int(i)]}; {note}" if int(i) in note_of else note
    cats = ["", *sorted(set(note_of.values()))]
    pos = {c: k for k, c in enumerate(cats)}
    codes = np.zeros(len(gi), dtype=np.int32)
    for i, text in note_of.items():
        codes[i] = pos[text]
    cols["note"] = pd.Categorical.from_codes(codes, categories=cats)
    return pd.DataFrame(cols), warnings


def locate_results(named: str, compare_csv: str | os.PathLike[str]) -> Path | None:
    """A results file named in a comparison's metadata: at that path, else beside the comparison (the two are
    often moved together, e.g. in a CI artifact); None when neither exists."""
    for p in (Path(named), Path(compare_csv).parent / Path(named).name):
        if named and p.is_file():
            return p
    return None


def overlap_note(golden_reps: str, tot_reps: str, regression: bool) -> str:
    """A note when a flagged case's rep times overlap (the slower side's fastest rep is faster than the other
    side's slowest): the verdict stands, as the rule says, but it may be noise, e.g. a kernel whose speed
    depends on the process (placement) more than the rule's 0.5 % + 0.5 µs."""
    try:
        g = [float(x) for x in json.loads(golden_reps)]
        t = [float(x) for x in json.loads(tot_reps)]
    except (ValueError, TypeError):
        return ""
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


def worst_first(table: pd.DataFrame) -> np.ndarray:
    """Row positions ordered worst first: verdict severity, then the largest relative slowdown."""
    codes = pd.Categorical(table["verdict"], categories=list(VERDICTS)).codes
    pct = table["delta_pct"].to_numpy(dtype=np.float64, na_value=np.nan)
    return np.lexsort((-np.nan_to_num(pct, nan=-np.inf), codes))


#: sidecar fields that change what a time means; golden and TOT should agree on all of them
METHOD_KEYS = (
    "timing",
    "launch_gap",
    "launch_gap_auto",
    "placement",
    "move_inputs",
    "launches_per_rep",
    "heat_s",
)


def method_differences(golden_env: dict, tot_env: dict) -> list[str]:
    """One warning per measurement setting (or GPU) on which two sidecars disagree: their deltas would mix the
    compiler change with a change of method. Settings a sidecar does not record are not compared."""
    out = []
    for key in METHOD_KEYS:
        if key in golden_env and key in tot_env and golden_env[key] != tot_env[key]:
            out.append(f"golden and TOT were measured differently: {key} {golden_env[key]!r} vs {tot_env[key]!r}")
    gpu = other_gpu(golden_env, tot_env)
    if gpu:
        out.append(gpu)
    return out


#: why results of two physical GPUs are not compared (reports/h100-triton-3.6.0-vs-3.9.0, issue 21 item 17)
SAME_GPU_WHY = (
    "golden and TOT must share a GPU: results from two H200 machines flagged 41 of 120 cases against each other "
    "where golden vs golden on one GPU flags 0"
)


def _gpu_field(env: dict, key: str) -> str:
    gpu = env.get("gpu") if isinstance(env.get("gpu"), dict) else {}
    before = gpu.get("before") if isinstance(gpu.get("before"), dict) else {}
    v = gpu.get(key) or before.get(key) or ""
    v = str(v).strip()
    return "" if v.startswith("[") else v  # nvidia-smi's [N/A] / [Not Supported]


def _uuid(env: dict) -> str:
    return _gpu_field(env, "uuid").lower().removeprefix("gpu-")


def other_gpu(golden_env: dict, tot_env: dict) -> str:
    """A warning when the two sidecars name different GPUs (model, UUID) or hosts, saying why that matters;
    ``''`` when they agree or do not record it (older files, CPU runs have no UUID)."""
    gg, tg = _gpu_field(golden_env, "name"), _gpu_field(tot_env, "name")
    if gg and tg and gg != tg:
        return f"golden and TOT ran on different GPUs: {gg} vs {tg}"
    gu, tu = _uuid(golden_env), _uuid(tot_env)
    gh, th = str(golden_env.get("host") or ""), str(tot_env.get("host") or "")
    if gu and tu and gu != tu:
        where = f" (hosts {gh} vs {th})" if gh and th and gh != th else f" (host {gh})" if gh else ""
        return f"golden and TOT ran on different physical GPUs: GPU-{gu} vs GPU-{tu}{where}; {SAME_GPU_WHY}"
    if gh and th and gh != th:
        return f"golden and TOT ran on different hosts: {gh} vs {th}; {SAME_GPU_WHY}"
    return ""


def same_triton(golden_env: dict, tot_env: dict) -> str:
    """A warning when golden and TOT ran one and the same Triton (same version at the same path): the
    comparison measures a stack against itself, so a gate on it passes every regression."""
    g, t = golden_env.get("triton"), tot_env.get("triton")
    if not (isinstance(g, dict) and isinstance(t, dict)):
        return ""
    if g.get("version") and g.get("path") and (g.get("version"), g.get("path")) == (t.get("version"), t.get("path")):
        return (
            f"golden and TOT ran the same Triton ({g['version']} at {g['path']}): this compares a stack with "
            f"itself, so it cannot find a regression (is the TOT overlay set?)"
        )
    return ""


#: verdicts whose case was timed under both stacks and judged by the rule
COMPARED_VERDICTS = ("regression", "improvement", "ok")


def nothing_compared(table: pd.DataFrame, rule: Rule) -> str:
    """The headline of a comparison in which the rule judged no case, ``''`` otherwise: a table of failures
    (or of cases all under the floor) is not 'no regressions'."""
    verdicts = table["verdict"].astype(str)
    if verdicts.isin(COMPARED_VERDICTS).any():
        return ""
    timed = int((verdicts == "ignored").sum())
    if timed:
        return (
            f"nothing compared: the {timed} of {len(table)} cases with a time under both stacks are all under "
            f"the {rule.min_golden_us:g} us floor"
        )
    return f"nothing compared: 0 of {len(table)} cases have a time under both stacks"


def compare_files(
    golden: str | os.PathLike[str], tot: str | os.PathLike[str], rule: Rule | None = None, *, unstable: str = "compare"
) -> Comparison:
    rule = rule or Rule()
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as pool:  # the CSV readers release the GIL: read both files at once
        gf, tf = pool.submit(load_results, golden), pool.submit(load_results, tot)
        gdf, tdf = gf.result(), tf.result()
    table, warnings = compare_frames(gdf, tdf, rule, unstable=unstable, golden_name=str(golden), tot_name=str(tot))
    genv, tenv = gdf.attrs.get("env", {}), tdf.attrs.get("env", {})
    warnings += [w for w in (same_triton(genv, tenv),) if w] + method_differences(genv, tenv)
    return Comparison(
        table=table,
        rule=rule,
        golden_env=gdf.attrs.get("env", {}),
        tot_env=tdf.attrs.get("env", {}),
        golden_path=str(golden),
        tot_path=str(tot),
        warnings=warnings,
    )


def write_csv(table: pd.DataFrame, out: Path) -> None:
    """pyarrow's CSV writer when present (a million rows in ~1 s), pandas' otherwise (~15 s); through a
    temporary file, so a reader never sees half a table."""
    with atomic_write(out, "wb") as fh:
        try:
            import pyarrow as pa
            import pyarrow.csv as pacsv
        except ImportError:
            table.to_csv(fh, index=False)
            return
        pacsv.write_csv(pa.Table.from_pandas(table, preserve_index=False), fh)


def meta_path(out: str | os.PathLike[str]) -> Path:
    """``compare.csv`` → ``compare.csv.meta.json``."""
    p = Path(out)
    return p.with_name(p.name + ".meta.json")


def write_compare(cmp: Comparison, out: str | os.PathLike[str]) -> Path:
    """Write the verdict CSV and its ``.meta.json`` (rule + both environments) beside it."""
    out = Path(out)
    table = cmp.table.copy()
    for c in ("golden_us", "tot_us", "delta_us", "delta_pct", "limit_us"):
        table[c] = table[c].round(4)
    write_csv(table, out)
    write_text(meta_path(out), json.dumps(cmp.meta(), indent=2, default=str) + "\n")
    return out


def _skips_of_old_files(table: pd.DataFrame, rule: Rule) -> pd.Series:
    """Verdicts with the skip verdicts applied: files written before they existed called a case whose status is
    ``skipped`` ``failed_in_*``. Which side was timed follows from the old verdict, so the rule is re-applied
    to the statuses alone."""
    verdict = table["verdict"].astype(object)
    failed = verdict.isin(["failed_in_tot", "failed_in_golden", "failed_in_both"]).to_numpy()
    if not failed.any() or "golden_status" not in table.columns or "tot_status" not in table.columns:
        return verdict
    v, n = verdict[failed], int(failed.sum())
    g_status, t_status = table["golden_status"][failed], table["tot_status"][failed]
    yes = np.ones(n, dtype=bool)
    codes = verdict_codes(
        np.full(n, np.nan),
        np.full(n, np.nan),
        yes,
        yes,
        (v == "failed_in_tot").to_numpy(),
        (v == "failed_in_golden").to_numpy(),
        rule,
        (g_status == "skipped").to_numpy(),
        (t_status == "skipped").to_numpy(),
    )
    out = verdict.copy()
    out[failed] = np.asarray(VERDICTS, dtype=object)[codes]
    return out


def load_compare(path: str | os.PathLike[str]) -> Comparison:
    """Read a compare CSV written by :func:`write_compare` (for publish/report/explain)."""
    p = Path(path)
    if not p.is_file():
        raise HarnessError(f"{p}: no such compare file")
    try:
        table = pd.read_csv(p, keep_default_na=True)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        raise HarnessError(f"{p}: not a compare CSV: {err}") from None
    missing = [c for c in ("kernel", "case_id", "golden_us", "tot_us", "verdict") if c not in table.columns]
    if missing:
        raise HarnessError(f"{p}: line 1: missing column '{missing[0]}': not written by `harness compare`")
    bad = ~table["verdict"].isin(VERDICTS)
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise HarnessError(f"{p}: line {i + 2}: unknown verdict {table['verdict'].iloc[i]!r}")
    meta_p = meta_path(p)
    meta = json.loads(meta_p.read_text()) if meta_p.exists() else {}
    rule = Rule(**meta.get("rule", {}))
    table["verdict"] = _skips_of_old_files(table, rule)
    table["note"] = table["note"].astype(object).fillna("") if "note" in table.columns else ""
    return Comparison(
        table=table,
        rule=rule,
        golden_env=meta.get("golden", {}).get("env", {}),
        tot_env=meta.get("tot", {}).get("env", {}),
        golden_path=meta.get("golden", {}).get("path", ""),
        tot_path=meta.get("tot", {}).get("path", ""),
    )

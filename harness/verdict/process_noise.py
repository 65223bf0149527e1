"""Between-process noise from an A/A measured in the same run (``harness compare GOLDEN TOT --aa GOLDEN_AA``). Pure:
frames and arrays in, arrays and frames out, no I/O (docs/verdicts.md, "Process noise", derives the choices).

All reps of one stack are taken in one worker process, so the rep interval (confidence.py) knows only the noise
*within* a process. A second process of the same stack (the A/A) moves a case by what placement and allocation
give that process: on an H200, AITER's a8w8 batched GEMM moved 0.3–5.8 % between two golden processes while its
reps agreed within 0.6 %. Per kernel (the family: its cases share code, memory layout and launch shape):

- Δ_AA% = 100 (aa / golden − 1) of each case timed ``ok`` under both, golden at or above the rule's floor;
- σ_p = median(|Δ_AA|) / 0.6745: the standard deviation of a zero-mean normal whose |x| has that median. The
  median of |Δ| about **zero**, not about the A/A's own median: the A/A's common shift (all 18 a8w8 deltas were
  positive) is process noise too, and the TOT process draws its own;
- each case with an A/A delta gets σ_p of its kernel as ``process_pct``; confidence.widened adds it to the rep
  interval. A case missing from the A/A (or not timed ok there) gets none.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness.verdict.rule import Rule

#: the median of |x| for x ~ N(0, 1): median(|Δ|) / MAD_NORMAL estimates σ of a zero-mean normal
MAD_NORMAL = 0.6745


def aa_delta_pct(golden: pd.DataFrame, aa: pd.DataFrame, rule: Rule) -> np.ndarray:
    """Per golden row, the A/A's Δ% (100 (aa / golden − 1)), NaN where the case is not in the A/A, either row is
    not timed ``ok``, or golden is under the rule's floor (a case the rule ignores, timer noise that would
    inflate its family's σ_p). Rows are matched on (kernel, case_id)."""
    key = ["kernel", "case_id"]
    ok_a = aa[aa["status"].astype(str) == "ok"]
    times = ok_a[key].astype(str).assign(aa_us=pd.to_numeric(ok_a["time_us"], errors="coerce"))
    times = times.drop_duplicates(key, keep="first")
    g = golden[key].astype(str).reset_index(drop=True)
    joined = g.merge(times, on=key, how="left")  # a left merge keeps golden's order
    gu = pd.to_numeric(golden["time_us"], errors="coerce").to_numpy(dtype=np.float64)
    au = joined["aa_us"].to_numpy(dtype=np.float64)
    usable = (golden["status"].astype(str).to_numpy() == "ok") & (gu >= rule.min_golden_us) & (au > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(usable, 100.0 * (au / gu - 1.0), np.nan)


def family_noise(kernels: np.ndarray, delta_pct: np.ndarray) -> pd.DataFrame:
    """Per kernel with at least one A/A delta: ``cases`` (how many), ``median_abs_pct`` (median |Δ_AA|) and
    ``sigma_pct`` (σ_p = median_abs_pct / 0.6745), indexed by kernel, sorted by name."""
    d = pd.DataFrame({"kernel": pd.Series(kernels, dtype=object).astype(str), "abs": np.abs(delta_pct)})
    d = d[np.isfinite(d["abs"].to_numpy(dtype=np.float64))]
    out = d.groupby("kernel", sort=True)["abs"].agg(cases="size", median_abs_pct="median")
    out["cases"] = out["cases"].astype(int)
    out["sigma_pct"] = out["median_abs_pct"] / MAD_NORMAL
    return out


def case_sigma(kernels: np.ndarray, has_aa: np.ndarray, noise: pd.DataFrame) -> np.ndarray:
    """σ_p of each case's kernel where the case has an A/A delta (``has_aa``), NaN elsewhere (no widening)."""
    sigma = pd.Series(kernels, dtype=object).astype(str).map(noise["sigma_pct"]).to_numpy(dtype=np.float64)
    return np.where(np.asarray(has_aa, dtype=bool), sigma, np.nan)

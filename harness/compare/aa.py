"""The A/A file given to ``harness compare --aa``: golden's stack measured again in the same run. Its checks (one
line each: a file of another suite, GPU or Triton, or golden or TOT itself, is refused), the σ_p it gives each
case (process_noise.py) and what the comparison records and says of it (docs/verdicts.md, "Process noise")."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.errors import HarnessError, counted
from harness.results.gpu import gpu_name, gpu_uuid, rows_on_other_gpus, several_gpus
from harness.verdict.process_noise import aa_delta_pct, case_sigma, family_noise
from harness.verdict.rule import Rule

#: what an A/A must share with golden, by its sidecar: (what, how to read it from an env dict)
SAME_AS_GOLDEN = (
    ("suite", lambda e: Path(str(e.get("suite") or "")).name),
    ("GPU", gpu_name),
    ("GPU", lambda e: _one_gpu(e)),
    ("Triton", lambda e: _triton(e)),
    ("library checkout", lambda e: _libraries(e)),
)
#: an A/A captured this long before or after golden was not measured in the same run
APART_S = 1800


def _libraries(env: dict[str, Any]) -> str:
    libs = env.get("libraries") if isinstance(env.get("libraries"), dict) else {}
    return ", ".join(f"{k} {str(v.get('commit') or '')[:10]}" for k, v in sorted(libs.items()) if isinstance(v, dict))


def apart(golden_env: dict[str, Any], aa_env: dict[str, Any], aa: str | os.PathLike[str]) -> str:
    """A warning when the A/A's sidecar was captured far from golden's (another run: its process noise is that
    run's, not this one's); '' when close or either does not say."""
    from datetime import datetime

    try:
        g, a = (datetime.fromisoformat(str(e["captured_at"]).replace("Z", "+00:00")) for e in (golden_env, aa_env))
        minutes = abs((a - g).total_seconds()) / 60
    except (KeyError, TypeError, ValueError):
        return ""
    if minutes * 60 <= APART_S:
        return ""
    return (f"--aa {aa}: captured {minutes:.0f} min from golden, not in the same run: the process noise it gives "
            "is that run's")  # fmt: skip


def _one_gpu(env: dict[str, Any]) -> str:
    # a merged sidecar's UUID is its first part's, not every row's: check_aa_gpus compares those, case by case
    uuid = "" if several_gpus(env) else gpu_uuid(env)
    return f"GPU-{uuid}" if uuid else ""


def _triton(env: dict[str, Any]) -> str:
    t = env.get("triton") if isinstance(env.get("triton"), dict) else {}
    return " at ".join(str(t[k]) for k in ("version", "path") if t.get(k))


def check_aa_path(aa: str | os.PathLike[str], golden: str | os.PathLike[str], tot: str | os.PathLike[str]) -> None:
    """Refuse a missing A/A file, or one that is golden's or TOT's file (the same file, or a copy of its bytes):
    its deltas would all be 0, and the verdicts judged as if processes never differed."""
    from harness.fsutil import file_sha256

    p = Path(aa)
    if not p.is_file():
        raise HarnessError(f"--aa {p}: no such file")
    digest = file_sha256(p)
    for name, other in (("GOLDEN", golden), ("TOT", tot)):
        if Path(other).is_file() and (os.path.samefile(p, other) or file_sha256(other) == digest):
            raise HarnessError(
                f"--aa {p}: is {name} ({other}) itself: give golden's stack measured again in the same run "
                "(harness run ... --with-env GOLDEN --with-out AA)"
            )


def check_aa_env(golden_env: dict[str, Any], aa_env: dict[str, Any], aa: str | os.PathLike[str]) -> None:
    """Refuse an A/A whose sidecar names another suite, GPU (model or physical GPU) or Triton than golden's: its
    deltas would measure that difference, not two processes of golden's stack. Fields a sidecar does not record
    are not compared, nor the physical GPU of results merged from several (check_aa_gpus compares their rows)."""
    for what, read in SAME_AS_GOLDEN:
        g, a = read(golden_env), read(aa_env)
        if g and a and g != a:
            raise HarnessError(
                f"--aa {aa}: another {what} than golden's ({a} vs {g}): an A/A is golden's stack measured again "
                "in the same run, on the same GPU"
            )


def check_aa_gpus(golden: pd.DataFrame, aa: pd.DataFrame, aa_name: str | os.PathLike[str]) -> None:
    """Refuse an A/A whose rows time a case on another GPU than golden's rows do (their ``gpu`` column): what
    check_aa_env cannot see of results merged from several GPUs, whose sidecars name only one."""
    j = rows_on_other_gpus(aa, golden)
    if len(j):
        r = j.iloc[0]
        raise HarnessError(
            f"--aa {aa_name}: {counted(len(j), 'case')} timed on another GPU than golden's (e.g. {r['kernel']}/"
            f"{r['case_id']}: {r['gpu']} vs {r['gpu_other']}): an A/A is golden's stack measured again in the same "
            "run, on the same GPU"
        )


def aa_sigma(golden: pd.DataFrame, aa: pd.DataFrame, rule: Rule, aa_name: str) -> tuple[np.ndarray, pd.DataFrame]:
    """(σ_p of each golden row, NaN where the case has no A/A delta; the per-kernel table of family_noise).
    Refused (one line) when no case was timed ok under both: an A/A of other cases."""
    delta = aa_delta_pct(golden, aa, rule)
    if not np.isfinite(delta).any():
        raise HarnessError(
            f"--aa {aa_name}: none of golden's {len(golden)} cases was timed ok (at or above the "
            f"{rule.min_golden_us:g} us floor) in both files: an A/A of another suite or other cases?"
        )
    kernels = golden["kernel"].astype(str).to_numpy()
    noise = family_noise(kernels, delta)
    return case_sigma(kernels, np.isfinite(delta), noise), noise


def aa_record(
    aa: str | os.PathLike[str], noise: pd.DataFrame, table: pd.DataFrame, sigma: np.ndarray, by_process: np.ndarray
) -> dict[str, Any]:
    """What the comparison's ``.meta.json`` keeps as ``process_noise``: the A/A file (path, SHA-256), the cases
    it widened and the judged cases it could not (``not_in_aa``), and per kernel its A/A cases, median |Δ_AA|,
    σ_p and the verdicts made ambiguous by it (``ambiguous``)."""
    from harness.fsutil import file_sha256
    from harness.verdict.confidence import JUDGED
    from harness.verdict.rule import VERDICTS

    judged = np.isin(pd.Categorical(table["verdict"], categories=list(VERDICTS)).codes, JUDGED)
    kernels = table["kernel"].astype(str)
    made = kernels[by_process].value_counts()
    return {
        "path": str(Path(aa).resolve()),
        "sha256": file_sha256(aa),
        "source": "--aa",
        "widened": int((judged & np.isfinite(sigma)).sum()),
        "not_in_aa": int((judged & ~np.isfinite(sigma)).sum()),
        "kernels": {
            str(k): {
                "cases": int(r["cases"]),
                "median_abs_pct": round(float(r["median_abs_pct"]), 4),
                "sigma_pct": round(float(r["sigma_pct"]), 4),
                "ambiguous": int(made.get(k, 0)),
            }
            for k, r in noise.iterrows()
        },
    }


def process_lines(record: dict[str, Any]) -> list[str]:
    """The lines compare shows for the A/A it used (terminal, markdown), each under 80 columns for the usual
    kernel names: a heading naming the file, then one line per kernel whose σ_p made a verdict ambiguous and
    how to decide them (or the largest σ_p when none did)."""
    if not record:
        return []
    kernels = record.get("kernels") or {}
    head = f"process noise (A/A {Path(str(record.get('path', '?'))).name}):"
    if record.get("not_in_aa"):
        head += f" {counted(int(record['not_in_aa']), 'case')} not in it"
    lines = [
        f"  {k} {v.get('sigma_pct', 0):.2g} %: {counted(v['ambiguous'], 'verdict')} ambiguous because of it"
        for k, v in sorted(kernels.items())
        if v.get("ambiguous")
    ]
    if not lines and kernels:
        k, v = max(kernels.items(), key=lambda kv: kv[1].get("sigma_pct", 0))
        lines = [f"  no verdict changed (largest: {k} {v.get('sigma_pct', 0):.2g} %)"]
    elif lines:  # more reps in the same process cannot shrink it; reps from new processes sample it
        lines.append("  to decide them: run again with --fresh-process-rounds")
    return [head, *lines]


def noted(table: pd.DataFrame, sigma: np.ndarray, by_process: np.ndarray) -> pd.DataFrame:
    """``table`` with each case made ambiguous by process noise noted (``process noise 2.7 % (A/A)``); the input
    is not changed."""
    rows = np.flatnonzero(by_process)
    if not len(rows):
        return table
    out = table.copy()
    before = out["note"].astype(object).fillna("").astype(str)
    out["note"] = before
    notes = [f"process noise {s:.2g} % (A/A)" for s in sigma[rows]]
    out.loc[out.index[rows], "note"] = [f"{b}; {n}" if b else n for b, n in zip(before.iloc[rows], notes)]
    return out

"""Issue 42: what the committed three-way runs (golden, TOT, golden again; `run.sh plain`) say about the confirmed
method's two free choices, re-judged on the CPU from their files (scripts/report-data.sh puts them back).

    python3 lab/verdicts/confirm_study.py prior DIR [DIR...]    the family prior's degrees of freedom
    python3 lab/verdicts/confirm_study.py passes DIR [DIR...]   what each re-measuring pass decided

``prior``: limma's estimate of the prior's degrees of freedom d0 per kernel family (the spread of the cases'
log between-process variances beyond what their own degrees of freedom explain: trigamma(d0 / 2) = var(z) −
mean trigamma(d / 2)), then the A/A's confident flags and golden vs TOT's decisiveness with d0 set to 0, 2, 4
(harness's PRIOR_DF), 8, 16 and 1e6. ``passes``: each run re-judged with the reps of the first pass alone, then
with each re-measuring pass added (worker process epochs ≥ 5, schema.FIRST_EXTRA_EPOCH), and which cases each
pass decided.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import digamma, polygamma

import harness.verdict.confirm as confirm
from harness.compare.compare import compare_files
from harness.results.schema import FIRST_EXTRA_EPOCH

JUDGED = ("regression", "improvement", "ok")


def counts(table: pd.DataFrame) -> tuple[int, int, int]:
    """(confident flags, confident judged, judged)."""
    judged = table["verdict"].isin(JUDGED)
    sure = table["confidence"] == "confident"
    flags = table["verdict"].isin(("regression", "improvement"))
    return int((flags & sure).sum()), int((judged & sure).sum()), int(judged.sum())


def inverse_trigamma(y: float) -> float:
    """x with trigamma(x) = y (Smyth's Newton iteration, as limma's)."""
    x = 0.5 + 1.0 / y
    for _ in range(50):
        tri = float(polygamma(1, x))
        step = tri * (1.0 - tri / y) / float(polygamma(2, x))
        x += step
        if -step / x < 1e-8:
            break
    return x


def family_d0(d: Path, other: str) -> list[str]:
    seen: dict[str, np.ndarray] = {}
    moderated = confirm.moderated

    def spy(kernels, s2, df, usable):  # noqa: ANN001, ANN202
        seen.update(k=np.asarray(kernels, dtype=object), s2=s2, d=df, u=usable)
        return moderated(kernels, s2, df, usable)

    confirm.moderated = spy
    try:
        compare_files(d / "golden.csv", d / other)
    finally:
        confirm.moderated = moderated
    out = []
    for fam in sorted(set(seen["k"][seen["u"] & (seen["d"] >= 1)].tolist())):
        m = seen["u"] & (seen["d"] >= 1) & (seen["k"] == fam) & (seen["s2"] > 0)
        z, df = np.log(seen["s2"][m]), seen["d"][m]
        e = z - digamma(df / 2) + np.log(df / 2)
        excess = float(np.var(e, ddof=1) - np.mean(polygamma(1, df / 2)))
        d0 = 2 * inverse_trigamma(excess) if excess > 0 else float("inf")
        out.append(f"{fam.split('/')[-1][:24]} ({int(m.sum())} cases) d0 {d0:.1f}")
    return out


def prior(dirs: list[Path]) -> None:
    for d in dirs:
        print(d)
        for other in ("tot.csv", "golden-aa.csv"):
            print(f"  estimated against {other}: " + "; ".join(family_d0(d, other)))
        for d0 in (0.0, 2.0, 4.0, 8.0, 16.0, 1e6):
            old, confirm.PRIOR_DF = confirm.PRIOR_DF, d0
            try:
                aa, gt = (counts(compare_files(d / "golden.csv", d / o).table) for o in ("golden-aa.csv", "tot.csv"))
            finally:
                confirm.PRIOR_DF = old
            print(f"  d0 {d0:>7g}: A/A confident flags {aa[0]}; golden vs TOT decisive {gt[1]}/{gt[2]} "
                  f"= {100 * gt[1] / gt[2]:.1f} %")  # fmt: skip


def cut(src: Path, dst: Path, last_epoch: int) -> None:
    """``src`` with only the reps of epochs up to ``last_epoch``, each time the mean of its processes' means."""
    df = pd.read_csv(src, keep_default_na=False, na_values=[""], dtype=str)
    for i, r in df.iterrows():
        if not r.get("rep_procs"):
            continue
        kept = [(t, p) for t, p in zip(json.loads(r["rep_times_us"]), json.loads(r["rep_procs"])) if p <= last_epoch]
        if not kept:
            continue
        by: dict[int, list[float]] = {}
        for t, p in kept:
            by.setdefault(p, []).append(t)
        df.at[i, "rep_times_us"] = json.dumps([t for t, _ in kept])
        df.at[i, "rep_procs"] = json.dumps([p for _, p in kept])
        df.at[i, "time_us"] = repr(float(np.mean([np.mean(v) for v in by.values()])))
    df.to_csv(dst, index=False)
    env = json.loads(Path(str(src) + ".env.json").read_text())
    env.pop("integrity", None)  # the cut file is not the one the run wrote
    Path(str(dst) + ".env.json").write_text(json.dumps(env))


def passes(dirs: list[Path]) -> None:
    for d in dirs:
        golden = pd.read_csv(d / "golden.csv", keep_default_na=False, na_values=[""])
        epochs = sorted({p for cell in golden["rep_procs"].dropna() for p in json.loads(cell)})
        stops = [max(e for e in epochs if e < FIRST_EXTRA_EPOCH)] + [e for e in epochs if e >= FIRST_EXTRA_EPOCH]
        print(d)
        before: set[str] | None = None
        for last, label in zip(stops, ["first pass", *(f"+ pass {k}" for k in range(1, len(stops)))]):
            tmp = Path(tempfile.mkdtemp())
            for name in ("golden.csv", "tot.csv", "golden-aa.csv"):
                cut(d / name, tmp / name, last)
            gt = compare_files(tmp / "golden.csv", tmp / "tot.csv").table
            aa = counts(compare_files(tmp / "golden.csv", tmp / "golden-aa.csv").table)
            flags, sure, judged = counts(gt)
            rows = gt.loc[gt["verdict"].isin(JUDGED) & (gt["confidence"] != "confident")]
            open_ = set(zip(rows["kernel"], rows["case_id"], strict=True))
            newly = f", {len(before - open_)} newly decided" if before is not None else ""
            print(f"  {label:10s}: decisive {sure}/{judged} = {100 * sure / judged:.1f} %, A/A confident flags "
                  f"{aa[0]}{newly}")  # fmt: skip
            before = open_


if __name__ == "__main__":
    what, dirs = sys.argv[1], [Path(a) for a in sys.argv[2:]]
    {"prior": prior, "passes": passes}[what](dirs)

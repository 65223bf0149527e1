"""The report's history figures (``harness report --history DB``), drawn with matplotlib (Agg) from the frames of
``harness.history.view``; each returns PNG bytes.

* ``plot_regression_counts``: regressions per golden-vs-TOT comparison over time, stacked by kernel, one panel
  per GPU model (the AITER seed's table as a picture: 22, then 14, then 0 ...);
* ``plot_kernel_trend``: a kernel's index per run (its cases' time relative to each case's median), one line
  per stack and GPU model, with the change points of each line and the annotations.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness.history.render import text_or
from harness.report.plots import _png, short_name


def _label(when: object, extra: str = "") -> str:
    t = pd.Timestamp(when)
    return (t.strftime("%m-%d %H:%M") if not pd.isna(t) else "?") + (f"\n{extra}" if extra else "")


def plot_regression_counts(counts: pd.DataFrame) -> bytes:
    """Stacked bars: per comparison (x, in time order), its regressions by kernel; one panel per GPU model."""
    import matplotlib.pyplot as plt

    gpus = sorted(counts["gpu_name"].fillna("unknown GPU").unique())
    kernels = sorted(counts["kernel"].unique())
    colors = plt.get_cmap("tab20")
    fig, axes = plt.subplots(len(gpus), 1, figsize=(11, 3.6 * len(gpus)), squeeze=False)
    for ax, gpu in zip(axes[:, 0], gpus):
        g = counts[counts["gpu_name"].fillna("unknown GPU") == gpu]
        comps = g.drop_duplicates("comparison_id").sort_values(["when", "comparison_id"])
        x = np.arange(len(comps))
        pos = dict(zip(comps["comparison_id"], x))
        bottom = np.zeros(len(comps))
        for ki, k in enumerate(kernels):
            gk = g[g["kernel"] == k]
            if not len(gk) or not gk["regressions"].any():
                continue
            h = np.zeros(len(comps))
            h[[pos[c] for c in gk["comparison_id"]]] = gk["regressions"].to_numpy(dtype=float)
            ax.bar(x, h, bottom=bottom, color=colors(ki % 20), label=short_name(k), width=0.6)
            bottom += h
        for xi, total in zip(x, bottom):
            ax.text(xi, total, f"{int(total)}", ha="center", va="bottom", fontsize=8)
        labels = [
            _label(r.when, f"#{r.comparison_id} {text_or(r.golden_triton)}→{text_or(r.tot_triton)}")
            for r in comps.itertuples(index=False)
        ]
        ax.set_xticks(x)
        ax.set_xticklabels(labels, fontsize=7)
        ax.set_ylabel("regressions")
        ax.set_title(f"{gpu}: regressions per golden-vs-TOT comparison", fontsize=10)
        ax.set_ylim(0, max(bottom.max() * 1.15, 1))
        ax.grid(True, axis="y", alpha=0.25)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    return _png(fig)


def plot_kernel_trend(
    kernel: str, index: pd.DataFrame, steps: pd.DataFrame, notes: pd.DataFrame, experiment_tag: str = "experiment"
) -> bytes:
    """One line per (stack, GPU model): the kernel's index per run, runs in time order along x; hollow markers
    for runs tagged ``experiment``; a change point is a dashed line in its series' colour where the new level
    starts, with the step; an annotation is a grey dotted line where it falls between runs."""
    import matplotlib.pyplot as plt

    runs = index.drop_duplicates("run_id").sort_values(["run_at", "run_id"])
    pos = {r: i for i, r in enumerate(runs["run_id"])}
    times = pd.to_datetime(runs["run_at"]).to_numpy()
    fig, ax = plt.subplots(figsize=(11, 4.4))
    colors = plt.get_cmap("tab10")
    for si, ((env, gpu), g) in enumerate(index.groupby(["env_name", "gpu_name"], dropna=False, sort=True)):
        c = colors(si % 10)
        xs = g["run_id"].map(pos).to_numpy()
        label = f"{env} · {str(gpu).removeprefix('NVIDIA ')}"
        ax.plot(xs, g["index"], color=c, lw=1.1, alpha=0.8, label=label)
        exp = g["tags"].fillna("").str.split(",").map(lambda t: experiment_tag in t).to_numpy()
        ax.scatter(xs[~exp], g["index"].to_numpy()[~exp], color=c, s=22, zorder=3)
        ax.scatter(xs[exp], g["index"].to_numpy()[exp], facecolors="none", edgecolors=c, s=22, zorder=3)
        mine = steps[(steps["env_name"] == env) & (steps["gpu_name"] == gpu)] if len(steps) else steps
        for s in mine.itertuples(index=False):
            ax.axvline(pos[s.run_id] - 0.5, color=c, ls="--", lw=1)
            ax.text(
                pos[s.run_id] - 0.45,
                1.0,
                f"{s.step_pct:+.1f}%",
                color=c,
                fontsize=7,
                transform=ax.get_xaxis_transform(),
                va="top",
            )
    for a in notes.itertuples(index=False):
        x = np.searchsorted(times, np.datetime64(pd.Timestamp(a.at))) - 0.5
        if -0.5 < x < len(runs) - 0.5:
            ax.axvline(x, color="grey", ls=":", lw=1)
            ax.text(
                x + 0.05,
                0.02,
                a.text,
                rotation=90,
                fontsize=6.5,
                color="dimgrey",
                transform=ax.get_xaxis_transform(),
                va="bottom",
            )
    ax.set_xticks(range(len(runs)))
    ax.set_xticklabels(
        [_label(r.run_at, str(r.triton_version or "")) for r in runs.itertuples(index=False)],
        fontsize=6.5,
        rotation=60,
        ha="right",
    )
    ax.axhline(1.0, color="black", lw=0.5)
    ax.set_ylabel("time / case median (geo. mean)")
    ax.set_title(
        f"{short_name(kernel)}: time per run (hollow: experiments; dashed: change points; dotted: annotations)",
        fontsize=10,
    )
    ax.grid(True, axis="y", alpha=0.25)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))  # never over the points
    fig.tight_layout()
    return _png(fig)

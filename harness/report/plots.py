"""The report's figures, drawn with matplotlib (Agg, no display) from checked frames; each returns PNG bytes.

Sizes are the work a case does (its kernel's FLOPs, or bytes for a memory-bound kernel), so any kernel's cases
share the axes; a kernel's own plot (its SPEC's ``plot``: y against one parameter, a line per series) shows a
family the way its engineers read it (attention: TFLOPS vs sequence length per head dim).
"""

from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd

from harness.kernel_api.spec import config_label as _config_label
from harness.render.vocabulary import LOOKS
from harness.report.data import Run, params_frame, timed
from harness.report.peaks import kernel_ceiling
from harness.results.cells import joined
from harness.verdict.rule import Rule

#: plot colours of the verdicts a delta plot shows
VERDICT_COLORS = {
    v: LOOKS[v].color for v in ("regression", "failed_in_tot", "missing_in_tot", "improvement", "ok", "ignored")
}


def config_label(cfg: str) -> str:
    """A config JSON in short form (the contract's config_label: ``BM64 BN128 w4``); ``default`` when empty."""
    import json

    try:
        c = json.loads(cfg) if cfg else {}
    except ValueError:
        return cfg[:40]
    return _config_label(c) if isinstance(c, dict) and c else "default"


def short_name(kernel: str) -> str:
    return kernel.replace("batched_gemm_", "").replace(
        "a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant", "a8w8_prequant"
    )


def _png(fig) -> bytes:  # noqa: ANN001 - a matplotlib Figure
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return buf.getvalue()


def plot_delta(cmp_table: pd.DataFrame, rule: dict[str, float]) -> bytes:
    import matplotlib.pyplot as plt

    t = cmp_table[cmp_table["golden_us"].notna() & cmp_table["tot_us"].notna()].copy()
    t["ratio"] = t["tot_us"] / t["golden_us"]
    t["work"] = t["flops"] if "flops" in t.columns else np.nan
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.6), sharey=True)
    r = Rule.read(rule)  # the comparison's own rule, its defaults where it saved none
    rel, abs_us, floor = r.rel, r.abs_us, r.min_golden_us
    for ax, x, xlabel in ((axes[0], "work", "work (FLOPs)"), (axes[1], "golden_us", "golden time (µs)")):
        for verdict, color in VERDICT_COLORS.items():
            d = t[t["verdict"] == verdict]
            if len(d):
                ax.scatter(d[x], d["ratio"], s=18, c=color, label=f"{verdict} ({len(d)})", alpha=0.85, linewidths=0)
        ax.set_xscale("log")
        ax.set_xlabel(xlabel)
        ax.axhline(1.0, color="black", lw=0.6)
        ax.grid(True, which="both", alpha=0.25)
    if len(t):
        xs = np.geomspace(max(floor, t["golden_us"].min() * 0.8), t["golden_us"].max() * 1.2, 200)
        up, down = r.limits_pct(xs)  # the rule's own arithmetic, as a ratio
        axes[1].plot(xs, 1 + up / 100, color="#d62728", lw=1, ls="--", label="regression limit")
        axes[1].plot(xs, 1 + down / 100, color="#2ca02c", lw=1, ls="--", label="improvement limit")
        axes[1].axvspan(t["golden_us"].min() * 0.8, floor, color="#eeeeee", zorder=0, label=f"ignored (< {floor:g} µs)")
    axes[0].axhline(rel, color="#d62728", lw=0.8, ls=":", label=f"×{rel:g} (+{abs_us:g} µs not shown)")
    axes[0].set_ylabel("TOT / golden time")
    axes[0].legend(fontsize=8, loc="upper left")
    axes[1].legend(fontsize=8, loc="upper right")
    fig.suptitle("TOT vs golden per case (above 1: slower)")
    return _png(fig)


def plot_roofline(runs: list[Run], peaks: dict[str, float], gpu_label: str) -> bytes:
    """Achieved TFLOPS per GPU against FLOP per HBM byte, every kernel of every run, under the compute roofs of
    the peaks its rows name and the HBM roof; beside it, where multi-GPU kernels say what a rank sends over the
    links (their SPEC's ``link_bytes``) and the ceilings hold ``nvlink_gbs``, the same points against FLOP per
    NVLink byte under the NVLink roof. A multi-GPU case is one GPU's share: its FLOPs over its world size."""
    import matplotlib.pyplot as plt

    points = [(run, _rated(timed(run.df))) for run in runs]
    multi = [(run, d[d["gpus"].gt(1)]) for run, d in points] if peaks.get("nvlink_gbs") else []
    linked = [(run, d.assign(link=run.link_bytes(d))) for run, d in multi if len(d)]  # SPECs read for those alone
    linked = [(run, d[d["link"].gt(0)]) for run, d in linked if d["link"].gt(0).any()]
    fig, axes = plt.subplots(1, 2 if linked else 1, figsize=(16 if linked else 9, 5.5), squeeze=False)
    kernels = sorted({k for r in runs for k in r.df["kernel"].unique()})
    roofs = set().union(*(set(d.get("peak", pd.Series(dtype=str)).fillna("").astype(str)) for _, d in points))
    ax = axes[0, 0]
    xs = _points(ax, [(run, d, d["intensity"]) for run, d in points], kernels)
    bw = peaks.get("hbm_tbs") or 0.0
    _roofs(ax, peaks, roofs, xs, bw, f"HBM roof: {bw:g} TB/s", f"{bw:g} TB/s")
    ax.set_xlabel("arithmetic intensity (FLOP / HBM byte, one GPU)")
    ax.set_title(f"Roofline — {gpu_label or 'unknown GPU: no ceilings'}")
    if linked:
        ax = axes[0, 1]
        xs = _points(ax, [(run, d, d["flops"] / d["gpus"] / d["link"]) for run, d in linked], kernels)
        gbs = peaks["nvlink_gbs"]  # GB/s; / 1000: TB/s, as TFLOPS = TB/s x FLOP/byte
        _roofs(ax, peaks, roofs, xs, gbs / 1000.0, f"NVLink roof: {gbs:g} GB/s", f"{gbs:g} GB/s NVLink")
        ax.set_xlabel("FLOP / byte a GPU sends over NVLink (multi-GPU cases)")
        ax.set_title("NVLink roofline (world size > 1)")
    for ax in axes[0]:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_ylabel("achieved TFLOPS per GPU")
        ax.grid(True, which="both", alpha=0.25)
        ax.legend(fontsize=7, loc="upper left", ncol=2)
    return _png(fig)


def _rated(d: pd.DataFrame) -> pd.DataFrame:
    return d[np.isfinite(d["intensity"]) & (d["intensity"] > 0) & (d["tflops_gpu"] > 0)]


def _points(ax, series: list[tuple[Run, pd.DataFrame, pd.Series]], kernels: list[str]) -> np.ndarray:  # noqa: ANN001
    """Each run's points (x given per row, TFLOPS per GPU up), one colour per kernel and one marker per run; the
    x range for the roofs."""
    import matplotlib.pyplot as plt

    markers, colors = "os^Dv<>Pp*", plt.get_cmap("tab20")
    xmin, xmax = 0.1, 1e4
    for ri, (run, d, x) in enumerate(series):
        if len(d):
            xmin, xmax = min(xmin, x.min() / 2), max(xmax, x.max() * 2)
        for ki, k in enumerate(kernels):
            on = d["kernel"] == k
            if on.any():
                style = dict(s=22, marker=markers[ri % len(markers)], color=colors(ki % 20), alpha=0.8)
                ax.scatter(x[on], d.loc[on, "tflops_gpu"], label=f"{short_name(k)} · {run.label}", **style)
    return np.geomspace(xmin, xmax, 200)


def _roofs(
    ax,  # noqa: ANN001 - an Axes
    peaks: dict[str, float],
    wanted: set[str],
    xs: np.ndarray,
    bw: float | None,
    label: str,
    under: str,
) -> None:
    """A bandwidth roof (``bw`` TB/s, HBM or a link; none without it) and, under it, the compute roof of each peak
    the rows name (``wanted``); ``label`` names the bandwidth roof, ``under`` the bandwidth in the others'."""
    if not bw:
        return
    ax.plot(xs, bw * xs, lw=1.0, ls=":", color="black", label=label)
    for key in sorted({kernel_ceiling(p, peaks)[0] for p in wanted} - {"memory"}):
        peak = peaks.get(key)
        if peak:
            ax.plot(xs, np.minimum(peak, bw * xs), lw=1.2, ls="--", label=f"roof {key}: {peak:g} TFLOPS, {under}")


def _rate(dk: pd.DataFrame) -> tuple[str, str, str]:
    """(x column, y column, axis words) for one kernel's rows: bytes and GB/s for memory-bound kernels."""
    if "peak" in dk.columns and (dk["peak"].astype(str) == "memory").all() and dk["gbps"].notna().any():
        return "bytes", "gbps", "GB/s vs bytes moved"
    return "work", "tflops", "TFLOPS vs FLOPs"


def plot_scatter(df: pd.DataFrame) -> tuple[bytes, int]:
    """Speed against work per kernel panel, one color+marker per configuration; returns (png, n configs)."""
    import matplotlib.pyplot as plt

    d = timed(df)
    d = d[(d["tflops"] > 0) | (d["gbps"] > 0)]
    d["cfg"] = d["config"].fillna("").map(config_label) if "config" in d.columns else "default"
    ws = d["world_size"].fillna(1).astype(int) if "world_size" in d.columns else pd.Series(1, index=d.index)
    d = d.assign(_ws=ws)
    # one panel per kernel, and per world size where a kernel runs at several (the Iris seed's plots)
    panels = sorted({(k, w) for k, w in zip(d["kernel"], d["_ws"])})
    configs = sorted(d["cfg"].unique())
    n = max(len(panels), 1)
    fig, axes = plt.subplots(n, 1, figsize=(12, 4.2 * n), squeeze=False, gridspec_kw={"hspace": 0.45})
    palette = [plt.get_cmap("tab20")(i) for i in range(20)]
    markers = "os^DvP*Xph<>"
    style = {c: (palette[i % 20], markers[(i // 20) % len(markers)]) for i, c in enumerate(configs)}
    several = {k for k in d["kernel"].unique() if d.loc[d["kernel"] == k, "_ws"].nunique() > 1}
    for ax, (k, w) in zip(axes[:, 0], panels):
        label = f"{k} · world size {w}" if k in several else k
        _scatter_panel(ax, d[(d["kernel"] == k) & (d["_ws"] == w)], label, style)
    return _png(fig), len(configs)


def _scatter_panel(ax, dk: pd.DataFrame, kernel: str, style: dict) -> None:  # noqa: ANN001 - an Axes
    x, y, words = _rate(dk)
    ncfg = max(dk["cfg"].nunique() - 1, 1)
    for j, (c, g) in enumerate(dk.groupby("cfg")):
        color, marker = style[c]
        jitter = 10 ** ((j / ncfg - 0.5) * 0.12)  # spread configs of one shape sideways (±7 %), in order
        ax.scatter(g[x] * jitter, g[y], s=16, color=color, marker=marker, alpha=0.8, linewidths=0, label=c)
    ax.set_xscale("log")
    ax.set_yscale("log")
    title = f"{short_name(kernel)}: {words}, {len(dk)} points, {dk['cfg'].nunique()} configurations"
    ax.set_title(title + " (configs of one shape side by side)", fontsize=10)
    ax.set_xlabel("FLOPs" if x == "work" else "bytes moved")
    ax.set_ylabel("TFLOPS" if y == "tflops" else "GB/s")
    ax.grid(True, which="both", alpha=0.25)
    ncol = max(1, math.ceil(dk["cfg"].nunique() / 22))
    ax.legend(fontsize=6, loc="center left", bbox_to_anchor=(1.01, 0.5), ncol=ncol, title="config", title_fontsize=7)


def plot_family(runs: list[Run], kernel: str, plot: dict, peaks: dict[str, float]) -> bytes | None:
    """One kernel as its SPEC's ``plot`` asks: ``y`` (TFLOPS, GB/s or µs) against parameter ``x``, one colour per
    value of the ``series`` parameters and one line style per run (golden dashed, TOT solid); memory-bound kernels
    get the HBM bandwidth as a line. None: no timed case to draw."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4.8))
    colors, styles, drawn = plt.get_cmap("tab10"), ["--", "-", ":", "-."], 0
    series_names: list[str] = []
    y = plot.get("y") or ""
    for ri, run in enumerate(runs):
        lines = _family_lines(run, kernel, plot)
        for label, (yname, g) in lines.items():
            y = y or yname
            if label not in series_names:
                series_names.append(label)
            c = colors(series_names.index(label) % 10)
            ax.plot(
                g.index,
                g.values,
                marker="o",
                ms=3.5,
                lw=1.2,
                ls=styles[ri % 4],
                color=c,
                label=f"{label} · {run.label}",
            )
            drawn += 1
    if not drawn:
        plt.close(fig)
        return None
    if y == "gbps" and peaks.get("hbm_tbs"):
        ax.axhline(peaks["hbm_tbs"] * 1000, color="black", ls=":", lw=1, label=f"HBM {peaks['hbm_tbs']:g} TB/s")
    ax.set_xscale("log", base=2)
    ax.set_xlabel(plot["x"])
    ax.set_ylabel({"tflops": "TFLOPS", "gbps": "GB/s", "time_us": "µs"}.get(y, y))
    ax.set_title(f"{short_name(kernel)}: {ax.get_ylabel()} vs {plot['x']}")
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=7, ncol=2)
    return _png(fig)


def _family_lines(run: Run, kernel: str, plot: dict) -> dict[str, tuple[str, pd.Series]]:
    """{series label: (y column, y by x)} of one run's timed cases of ``kernel`` (several configs or dtypes at one
    x: the best)."""
    d = timed(run.df[run.df["kernel"] == kernel])
    p = params_frame(d)
    x = plot.get("x")
    if d.empty or x not in p.columns:
        return {}
    series = [s for s in plot.get("series") or [] if s in p.columns]
    memory = (d.get("peak", pd.Series(dtype=str)).astype(str) == "memory").all()
    y = plot.get("y") or ("gbps" if memory else "tflops")
    d = d.assign(_x=p[x].astype(float), **{f"_p_{s}": p[s] for s in series})
    groups = d.groupby([f"_p_{s}" for s in series], sort=True) if series else [((), d)]  # M=1024 before 4096
    out = {}
    for key, g in groups:
        values = key if isinstance(key, tuple) else (key,)
        label = " ".join(f"{s}={v}" for s, v in zip(series, values)) if series else kernel
        out[label] = (y, g.groupby("_x")[y].max())
    return out


def plot_scaling(d: pd.DataFrame, kernel: str) -> bytes | None:
    """A multi-GPU kernel across world sizes, by its parameters: **strong** scaling (the same total problem on more
    GPUs: speed-up over one GPU) and **weak** scaling (the same work per GPU: time stays flat when it scales).
    ``d``: the kernel's timed rows; None when it ran at one world size only."""
    import matplotlib.pyplot as plt

    d = timed(d)
    if d.empty or "world_size" not in d.columns or d["world_size"].nunique() < 2:
        return None
    p = params_frame(d)
    ws_param = next((c for c in p.columns if (p[c] == d["world_size"]).all() and c != "seed"), None)
    shape = [c for c in p.columns if c not in (ws_param, "seed")]
    d = d.assign(_ws=d["world_size"].astype(int), _shape=joined(p[shape]) if shape else "")
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 4.6))
    for shape_key, g in d.groupby("_shape"):
        g = g.groupby("_ws")["time_us"].min()  # the best config at each world size
        if 1 in g.index:
            ax1.plot(g.index, g[1] / g.values, marker="o", ms=3, lw=1, label=str(shape_key))
    d = d.assign(_per_gpu=(d["flops"] / d["_ws"]).round(-3))
    for work, g in d.groupby("_per_gpu"):
        g = g.groupby("_ws")["time_us"].min()
        if len(g) > 1:
            ax2.plot(g.index, g.values, marker="o", ms=3, lw=1, label=f"{work:.3g} FLOPs/GPU")
    top = d["_ws"].max()
    ax1.plot([1, top], [1, top], color="black", ls=":", lw=1, label="ideal")
    ax1.set(xlabel="GPUs", ylabel="speed-up over 1 GPU", title=f"{short_name(kernel)}: strong scaling")
    ax2.set(xlabel="GPUs", ylabel="µs (flat = ideal)", title=f"{short_name(kernel)}: weak scaling")
    for ax in (ax1, ax2):
        ax.set_xscale("log", base=2)
        ax.grid(True, which="both", alpha=0.25)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=6, ncol=2)
    if len(ax2.lines) == 0:  # weak scaling needs the same work per GPU at two world sizes
        ax2.text(0.5, 0.5, "no shape keeps its work per GPU\nacross world sizes", ha="center", va="center",
                 transform=ax2.transAxes, fontsize=8)  # fmt: skip
    return _png(fig)


def best_configs(df: pd.DataFrame) -> pd.DataFrame:
    """For every kernel and shape that ran under several configs (a sweep), the fastest config and how far the
    slowest ok one was: the tile guidance a sweep answers."""
    d = timed(df)
    if "config" not in d.columns or d.empty:
        return pd.DataFrame()
    p = params_frame(d)
    shape = joined(p.drop(columns=[c for c in ("seed",) if c in p.columns]))
    d = d.assign(_shape=shape, cfg=d["config"].fillna("").map(config_label))
    rows = []
    for (k, sh), g in d.groupby(["kernel", "_shape"]):
        if g["cfg"].nunique() < 2:
            continue
        best = g.loc[g["time_us"].idxmin()]
        rows.append({"kernel": k, "shape": sh, "configs": g["cfg"].nunique(), "best_us": best["time_us"],
                     "worst_us": g["time_us"].max(), "best config": best["cfg"]})  # fmt: skip
    return pd.DataFrame(rows)


def plot_dispatch(table: pd.DataFrame) -> bytes:
    import matplotlib.pyplot as plt

    cases = table.drop_duplicates(["run", "kernel", "case_id"]).head(40)
    fig, ax = plt.subplots(figsize=(11, 0.32 * len(cases) + 1.5))
    names = list(dict.fromkeys(table["dispatch"]))
    colors = plt.get_cmap("tab10")
    for yi, rec in enumerate(cases.itertuples()):
        left = 0.0
        sub = table[(table["run"] == rec.run) & (table["kernel"] == rec.kernel) & (table["case_id"] == rec.case_id)]
        for s in sub.itertuples():
            ax.barh(yi, s.us, left=left, color=colors(names.index(s.dispatch) % 10))
            left += s.us
    ax.set_yticks(range(len(cases)))
    ax.set_yticklabels([f"{short_name(r.kernel)} {r.case_id} · {r.run}" for r in cases.itertuples()], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("µs per dispatch (stacked: the op's total)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=colors(i % 10)) for i in range(len(names))]
    ax.legend(handles, names, fontsize=7, loc="lower right")
    return _png(fig)


def plot_vendor(table: pd.DataFrame) -> bytes:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 0.3 * len(table) + 1.5))
    y = np.arange(len(table))
    ax.barh(y, table["ratio"], color=["#d62728" if r > 1 else "#2ca02c" for r in table["ratio"]])
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set_yticks(y)
    ax.set_yticklabels(
        [f"{short_name(k)} {c} · {r}" for k, c, r in zip(table["kernel"], table["case_id"], table["run"])], fontsize=7
    )
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("our time / vendor library time (below 1: faster than the vendor path)")
    return _png(fig)

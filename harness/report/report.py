"""Report stage: results files (+ a comparison) → one self-contained HTML page with plots and sortable tables.

``write_report`` makes, with matplotlib (Agg, no display):

* ``delta.png`` — TOT/golden time ratio per case against B·M·N·K and against the golden time, colored by verdict,
  with the rule's limit drawn (``rel + abs/golden`` is a curve in the second panel);
* ``roofline.png`` — achieved TFLOPS against arithmetic intensity, with compute ceilings per dtype and the
  memory-bandwidth roof for the GPU named in the env metadata (datasheet peaks, overridable by measured ones);
* ``scatter.png`` — TFLOPS against B·M·N·K, log–log, one color+marker per kernel configuration, one panel per
  kernel (config sweeps: ``suites/sweep_sm90.yaml`` makes 896 points over 72 configurations);
* ``dispatch.png`` — the per-dispatch split of ops that launch several kernels (split-K + reduce, quantize + GEMM);
* ``vendor.png`` — time relative to the vendor library, where a baseline file is given.

index.html embeds every PNG (works with no network and when moved alone) and links the PNG files too.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.render.envinfo import ENV_ROWS, get
from harness.errors import HarnessError
from harness.fsutil import ensure_parent, write_bytes, write_text

#: datasheet dense peaks: TFLOPS per operand type, and HBM TB/s. Sparse figures are not used.
GPU_PEAKS: dict[str, dict[str, float]] = {
    "H100 SXM": {"bf16": 989.0, "fp16": 989.0, "fp8": 1979.0, "int8": 1979.0, "fp32": 67.0, "hbm_tbs": 3.35},
    "H100 PCIe": {"bf16": 756.0, "fp16": 756.0, "fp8": 1513.0, "int8": 1513.0, "fp32": 51.0, "hbm_tbs": 2.0},
    "H200": {"bf16": 989.0, "fp16": 989.0, "fp8": 1979.0, "int8": 1979.0, "fp32": 67.0, "hbm_tbs": 4.8},
    "A100": {"bf16": 312.0, "fp16": 312.0, "int8": 624.0, "fp32": 19.5, "hbm_tbs": 2.04},
    "MI300X": {"bf16": 1307.0, "fp16": 1307.0, "fp8": 2615.0, "int8": 2615.0, "fp32": 163.4, "hbm_tbs": 5.3},
    "MI325X": {"bf16": 1307.0, "fp16": 1307.0, "fp8": 2615.0, "int8": 2615.0, "fp32": 163.4, "hbm_tbs": 6.0},
    "MI355X": {"bf16": 2500.0, "fp16": 2500.0, "fp8": 5000.0, "int8": 5000.0, "fp4": 10000.0, "hbm_tbs": 8.0},
}
#: which GPU_PEAKS entry a device name maps to (first match wins)
GPU_NAMES = (
    (r"H100.*PCIe", "H100 PCIe"),
    (r"H100", "H100 SXM"),
    (r"H200", "H200"),
    (r"A100", "A100"),
    (r"MI300X|gfx942", "MI300X"),
    (r"MI325X", "MI325X"),
    (r"MI355X|MI350X|gfx950", "MI355X"),
)
#: the operand type whose ceiling bounds each kernel (fp4 on Hopper runs through bf16 MMA: falls back)
KERNEL_PEAK = {
    "batched_gemm_bf16": "bf16",
    "batched_gemm_a8w8": "int8",
    "batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant": "fp8",
    "batched_gemm_a16wfp4": "fp4",
    "batched_gemm_afp4wfp4": "fp4",
}
VERDICT_COLORS = {
    "regression": "#d62728",
    "failed_in_tot": "#8c1c13",
    "missing_in_tot": "#ff7f0e",
    "improvement": "#2ca02c",
    "ok": "#7f7f7f",
    "ignored": "#c7c7c7",
}


# ---------------------------------------------------------------------------------------------- pure helpers


def peaks_for(gpu_name: str, override: dict[str, float] | None = None) -> tuple[str, dict[str, float]]:
    """(label, peaks) for a device name; ``override`` (measured ceilings) replaces datasheet values."""
    label = next((key for pat, key in GPU_NAMES if re.search(pat, gpu_name or "")), "")
    peaks = dict(GPU_PEAKS.get(label, {}))
    if override:
        peaks.update({k: float(v) for k, v in override.items()})
        label = (label + " (measured ceilings)").strip()
    return label, peaks


def kernel_ceiling(kernel: str, dtype: str, peaks: dict[str, float]) -> tuple[str, float | None]:
    want = KERNEL_PEAK.get(kernel) or {"int8": "int8", "fp8": "fp8", "fp16": "fp16"}.get(dtype, "bf16")
    for key in (want, "bf16"):  # a missing native path (fp4 on Hopper) is bounded by the bf16 MMA it runs on
        if key in peaks:
            return key, peaks[key]
    return want, None


def config_label(cfg: str) -> str:
    """A short label of a config JSON: BM×BN×BK, warps, stages, GROUP_M, split-K."""
    try:
        c = json.loads(cfg) if cfg else {}
    except ValueError:
        return cfg[:40]
    if not isinstance(c, dict) or not c:
        return "default"
    dims = [str(c[k]) for k in ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K") if k in c]
    parts = ["x".join(dims)] if dims else []
    for key, tag in (("num_warps", "w"), ("num_stages", "s"), ("GROUP_SIZE_M", "g")):
        if key in c:
            parts.append(f"{tag}{c[key]}")
    if int(c.get("NUM_KSPLIT") or 1) > 1:
        parts.append(f"k{c['NUM_KSPLIT']}")
    return " ".join(parts) or "default"


#: what a --ceilings file may set: the datasheet keys
CEILING_KEYS = sorted({k for peaks in GPU_PEAKS.values() for k in peaks})


def load_ceilings(path: Path) -> dict[str, float]:
    """A --ceilings YAML: a mapping of datasheet keys (bf16, fp8, ..., hbm_tbs) to positive numbers."""
    import yaml

    from harness.errors import unknown_key

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise HarnessError(f"{path}: no such ceilings file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise HarnessError(f"{path}: cannot read the ceilings ({err})") from None
    except yaml.YAMLError as err:
        raise HarnessError(f"{path}: not YAML: {' '.join(str(err).split())}") from None
    if not isinstance(data, dict) or not data:
        raise HarnessError(f"{path}: expected a mapping like {{bf16: 800, hbm_tbs: 3.0}}, got {type(data).__name__}")
    out = {}
    for key, value in data.items():
        if key not in CEILING_KEYS:
            raise unknown_key(str(path), str(key), CEILING_KEYS, "ceiling")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
            raise HarnessError(
                f"{path}: {key}: expected a positive number (TFLOPS, or TB/s for hbm_tbs), got {value!r}"
            )
        out[str(key)] = float(value)
    return out


def require_matplotlib() -> None:
    """The report draws with matplotlib, an optional dependency: say how to get it instead of a traceback."""
    try:
        import matplotlib
    except ImportError:
        raise HarnessError("harness report needs matplotlib: pip install 'harness[report]' (or matplotlib)") from None
    matplotlib.use("Agg")


def parse_vendor(path: Path) -> pd.DataFrame:
    """Vendor-baseline times from benchmarks/vendor_baseline.py: its markdown table or a CSV with kernel, B, M, N,
    K, torch_path, torch_us."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise HarnessError(f"{path}: no such vendor baseline file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise HarnessError(f"{path}: cannot read the vendor baseline ({err})") from None
    if path.suffix == ".md":
        rows = []
        for line in text.splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) >= 6 and re.fullmatch(r"\d+×\d+×\d+×\d+", cells[1]):
                b, m, n, k = (int(x) for x in cells[1].split("×"))
                rows.append(
                    {
                        "kernel": cells[0],
                        "B": b,
                        "M": m,
                        "N": n,
                        "K": k,
                        "torch_path": cells[3],
                        "torch_us": float(cells[4]),
                    }
                )
        if not rows:
            raise HarnessError(f"{path}: no vendor table rows (| kernel | B×M×N×K | ours µs | torch path | torch µs |)")
        return pd.DataFrame(rows)
    try:
        df = pd.read_csv(io.StringIO(text))
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise HarnessError(f"{path}: not a vendor CSV ({' '.join(str(err).split())})") from None
    need = {"kernel", "B", "M", "N", "K", "torch_us"}
    if not need <= set(df.columns):
        raise HarnessError(f"{path}: vendor CSV needs columns {', '.join(sorted(need))}")
    return df


# ---------------------------------------------------------------------------------------------- data


@dataclass
class Run:
    label: str
    path: Path
    df: pd.DataFrame
    env: dict[str, Any] = field(default_factory=dict)


def load_runs(paths: list[Path]) -> list[Run]:
    from harness.results.format import load_results

    runs = []
    for p in paths:
        df = load_results(p)
        env = df.attrs["env"]  # the sidecar, validated by the loader
        label = str(env.get("env_name") or p.stem)
        if any(r.label == label for r in runs):
            label = p.stem
        runs.append(Run(label, p, df, env))
    return runs


def _ok(df: pd.DataFrame) -> pd.DataFrame:
    d = df[df["status"].isin(["ok", "unstable"]) & df["time_us"].notna()].copy()
    d["work"] = d["B"].astype(float) * d["M"] * d["N"] * d["K"]
    if "tflops" not in d.columns:
        d["tflops"] = np.nan
    if "gbps" not in d.columns:
        d["gbps"] = np.nan
    d["intensity"] = d["tflops"] * 1e12 / (d["gbps"] * 1e9)
    return d


# ---------------------------------------------------------------------------------------------- plots


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
    t["work"] = t["B"].astype(float) * t["M"] * t["N"] * t["K"]
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.6), sharey=True)
    rel, abs_us, floor = rule.get("rel", 1.005), rule.get("abs_us", 0.5), rule.get("min_golden_us", 4.0)
    for ax, x, xlabel in ((axes[0], "work", "B·M·N·K"), (axes[1], "golden_us", "golden time (µs)")):
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
        axes[1].plot(xs, rel + abs_us / xs, color="#d62728", lw=1, ls="--", label="regression limit")
        axes[1].plot(xs, 1 / (rel + abs_us / xs), color="#2ca02c", lw=1, ls="--", label="improvement limit")
        axes[1].axvspan(t["golden_us"].min() * 0.8, floor, color="#eeeeee", zorder=0, label=f"ignored (< {floor:g} µs)")
    axes[0].axhline(rel, color="#d62728", lw=0.8, ls=":", label=f"×{rel:g} (+{abs_us:g} µs not shown)")
    axes[0].set_ylabel("TOT / golden time")
    axes[0].legend(fontsize=8, loc="upper left")
    axes[1].legend(fontsize=8, loc="upper right")
    fig.suptitle("TOT vs golden per case (above 1: slower)")
    return _png(fig)


def plot_roofline(runs: list[Run], peaks: dict[str, float], gpu_label: str) -> bytes:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5.5))
    markers = "os^Dv<>Pp*"
    kernels = sorted({k for r in runs for k in r.df["kernel"].unique()})
    colors = plt.get_cmap("tab10")
    xmin, xmax = 1.0, 1e4
    for ri, run in enumerate(runs):
        d = _ok(run.df)
        d = d[np.isfinite(d["intensity"]) & (d["intensity"] > 0) & (d["tflops"] > 0)]
        if len(d):
            xmin, xmax = min(xmin, d["intensity"].min() / 2), max(xmax, d["intensity"].max() * 2)
        for ki, k in enumerate(kernels):
            dk = d[d["kernel"] == k]
            if len(dk):
                ax.scatter(
                    dk["intensity"],
                    dk["tflops"],
                    s=22,
                    marker=markers[ri % len(markers)],
                    color=colors(ki % 10),
                    alpha=0.8,
                    label=f"{_short(k)} · {run.label}",
                )
    bw = peaks.get("hbm_tbs")
    xs = np.geomspace(xmin, xmax, 200)
    if bw:
        for key in sorted({kernel_ceiling(k, "", peaks)[0] for k in kernels}):
            peak = peaks.get(key)
            if peak:
                ax.plot(
                    xs, np.minimum(peak, bw * xs), lw=1.2, ls="--", label=f"roof {key}: {peak:g} TFLOPS, {bw:g} TB/s"
                )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP / byte moved)")
    ax.set_ylabel("achieved TFLOPS")
    ax.set_title(f"Roofline — {gpu_label or 'unknown GPU: no ceilings'}")
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=7, loc="upper left", ncol=2)
    return _png(fig)


def _short(kernel: str) -> str:
    return kernel.replace("batched_gemm_", "").replace(
        "a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant", "a8w8_prequant"
    )


def plot_scatter(df: pd.DataFrame) -> tuple[bytes, int]:
    """TFLOPS vs B·M·N·K per kernel panel, one color+marker per configuration; returns (png, n configs)."""
    import matplotlib.pyplot as plt

    d = _ok(df)
    d = d[d["tflops"] > 0]
    d["cfg"] = d["config"].fillna("").map(config_label) if "config" in d.columns else "default"
    kernels = sorted(d["kernel"].unique())
    configs = sorted(d["cfg"].unique())
    n = max(len(kernels), 1)
    fig, axes = plt.subplots(n, 1, figsize=(12, 4.2 * n), squeeze=False, gridspec_kw={"hspace": 0.45})
    palette = [plt.get_cmap("tab20")(i) for i in range(20)]
    markers = "os^DvP*Xph<>"
    style = {c: (palette[i % 20], markers[(i // 20) % len(markers)]) for i, c in enumerate(configs)}
    for ax, k in zip(axes[:, 0], kernels):
        dk = d[d["kernel"] == k]
        ncfg = max(dk["cfg"].nunique() - 1, 1)
        for j, (c, g) in enumerate(dk.groupby("cfg")):
            color, marker = style[c]
            jitter = 10 ** ((j / ncfg - 0.5) * 0.12)  # spread configs of one shape sideways (±7 %), in order
            ax.scatter(
                g["work"] * jitter, g["tflops"], s=16, color=color, marker=marker, alpha=0.8, linewidths=0, label=c
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(
            f"{_short(k)}: {len(dk)} points, {dk['cfg'].nunique()} configurations (configs of one shape side by side)",
            fontsize=10,
        )
        ax.set_xlabel("B·M·N·K")
        ax.set_ylabel("TFLOPS")
        ax.grid(True, which="both", alpha=0.25)
        ncol = max(1, math.ceil(dk["cfg"].nunique() / 22))
        ax.legend(
            fontsize=6,
            loc="center left",
            bbox_to_anchor=(1.01, 0.5),
            ncol=ncol,
            title="BM×BN×BK w s g",
            title_fontsize=7,
        )
    return _png(fig), len(configs)


def dispatch_table(runs: list[Run]) -> pd.DataFrame:
    rows = []
    for run in runs:
        if "dispatch_us" not in run.df.columns:
            continue
        for rec in run.df[run.df["dispatch_us"].astype(str).str.startswith("{")].to_dict("records"):
            try:
                parts = json.loads(rec["dispatch_us"])
            except ValueError:
                continue
            if len(parts) < 2:
                continue
            total = sum(parts.values())
            for name, us in parts.items():
                rows.append(
                    {
                        "run": run.label,
                        "kernel": rec["kernel"],
                        "case_id": rec["case_id"],
                        "dispatch": name,
                        "us": us,
                        "share": us / total if total else np.nan,
                        "case_us": rec["time_us"],
                    }
                )
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
    ax.set_yticklabels([f"{_short(r.kernel)} {r.case_id} · {r.run}" for r in cases.itertuples()], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("µs per dispatch (stacked: the op's total)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=colors(i % 10)) for i in range(len(names))]
    ax.legend(handles, names, fontsize=7, loc="lower right")
    return _png(fig)


def vendor_table(runs: list[Run], vendor: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for run in runs:
        d = _ok(run.df)
        m = d.merge(vendor, on=["kernel", "B", "M", "N", "K"], how="inner")
        for rec in m.to_dict("records"):
            rows.append(
                {
                    "run": run.label,
                    "kernel": rec["kernel"],
                    "case_id": rec["case_id"],
                    "ours_us": rec["time_us"],
                    "vendor": rec.get("torch_path", ""),
                    "vendor_us": rec["torch_us"],
                    "ratio": rec["time_us"] / rec["torch_us"],
                }
            )
    return pd.DataFrame(rows)


def plot_vendor(table: pd.DataFrame) -> bytes:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 0.3 * len(table) + 1.5))
    y = np.arange(len(table))
    ax.barh(y, table["ratio"], color=["#d62728" if r > 1 else "#2ca02c" for r in table["ratio"]])
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set_yticks(y)
    ax.set_yticklabels(
        [f"{_short(k)} {c} · {r}" for k, c, r in zip(table["kernel"], table["case_id"], table["run"])], fontsize=7
    )
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("our time / vendor library time (below 1: faster than the vendor path)")
    return _png(fig)


# ---------------------------------------------------------------------------------------------- HTML

_CSS = """body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:1400px;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{margin-top:1.6em;border-bottom:1px solid #ddd}img{max-width:100%;border:1px solid #eee}
table{border-collapse:collapse;margin:.5em 0;font-size:12.5px}th,td{border:1px solid #ddd;padding:2px 7px}
th{background:#f4f4f4;position:sticky;top:0}table.sortable th{cursor:pointer;user-select:none}
th.asc::after{content:" ▲"}th.desc::after{content:" ▼"}td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.regression td{background:#fde2e1}tr.improvement td{background:#e3f4e4}tr.failed_in_tot td{background:#f6c6c3}
tr.missing_in_tot td,tr.skipped_in_tot td{background:#fff3cd}
.note{color:#666;font-size:12px}nav a{margin-right:1em}"""

_JS = """document.querySelectorAll('table.sortable').forEach(function(t){
 t.querySelectorAll('th').forEach(function(th,i){th.addEventListener('click',function(){
  var asc=!th.classList.contains('asc');t.querySelectorAll('th').forEach(function(h){h.classList.remove('asc','desc')});
  th.classList.add(asc?'asc':'desc');var body=t.tBodies[0];var rows=Array.prototype.slice.call(body.rows);
  rows.sort(function(a,b){var x=a.cells[i].getAttribute('data-v')||a.cells[i].textContent,
   y=b.cells[i].getAttribute('data-v')||b.cells[i].textContent;var nx=parseFloat(x),ny=parseFloat(y);
   var c=(!isNaN(nx)&&!isNaN(ny))?nx-ny:x.localeCompare(y);return asc?c:-c});
  rows.forEach(function(r){body.appendChild(r)});});});});"""


def plain(v: float) -> str:
    """A number as a reader writes it, never in exponent notation: thousands grouped, at least one decimal and
    about four significant digits, trailing zeros dropped (58,490.1; 12.35; 0.5; 0.0001235); a whole number
    without decimals."""
    v = float(v)
    if v == int(v) and abs(v) < 1e15:
        return f"{int(v):,}"
    decimals = min(max(3 - math.floor(math.log10(abs(v))), 1), 15)
    text = f"{v:,.{decimals}f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


def _cell(v: Any) -> str:
    if isinstance(v, (float, np.floating)):
        if not np.isfinite(v):
            return '<td class="num" data-v="">—</td>'
        return f'<td class="num" data-v="{float(v)!r}">{plain(v)}</td>'
    if isinstance(v, (int, np.integer)):
        return f'<td class="num" data-v="{int(v)}">{int(v):,}</td>'
    return f"<td>{html.escape(str(v))}</td>"


def html_table(df: pd.DataFrame, cls: str = "sortable", row_class: str | None = None, table_id: str = "") -> str:
    idattr = f' id="{table_id}"' if table_id else ""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    body = []
    for rec in df.itertuples(index=False, name=None):
        rc = ""
        if row_class and row_class in df.columns:
            rc = f' class="{html.escape(str(rec[list(df.columns).index(row_class)]))}"'
        body.append(f"<tr{rc}>" + "".join(_cell(v) for v in rec) + "</tr>")
    return f'<table class="{cls}"{idattr}><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _img(name: str, data: bytes, alt: str) -> str:
    b64 = base64.b64encode(data).decode()
    return f'<p><a href="{name}"><img src="data:image/png;base64,{b64}" alt="{html.escape(alt)}"></a></p>'


def env_table(runs: list[Run]) -> pd.DataFrame:
    rows = []
    for label, path in ENV_ROWS:
        vals = [get(r.env, path) for r in runs]
        if any(vals):
            rows.append([label, *vals])
    return pd.DataFrame(rows, columns=["", *[r.label for r in runs]])


def write_report(
    results: list[Path],
    out: Path,
    compare_csv: Path | None = None,
    vendor: Path | None = None,
    ceilings: Path | None = None,
    explain_dir: str = "",
    title: str = "",
) -> Path:
    """Write ``out/index.html`` and the PNGs; returns the index path. Every input is read and checked before
    anything is drawn or written."""
    if not results and compare_csv is None:
        raise HarnessError("give at least one results CSV or --compare COMPARE.csv")
    require_matplotlib()
    override = load_ceilings(ceilings) if ceilings is not None else None
    vendor_df = parse_vendor(vendor) if vendor is not None else None
    cmp = None
    if compare_csv is not None:
        from harness.compare.compare import load_compare, locate_results

        cmp = load_compare(compare_csv)
        if not results:
            results = [p for p in (locate_results(n, compare_csv) for n in (cmp.golden_path, cmp.tot_path)) if p]
    runs = load_runs(results)
    gpu_name = next((get(r.env, ("gpu", "name")) for r in runs if get(r.env, ("gpu", "name"))), "")
    gpu_label, peaks = peaks_for(gpu_name, override)

    ensure_parent(out / "index.html")  # an unwritable --out is one line, before anything is drawn
    sections: list[str] = []
    nav: list[tuple[str, str]] = []

    def section(anchor: str, heading: str, body: str, link: str = "") -> None:
        """``link``: the navigation's text, short but naming the section (which run's scatter or tables)."""
        nav.append((anchor, link or heading))
        sections.append(f'<h2 id="{anchor}">{html.escape(heading)}</h2>\n{body}')

    if cmp is not None:
        counts = cmp.counts()
        summary = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
        png = plot_delta(cmp.table, cmp.meta()["rule"])
        write_bytes(out / "delta.png", png)
        t = cmp.table.copy()
        t["ratio"] = t["tot_us"] / t["golden_us"]
        cols = [
            c
            for c in (
                "verdict",
                "kernel",
                "case_id",
                "B",
                "M",
                "N",
                "K",
                "golden_us",
                "tot_us",
                "delta_pct",
                "limit_us",
                "ratio",
                "note",
            )
            if c in t.columns
        ]
        from harness.compare.compare import worst_first

        t = t.iloc[worst_first(t)][cols]
        body = f"<p>{html.escape(summary)} over {len(t)} cases. Rule: {html.escape(cmp.rule.describe())}.</p>"
        if explain_dir:
            body += (
                f'<p>Why each regression happened: <a href="{html.escape(explain_dir)}">compiled-kernel diffs</a>.</p>'
            )
        body += _img("delta.png", png, "TOT/golden ratio per case")
        body += html_table(t, row_class="verdict", table_id="compare-table")
        section("compare", "Golden vs TOT", body)

    if gpu_label:
        note = f"ceilings of the {html.escape(gpu_label)}: " + ", ".join(f"{k} {v:g}" for k, v in peaks.items())
    else:
        note = f"no datasheet peaks for {html.escape(gpu_name or 'this GPU')}: pass --ceilings FILE"
    png = plot_roofline(runs, peaks, gpu_label)
    write_bytes(out / "roofline.png", png)
    section(
        "roofline",
        "Roofline",
        f'<p class="note">{note}; TFLOPS and bytes from each kernel\'s flops/bytes.</p>'
        + _img("roofline.png", png, "roofline"),
    )

    for i, run in enumerate(runs):
        png, ncfg = plot_scatter(run.df)
        name = f"scatter-{i}.png"
        write_bytes(out / name, png)
        section(
            f"scatter-{i}",
            f"TFLOPS vs size by configuration — {run.label}",
            f"<p>{ncfg} configurations.</p>" + _img(name, png, "scatter"),
            link=f"TFLOPS scatter: {run.label}",
        )

    disp = dispatch_table(runs)
    if len(disp):
        png = plot_dispatch(disp)
        write_bytes(out / "dispatch.png", png)
        section("dispatch", "Per-dispatch breakdown", _img("dispatch.png", png, "dispatch") + html_table(disp))
    else:
        section(
            "dispatch",
            "Per-dispatch breakdown",
            "<p>No case launched more than one kernel (no split-K or separate quantize).</p>",
        )

    if vendor_df is not None:
        vt = vendor_table(runs, vendor_df)
        if len(vt):
            png = plot_vendor(vt)
            write_bytes(out / "vendor.png", png)
            section("vendor", "Relative to the vendor library", _img("vendor.png", png, "vendor") + html_table(vt))
        else:
            section("vendor", "Relative to the vendor library", f"<p>{html.escape(str(vendor))}: no case matches.</p>")

    for i, run in enumerate(runs):
        d = run.df.copy()
        if "config" in d.columns:
            d["config"] = d["config"].fillna("").map(config_label)
        cols = [
            c
            for c in (
                "kernel",
                "case_id",
                "B",
                "M",
                "N",
                "K",
                "dtype",
                "time_us",
                "status",
                "spread_pct",
                "tflops",
                "gbps",
                "compile_s",
                "sm_clock_mhz",
                "throttle",
                "config",
            )
            if c in d.columns
        ]
        body = "".join(
            f"<h3>{html.escape(k)}</h3>" + html_table(g[cols].drop(columns=["kernel"]))
            for k, g in d.groupby("kernel", sort=True)
        )
        section(
            f"tables-{i}-{re.sub(r'[^a-z0-9]+', '-', run.label.lower())}",
            f"Per-kernel tables — {run.label}",
            body,
            link=f"Tables: {run.label}",
        )

    section("env", "Environments", html_table(env_table(runs), cls="env"))

    title = title or ("Kernel report: " + " vs ".join(r.label for r in runs))
    navhtml = "<nav>" + "".join(f'<a href="#{a}">{html.escape(text)}</a>' for a, text in nav) + "</nav>"
    page = (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1>"
        f'<p class="note">{len(runs)} results files: {html.escape(", ".join(str(r.path) for r in runs))}</p>'
        f"{navhtml}{''.join(sections)}<script>{_JS}</script></body></html>"
    )
    index = out / "index.html"
    write_text(index, page)
    return index

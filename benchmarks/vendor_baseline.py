"""Each kernel against the best torch paths for the same math, side by side in one process: kernel-only time
through CUPTI (torch.profiler; an L2 flush before every launch, excluded), the kernel with the config the harness
would resolve for it, on the same inputs. Writes a markdown table and a CSV that `harness report --vendor` reads.

    python benchmarks/vendor_baseline.py --out docs/vendor-ratios.md [--csv vendor.csv] [--family attention ...]

Families are the modules of benchmarks/vendor/ (batched_gemm, attention, norms, gemm, scaled_mxfp4): each lists
its CASES (parameters, and the kernel when the family has several) and its torch paths (``vendor_ops``). For
memory-bound kernels the table also gives the achieved share of the HBM bandwidth measured here (a 1 GiB
device-to-device copy: bytes read + written over its time).
"""

from __future__ import annotations

import argparse
import csv
import importlib
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import torch  # noqa: E402
import triton  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

from harness.inputs.kernel import load_kernel  # noqa: E402
from harness.kernel_api.configs import resolve  # noqa: E402
from harness.worker.cases import load_kernel as import_kernel  # noqa: E402
from harness.worker.timing import attribute_dispatches, kernel_events  # noqa: E402
from kernels import common as C  # noqa: E402

FAMILIES = {
    "batched_gemm": (),
    "attention": ("attention_fwd",),
    "norms": ("rmsnorm", "layernorm"),
    "gemm": (),
    "scaled_mxfp4": ("scaled_mxfp4_gemm",),
}
FLUSH = "_flush_marker"


@triton.jit
def _flush_marker(ptr, n, BLOCK: triton.language.constexpr):
    offs = triton.language.program_id(0) * BLOCK + triton.language.arange(0, BLOCK)
    v = triton.language.load(ptr + offs, mask=offs < n, other=0)
    if triton.language.sum(v, axis=0) == 123456789:
        triton.language.store(ptr, 0)


def cupti_us(op, n: int = 20) -> float:  # noqa: ANN001 - a zero-argument callable
    buf = torch.zeros(64 * 1024 * 1024, dtype=torch.int32, device="cuda")
    grid = (triton.cdiv(buf.numel(), 8192),)
    for _ in range(3):
        op()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            _flush_marker[grid](buf, buf.numel(), BLOCK=8192)
            op()
        torch.cuda.synchronize()
    times, _ = attribute_dispatches(kernel_events(prof), FLUSH, n)
    return statistics.median(times)


def hbm_gbps() -> float:
    """Achievable HBM bandwidth: a 1 GiB device-to-device copy, bytes read + written over its median time."""
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(10):
            dst.copy_(src)
        torch.cuda.synchronize()
    # copies are memcpy events, which kernel_events leaves out: read them directly
    cuda = torch.autograd.DeviceType.CUDA
    ev = [e for e in prof.profiler.kineto_results.events() if e.device_type() == cuda and e.end_ns() > e.start_ns()]
    us = statistics.median((e.end_ns() - e.start_ns()) / 1e3 for e in ev)
    del src, dst
    torch.cuda.empty_cache()
    return 2 * (1 << 30) / (us * 1e-6) / 1e9


def ours(name: str, params: dict[str, Any]) -> tuple[Any, dict[str, Any], dict[str, Any], str, str, dict[str, Any]]:
    """(kernel module, its inputs, the resolved config, where it came from, case id, parameters) for one case."""
    k = load_kernel(name)
    mod = import_kernel(k.source, str(ROOT))
    p = k.spec.case_params({n: v for n, v in params.items() if k.spec.param(n)}, name)
    lookup = k.spec.config
    if lookup is None:
        cfg, source = dict(k.spec.default_config), "spec"
    else:
        r = resolve(lookup.family, C.arch(), p[lookup.bucket], lookup.file_key(p), lookup.bucket)
        cfg, source = r.config, r.source
    return mod, mod.make_inputs(p, 0), cfg, source, k.spec.case_id(p), p


def rows_of(family: str, bandwidth: float) -> list[dict[str, Any]]:
    vendor = importlib.import_module(f"vendor.{family}")
    rows = []
    for params in vendor.CASES:
        for name in [params["kernel"]] if "kernel" in params else FAMILIES[family]:
            mod, inputs, cfg, source, case_id, p = ours(name, params)
            us = cupti_us(lambda mod=mod, inputs=inputs, cfg=cfg: mod.launch(inputs, cfg))
            spec = mod.SPEC
            share = spec.bytes_of(p) / (us * 1e-6) / 1e9 / bandwidth if spec.peak_of(p) == "memory" else None
            for label, op in vendor.vendor_ops({**p, "kernel": name}, inputs).items():
                them = cupti_us(op)
                rows.append(dict(kernel=name, case_id=case_id, ours_us=us, vendor=label, vendor_us=them,
                                 ratio=us / them, hbm_share=share, config=source))  # fmt: skip
                print(_line(rows[-1]), flush=True)
            del inputs
            torch.cuda.empty_cache()
    return rows


def _line(r: dict[str, Any]) -> str:
    share = f"{100 * r['hbm_share']:.0f} %" if r["hbm_share"] else ""
    return (
        f"| {r['kernel']} | {r['case_id']} | {r['ours_us']:.1f} | {r['vendor']} | {r['vendor_us']:.1f} | "
        f"{r['ratio']:.2f} | {share} | {r['config']} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, help="markdown table")
    ap.add_argument("--csv", type=Path, help="kernel, case_id, vendor, vendor_us, ours_us (harness report --vendor)")
    ap.add_argument("--family", action="append", choices=list(FAMILIES), help="only these (repeatable)")
    a = ap.parse_args()
    bw = hbm_gbps()
    head = [
        f"GPU {torch.cuda.get_device_name()}, triton {triton.__version__}, torch {torch.__version__}; "
        f"CUPTI kernel time, median of 20 launches after an L2 flush; HBM copy bandwidth measured here: "
        f"{bw:,.0f} GB/s.",
        "",
        "| kernel | case | ours µs | torch path | torch µs | ours / torch | ours % of HBM | config |",
        "|---|---|---:|---|---:|---:|---:|---|",
    ]
    rows = [r for f in a.family or list(FAMILIES) for r in rows_of(f, bw)]
    text = "\n".join(head + [_line(r) for r in rows]) + "\n"
    if a.out:
        a.out.write_text(text)
    if a.csv:
        with open(a.csv, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=["kernel", "case_id", "vendor", "vendor_us", "ours_us", "hbm_share"])
            w.writeheader()
            w.writerows({k: r[k] for k in w.fieldnames} for r in rows)
    print(text)


if __name__ == "__main__":
    main()

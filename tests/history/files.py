"""Small real results files for the history tests: a version 2 CSV (as `harness run` writes it) and its sidecar."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from harness.results.schema import COLUMNS


def results_file(
    folder: Path,
    name: str,
    times: dict[tuple[str, str], float],
    *,
    env: str = "golden",
    triton: str = "3.6.0",
    gpu: str = "NVIDIA H100 80GB HBM3",
    when: str = "2026-11-22T10:00:00Z",
    status: dict[tuple[str, str], str] | None = None,
    spread: float = 0.001,
) -> Path:
    """``folder/name`` with one row per (kernel, case_id) → time, and its ``.env.json``; each case's three reps
    lie ``spread`` (relative) either side of its time."""
    rows = []
    for (kernel, case_id), t in times.items():
        m = int(case_id.split("_")[0].lstrip("M") or 1)
        st = (status or {}).get((kernel, case_id), "ok")
        rows.append(
            {
                "kernel": kernel,
                "case_id": case_id,
                "params": json.dumps({"M": m, "N": 512, "dtype": "bf16"}, separators=(",", ":"), sort_keys=True),
                "dtype": "bf16",
                "world_size": 1,
                "status": st,
                "time_us": t if st in ("ok", "unstable") else None,
                "reps": 3,
                "rep_times_us": json.dumps([t, round(t * (1 + spread), 4), round(t * (1 - spread), 4)]),
                "spread_pct": 0.2,
                "dispatch_us": json.dumps({"_k": t}),
                "flops": 2.0 * m * 512 * 512,
                "timing": "cupti",
                "error": "" if st in ("ok", "unstable") else "boom",
            }
        )
    path = folder / name
    pd.DataFrame(rows, columns=[c for c in COLUMNS if c in rows[0] or c in ("config",)]).to_csv(path, index=False)
    side = {
        "schema_version": 2,
        "env_name": env,
        "captured_at": when,
        "triton": {"version": triton, "path": f"/opt/{env}/triton", "commit": None},
        "torch": {"version": "2.11.0+cu130", "gpu_runtime": "CUDA 13.0"},
        "gpu": {"name": gpu, "uuid": "52e77cf8-0000", "before": {"driver": "580.159.04", "sm_clock_mhz": 1980.0}},
        "host": "node-1",
        "timing": "cupti",
        "knobs": {"TRITON_DEFAULT_FP_FUSION": "1"},
        "launch_gap": "auto",
        "placement": "shuffled",
        "move_inputs": True,
        "launches_per_rep": 0,
        "run_options": {"reps": 3},
        "suite": "suites/ci.yaml",
    }
    path.with_name(name + ".env.json").write_text(json.dumps(side))
    return path


def compare_file(golden: Path, tot: Path, out: Path) -> Path:
    """``harness compare GOLDEN TOT --out OUT`` (the real compare stage)."""
    from harness.compare.compare import compare_files
    from harness.compare.store import write_compare
    from harness.verdict.rule import Rule

    write_compare(compare_files(golden, tot, Rule()), out)
    return out


def nightlies(folder: Path, db: str, nights: int = 6, step_at: int = 3) -> list[Path]:
    """A team's history: one golden and one TOT run a night, compared; TOT moves from Triton 3.9.0 to 3.10.0 at
    night ``step_at`` (0-based), where gemm M1024 becomes 20 % slower under TOT. Returns the compare files."""
    from harness.history.store import History

    out = []
    for night in range(nights):
        day = folder / f"night{night}"
        day.mkdir()
        wobble = 1 + 0.001 * (night % 3)  # below any rule or change point
        base = {
            ("gemm", "M16_N512"): 10.0 * wobble,
            ("gemm", "M1024_N512"): 50.0 * wobble,
            ("rmsnorm", "M16_N512"): 5.0,
        }
        tot = dict(base)
        if night >= step_at:
            tot[("gemm", "M1024_N512")] = 60.0 * wobble
        g = results_file(day, "golden.csv", base, when=f"2026-11-{10 + night}T02:00:00Z")
        t = results_file(
            day,
            "tot.csv",
            tot,
            env="tot",
            triton="3.9.0" if night < step_at else "3.10.0",
            when=f"2026-11-{10 + night}T02:30:00Z",
        )
        out.append(compare_file(g, t, day / "compare.csv"))
    with History.open(db, write=True) as h:
        for c in out:
            h.add_compare(c, tags="nightly")
    return out

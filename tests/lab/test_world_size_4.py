"""Issue 45's lab figures from synthetic data: rank_clock.py's per-case summary (offsets removed, the rank released
first named), guard_rejudge.py over a journal (today's guard against the run's), scaling_stats.py at W = 1, 2, 4."""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import pandas as pd
import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "lab" / "gpu_validation"))

import rank_clock  # noqa: E402
import scaling_stats  # noqa: E402

OFFSETS = [0, 112_768, 95_104, 2_560]  # ns: what four H200s' %globaltimers read apart


def _every(n: int = 6) -> list[dict]:
    """Four ranks; rank 1 released 1.5 µs before the others, its op 1.5 µs longer (it waits in the op's sync)."""
    out = []
    for r in range(4):
        lead = 1500 if r == 1 else 0
        marks = [[1_000_000 * i - lead + OFFSETS[r], 1_000_000 * i + 20_000 + OFFSETS[r]] for i in range(n)]
        times = [18.5 + (1.5 if r == 1 else 0.0)] * n
        per = {"0:barrier_kernel(x)": 4.0 + (1.5 if r == 1 else 0.0), "1:_gemm(x)": 10.8, "2:barrier_kernel(y)": 3.7}
        out.append({"times": times, "per_name": per, "marks": marks})
    return out


def test_a_case_is_summarized_on_rank_zeros_clock():
    case = SimpleNamespace(kernel=SimpleNamespace(name="gemm_all_scatter"), case_id="M1_N4096_K4096_W4")
    offs = ([float(o) for o in OFFSETS], [0.0, 2720.0, 2720.0, 2720.0])
    s = rank_clock.summarize(case, _every(), offs, offs, 6)
    assert s["release_skew_us"] == pytest.approx(1.5) and s["end_skew_us"] == pytest.approx(0.0)
    assert s["release_order_us"] == pytest.approx([1.5, 0.0, 1.5, 1.5])
    assert s["slowest_released_first"] == 1.0 and s["slowest_rank_share"] == [0.0, 1.0, 0.0, 0.0]
    assert s["skew_pct"] == pytest.approx(100 * 1.5 / 18.5)
    assert s["stamped_us"] == pytest.approx([20.0, 21.5, 20.0, 20.0])  # each GPU's own clock: no offsets needed


def test_the_summary_spreads_each_kernel_of_the_op_across_ranks(tmp_path):
    case = SimpleNamespace(kernel=SimpleNamespace(name="gemm_all_scatter"), case_id="M1_N4096_K4096_W4")
    offs = ([float(o) for o in OFFSETS], [0.0, 2720.0, 2720.0, 2720.0])
    f = tmp_path / "w4.json"
    f.write_text(json.dumps([rank_clock.summarize(case, _every(), offs, offs, 6)]))
    text = rank_clock.summarize_files([str(f)])
    row = next(line for line in text.splitlines() if line.strip().startswith("gemm_all_scatter"))
    assert "0:barrier_kernel 1.50" in row and "1:_gemm 0.00" in row and "2:barrier_kernel 0.00" in row


def _journalled(tmp_path, ranks: list[float]):
    key = "gemm_all_scatter\x1fM1_N4096_K4096_W4"
    rows = [{"kernel": "gemm_all_scatter", "case_id": "M1_N4096_K4096_W4", "status": "unstable",
             "error": "ranks disagree: skew 8.1 % > 5 % (rank_times_us)", "time_us": max(ranks)}]  # fmt: skip
    res = tmp_path / "golden.csv"
    pd.DataFrame(rows).to_csv(res, index=False)
    reps = [{"kind": "rep", "key": key, "time_us": max(ranks), "proc": p, "rank_times_us": ranks, "halves_pct": 0.3}
            for p in (0, 0, 1, 1)]  # fmt: skip
    (tmp_path / "golden.csv.journal.jsonl").write_text("\n".join(json.dumps(r) for r in reps) + "\n")
    cmd = [sys.executable, str(ROOT / "lab/gpu_validation/guard_rejudge.py"), str(tmp_path)]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)


def test_the_runs_refusals_are_judged_again_with_todays_guard(tmp_path):
    r = _journalled(tmp_path, [18.5, 20.0, 18.6, 18.5])  # 8.1 %, 1.5 µs: the barrier's hop
    assert r.returncode == 0, r.stderr
    assert "1 multi-GPU cases; refused by the run's guard 1, by today's 0" in r.stdout
    r = _journalled(tmp_path, [18.5, 22.0, 18.6, 18.5])  # 3.5 µs: beyond it
    assert "by today's 1" in r.stdout and "3.50 µs > 2 µs" in r.stdout


def _row(kernel: str, W: int, M: int, N: int, us: float, twin: bool = False) -> dict:
    cfg = {"SCATTER": "none"} if twin else {}
    return {"kernel": kernel, "case_id": f"M{M}_N{N}_K4096_W{W}", "dtype": "bf16", "status": "ok", "time_us": us,
            "params": json.dumps({"M": M, "N": N, "K": 4096, "W": W}), "config": json.dumps(cfg)}  # fmt: skip


def test_scaling_over_one_two_and_four_gpus(tmp_path):
    rows = []
    for M, N in ((16, 4096), (16, 8192), (64, 4096)):
        for W, fused, twin, nccl in ((1, 40.0, 40.0, 50.0), (2, 25.0, 20.0, 30.0), (4, 20.0, 10.0, 25.0)):
            rows += [_row("gemm_all_scatter", W, M, N, fused), _row("gemm_all_scatter", W, M, N, twin, True),
                     _row("torch_gemm_all_gather", W, M, N, nccl)]  # fmt: skip
    f = tmp_path / "all.csv"
    pd.DataFrame(rows).to_csv(f, index=False)
    out = scaling_stats.table(scaling_stats.frame([f]))
    first = out.iloc[0]
    assert first["strong_W2"] == pytest.approx(1.6) and first["strong_W4"] == pytest.approx(2.0)
    assert first["gemm_strong_W4"] == pytest.approx(4.0)
    assert first["comm_share_W4_pct"] == pytest.approx(50.0) and first["fused_vs_nccl_W4"] == pytest.approx(1.25)
    weak = scaling_stats.weak(out).set_index("M")
    assert weak.loc[16, "eff_W2"] == pytest.approx(40 / 25) and weak.loc[16, "eff_W4"] == pytest.approx(40 / 20)
    lines = scaling_stats.summary(out, scaling_stats.weak(out))
    assert any(line.startswith("| 4 | 2.00 (2.00-2.00)×") for line in lines)


def test_a_barrier_variant_takes_the_place_of_the_ranks_own():
    calls = []
    ranks = SimpleNamespace(align=lambda: calls.append("align"), world=3)
    rank_clock.use_barrier(ranks, "harness")
    ranks.align()
    assert calls == ["align"]
    rank_clock.use_barrier(ranks, "twice")
    ranks.align()
    assert calls == ["align", "align", "align"]  # one round more before every launch
    with pytest.raises(SystemExit, match="W = 3 is not a power of two"):
        rank_clock.use_barrier(ranks, "vector")

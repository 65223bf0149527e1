"""A case in a run: the request the worker gets, the results row it becomes (telemetry columns included)."""

from __future__ import annotations

import json

import pytest

from harness.results.load import parse_results
from harness.run.cases import telemetry_columns


def test_telemetry_columns_and_their_csv_round_trip():
    reps = [
        {"sm_clock_mhz": 1980.0, "throttle": "", "temp_c": 55},
        {"sm_clock_mhz": 1900.0, "throttle": "power_cap", "temp_c": 58},
        {"sm_clock_mhz": 1960.0, "throttle": "power_cap;sw_thermal", "temp_c": 57},
    ]
    cols = telemetry_columns(reps)
    assert cols == {
        "sm_clock_mhz": 1946.7,
        "rep_clocks_mhz": [1980.0, 1900.0, 1960.0],
        "throttle": "power_cap;sw_thermal",
        "gpu_temp_c": 58.0,
    }
    assert telemetry_columns([]) == {} and telemetry_columns([{"samples": 0}]) == {}
    text = (
        "kernel,case_id,time_us,status,sm_clock_mhz,rep_clocks_mhz,throttle,gpu_temp_c\n"
        'k,a,10.0,ok,1946.7,"[1980.0,1900.0,1960.0]",power_cap;sw_thermal,58\n'
    )
    df = parse_results(text, "r.csv")
    assert df["sm_clock_mhz"].iloc[0] == 1946.7 and df["gpu_temp_c"].iloc[0] == 58

    from harness.errors import HarnessError

    with pytest.raises(HarnessError, match=r"r.csv: line 2: column 'sm_clock_mhz'"):
        parse_results(text.replace("1946.7", "fast"), "r.csv")


def test_a_case_is_sent_resolved_and_becomes_a_version_2_row():
    from harness.inputs.suite import load_suite
    from harness.run.cases import CaseState, result_row, worker_case
    from harness.verdict.stability import decide
    from tests.conftest import ROOT

    cases = {c.key: c for c in load_suite(ROOT / "suites" / "ci.yaml")}
    gemm = cases["batched_gemm_bf16/B2_M40_N32_K64_fp16"]
    req = worker_case(gemm)
    assert req["lookup"] == {
        "family": "BATCHED_GEMM-A16W16",
        "bucket": "M",
        "value": 40,
        "key": "N=32-K=64",
        "keys": ["N=32-K=64"],
        "layout": "harness",
        "bounds": None,
        "folders": [],  # a shipped kernel: harness's own folder, which the worker adds ($HARNESS_CONFIG_DIR there)
        "harness_configs": True,
        "arch": "",
        "backends": [],  # the backend the library's op names on an arch: none for harness's own kernels
    }
    assert req["source"].endswith("kernels/batched_gemm_bf16.py") and req["tolerance"] == 2e-3
    assert req["params"]["dtype"] == "fp16" and req["dtype"] == "fp16" and req["world_size"] == 1
    soft = worker_case(cases["softmax/M4_N100"])
    assert soft["lookup"] is None and soft["default_config"] == {"num_warps": 4}
    st = CaseState.of(gemm)
    st.prep = {"status": "ok", "config": {"BLOCK_SIZE_M": 16}, "config_source": "f.json:any", "rel_err": 1e-4}
    for t in (10.0, 10.1, 10.2):
        st.add_rep(t, None, None)
    d = decide(st.reps)
    row = result_row(st, d.status, time_us=d.value, decision=d, timing="wallclock")
    flops = 2.0 * 2 * 40 * 32 * 64
    assert row["flops"] == flops and row["tflops"] == flops / (d.value * 1e-6) / 1e12 and row["peak"] == "bf16"
    assert json.loads(row["params"])["M"] == 40 and row["reps"] == 3 and row["spread_pct"] > 0

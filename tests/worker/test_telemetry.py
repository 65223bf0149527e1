"""GPU telemetry: the pure summary of NVML samples, the busy-only sampler, and the results columns."""

from __future__ import annotations

import time

import pytest

from harness.results.load import parse_results
from harness.run.cases import telemetry_columns
from harness.worker import telemetry as gt


def test_summarize_busy_samples():
    s = gt.summarize(
        [(1980, 0x0), (1700, 0x4), (1750, 0x4 | 0x20), (None, None)],
        temps=(51, 56),
        power_w=[650.0, 700.0],
        max_clock_mhz=1980,
    )
    assert s["samples"] == 3 and s["sm_clock_mhz"] == round((1980 + 1700 + 1750) / 3, 1)
    assert s["sm_clock_min_mhz"] == 1700 and s["sm_clock_max_mhz"] == 1980
    assert s["throttle"] == "power_cap;sw_thermal" and s["slowdown_frac"] == round(2 / 3, 3)
    assert s["temp_c"] == 56 and s["power_w"] == 675.0
    assert gt.summarize([]) == {"samples": 0}
    assert gt.summarize([(1980, 0x1)])["throttle"] == "", "GPU idle (0x1) does not lower clocks under load"


def test_reason_names_cover_the_clock_lowering_bits():
    assert gt.reason_names(0x4 | 0x40 | 0x80) == ["power_cap", "hw_thermal", "power_brake"]
    assert gt.reason_names(0x1 | 0x2) == []


class FakeDevice:
    """Answers like NvmlDevice: a clock that drops once the sampler has been busy for a while."""

    def __init__(self):
        self.calls = 0

    def sm_clock_mhz(self):
        self.calls += 1
        return 1980 if self.calls < 3 else 1800

    def reasons(self):
        return 0x4 if self.calls >= 3 else 0x0

    def power_w(self):
        return 690.0

    def temperature_c(self):
        return 60

    def max_sm_clock_mhz(self):
        return 1980


def test_sampler_keeps_only_busy_samples():
    dev = FakeDevice()
    with gt.Sampler(dev, period_s=0.001) as smp:
        time.sleep(0.02)  # idle: nothing recorded
        assert smp.samples == [] and dev.calls == 0
        smp.busy = True
        deadline = time.time() + 5
        while len(smp.samples) < 5 and time.time() < deadline:
            time.sleep(0.002)
        smp.busy = False
    s = smp.summary()
    assert s["samples"] >= 5 and s["sm_clock_min_mhz"] == 1800 and "power_cap" in s["throttle"]
    assert s["temp_c"] == 60 and s["sm_clock_max_mhz"] == 1980


def test_no_nvml_no_device():
    # this CPU machine has no libnvidia-ml: telemetry is simply absent, timing goes on
    try:
        import ctypes

        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        assert gt.open_device(index=0) is None


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
    import pytest

    from harness.errors import HarnessError

    with pytest.raises(HarnessError, match=r"r.csv: line 2: column 'sm_clock_mhz'"):
        parse_results(text.replace("1946.7", "fast"), "r.csv")


def test_shuffled_launch_allocates_first_and_frees_after():
    import random
    import weakref

    from harness.worker.placement import shuffled

    class Block:
        def __init__(self, n):
            self.n = n

    sizes, alive = [], []

    def empty(n):
        b = Block(n)
        sizes.append(n)
        alive.append(weakref.ref(b))
        return b

    order = []

    def launch():
        order.append(len(sizes))  # the shim exists before the op allocates anything
        return "y"

    op = shuffled(launch, empty, random.Random(1))
    assert [op() for _ in range(50)] == ["y"] * 50
    assert order == list(range(1, 51))
    assert all((1 << 20) <= n < (64 << 20) for n in sizes) and len(set(sizes)) > 40, "sizes vary launch to launch"
    assert all(r() is None for r in alive), "each shim is released once its launch is queued"


def test_attribute_dispatches_groups_by_flush_and_drops_untimed_launches():
    from harness.worker.timing import attribute_dispatches

    F = "_harness_l2_flush"
    events = [(F, 30.0), ("warm", 9.0)]  # an untimed launch (invocation 0)
    events += [(F, 30.0), ("gemm", 5.0), ("reduce", 1.0)]  # split-K: two dispatches, one op
    events += [(F, 30.0), ("gemm", 6.0), ("reduce", 1.5)]
    events += [(F, 30.0), ("warm", 9.0), (F, 30.0), ("gemm", 7.0), ("reduce", 2.0)]
    times, per_name = attribute_dispatches(events, F, 5, drop={0, 3})
    assert times == [6.0, 7.5, 9.0]
    assert per_name == {"0:gemm": 6.0, "1:reduce": 1.5}
    with pytest.raises(RuntimeError, match="saw 5 op invocations with kernels, expected 6"):
        attribute_dispatches(events, F, 6)


def test_launch_plan_moves_inputs_before_runs_of_launches():
    from harness.worker.placement import launch_plan

    assert launch_plan(4) == [(False, True)] * 4
    M, U, T = (True, False), (True, True), (False, True)  # move + untimed, move + timed, timed
    assert launch_plan(5, 2, warm=True) == [M, T, T, M, T, T, M, T]
    assert launch_plan(5, 2) == [U, T, U, T, U]
    assert launch_plan(3, 1, warm=False) == [U, U, U]
    n, places = 10, 5
    plan = launch_plan(n, -(-n // places), warm=True)
    assert sum(t for _, t in plan) == n and sum(m for m, _ in plan) == places


def test_auto_launch_count_and_gap():
    from harness.worker.timing import AUTO_MIN_LAUNCHES, auto_idle_s, auto_launches

    assert auto_launches(1.0) == 100  # tiny kernels: capped
    assert auto_launches(1000.0) == 40  # ~40 ms of kernel time
    assert auto_launches(6000.0) == AUTO_MIN_LAUNCHES == 30  # ms-long: the floor
    assert auto_idle_s(1000.0) == 0.002  # twice the kernel's time
    assert auto_idle_s(8000.0) == 0.010  # at most 10 ms


def test_rehomed_inputs_keep_values_and_layout_at_a_new_aligned_place():
    import random

    import torch

    from harness.worker.placement import PLACE_ALIGN, rehomed

    bufs = []

    def empty(nbytes):
        bufs.append(torch.empty(nbytes, dtype=torch.uint8))
        return bufs[-1]

    x = torch.randn(8, 6)[:, ::2]  # strided: (6, 2)
    inputs = {
        "x": x,
        "w": torch.randn(3, 5).to(torch.float8_e4m3fn),
        "packed": torch.randint(0, 255, (7,), dtype=torch.uint8),
        "bias": None,
        "flag": 3,
        "nothing": torch.empty(0),
    }
    offsets = set()
    for seed in range(20):
        out = rehomed(inputs, empty, random.Random(seed))
        assert out.keys() == inputs.keys() and out["bias"] is None and out["flag"] == 3
        assert out["nothing"] is inputs["nothing"]
        for name in ("x", "w", "packed"):
            a, b = inputs[name], out[name]
            assert (b.dtype, b.shape, b.stride()) == (a.dtype, a.shape, a.stride())
            assert torch.equal(b.float(), a.float())
            assert b.untyped_storage().data_ptr() != a.untyped_storage().data_ptr()
            at = b.data_ptr() - b.untyped_storage().data_ptr()
            assert at % PLACE_ALIGN == 0
            offsets.add((name, at))
        out["x"].fill_(0)  # a copy, not a view of the caller's tensor
        assert x.abs().sum() > 0
    assert len({at for name, at in offsets if name == "x"}) > 10, "the place varies from call to call"

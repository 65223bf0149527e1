"""GPU telemetry: the pure summary of NVML samples, the busy-only sampler, and the results columns."""

from __future__ import annotations

import time

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

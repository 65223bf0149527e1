"""What the GPU's clocks did while a rep's kernels ran: NVML sampled from a thread, standard library only.

The worker imports this file as a sibling module (it runs by path and never imports the harness package), so it
must keep to the standard library. Why it exists: ms-long GEMMs on an H100 run at its 700 W power cap, where the
SM clock, not the compiler, sets their time; two processes timing the same kernel a minute apart differ by
0.5–4 %. Recording the SM clock and the throttle reasons with every rep lets ``harness compare`` tell a delta
that came with a clock change from one that did not. (nvbench takes the same view: it measures the SM clock
over each measurement and retries those that ran throttled.)

The sampler reads NVML every ``period_s`` and keeps only samples taken while the caller marks the GPU busy (the
timed launches; the idle gaps before them are excluded). NVML missing (a CPU machine, AMD): ``open_device``
gives None and no telemetry is recorded.
"""

from __future__ import annotations

import ctypes
import statistics
import threading
from dataclasses import dataclass, field
from typing import Any

#: nvmlClocksEventReasons bits (nvml.h), the ones that lower clocks under load
REASONS = {
    0x4: "power_cap",
    0x8: "hw_slowdown",
    0x20: "sw_thermal",
    0x40: "hw_thermal",
    0x80: "power_brake",
}
SLOWDOWN_MASK = sum(REASONS)
NVML_CLOCK_SM = 1
NVML_TEMPERATURE_GPU = 0


class NvmlDevice:
    """One GPU through libnvidia-ml (ctypes). Every reader returns None on an NVML error."""

    def __init__(self, lib: Any, handle: ctypes.c_void_p):
        self._lib, self._h = lib, handle

    def _uint(self, fn: str, *args: int) -> int | None:
        v = ctypes.c_uint()
        rc = getattr(self._lib, fn)(self._h, *args, ctypes.byref(v))
        return int(v.value) if rc == 0 else None

    def sm_clock_mhz(self) -> int | None:
        return self._uint("nvmlDeviceGetClockInfo", NVML_CLOCK_SM)

    def max_sm_clock_mhz(self) -> int | None:
        return self._uint("nvmlDeviceGetMaxClockInfo", NVML_CLOCK_SM)

    def temperature_c(self) -> int | None:
        return self._uint("nvmlDeviceGetTemperature", NVML_TEMPERATURE_GPU)

    def power_w(self) -> float | None:
        mw = self._uint("nvmlDeviceGetPowerUsage")
        return None if mw is None else mw / 1000.0

    def reasons(self) -> int | None:
        v = ctypes.c_ulonglong()
        for fn in ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"):
            f = getattr(self._lib, fn, None)
            if f is not None and f(self._h, ctypes.byref(v)) == 0:
                return int(v.value)
        return None


def open_device(uuid: str | None = None, pci_bus_id: str | None = None, index: int | None = None) -> NvmlDevice | None:
    """The NVML handle of the GPU the worker's CUDA context is on, found by UUID, else PCI bus id, else index
    (only safe when CUDA_VISIBLE_DEVICES does not reorder devices). None when NVML is missing or finds none."""
    try:
        lib = ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return None
    init = getattr(lib, "nvmlInit_v2", None) or getattr(lib, "nvmlInit", None)
    if init is None or init() != 0:
        return None
    h = ctypes.c_void_p()
    tries: list[tuple[str, Any]] = []
    if uuid:
        u = uuid if uuid.startswith(("GPU-", "MIG-")) else "GPU-" + uuid
        tries.append(("nvmlDeviceGetHandleByUUID", ctypes.c_char_p(u.encode())))
    if pci_bus_id:
        tries.append(("nvmlDeviceGetHandleByPciBusId_v2", ctypes.c_char_p(pci_bus_id.encode())))
    if index is not None:
        tries.append(("nvmlDeviceGetHandleByIndex_v2", ctypes.c_uint(index)))
    for fn, arg in tries:
        f = getattr(lib, fn, None)
        if f is not None and f(arg, ctypes.byref(h)) == 0:
            return NvmlDevice(lib, h)
    return None


@dataclass
class Sampler:
    """Reads the SM clock and the throttle reasons every ``period_s`` on a daemon thread while ``busy`` is set.

    Use as a context manager around the timed launches; set ``busy`` True just before a launch and False once
    the GPU is known idle again (after a synchronize). ``summary()`` afterwards."""

    dev: NvmlDevice
    period_s: float = 0.002
    busy: bool = False
    samples: list[tuple[int | None, int | None]] = field(default_factory=list)  # (clock MHz, reasons bitmask)
    temp_start_c: int | None = None
    temp_end_c: int | None = None
    power_w: list[float] = field(default_factory=list)
    max_clock_mhz: int | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> Sampler:
        self.temp_start_c = self.dev.temperature_c()
        self.max_clock_mhz = self.dev.max_sm_clock_mhz()
        self._thread = threading.Thread(target=self._loop, name="harness-nvml", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
        self.temp_end_c = self.dev.temperature_c()

    def _loop(self) -> None:
        i = 0
        while not self._stop.is_set():
            if self.busy:
                self.samples.append((self.dev.sm_clock_mhz(), self.dev.reasons()))
                if i % 25 == 0:  # NVML's power reading is itself an average over a window: a few suffice
                    p = self.dev.power_w()
                    if p is not None:
                        self.power_w.append(p)
                i += 1
            self._stop.wait(self.period_s)

    def summary(self) -> dict[str, Any]:
        return summarize(
            self.samples,
            temps=(self.temp_start_c, self.temp_end_c),
            power_w=self.power_w,
            max_clock_mhz=self.max_clock_mhz,
        )


class NoSampler:
    """Stands in for a Sampler where there is no NVML: takes the busy flags, records nothing."""

    busy = False

    def __enter__(self) -> NoSampler:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def reason_names(mask: int) -> list[str]:
    return [name for bit, name in REASONS.items() if mask & bit]


def summarize(
    samples: list[tuple[int | None, int | None]],
    temps: tuple[int | None, int | None] = (None, None),
    power_w: list[float] | None = None,
    max_clock_mhz: int | None = None,
) -> dict[str, Any]:
    """Pure: one rep's telemetry from its busy-time samples (clock MHz, reasons bitmask).

    ``sm_clock_mhz``: mean SM clock while busy; ``sm_clock_min_mhz``; ``slowdown_frac``: the share of samples
    with a clock-lowering reason active; ``throttle``: those reasons by name, ';'-joined; ``temp_c``: the
    hotter of start and end; ``power_w``: mean of the power readings; ``samples``: how many busy samples."""
    clocks = [c for c, _ in samples if c]
    masks = [m for _, m in samples if m is not None]
    out: dict[str, Any] = {"samples": len(clocks)}
    if clocks:
        out["sm_clock_mhz"] = round(statistics.fmean(clocks), 1)
        out["sm_clock_min_mhz"] = min(clocks)
    if max_clock_mhz:
        out["sm_clock_max_mhz"] = max_clock_mhz
    if masks:
        union = 0
        for m in masks:
            union |= m
        out["slowdown_frac"] = round(sum(1 for m in masks if m & SLOWDOWN_MASK) / len(masks), 3)
        out["throttle"] = ";".join(reason_names(union))
    seen = [t for t in temps if t is not None]
    if seen:
        out["temp_c"] = max(seen)
    if power_w:
        out["power_w"] = round(statistics.fmean(power_w), 1)
    return out

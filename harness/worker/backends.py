"""The timing backends, declared once: what each measures, where it runs, what it can isolate and how the worker
drives it. The worker, the runner, the env schema and the sidecar read these records; no other module compares a
backend's name. Standard library only: the worker imports it in each env's Python.

A new backend is a record here, its timing loop in worker/timing.py (``Timer.<timer>``) and the adapter in
worker/session.py (``Session._by_<timer>``); docs/timing-backends.md walks through rocprofv3's.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Backend:
    name: str
    #: what one sample is
    measures: str
    #: the device backends (worker facts' ``backend``) it can time
    runs_on: tuple[str, ...]
    #: what it tells apart inside a launch
    isolates: str
    #: the worker/timing.Timer method that runs a rep, and Session._by_<timer> that calls it
    timer: str
    #: it times the GPU (not the host): GPU state, precompile workers, telemetry columns apply
    gpu: bool = True
    #: the GPU idles between launches under it (the automatic launch gap applies)
    idles: bool = False
    #: the inputs can move to a new place before every launch (placement sampling)
    moves_inputs: bool = False
    #: the SM clock is sampled (NVML) while it times
    telemetry: bool = False
    #: the worker must start under this wrapper command (it traces the process from its start): such a backend
    #: cannot be switched to in a running worker, pooled, or spread over several GPUs of one run
    wrapper: str = ""
    #: the wrapper's arguments before the worker's command; ``{dir}`` is a new folder for its output
    wrapper_args: tuple[str, ...] = ()
    #: launches a rep when --launches is not given (0: from the kernel's estimated time)
    launches: int = 0

    @property
    def switchable(self) -> bool:
        return not self.wrapper


BACKENDS: dict[str, Backend] = {
    b.name: b
    for b in (
        Backend(
            "cupti",
            measures="device time of the op's own kernels (CUPTI activity records through torch.profiler)",
            runs_on=("cuda",),
            isolates="each kernel (dispatch) of a launch; the harness's own kernels left out",
            timer="cupti",
            idles=True,
            moves_inputs=True,
            telemetry=True,
        ),
        Backend(
            "rocprofv3",
            measures="device time of each kernel dispatch from rocprofv3's kernel trace, between marker kernels",
            runs_on=("hip",),
            isolates="each kernel (dispatch) of a launch",
            timer="markers",
            wrapper="rocprofv3",
            # --output-format: ROCm 6.2's rocprofv3 rejects the short -f; the long form works in every version
            wrapper_args=("--kernel-trace", "--output-format", "csv", "-d", "{dir}", "-o", "trace", "--"),
            launches=20,
        ),
        Backend(
            "events",
            measures="device time between two CUDA/HIP events around the launch",
            runs_on=("cuda", "hip"),
            isolates="the launch as a whole (launch gaps between its kernels included)",
            timer="events",
            moves_inputs=True,
            telemetry=True,
        ),
        Backend(
            "wallclock",
            measures="host time around the launch (the CPU interpreter, or a worker that times nothing)",
            runs_on=("interp", "cuda", "hip"),
            isolates="nothing: the host's view of a synchronised launch",
            timer="wallclock",
            gpu=False,
            launches=3,
        ),
    )
}
#: the env schema's ``timing:`` values
NAMES: tuple[str, ...] = ("auto", *BACKENDS)
#: a worker that times nothing (a hello, a compile-only worker)
NOTHING = "wallclock"


def backend(name: str) -> Backend:
    """The record of a resolved timing (not ``auto``); KeyError names the known ones."""
    try:
        return BACKENDS[name]
    except KeyError:
        raise KeyError(f"timing {name!r}: expected one of {', '.join(BACKENDS)}") from None


def wrapper_of(timing: str) -> str:
    """The wrapper command a worker timing by ``timing`` starts under ('' for none, and for ``auto``)."""
    b = BACKENDS.get(timing)
    return b.wrapper if b is not None else ""


def times_gpu(timing: str) -> bool:
    """Whether ``timing`` times the GPU (``auto`` does until resolved: only the interpreter resolves to the host)."""
    b = BACKENDS.get(timing)
    return b.gpu if b is not None else True


def auto(device: str, have_wrapper: frozenset[str] = frozenset()) -> str:
    """``timing: auto`` for a device backend: the first record that runs on it, a wrapped one only where its
    wrapper is installed (rocprofv3 on ROCm, else events), host time on the interpreter."""
    for b in BACKENDS.values():
        if device in b.runs_on and (not b.wrapper or b.wrapper in have_wrapper):
            return b.name
    return NOTHING

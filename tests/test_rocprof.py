"""rocprofv3 kernel-trace parsing and attribution, on files in the real header formats (current, older, rocpd)."""

from __future__ import annotations

import pytest

from harness.errors import HarnessError
from harness.rocprof import parse_kernel_trace, rep_times
from tests.conftest import DATA


@pytest.mark.parametrize("name", ["kernel_trace_current.csv", "kernel_trace_old.csv", "rocpd_kernel_trace.csv"])
def test_markers_attribute_reps_to_cases(name):
    d = parse_kernel_trace((DATA / "rocprof" / name).read_text(), name)
    assert d[0].name.startswith("__amd_rocclr")
    reps = rep_times(d, n=3, prefixes=("_batched_gemm", "_splitk_reduce"))
    assert set(reps) == {(0, 0), (0, 1), (1, 0), (1, 1)}
    times, per = reps[(0, 1)]
    assert times == [10.1, 10.1, 10.1]
    times, per = reps[(1, 0)]
    assert times == [23.0, 23.0, 23.0]  # split-K: the op is the sum of its two dispatches
    assert set(per) == {"0:_batched_gemm_bf16_kernel_BLOCK_SIZE_M_64_BLOCK_SIZE_N_128", "1:_splitk_reduce_kernel"}


def test_prefix_filter_drops_foreign_kernels():
    d = parse_kernel_trace((DATA / "rocprof" / "kernel_trace_current.csv").read_text())
    times, _ = rep_times(d, n=3, prefixes=("_batched_gemm",))[(1, 0)]
    assert times == [20.0, 20.0, 20.0]


def test_not_a_trace():
    with pytest.raises(HarnessError, match="missing column 'kernel_name'"):
        parse_kernel_trace('"Name","Calls"\n"k","1"\n', "kernel_stats.csv")

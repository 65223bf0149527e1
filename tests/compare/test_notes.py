"""What compare notes beside the verdicts: overlapping reps, moved clocks, different methods."""

from __future__ import annotations


def test_overlapping_rep_ranges_are_noted_not_overruled():
    from harness.compare.notes import overlap_note

    # TOT's fastest rep beats golden's slowest: the rule still says regression, the note says it may be noise
    assert overlap_note([2865.0, 3001.1, 3030.5], [2866.0, 3099.1, 3075.0], regression=True).startswith(
        "rep ranges overlap (golden 2865-3030, TOT 2866-3099 us)"
    )
    assert overlap_note([100.0, 100.2, 100.1], [110.0, 110.5, 110.2], regression=True) == ""
    assert overlap_note([110.0, 110.5], [100.0, 111.0], regression=False) != ""  # improvement, overlapping
    assert overlap_note(None, [1, 2], regression=True) == "" and overlap_note([1], [1, 2], True) == ""


def test_the_reps_a_note_reads_are_the_cells_by_the_one_rule():
    import numpy as np
    import pyarrow as pa

    from harness.verdict.reps import Column

    cells = ["[1.5,2.5]", "[3e1, 4]", "[1,2", '["1", "2"]', "[true, 2]", "[1e999, 2]", "[-1, 2]", "[ 1 , 2 ]"]
    got = Column(pa.array(cells, type=pa.large_string())).at(None).lists(np.arange(len(cells)))
    assert got == [[1.5, 2.5], [30.0, 4.0], None, None, None, None, None, [1.0, 2.0]]  # the one rule: good times


def test_different_measurement_methods_warn():
    from harness.compare.notes import method_differences

    g = {"timing": "cupti", "launch_gap": "auto", "heat_s": 5.0, "gpu": {"name": "NVIDIA H100 80GB HBM3"}}
    assert method_differences(g, dict(g)) == []
    t = {**g, "launch_gap": "0.0", "gpu": {"name": "NVIDIA H200"}}
    w = method_differences(g, t)
    assert any("launch_gap 'auto' vs '0.0'" in x for x in w) and any("different GPUs" in x for x in w)
    assert method_differences(g, {"timing": "cupti"}) == [], "a setting one sidecar lacks is not compared"
    new = {**g, "launch_gap_auto": {"factor": 2.0, "max_ms": 10.0}}
    assert any("launch_gap_auto" in x for x in method_differences(new, {**new, "launch_gap_auto": {"max_ms": 1.0}}))


def test_a_kernel_edited_between_golden_and_tot_is_named():
    from harness.compare.notes import method_differences

    g = {"timing": "cupti", "kernel_content": {"gemm": "1" * 64, "softmax": "2" * 64}}
    t = {"timing": "cupti", "kernel_content": {"gemm": "3" * 64, "softmax": "2" * 64}}
    (w,) = method_differences(g, t)
    assert w.startswith("golden and TOT ran other code under the same kernel names ({gemm: 111111111111} vs")
    assert "kernel edit" in w and "softmax" not in w
    assert method_differences(g, {"timing": "cupti", "schedule": {"processes": 1}}) == []  # one side unknown


def test_clock_note_only_when_the_clock_moved_with_the_time():
    from harness.compare.notes import clock_note

    # TOT 2 % slower and its SM clock 2 % lower: noted
    assert clock_note(1980.0, 1941.0, 2.0) == "NVML SM clock 1980 -> 1941 MHz (-2.0 %)"
    assert clock_note(1900.0, 1980.0, -3.0).startswith("NVML SM clock 1900 -> 1980 MHz (+4.2 %)")
    assert clock_note(1980.0, 1980.0, 5.0) == "", "same clock: the delta is the kernel's"
    assert clock_note(1980.0, 1960.0, 8.0) == "", "a 1 % clock change does not explain 8 %"
    assert clock_note(1941.0, 1980.0, 2.0) == "", "TOT ran faster clocks yet slower: not the clock"
    assert clock_note(float("nan"), 1980.0, 2.0) == "" and clock_note(1980.0, 1941.0, float("nan")) == ""


def test_golden_and_tot_given_the_wrong_way_round_are_named():
    from harness.compare.notes import swapped

    assert "swapped" in swapped({"env_name": "tot"}, {"env_name": "golden"})
    assert swapped({"env_name": "golden"}, {"env_name": "tot"}) == swapped({}, {"env_name": "golden"}) == ""
    assert swapped({"env_name": "golden"}, {"env_name": "golden-aa"}) == ""  # an A/A

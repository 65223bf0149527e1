"""The identity of a run (harness/results/identity.py): each facet read from a sidecar, compared only where both
record it, per kernel where it is kept per kernel, and each relation's severity."""

from __future__ import annotations

from harness.results import identity
from harness.results.identity import PAIR, PARTS, REFUSE, REPEAT, WARN, differences

SIDE = {
    "schema_version": 2,
    "env_name": "golden",
    "suite": "suites/library.yaml",
    "suite_content": "a" * 64,
    "triton": {"version": "3.6.0", "path": "/venv/triton", "commit": None},
    "torch": {"version": "2.11.0"},
    "knobs": {"TRITON_DEFAULT_FP_FUSION": "1", "CUDA_VISIBLE_DEVICES": "0"},
    "timing": "cupti",
    "schedule": {"processes": 2},
    "gpu": {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-AAAA"},
    "kernel_content": {"gemm": "1" * 64, "softmax": "2" * 64},
    "config_lookup": {"gemm": {"config_arch": None}},
    "libraries": {"aiter": {"path": "/home/me/aiter", "commit": "c1"}},
}


def changed(**kw):
    return {**SIDE, **kw}


def facets(a, b, relation):
    return [(d.facet, d.field, d.severity) for d in differences(a, b, relation)]


def test_the_same_run_has_no_difference_under_any_relation():
    for rel in (PARTS, PAIR, REPEAT):
        assert differences(SIDE, dict(SIDE), rel) == []


def test_a_kernel_edited_between_two_runs_is_named_with_its_kernel_only():
    other = changed(kernel_content={"gemm": "9" * 64, "softmax": "2" * 64})
    (d,) = differences(SIDE, other, PAIR)
    assert (d.facet, d.severity, d.a, d.b) == ("kernels", WARN, {"gemm": "1" * 64}, {"gemm": "9" * 64})
    assert "kernels' source files (kernel_content): {gemm: 111111111111} vs {gemm: 999999999999}" in d.text()
    assert facets(SIDE, other, PARTS) == [("kernels", "kernel_content", REFUSE)]
    shard = changed(kernel_content={"softmax": "2" * 64})  # ran one of the two kernels: nothing to tell apart
    assert differences(SIDE, shard, PARTS) == []


def test_what_a_sidecar_does_not_record_is_never_a_difference():
    old = {k: v for k, v in SIDE.items() if k not in ("kernel_content", "schedule", "suite_content", "libraries")}
    assert differences(SIDE, old, PARTS) == []
    assert differences(SIDE, changed(gpu={"name": "NVIDIA H100 80GB HBM3", "uuid": "[N/A]"}), PARTS) == []


def test_the_method_counts_the_processes_and_the_stack_its_versions_not_its_folders():
    assert facets(SIDE, changed(schedule={"processes": 1}), PARTS) == [("method", "schedule.processes", REFUSE)]
    moved = changed(triton={**SIDE["triton"], "path": "/other/triton"},
                    knobs={**SIDE["knobs"], "CUDA_VISIBLE_DEVICES": "3"})  # fmt: skip
    assert facets(SIDE, moved, PARTS) == [("install", "triton.path", REFUSE)]  # parts: one installation
    assert differences(SIDE, moved, REPEAT) == []  # two machines: their folders differ by nature
    newer = changed(triton={**SIDE["triton"], "version": "3.9.0"})
    assert facets(SIDE, newer, REPEAT) == [("stack", "triton.version", WARN)]


def test_libraries_by_commit_and_config_arch_per_kernel():
    elsewhere = changed(libraries={"aiter": {"path": "/ci/aiter", "commit": "c1"}})
    assert differences(SIDE, elsewhere, PARTS) == []  # one commit, checked out in another folder
    assert facets(SIDE, changed(libraries={"aiter": {"path": "/x", "commit": "c2"}}), PARTS) == [
        ("libraries", "libraries", REFUSE)
    ]
    gfx = changed(config_lookup={"gemm": {"config_arch": "gfx950"}})
    (d,) = differences(SIDE, gfx, PAIR)
    assert (d.facet, d.a, d.b) == ("config_arch", {"gemm": None}, {"gemm": "gfx950"})


def test_a_suite_by_content_is_not_compared_with_one_known_only_by_name():
    by_name = {k: v for k, v in SIDE.items() if k != "suite_content"}
    assert differences(SIDE, by_name, REPEAT) == []
    (d,) = differences(SIDE, changed(suite_content="b" * 64), REPEAT)
    assert d.facet == "suite" and "aaaaaaaaaaaa vs bbbbbbbbbbbb" in d.text()


def test_every_relation_names_only_known_facets():
    for rel in (PARTS, PAIR, REPEAT):
        assert set(rel.severity) <= set(identity.BY_NAME)
        assert set(rel.severity.values()) <= {REFUSE, WARN}

"""Parts of one env's results merge into one file only when they were measured the same way, overlap nowhere and,
with the suite, miss nothing; the per-row GPU is kept and compare checks it case by case."""

from __future__ import annotations

import json

import pytest

from harness.compare.compare import gpu_rows
from harness.errors import HarnessError
from harness.results.load import load_results
from harness.results.schema import sidecar_path
from harness.results.write import write_results
from harness.run.merge import merge_results

SIDE = {"schema_version": 2, "env_name": "golden", "triton": {"version": "3.6.0", "path": "/t"}, "timing": "cupti",
        "knobs": {"TRITON_DEFAULT_FP_FUSION": "1", "CUDA_VISIBLE_DEVICES": "0"}, "gpu": {"name": "H100", "uuid": "A"},
        "host": "n1"}  # fmt: skip


def part(tmp_path, name, cases, uuid="A", **side):
    p = tmp_path / f"{name}.csv"
    rows = [
        {"kernel": "k", "case_id": c, "params": {"M": 1}, "status": "ok", "time_us": 10.0, "gpu": uuid} for c in cases
    ]
    write_results(p, rows)
    meta = json.loads(json.dumps(SIDE))
    meta["gpu"]["uuid"] = uuid
    meta["knobs"]["CUDA_VISIBLE_DEVICES"] = uuid
    meta.update(side)
    sidecar_path(p).write_text(json.dumps(meta))
    return p


def test_parts_merge_with_their_gpus(tmp_path):
    a, b = part(tmp_path, "a", ["c1", "c2"], "A"), part(tmp_path, "b", ["c3"], "B")
    out = tmp_path / "m.csv"
    assert merge_results([a, b], out) == {"ok": 3}
    df = load_results(out)
    assert list(df["case_id"]) == ["c1", "c2", "c3"] and list(df["gpu"]) == ["A", "A", "B"]
    meta = df.attrs["env"]
    assert meta["gpus"] == ["A", "B"] and [p["gpu"] for p in meta["parts"]] == ["A", "B"]


def test_a_part_edited_with_a_blank_line_merges_into_a_file_that_loads(tmp_path):
    a, b = part(tmp_path, "a", ["c1", "c2"], "A"), part(tmp_path, "b", ["c3"], "B")
    lines = a.read_text().splitlines(keepends=True)
    a.write_text("".join([lines[0], lines[1], " \t\r\n", lines[2]]))  # the loader skips it, as pandas does
    meta = json.loads(sidecar_path(a).read_text())
    meta.pop("integrity", None)
    sidecar_path(a).write_text(json.dumps(meta))
    out = tmp_path / "m.csv"
    assert merge_results([a, b], out) == {"ok": 3}
    assert list(load_results(out)["case_id"]) == ["c1", "c2", "c3"]


@pytest.mark.parametrize(
    "change, fragment",
    [
        ({"timing": "events"}, "timing is 'events' but"),
        ({"triton": {"version": "3.9.0", "path": "/t"}}, "triton.version is '3.9.0'"),
        ({"knobs": {"TRITON_DEFAULT_FP_FUSION": "0"}}, "knobs is"),
        ({"gpu": {"name": "H200", "uuid": "B"}}, "gpu.name is 'H200'"),
    ],
)
def test_parts_measured_differently_are_refused(tmp_path, change, fragment):
    a, b = part(tmp_path, "a", ["c1"]), part(tmp_path, "b", ["c2"], **change)
    with pytest.raises(HarnessError, match=fragment):
        merge_results([a, b], tmp_path / "m.csv")


def test_overlapping_parts_and_outputs_over_inputs_are_refused(tmp_path):
    a, b = part(tmp_path, "a", ["c1"]), part(tmp_path, "b", ["c1"], "B")
    with pytest.raises(HarnessError, match="case k/c1 is also in"):
        merge_results([a, b], tmp_path / "m.csv")
    with pytest.raises(HarnessError, match="--out"):
        merge_results([a], a)


def test_a_case_on_two_gpus_is_named_by_compare(tmp_path):
    g, t = part(tmp_path, "g", ["c1", "c2"], "A"), part(tmp_path, "t", ["c1", "c2"], "A")
    assert gpu_rows(load_results(g), load_results(t)) == ""
    t2 = part(tmp_path, "t2", ["c1", "c2"], "B")
    msg = gpu_rows(load_results(g), load_results(t2))
    assert msg.startswith("2 cases were timed on different GPUs") and "k/c1: A vs B" in msg


def test_require_same_gpu_does_not_depend_on_the_order_of_the_parts(tmp_path):
    from harness.compare.compare import compare_files

    tot = {"env_name": "tot", "triton": {"version": "3.9.0", "path": "/u"}}
    g1, g2 = part(tmp_path, "g1", ["c1"], "A", host="n1"), part(tmp_path, "g2", ["c2"], "B", host="n2")
    t1, t2 = part(tmp_path, "t1", ["c1"], "A", host="n1", **tot), part(tmp_path, "t2", ["c2"], "B", host="n2", **tot)
    merge_results([g1, g2], tmp_path / "g.csv")
    merge_results([t2, t1], tmp_path / "t.csv")
    cmp = compare_files(tmp_path / "g.csv", tmp_path / "t.csv")
    assert cmp.gpu_rows == ""  # case by case: c1 on A under both, c2 on B under both
    assert cmp.other_gpu == ""


def test_the_merged_file_finds_every_parts_compiled_kernels(tmp_path):
    from harness.results.schema import artifacts_dir

    folder = tmp_path / "g.csv.parts"
    folder.mkdir()
    a = part(folder, "gpu0", ["c1"], "A", artifacts_dir="gpu0.artifacts")
    b = part(folder, "gpu1", ["c2"], "B", artifacts_dir="gpu1.artifacts")
    (folder / "gpu0.artifacts" / "h1-k").mkdir(parents=True)
    (folder / "gpu1.artifacts" / "h2-k").mkdir(parents=True)
    out = tmp_path / "g.csv"
    merge_results([a, b], out)
    root = artifacts_dir(out, load_results(out).attrs["env"])
    assert (root / "h1-k").is_dir() and (root / "h2-k").is_dir()


# ------------------------------------------------------------------- identities: suite, shard, empty shards


def empty_part(tmp_path, name, shard, suite="suites/ci.yaml"):
    from harness.results.schema import COLUMNS

    p = tmp_path / f"{name}.csv"
    p.write_text(",".join(COLUMNS) + "\n")
    sidecar_path(p).write_text(json.dumps({"schema_version": 2, "env_name": "golden", "suite": suite,
                                           "shard": shard, "empty": "no case", "run_options": {}}))  # fmt: skip
    return p


def test_an_empty_shard_merges_with_the_others(tmp_path):
    a = part(tmp_path, "a", ["c1", "c2"], shard="1/3", suite="suites/ci.yaml")
    b = part(tmp_path, "b", ["c3"], shard="2/3", suite="suites/ci.yaml")
    out = tmp_path / "m.csv"
    assert merge_results([a, b, empty_part(tmp_path, "e", "3/3")], out) == {"ok": 3}
    meta = load_results(out).attrs["env"]
    assert meta["merged_shards"] == ["1/3", "2/3", "3/3"] and "shard" not in meta and "empty" not in meta


def test_an_empty_shard_on_another_host_does_not_make_the_merge_several_gpus(tmp_path):
    """The empty shard measured nothing, so its host is no second machine: a calibration or A/A from another GPU
    than the one that ran every case must still be told apart by its UUID."""
    from harness.results.gpu import several_gpus

    a = part(tmp_path, "a", ["c1", "c2"], shard="1/2", suite="suites/ci.yaml", host="node1")
    e = empty_part(tmp_path, "e", "2/2")
    side = json.loads(sidecar_path(e).read_text())
    sidecar_path(e).write_text(json.dumps({**side, "host": "node2"}))
    out = tmp_path / "m.csv"
    merge_results([a, e], out)
    meta = load_results(out).attrs["env"]
    assert [p.get("empty", False) for p in meta["parts"]] == [False, True]
    assert meta["gpus"] == ["A"] and not several_gpus(meta)


def test_a_missing_shard_is_named(tmp_path):
    a = part(tmp_path, "a", ["c1"], shard="1/3")
    b = part(tmp_path, "b", ["c2"], shard="3/3")
    with pytest.raises(HarnessError, match=r"shard 2/3 missing: their cases are in no part"):
        merge_results([a, b], tmp_path / "m.csv")


def test_one_shard_twice_is_refused(tmp_path):
    a = part(tmp_path, "a", ["c1"], shard="1/2")
    b = part(tmp_path, "b", ["c2"], shard="1/2")
    with pytest.raises(HarnessError, match=r"b.csv: shard 1/2 is also .*a.csv: each shard once"):
        merge_results([a, b], tmp_path / "m.csv")


def test_shards_of_two_splits_are_refused(tmp_path):
    a = part(tmp_path, "a", ["c1"], shard="1/2")
    b = part(tmp_path, "b", ["c2"], shard="2/3")
    with pytest.raises(HarnessError, match=r"a shard of 3 but .*a.csv is a shard of 2"):
        merge_results([a, b], tmp_path / "m.csv")


def test_parts_of_two_suites_are_refused(tmp_path):
    a = part(tmp_path, "a", ["c1"], suite="suites/ci.yaml")
    b = part(tmp_path, "b", ["c2"], suite="/elsewhere/suites/library.yaml")
    with pytest.raises(HarnessError, match=r"suite library.yaml but .*a.csv ran suite ci.yaml"):
        merge_results([a, b], tmp_path / "m.csv")
    c = part(tmp_path, "c", ["c3"], suite="/other/checkout/suites/ci.yaml")  # another machine's checkout: one suite
    assert merge_results([a, c], tmp_path / "m.csv") == {"ok": 2}


def test_two_suites_of_one_name_are_two_suites_by_their_content(tmp_path):
    """suites/batched_gemm.yaml and examples/aiter/batched_gemm.yaml: one file name, other entries (issue 43)."""
    from harness.inputs.sources import suite_content

    mine, theirs = tmp_path / "suites", tmp_path / "examples"
    for d, m in ((mine, 16), (theirs, 32)):
        d.mkdir()
        (d / "batched_gemm.yaml").write_text(f"name: s\nentries:\n  - kernel: batched_gemm_bf16\n    M: {m}\n")
    one, two = (suite_content(d / "batched_gemm.yaml") for d in (mine, theirs))
    assert one and two and one != two
    a = part(tmp_path, "a", ["c1"], suite=str(mine / "batched_gemm.yaml"), suite_content=one)
    b = part(tmp_path, "b", ["c2"], suite=str(theirs / "batched_gemm.yaml"), suite_content=two)
    with pytest.raises(HarnessError, match=r"b.csv: its suite \(batched_gemm.yaml\) holds other entries than"):
        merge_results([a, b], tmp_path / "m.csv")
    c = part(tmp_path, "c", ["c3"], suite="/another/checkout/batched_gemm.yaml", suite_content=one)
    assert merge_results([a, c], tmp_path / "m.csv") == {"ok": 2}


def test_the_parts_of_one_gpus_run_share_their_shard(tmp_path):
    a = part(tmp_path, "a", ["c1"], shard="2/4", visible_gpus=[0])
    b = part(tmp_path, "b", ["c2"], "B", shard="2/4", visible_gpus=[1])
    assert merge_results([a, b], tmp_path / "m.csv") == {"ok": 2}


def test_an_empty_part_with_rows_is_refused(tmp_path):
    e = empty_part(tmp_path, "e", "2/2")
    with open(e, "a") as fh:
        fh.write("k,c9" + "," * 10 + "\n")
    with pytest.raises(HarnessError, match="says it is an empty shard but it has 1 rows"):
        merge_results([part(tmp_path, "a", ["c1"], shard="1/2"), e], tmp_path / "m.csv")


def test_merge_replaces_only_what_a_merge_wrote(tmp_path):
    a, b = part(tmp_path, "a", ["c1"], "A"), part(tmp_path, "b", ["c2"], "B")
    other = part(tmp_path, "other", ["c9"])  # a run's results, not a merge's
    before = other.read_bytes()
    with pytest.raises(HarnessError, match=r"--out .*other.csv: exists and is not a file `harness merge` wrote"):
        merge_results([a, b], other)
    assert other.read_bytes() == before
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(HarnessError, match="is not a file `harness merge` wrote"):
        merge_results([a, b], tmp_path / "notes.txt")
    out = tmp_path / "m.csv"
    merge_results([a], out)
    assert merge_results([a, b], out) == {"ok": 2}  # a rerun shard, merged again over the earlier merge


def test_parts_whose_uuid_only_nvidia_smi_gave_count_as_their_gpus(tmp_path):
    """torch gave no UUID (only nvidia-smi's ``before`` state has it): the merged file still lists both GPUs, so
    compare reads it as results of several GPUs; nvidia-smi's [N/A] is no GPU."""
    from harness.results.gpu import several_gpus

    a = part(tmp_path, "a", ["c1"], "", gpu={"name": "H100", "before": {"uuid": "GPU-A"}})
    b = part(tmp_path, "b", ["c2"], "", gpu={"name": "H100", "before": {"uuid": "GPU-B"}})
    merge_results([a, b], tmp_path / "m.csv")
    meta = load_results(tmp_path / "m.csv").attrs["env"]
    assert meta["gpus"] == ["GPU-A", "GPU-B"] and [p["gpu"] for p in meta["parts"]] == ["GPU-A", "GPU-B"]
    assert several_gpus(meta)
    c = part(tmp_path, "c", ["c3"], "[N/A]")
    merge_results([c], tmp_path / "n.csv")
    meta = load_results(tmp_path / "n.csv").attrs["env"]
    assert meta["gpus"] == [] and meta["parts"][0]["gpu"] is None


def test_parts_of_other_kernel_code_or_other_processes_are_refused(tmp_path):
    """A kernel edited between two shards' jobs, or one shard run with --processes 1: one file would mix them."""
    a = part(tmp_path, "a", ["c1"], kernel_content={"k": "1" * 64}, schedule={"processes": 2})
    b = part(tmp_path, "b", ["c2"], kernel_content={"k": "2" * 64}, schedule={"processes": 2})
    with pytest.raises(HarnessError, match=r"b.csv: kernel_content is \{k: 222222222222\} but .*a.csv has"):
        merge_results([a, b], tmp_path / "m.csv")
    c = part(tmp_path, "c", ["c3"], kernel_content={"k": "1" * 64}, schedule={"processes": 1})
    with pytest.raises(HarnessError, match=r"c.csv: schedule.processes is 1 but .*a.csv has 2"):
        merge_results([a, c], tmp_path / "m.csv")


def test_shards_of_other_kernels_merge_with_every_kernel_recorded(tmp_path):
    a = part(tmp_path, "a", ["c1"], kernel_content={"k": "1" * 64}, kernel_sources={"k": "/k.py"})
    b = part(tmp_path, "b", ["c2"], kernel_content={"j": "2" * 64}, kernel_sources={"j": "/j.py"})
    merge_results([a, b], tmp_path / "m.csv")
    meta = load_results(tmp_path / "m.csv").attrs["env"]
    assert meta["kernel_content"] == {"k": "1" * 64, "j": "2" * 64} and set(meta["kernel_sources"]) == {"k", "j"}

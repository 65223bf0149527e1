"""Reading the history back: filters (kernel, case, parameters, stack, Triton, GPU, dates, tags), a kernel's index,
regressions per comparison, verdict changes between two comparisons."""

from __future__ import annotations

from datetime import datetime

import pytest

from harness.errors import HarnessError
from harness.history import queries as q
from harness.history.store import History
from tests.history.files import nightlies


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("nightly")
    path = str(tmp / "h.sqlite")
    nightlies(tmp, path)
    return path


def _rows(db: str, **kw) -> object:
    with History.open(db, write=False) as h, h.reading() as conn:
        return q.results_frame(conn, q.Filter(**kw))


def test_filters(db):
    assert len(_rows(db)) == 36  # 6 nights x 2 stacks x 3 cases
    assert set(_rows(db, kernels=("gem*",))["kernel"]) == {"gemm"}
    assert len(_rows(db, cases=("M1024_N512",))) == 12
    assert set(_rows(db, params={"M": "1024"})["case_id"]) == {"M1024_N512"}
    assert set(_rows(db, params={"dtype": "BF16"})["case_id"]) == {"M16_N512", "M1024_N512"}  # text, any case
    assert len(_rows(db, params={"M": "7"})) == 0
    assert set(_rows(db, stacks=("tot",))["triton_version"]) == {"3.9.0", "3.10.0"}
    assert len(_rows(db, tritons=("3.10*",))) == 9
    assert len(_rows(db, gpu="h100")) == 36 and len(_rows(db, gpu="52e77")) == 36 and len(_rows(db, gpu="MI300")) == 0
    assert len(_rows(db, since=datetime(2026, 11, 14), until=datetime(2026, 11, 15))) == 6
    assert len(_rows(db, tags=("nightly",))) == 36 and len(_rows(db, without_tags=("nightly",))) == 0


def test_kernel_index_and_regression_counts(db):
    with History.open(db, write=False) as h, h.reading() as conn:
        rows = q.results_frame(conn, q.Filter(kernels=("gemm",)))
        comps = q.comparisons_frame(conn)
        verd = q.verdicts_frame(conn, comps["id"].tolist())
    index = q.kernel_index(rows)
    tot = index[index["env_name"] == "tot"]["index"].round(3).tolist()
    assert len(index) == 12 and tot[:3] < tot[3:]  # the step shows in the kernel's index
    counts = q.regression_counts(comps, verd)
    gemm = counts[counts["kernel"] == "gemm"]["regressions"].tolist()
    assert gemm == [0, 0, 0, 1, 1, 1] and counts[counts["kernel"] == "rmsnorm"]["regressions"].sum() == 0


def test_verdict_changes_between_two_comparisons(db):
    with History.open(db, write=False) as h, h.reading() as conn:
        comps = q.comparisons_frame(conn)
        a, b = q.pick_comparison(comps, "#1"), q.pick_comparison(comps, "2026-11-15")
        changes = q.verdict_changes(*(q.verdicts_frame(conn, [int(c["id"])]) for c in (a, b)))
    assert int(b["id"]) == 6
    assert changes[["change", "case_id", "verdict_before", "verdict_after"]].values.tolist() == [
        ["new", "M1024_N512", "ok", "regression"]
    ]
    with pytest.raises(HarnessError, match="no comparison made before 2026-11-01"):
        q.pick_comparison(comps, "2026-11-01")
    with pytest.raises(HarnessError, match="no comparison 99"):
        q.pick_comparison(comps, "99")


def test_run_verdicts_name_the_comparison(db):
    with History.open(db, write=False) as h, h.reading() as conn:
        comps = q.comparisons_frame(conn)
        rv = q.run_verdicts(comps, q.verdicts_frame(conn, comps["id"].tolist()))
    mine = rv[(rv["case_id"] == "M1024_N512") & (rv["run_id"] == 8)]  # night 3's TOT run
    assert mine["verdicts"].tolist() == ["regression (#4)"]


def test_a_gpu_is_stored_and_found_as_compare_reads_it(tmp_path):
    """A sidecar whose UUID only nvidia-smi gave (its ``before`` state, GPU- and upper case) is stored as torch's
    form of it and found by either; nvidia-smi's [N/A] is stored as unknown, not as a GPU named [N/A]."""
    import json

    from tests.history.files import results_file

    db = str(tmp_path / "h.sqlite")
    smi, na = (
        results_file(tmp_path, f"{n}.csv", {("gemm", "M16_N512"): t}, env=n) for n, t in (("smi", 10), ("na", 11))
    )
    for path, gpu in ((smi, {"name": "NVIDIA H100", "before": {"uuid": "GPU-52E77CF8-0000"}}),
                      (na, {"name": "[N/A]", "uuid": "[N/A]"})):  # fmt: skip
        side = path.with_name(path.name + ".env.json")
        side.write_text(json.dumps({**json.loads(side.read_text()), "gpu": gpu}))
    with History.open(db, write=True) as h:
        h.add_results(smi)
        h.add_results(na)
    with History.open(db, write=False) as h, h.reading() as conn:
        stored = q.runs_frame(conn).set_index("env_name")[["gpu_name", "gpu_uuid"]]
    assert stored.loc["smi"].tolist() == ["NVIDIA H100", "52e77cf8-0000"] and stored.loc["na"].isna().all()
    for gpu in ("52e77", "GPU-52E77", "h100"):
        assert _rows(db, gpu=gpu)["env_name"].tolist() == ["smi"], gpu
    assert len(_rows(db, gpu="n/a")) == 0

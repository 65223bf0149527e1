"""Multi-GPU cases run as a worker group: every rank gets the request, the case's time is the slowest rank's,
every rank's time and the skew are kept, a rank that dies fails its case only, and no rank starts with NVLink
multicast possible. Exercised for real on the CPU: torch.distributed over gloo, one process per rank."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from harness.results.load import load_results
from harness.run.cases import rank_columns
from harness.run.group import NO_MULTICAST, combine, rank_env
from harness.worker.group import multicast_problem
from tests.conftest import DATA, ROOT

ENV = {**os.environ, "HARNESS_TEST_PYTHON": sys.executable, "PYTHONPATH": str(ROOT), "COLUMNS": "160"}


def test_ranks_get_the_rendezvous_and_multicast_off():
    env = rank_env(1, 4, 29500, gpus=[4, 5, 6, 7])
    assert (env["RANK"], env["WORLD_SIZE"], env["MASTER_PORT"], env["CUDA_VISIBLE_DEVICES"]) == (
        "1",
        "4",
        "29500",
        "4,5,6,7",
    )
    assert {k: env[k] for k in NO_MULTICAST} == {
        "NCCL_NVLS_ENABLE": "0",
        "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
        "NVSHMEM_DISABLE_NVLS": "1",
    }


def test_a_rank_refuses_to_start_with_multicast_possible(monkeypatch):
    for k, v in NO_MULTICAST.items():
        monkeypatch.setenv(k, v)
    assert multicast_problem() == ""
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "1")
    monkeypatch.delenv("NVSHMEM_DISABLE_NVLS")
    why = multicast_problem()
    assert "refusing to start" in why and "NCCL_NVLS_ENABLE=0" in why and "NVSHMEM_DISABLE_NVLS=1" in why


def test_a_real_rank_without_the_settings_answers_with_the_refusal(tmp_path):
    """The worker itself, started as rank 0 of 2 without the multicast settings: it says why, and never reaches
    torch.distributed."""
    env = {k: v for k, v in ENV.items() if k not in NO_MULTICAST}
    env.update(RANK="0", WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT="1")
    r_fd, w_fd = os.pipe()
    p = subprocess.Popen([sys.executable, str(ROOT / "harness" / "worker" / "main.py"), "--repo", str(ROOT),
                          "--result-fd", str(w_fd)], pass_fds=(w_fd,), env=env, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    os.close(w_fd)
    with os.fdopen(r_fd) as fh:
        answer = json.loads(fh.readline())
    p.wait(timeout=120)
    assert answer["status"] == "runtime_error" and "NVLink multicast must stay off" in answer["error"]


def test_answers_combine_to_the_slowest_rank():
    ans = combine(
        "time", [{"status": "ok", "time_us": 10.0}, {"status": "ok", "time_us": 12.5, "dispatch_us": {"a": 1}}]
    )
    assert ans["time_us"] == 12.5 and ans["rank_times_us"] == [10.0, 12.5] and ans["skew_pct"] == pytest.approx(25.0)
    assert ans["dispatch_us"] == {"a": 1}  # the slowest rank's
    bad = combine("prepare", [{"status": "ok"}, {"status": "incorrect", "error": "relative error 1"}])
    assert bad["status"] == "incorrect" and bad["error"] == "rank 1 of 2: relative error 1"
    assert rank_columns([[10.0, 12.0], [11.0, 13.0], [10.5, 12.5]]) == {"rank_times_us": [10.5, 12.5],
                                                                       "skew_pct": pytest.approx(100 * (12.5 / 10.5 - 1))}  # fmt: skip


def test_lockstep_samples_combine_launch_by_launch_to_the_slowest_rank():
    """With every rank's launch-by-launch samples, launch i ran on all GPUs together: the rep's time is the median
    over launches of the slowest rank's time of that launch (here 11, where the slowest rank's median is 10.5), the
    per-rank medians and their skew are kept, the samples themselves are not, and the self-check is taken."""
    r0 = [10.0, 11.0, 10.0, 11.0, 10.0]
    r1 = [11.0, 10.0, 11.0, 10.0, 10.5]
    ans = combine("time", [{"status": "ok", "time_us": 10.0, "samples_us": r0},
                           {"status": "ok", "time_us": 10.5, "samples_us": r1}])  # fmt: skip
    assert ans["time_us"] == 11.0 and ans["rank_times_us"] == [10.0, 10.5]
    assert ans["skew_pct"] == pytest.approx(5.0) and "samples_us" not in ans
    assert ans["halves_pct"] == pytest.approx(0.0)  # even launches 11, 11, 10.5 -> 11; odd 11, 11 -> 11
    uneven = combine("time", [{"status": "ok", "time_us": 1.0, "samples_us": [1.0] * 5},
                              {"status": "ok", "time_us": 1.0, "samples_us": [1.0] * 4}])  # fmt: skip
    assert uneven["time_us"] == 1.0 and "halves_pct" not in uneven  # no launch-by-launch pairing: medians


@pytest.mark.slow
def test_a_suite_of_multi_rank_cases_runs_in_worker_groups(tmp_path):
    out = tmp_path / "g.csv"
    r = subprocess.run([sys.executable, "-m", "harness", "run", "--env", str(DATA / "cpu-env.yaml"), "--suite",
                        str(DATA / "group.yaml"), "--out", str(out), "--launches", "3", "--timeout", "120"],
                       capture_output=True, text=True, env=ENV, cwd=ROOT, timeout=900)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    df = load_results(out).set_index(["kernel", "case_id"])
    timed = ("ok", "unstable")  # wallclock on a busy 2-core machine
    for key, ranks in ((("allgather_rows", "N8_W2"), 2), (("allgather_rows", "N8_W3"), 3),
                       (("allgather_rows", "N8_W4"), 4), (("allgather_rows", "N8_W8"), 8)):  # fmt: skip
        row = df.loc[key]
        assert row["status"] in timed and row["world_size"] == ranks and row["rel_err"] == 0.0
        assert len(json.loads(row["rank_times_us"])) == ranks
    assert df.loc[("allgather_rows", "N8"), "status"] in timed  # W = 1: the single worker, no group
    assert pd_isna(df.loc[("allgather_rows", "N8"), "rank_times_us"])
    crash = df.loc[("crash_rank", "N8_W2")]
    assert crash["status"] == "runtime_error" and "rank 1 of 2" in crash["error"] and "SIGABRT" in crash["error"]
    slow = df.loc[("slow_rank", "N8_W2")]
    ranks = json.loads(slow["rank_times_us"])
    assert slow["time_us"] >= 20_000 and max(ranks) >= 20_000  # rank 1 sleeps 20 ms a launch
    assert df.loc[("allgather_rows", "N8_W3"), "status"] in timed, "a fresh group after the crash"


def pd_isna(v) -> bool:
    return v is None or v != v or v == ""


def test_every_rank_rebuilds_a_case_any_rank_lacks():
    """A rank that evicted a case its peers kept would rebuild it alone, and the inputs' collective set-up would
    wait for peers that never come (a run on two H100s hung so): the decision is the group's."""
    from collections import OrderedDict

    from harness.worker.session import Session

    class Group:  # rank 0's view of a two-rank group whose rank 1 no longer holds "k/b"
        def __init__(self, peer: dict[str, float]):
            self.peer = peer

        def max_over_ranks(self, value: float) -> float:
            return max(value, self.peer.pop("value"))

    s = Session.__new__(Session)
    s.prepared = OrderedDict({"k/a": None, "k/b": None})
    s.ranks = Group({"value": 1.0})
    assert s._missing("k/b")  # here, but not on rank 1
    s.ranks = Group({"value": 0.0})
    assert not s._missing("k/a")
    s.ranks = None
    assert s._missing("k/c") and not s._missing("k/a")

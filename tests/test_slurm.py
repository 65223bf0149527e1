"""scripts/slurm/ against a real single-node Slurm: munged, slurmctld and slurmd started here (as root, in the
foreground, a temporary state folder, free ports, one node = this host with the CPUs nproc counts), then
scripts/slurm/submit.sh runs the job array (two shards of examples/softmax.yaml under the two venvs, on the CPU
interpreter) and the merge job that depends on it; torn down after. The node also declares four GPUs whose device
files are character devices made here (as /dev/null is: Slurm only checks the kind of file and hands them out), so
Slurm allocates GPUs and sets each task's CUDA_VISIBLE_DEVICES exactly as on a GPU node; the kernels still run on
the CPU. Skipped, saying why, only where Debian's slurm-wlm and munge are not installed (scripts/test.sh installs
them) or the daemons cannot run here."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from harness.inputs.suite import load_suite
from harness.results.load import load_results
from tests.conftest import ROOT

pytestmark = pytest.mark.slow
DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "sinfo")
SUITE = ROOT / "examples" / "softmax.yaml"
VENVS = [ROOT / ".venvs" / name / "bin" / "python" for name in ("golden", "tot")]
need_venvs = pytest.mark.skipif(not all(p.exists() for p in VENVS), reason="run `make test` to build the two venvs")
GPUS = 4


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def _conf(d: Path, host: str, gpus: int) -> str:
    ctld, slurmd = _free_ports(2)
    gres = f" Gres=gpu:{gpus}" if gpus else ""
    return f"""ClusterName=harnesstest
GresTypes=gpu
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld}
SlurmdPort={slurmd}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={d}/munge/socket
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
MinJobAge=3600
NodeName={host} NodeAddr=127.0.0.1 CPUs={len(os.sched_getaffinity(0))}{gres} State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


def _last_words(path: Path) -> str:
    """A daemon's fatal lines, else its errors (less the missing state files of a first start), else its end."""
    lines = path.read_text(errors="replace").splitlines() if path.exists() else []
    fatal = [line for line in lines if "fatal" in line.lower()]
    errors = [line for line in lines if "error" in line.lower() and "state" not in line.lower()]
    return " | ".join((fatal or errors or lines)[-3:])[-400:]


def _wait(what: str, ready, procs: list[subprocess.Popen], logs: list[Path], timeout: float = 60.0) -> None:  # noqa: ANN001
    """Until ``ready()``; a daemon that exits or never gets ready skips the test with its own last words."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if ready():
            return
        dead = [p for p in procs if p.poll() is not None]
        if dead:
            break
        time.sleep(0.5)
    said = "; ".join(f"{log.name}: {w}" for log in logs if (w := _last_words(log)))
    pytest.skip(f"{what} did not start in this container ({said})")


def _gpu_devices(folder: Path, host: str, gres_conf: Path) -> tuple[int, str]:
    """Character devices standing for GPUs (major/minor of /dev/null) and the gres.conf that names them."""
    folder.mkdir()
    try:
        for i in range(GPUS):
            os.mknod(folder / f"nvidia{i}", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    except OSError as err:
        return 0, f"no device files can be made here for Slurm's GPUs ({err.strerror})"
    gres_conf.write_text(f"NodeName={host} Name=gpu File={folder}/nvidia[0-{GPUS - 1}]\n")
    return GPUS, ""


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """A one-node cluster on this host: ``env`` for Slurm's client commands (SLURM_CONF), its ``gpus`` (0 and
    ``no_gpus`` saying why where device files cannot be made)."""
    missing = [b for b in DAEMONS if not shutil.which(b)]
    if missing:
        pytest.skip(
            f"{', '.join(missing)} not found: scripts/test.sh installs Debian's slurm-wlm and munge (it could not)"
        )
    if os.geteuid() != 0:
        pytest.skip("slurmd runs jobs as their users and must run as root; these tests are not root")
    d = tmp_path_factory.mktemp("slurm")
    for sub in ("munge", "state", "spool"):
        (d / sub).mkdir()
    (d / "munge").chmod(0o755)  # the socket's folder: every client must reach it
    key = d / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    host = socket.gethostname().split(".")[0]
    gpus, why = _gpu_devices(d / "dev", host, d / "gres.conf")
    conf = d / "slurm.conf"  # gres.conf beside it
    conf.write_text(_conf(d, host, gpus))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    procs: list[subprocess.Popen] = []
    try:
        sock = d / "munge" / "socket"
        munge_args = [f"--socket={sock}", f"--key-file={key}", f"--pid-file={d}/munge/pid",
                      f"--log-file={d}/munge/log", f"--seed-file={d}/munge/seed"]  # fmt: skip
        with open(d / "munged.out", "wb") as out:
            procs.append(subprocess.Popen(["munged", "-F", "--force", *munge_args], stdout=out, stderr=out))
        _wait("munged", sock.exists, procs, [d / "munged.out"])
        for daemon in ("slurmctld", "slurmd"):
            with open(d / f"{daemon}.out", "wb") as out:
                procs.append(subprocess.Popen([daemon, "-D", "-f", str(conf)], stdout=out, stderr=out, env=env))
            time.sleep(1)

        def idle() -> bool:
            r = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, env=env)
            return r.returncode == 0 and r.stdout.strip() == "idle"

        logs = [d / "slurmd.out", d / "slurmctld.out", d / "slurmd.log", d / "slurmctld.log"]
        _wait("slurmctld + slurmd (node idle)", idle, procs, logs)
        yield {"env": env, "gpus": gpus, "no_gpus": why}
    finally:
        jobs = subprocess.run(["squeue", "-h", "-o", "%A"], capture_output=True, text=True, env=env).stdout.split()
        if jobs:
            subprocess.run(["scancel", *jobs], env=env)
        for p in reversed(procs):  # only the daemons this fixture started, by their own process
            p.terminate()
        for p in reversed(procs):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()


def submit(env: dict[str, str], results: Path, *args: str) -> tuple[str, str]:
    """scripts/slurm/submit.sh on the CPU interpreter (``args``: --shards, --gpus-per-task, ...); the job ids."""
    run_env = {**env, "HARNESS_PYTHON": sys.executable, "PYTHONPATH": str(ROOT), "TRITON_INTERPRET": "1",
               "HARNESS_RUN_ARGS": "--launches 1 --reps 1"}  # fmt: skip
    r = subprocess.run(
        ["bash", "scripts/slurm/submit.sh", "--suite", str(SUITE), "--results", str(results), "--golden-env", "envs/venv-golden.yaml", "--tot-env", "envs/venv-tot.yaml", "--no-fail", *args],
        capture_output=True, text=True, env=run_env, cwd=ROOT, timeout=60,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    array = re.search(r"array job: (\d+)", r.stdout)
    merge = re.search(r"merge job: (\d+)", r.stdout)
    assert array and merge, r.stdout
    return array.group(1), merge.group(1)


def finished(env: dict[str, str], *jobs: str, timeout: float = 900.0) -> dict[str, tuple[str, str]]:
    """Poll squeue until ``jobs`` (array tasks included) left the queue; then each one's state and exit code
    (``scontrol show job``: MinJobAge keeps them an hour), keyed by job id or ``ARRAY_TASK``."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        r = subprocess.run(["squeue", "-h", "-j", ",".join(jobs)], capture_output=True, text=True, env=env)
        if r.returncode == 0 and not r.stdout.strip():
            break
        time.sleep(2)
    else:
        pytest.fail(f"jobs {jobs} still queued after {timeout:.0f} s")
    states = {}
    for job in jobs:
        out = subprocess.run(["scontrol", "-o", "show", "job", job], capture_output=True, text=True, env=env).stdout
        for line in out.splitlines():
            f = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
            key = f"{f['ArrayJobId']}_{f['ArrayTaskId']}" if f.get("ArrayTaskId") else f["JobId"]
            states[key] = (f["JobState"], f["ExitCode"])
    return states


def _check_merged(results: Path, logs: dict[str, str]) -> list[str]:
    """The merged files hold every case of the suite once, compare judged them all, the report exists; returns
    the case ids of each shard's part (asserted non-empty and together the suite)."""
    wanted = sorted(c.case_id for c in load_suite(SUITE))
    shards = [sorted(load_results(results / f"shard-{i}" / "golden.csv")["case_id"]) for i in (1, 2)]
    assert all(shards) and sorted(shards[0] + shards[1]) == wanted  # two real parts, together the suite
    for env, version in (("golden", "3.6.0"), ("tot", "3.9.0")):
        df = load_results(results / f"{env}.csv")
        assert sorted(df["case_id"]) == wanted and df["status"].isin(["ok", "unstable"]).all(), logs
        meta = df.attrs["env"]
        assert meta["triton"]["version"] == version
        assert [Path(p["path"]).parent.name for p in meta["parts"]] == ["shard-1", "shard-2"]
    table = pd.read_csv(results / "compare.csv")  # compare ran on the merged files: every case judged
    assert sorted(table["case_id"]) == wanted and table["verdict"].notna().all()
    meta = json.loads((results / "compare.csv.meta.json").read_text())
    assert meta["golden"]["path"].endswith("golden.csv") and meta["tot"]["env"]["triton"]["version"] == "3.9.0"
    assert "3.9.0" in (results / "compare.md").read_text()
    assert (results / "report" / "index.html").is_file()
    return shards


def _run(cluster: dict, results: Path, *args: str) -> dict[str, str]:
    """Submit, wait, assert the two tasks and the merge completed with exit 0; the logs."""
    array, merge = submit(cluster["env"], results, *args)
    states = finished(cluster["env"], array, merge)
    logs = {p.name: p.read_text()[-1500:] for p in (results / "logs").glob("*.out")}
    assert states == {f"{array}_1": ("COMPLETED", "0:0"), f"{array}_2": ("COMPLETED", "0:0"),
                      merge: ("COMPLETED", "0:0")}, logs  # fmt: skip
    return logs


def _knobs_gpu(part: Path) -> str:
    """The CUDA_VISIBLE_DEVICES a part's worker ran with (its sidecar's knobs)."""
    return load_results(part).attrs["env"]["knobs"].get("CUDA_VISIBLE_DEVICES", "")


@need_venvs
def test_a_job_array_of_shards_then_the_merge_job(slurm, tmp_path):
    """One GPU per task (the default; none where the cluster has no GPUs): the workers inherit the one Slurm set."""
    results = tmp_path / "results"
    per_task = 1 if slurm["gpus"] else 0
    logs = _run(slurm, results, "--shards", "2", "--gpus-per-task", str(per_task))
    _check_merged(results, logs)
    for i in (1, 2):
        m = re.search(rf"shard {i}/2 of .* GPUs (\S+),", logs[f"shard-{i}.out"])
        assert m, logs
        if per_task:
            assert m.group(1) in {str(g) for g in range(GPUS)}
            assert _knobs_gpu(results / f"shard-{i}" / "golden.csv") == m.group(1)
            assert _knobs_gpu(results / f"shard-{i}" / "tot.csv") == m.group(1)
        else:
            assert m.group(1) == "none"


@need_venvs
def test_each_task_measures_both_stacks_on_the_gpus_slurm_gave_it(slurm, tmp_path):
    """Two GPUs per task: Slurm hands each task two of the node's four; the task spreads its shard over exactly
    those (one part per GPU, both stacks on each), and the two tasks share none."""
    if not slurm["gpus"]:
        pytest.skip(slurm["no_gpus"])
    results = tmp_path / "results"
    logs = _run(slurm, results, "--shards", "2", "--gpus-per-task", "2")
    _check_merged(results, logs)
    given = []
    for i in (1, 2):
        m = re.search(r"GPUs (\S+),", logs[f"shard-{i}.out"])
        assert m, logs
        gpus = m.group(1).split(",")
        assert len(gpus) == 2
        for env in ("golden", "tot"):
            parts = sorted((results / f"shard-{i}" / f"{env}.csv.parts").glob("gpu*.csv"))
            assert [p.stem for p in parts] == ["gpu0", "gpu1"]  # --gpus all: the task's GPUs, numbered as it sees them
            assert [_knobs_gpu(p) for p in parts] == gpus  # each worker shown one GPU of the task's, in Slurm's order
        given += gpus
    assert sorted(given) == [str(g) for g in range(GPUS)]  # no GPU given to both tasks


@need_venvs
def test_the_merge_job_names_a_shard_that_did_not_finish(slurm, tmp_path):
    results = tmp_path / "results"
    array, merge = submit(slurm["env"], results, "--shards", "2", "--gpus-per-task", "0", "--only", "1")
    states = finished(slurm["env"], array, merge)  # as if shard 2's task had died
    assert states[f"{array}_1"] == ("COMPLETED", "0:0")
    assert states[merge] == ("FAILED", "2:0")  # afterany: the merge ran although shard 2 never did, and refused
    log = (results / "logs" / "merge.out").read_text()
    assert "2 parts missing" in log and "shard-2/golden.csv shard-2/tot.csv" in log and "--only" in log
    assert not (results / "golden.csv").exists()

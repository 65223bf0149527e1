"""scripts/slurm/ against a real single-node Slurm: munged, slurmctld and slurmd started here (as root, in the
foreground, a temporary state folder, free ports, one node = this host with its CPUs), then scripts/slurm/submit.sh
runs the CPU-interpreter version of the job array (no GPU; two shards of examples/softmax.yaml under the two venvs)
and the merge job that depends on it; torn down after. Skipped, saying why, only where Debian's slurm-wlm and munge
are not installed (scripts/test.sh installs them) or the daemons cannot run here."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
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


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def _conf(d: Path, host: str) -> str:
    ctld, slurmd = _free_ports(2)
    return f"""ClusterName=harnesstest
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
NodeName={host} NodeAddr=127.0.0.1 CPUs={os.cpu_count() or 1} State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


def _tail(path: Path, n: int = 5) -> str:
    lines = path.read_text(errors="replace").splitlines() if path.exists() else []
    return " | ".join(line for line in lines if "error" in line.lower())[-600:] or " | ".join(lines[-n:])


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
    said = "; ".join(f"{log.name}: {_tail(log)}" for log in logs)
    pytest.skip(f"{what} did not start in this container ({said})")


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """The environment for Slurm's client commands (SLURM_CONF) of a one-node cluster on this host."""
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
    conf = d / "slurm.conf"
    conf.write_text(_conf(d, host))
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

        logs = [d / "slurmctld.log", d / "slurmd.log", d / "slurmctld.out", d / "slurmd.out"]
        _wait("slurmctld + slurmd (node idle)", idle, procs, logs)
        yield env
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
    run_env = {**env, "HARNESS_PYTHON": sys.executable, "PYTHONPATH": str(ROOT), "TRITON_INTERPRET": "1",
               "HARNESS_RUN_ARGS": "--launches 1"}  # fmt: skip
    r = subprocess.run(
        ["bash", "scripts/slurm/submit.sh", "--suite", str(SUITE), "--results", str(results), "--gpus-per-task", "0",
         "--golden-env", "envs/venv-golden.yaml", "--tot-env", "envs/venv-tot.yaml", "--no-fail", *args],
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


@pytest.mark.skipif(not all(p.exists() for p in VENVS), reason="run `make test` to build the two venvs")
def test_a_job_array_of_shards_then_the_merge_job(slurm, tmp_path):
    results = tmp_path / "results"
    array, merge = submit(slurm, results, "--shards", "2")
    states = finished(slurm, array, merge)
    logs = {p.name: p.read_text()[-1500:] for p in (results / "logs").glob("*.out")}
    assert states == {f"{array}_1": ("COMPLETED", "0:0"), f"{array}_2": ("COMPLETED", "0:0"),
                      merge: ("COMPLETED", "0:0")}, logs  # fmt: skip
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
    assert "shard 1/2 of" in logs["shard-1.out"] and "shard 2/2 of" in logs["shard-2.out"]


@pytest.mark.skipif(not all(p.exists() for p in VENVS), reason="run `make test` to build the two venvs")
def test_the_merge_job_names_a_shard_that_did_not_finish(slurm, tmp_path):
    results = tmp_path / "results"
    array, merge = submit(slurm, results, "--shards", "2", "--only", "1")  # as if shard 2's task had died
    states = finished(slurm, array, merge)
    assert states[f"{array}_1"] == ("COMPLETED", "0:0")
    assert states[merge] == ("FAILED", "2:0")  # afterany: the merge ran although shard 2 never did, and refused
    log = (results / "logs" / "merge.out").read_text()
    assert "2 parts missing" in log and "shard-2/golden.csv shard-2/tot.csv" in log and "--only" in log
    assert not (results / "golden.csv").exists()

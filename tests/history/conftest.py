"""A real PostgreSQL server for the history tests: Debian's ``postgresql`` package, ``initdb`` into a temporary
folder, listening on 127.0.0.1 on a free port (no Unix socket), password authentication, stopped and removed
after the session. Skipped, with the reason, only where the server's binaries are not installed (scripts/test.sh
installs them)."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

USER = "harness_user"
PASSWORD = "pw-Secret-4711"  # the tests assert it never appears in any output


def _bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if found:
        return Path(found[-1]).parent
    which = shutil.which("initdb")
    return Path(which).parent if which else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, port: int):
        self.port = port
        self._n = 0

    def url(self, db: str = "postgres", password: str = PASSWORD) -> str:
        return f"postgresql://{USER}:{password}@127.0.0.1:{self.port}/{db}"

    def new_database(self) -> str:
        """A fresh, empty database; its URL."""
        import psycopg

        self._n += 1
        name = f"t{os.getpid()}_{self._n}"
        with psycopg.connect(
            host="127.0.0.1", port=self.port, user=USER, password=PASSWORD, dbname="postgres", autocommit=True
        ) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


@pytest.fixture(scope="session")
def postgres():
    bindir = _bin_dir()
    if bindir is None:
        pytest.skip("PostgreSQL server not installed (apt-get install postgresql; scripts/test.sh does)")
    as_user: list[str] = []
    if os.geteuid() == 0:  # the server refuses to run as root: run it as Debian's postgres user
        if shutil.which("runuser") is None:
            pytest.skip("running as root without runuser: cannot start PostgreSQL as another user")
        try:
            import pwd

            pw = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no 'postgres' user to run the server as")
        as_user = ["runuser", "-u", "postgres", "--"]
    root = Path(tempfile.mkdtemp(prefix="harness-pg-"))
    data, pwfile, log = root / "data", root / "pw", root / "log"
    pwfile.write_text(PASSWORD)
    if as_user:
        os.chown(root, pw.pw_uid, pw.pw_gid)
        os.chown(pwfile, pw.pw_uid, pw.pw_gid)
    port = _free_port()
    run = lambda *a: subprocess.run([*as_user, *a], check=True, capture_output=True, text=True)  # noqa: E731
    try:
        run(
            str(bindir / "initdb"),
            "-D",
            str(data),
            "-U",
            USER,
            f"--pwfile={pwfile}",
            "--auth=scram-sha-256",
            "-E",
            "UTF8",
        )
        with open(data / "postgresql.conf", "a") as conf:
            conf.write(f"listen_addresses = '127.0.0.1'\nport = {port}\nunix_socket_directories = ''\nfsync = off\n")
        run(str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-t", "60", "start")
    except subprocess.CalledProcessError as err:
        shutil.rmtree(root, ignore_errors=True)
        pytest.fail(f"could not start PostgreSQL: {err.stderr or err.stdout}")
    try:
        yield Server(port)
    finally:
        subprocess.run(
            [*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"], capture_output=True
        )
        shutil.rmtree(root, ignore_errors=True)

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

# the tests run on the CPU: Triton's interpreter, set before any test imports a kernel (kernels.common reads it
# once, at import); tests that compile for a real GPU target do it in a subprocess without it
os.environ.setdefault("TRITON_INTERPRET", "1")

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

#: seconds each test took (setup and teardown included) on the project's 2-core machine, the tests over a second:
#: the suite starts with the longest modules, so that the last to start on a worker is a short one. Rewritten by
#: ``python scripts/test_durations.py JUNIT.xml`` from a run with ``--junitxml`` (docs/test-durations.md).
DURATIONS = Path(__file__).resolve().parent / "durations.json"

HEADER = "kernel,case_id,B,M,N,K,dtype,time_us,status,config,error\n"


def committed_reports() -> Path | None:
    """The committed reports with their bulk data, as reports/README.md's data commits hold them: extracted once
    (``git archive``) into .pytest_cache/reports-data/, then shared by every test and xdist worker. None where the
    commits are not in this clone (a shallow clone, an unpacked source archive): the tests that need it skip."""
    import contextlib
    import re
    import shutil
    import subprocess
    import tempfile

    rows = re.findall(r"^\| `([^`]+)` \| `([0-9a-f]{40})` \|", (ROOT / "reports" / "README.md").read_text(), re.M)
    key = "-".join(sorted({sha[:12] for _, sha in rows}))
    dest = ROOT / ".pytest_cache" / "reports-data" / key
    if (dest / ".complete").exists():
        return dest / "reports"
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent))
    try:
        for name, sha in rows:
            tar = subprocess.run(["git", "-C", str(ROOT), "archive", sha, f"reports/{name}"], capture_output=True)
            if tar.returncode:
                return None
            subprocess.run(["tar", "-x", "-C", str(tmp)], input=tar.stdout, check=True)
        (tmp / ".complete").touch()
        with contextlib.suppress(OSError):  # another worker may have got there first: its copy is the same
            tmp.rename(dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest / "reports" if (dest / ".complete").exists() else None


#: the committed reports with their data (committed_reports), or None: tests reading them skip
REPORTS = committed_reports()
needs_reports = pytest.mark.skipif(REPORTS is None, reason="the reports' data commits are not in this clone")
#: where those tests read the reports from (the tree's own folder when the data is not at hand: they skip then)
REPORTS_DIR = REPORTS if REPORTS is not None else ROOT / "reports"


def cli(capsys, *args: object) -> tuple[int, str, str]:
    """``harness ARGS`` in this process, through the CLI's own ``main``: (exit code, stdout, stderr). For a command
    that needs no process of its own (a refusal, a comparison): a ``python -m harness`` subprocess first spends
    ~1.5 s of CPU importing harness, typer and pandas."""
    from harness.cli import main

    with pytest.raises(SystemExit) as ex:
        main([str(a) for a in args])
    out, err = capsys.readouterr()
    return ex.value.code or 0, out, err


@pytest.fixture
def write(tmp_path):
    """write(name, text_or_bytes) -> path"""

    def _write(name: str, content: str | bytes) -> Path:
        p = tmp_path / name
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content, encoding="utf-8", newline="")
        return p

    return _write


def pytest_collection_modifyitems(config, items):
    """The modules longest first (by :data:`DURATIONS`), each module's tests together and in their order.

    scripts/test.sh runs the suite on pytest-xdist workers with ``--dist loadfile --no-loadscope-reorder``: a module
    goes to one worker whole, so a module-scoped fixture (a Slurm cluster, a browser, a batch of interpreter
    subprocesses, the PostgreSQL server of tests/history/test_postgres.py) is set up once, as without xdist, and the
    modules are handed out in this order, so that the last to start on a worker is a short one."""
    known = json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}
    cost: dict[str, float] = {}
    first: dict[str, int] = {}
    for i, item in enumerate(items):
        module = item.nodeid.split("::")[0]
        cost[module] = cost.get(module, 0.0) + known.get(item.nodeid, 0.0)
        first.setdefault(module, i)
    items.sort(key=lambda item: (-cost[item.nodeid.split("::")[0]], first[item.nodeid.split("::")[0]]))


def pytest_report_header(config):
    return f"TRITON_INTERPRET={os.environ.get('TRITON_INTERPRET', '')}"

"""docs/writing-kernels.md shows a complete kernel and its suite: the very files in examples/, which must load,
run under both Triton stacks and go through compare, markdown and report."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from harness.inputs.kernel import load_kernel
from tests.conftest import ROOT

DOC = ROOT / "docs" / "writing-kernels.md"
VENVS = {side: ROOT / ".venvs" / side / "bin" / "python" for side in ("golden", "tot")}


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC.read_text(), re.S)


def test_the_doc_shows_the_example_files_verbatim():
    assert blocks("python")[0] == (ROOT / "examples" / "softmax.py").read_text()
    assert blocks("yaml")[0] == (ROOT / "examples" / "softmax.yaml").read_text()
    assert len((ROOT / "examples" / "softmax.py").read_text().splitlines()) <= 50  # a file a user copies


def test_the_example_declares_what_the_doc_says():
    k = load_kernel(str(ROOT / "examples" / "softmax.py"))
    p = k.spec.case_params({"M": 4, "N": 100}, "doc")
    assert k.name == "softmax" and k.spec.peak_of(p) == "memory" and k.spec.bytes_of(p) == 1600.0
    assert k.spec.case_id(p) == "M4_N100" and k.spec.default_config == {"num_warps": 4}


@pytest.mark.slow
@pytest.mark.skipif(not all(p.exists() for p in VENVS.values()), reason="needs .venvs/golden and .venvs/tot")
def test_the_example_runs_under_both_stacks_and_renders(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100"}
    env.pop("TRITON_INTERPRET", None)

    def harness(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, env=env,
                              cwd=ROOT, timeout=600)  # fmt: skip

    g, t = tmp_path / "golden.csv", tmp_path / "tot.csv"
    r = harness("run", "--env", "envs/venv-golden.yaml", "--suite", "examples/softmax.yaml", "--out", str(g),
                "--with-env", "envs/venv-tot.yaml", "--with-out", str(t), "--launches", "1", "--reps", "1")  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    for out in (g, t):
        side = json.loads(out.with_name(out.name + ".env.json").read_text())
        assert side["kernels"]["softmax"]["peak"] == "memory"
    cmp = tmp_path / "compare.csv"
    r = harness("compare", str(g), str(t), "--out", str(cmp), "--markdown", str(tmp_path / "c.md"))
    assert r.returncode == 0 and "6 cases" in r.stdout, r.stderr  # wallclock: the verdicts themselves are noise
    md = (tmp_path / "c.md").read_text()
    assert "| softmax | M8_N256_fp32_cfg-w1 | fp32 |" in md
    r = harness("report", "--compare", str(cmp), "--out", str(tmp_path / "report"))
    assert r.returncode == 0, r.stderr
    page = (tmp_path / "report" / "index.html").read_text()
    assert "softmax by N" in page and "<h3>softmax</h3>" in page

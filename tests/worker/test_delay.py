"""harness calibrate's injected slowdown (worker/delay.py): inside the timed window, of the length asked."""

from __future__ import annotations

import json
import time

import pytest

from harness.worker.delay import delay_of, delayed


def test_on_the_interpreter_a_busy_wait_of_the_length_asked():
    calls = []
    op = delayed(lambda: calls.append(1) or "out", 3000.0, "interp")
    t0 = time.perf_counter()
    assert op() == "out"
    took_us = (time.perf_counter() - t0) * 1e6
    assert calls == [1] and took_us >= 3000.0


def test_no_delay_is_the_op_itself_and_rocm_is_refused():
    def op():
        return None

    assert delayed(op, 0.0, "cuda") is op
    with pytest.raises(RuntimeError, match="needs an NVIDIA GPU or the CPU interpreter, not hip"):
        delayed(op, 2.0, "hip")


def test_the_delay_comes_from_the_env(tmp_path, monkeypatch):
    case = {"kernel": "k", "case_id": "M16"}
    monkeypatch.delenv("HARNESS_DELAY_FILE", raising=False)
    monkeypatch.delenv("HARNESS_DELAY_US", raising=False)
    assert delay_of(case) == 0.0
    monkeypatch.setenv("HARNESS_DELAY_US", "8")
    assert delay_of(case) == 8.0
    table = tmp_path / "d.json"
    table.write_text(json.dumps({"k/M16": 1.25}))
    monkeypatch.setenv("HARNESS_DELAY_FILE", str(table))
    assert delay_of(case) == 1.25 and delay_of({"kernel": "k", "case_id": "M32"}) == 0.0


def test_cupti_counts_the_delay_kernel_as_the_ops_own():
    """The spin kernel is named outside the helpers' prefix: CUPTI timing sums it into the op, as it sums a
    split-K's reduce (timing.attribute_dispatches over a profiler's kernel list)."""
    from harness.worker.group import HELPER_PREFIX
    from harness.worker.timing import FLUSH_NAME, attribute_dispatches

    name = "calibrate_delay"
    assert not name.startswith(HELPER_PREFIX)
    events = [(FLUSH_NAME, 50.0), ("gemm", 10.0), (name, 8.0), (FLUSH_NAME, 50.0), ("gemm", 10.2), (name, 8.1)]
    times, per = attribute_dispatches(events, FLUSH_NAME, 2)
    assert times == pytest.approx([18.0, 18.3]) and per["1:calibrate_delay"] == pytest.approx(8.05)


@pytest.mark.slow
def test_the_spin_kernel_compiles_for_hopper_and_reads_the_global_timer():
    """No GPU here: the kernel is compiled for sm90 (Triton's own ptxas) in a process without the interpreter,
    and its PTX spins on %globaltimer."""
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    code = (
        "import triton\n"
        "from triton.backends.compiler import GPUTarget\n"
        "from triton.compiler import ASTSource\n"
        "from harness.worker.delay import _spin_kernel\n"
        "c = triton.compile(ASTSource(_spin_kernel(), {'ns': 'i64'}, {}), target=GPUTarget('cuda', 90, 32))\n"
        "ptx = c.asm['ptx']\n"
        "print(ptx.count('%globaltimer'), 'bra' in ptx, '.entry calibrate_delay(' in ptx)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.update(PYTHONPATH=str(ROOT), TRITON_DEFAULT_FP_FUSION="1")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    reads, loops, named = r.stdout.split()
    assert int(reads) >= 2 and loops == "True" and named == "True"

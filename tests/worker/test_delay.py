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

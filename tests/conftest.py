from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# the tests run on the CPU: Triton's interpreter, set before any test imports a kernel (kernels._common reads it
# once, at import); tests that compile for a real GPU target do it in a subprocess without it
os.environ.setdefault("TRITON_INTERPRET", "1")

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

HEADER = "kernel,case_id,B,M,N,K,dtype,time_us,status,config,error\n"


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


def pytest_report_header(config):
    return f"TRITON_INTERPRET={os.environ.get('TRITON_INTERPRET', '')}"

"""lab/nvlink_bandwidth.py's CPU-checkable parts: the peer-store kernel (under Triton 3.9's interpreter, which
runs its grid-stride loop; the measurement itself needs two GPUs) and the ceilings YAML the report reads."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
import triton
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "lab"))

import nvlink_bandwidth as nv  # noqa: E402


@pytest.mark.skipif(triton.__version__.startswith("3.6"), reason="Triton 3.6's interpreter: a runtime loop bound")
def test_store_kernel_writes_the_buffer_its_table_points_at():
    src = torch.randn(5000).to(torch.float16)
    dst = torch.zeros(5000, dtype=torch.float16)
    nv.store_to_peer(src, nv.peer_table(dst, "cpu"), programs=2, block=1024)
    assert torch.equal(dst, src), "every element, through the grid-stride loop of 2 programs x 1024"


def test_peer_table_refuses_what_the_kernel_cannot_address():
    with pytest.raises(ValueError):
        nv.peer_table(torch.zeros(8, dtype=torch.float32), "cpu")


def test_ceilings_yaml_gives_the_slowest_gpu_s_egress_and_every_pair():
    pairs = {
        "0->1": {"copy": 371.25, "store": 402.5, "peer_access": True},
        "1->0": {"copy": 370.0, "store": "RuntimeError: no peer access", "peer_access": False},
    }
    text = nv.ceilings_yaml(pairs, [355.0, 349.44], "NVIDIA H200", 256)
    assert yaml.safe_load(text) == {"nvlink_gbs": 349.4}
    assert "0->1: copy 371.2, store 402.5, peer access True" in text
    assert "1->0: copy 370.0, store RuntimeError: no peer access" in text
    assert "GPU 0: 355.0, GPU 1: 349.4" in text

"""A sidecar's GPU, read one way for every check: torch's UUID and nvidia-smi's name one GPU alike, nvidia-smi's
[N/A] is unknown, and a merged file names no one physical GPU."""

from __future__ import annotations

import json

from harness.results.gpu import gpu_name, gpu_uuid, several_gpus
from tests.conftest import DATA

UUID = "53753b43-965b-33c5-4d80-63aa25a91c21"


def test_torch_and_nvidia_smi_name_one_gpu_alike():
    env = json.loads((DATA / "aiter-h200-aa" / "golden.csv.env.json").read_text())
    assert (gpu_name(env), gpu_uuid(env)) == ("NVIDIA H200", UUID)
    smi_only = {"gpu": {"before": env["gpu"]["before"]}}  # torch gave no UUID (nor name)
    assert (gpu_name(smi_only), gpu_uuid(smi_only)) == ("NVIDIA H200", UUID)


def test_nvidia_smis_not_available_is_unknown():
    env = {"gpu": {"name": "[N/A]", "uuid": " [Not Supported] ", "before": {"name": "NVIDIA H100", "uuid": "[N/A]"}}}
    assert (gpu_name(env), gpu_uuid(env)) == ("", "")
    assert (gpu_name({}), gpu_uuid({"gpu": "H100"})) == ("", "")


def test_a_merge_of_several_gpus_or_hosts_is_told_from_shards_of_one_gpu():
    one = {"gpus": ["A"], "parts": [{"host": "n1", "gpu": "A"}, {"host": "n1", "gpu": "A"}]}
    assert not several_gpus(one) and not several_gpus({})
    assert several_gpus({"gpus": ["A", "B"], "parts": [{"host": "n1", "gpu": "A"}, {"host": "n1", "gpu": "B"}]})
    assert several_gpus({"gpus": [], "parts": [{"host": "n1", "gpu": None}, {"host": "n2", "gpu": None}]})

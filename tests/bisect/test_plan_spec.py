"""Finding the env spec a comparison's run used when the file it recorded is gone (bisect and flip)."""

from __future__ import annotations

import pytest

from harness.bisect.plan import find_spec
from harness.errors import HarnessError


def test_a_spec_of_the_same_name_is_taken_only_if_it_is_the_same(tmp_path, monkeypatch):
    """A stranger's test: with the recorded spec moved away, flip silently measured the repository's
    envs/tot.yaml, another spec of the same name, and reported "nothing to flip"."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "envs").mkdir()
    (tmp_path / "envs" / "tot.yaml").write_text("name: tot\npython: python3\nenv: {FLAG: '1'}\n")
    same = {"file": str(tmp_path / "gone" / "tot.yaml"), "name": "tot", "env": {"TRITON_DEFAULT_FP_FUSION": "1",
            "FLAG": "1"}, "pythonpath": [], "timing": "auto", "venv": None}  # fmt: skip
    assert find_spec({"env_spec": same}, None).name == "tot"
    other = dict(same, env={"TRITON_DEFAULT_FP_FUSION": "1", "FLAG": "2"})
    with pytest.raises(
        HarnessError, match=r"envs/tot.yaml: not the env spec the comparison's tot ran .* its env differ"
    ):
        find_spec({"env_spec": other}, None)

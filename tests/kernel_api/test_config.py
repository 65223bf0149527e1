"""harness/kernel_api/configs.py: AITER's lookup rule (buckets, per-shape files), launch options per backend,
shipped files."""

from __future__ import annotations

import pytest

from harness.kernel_api.configs import ConfigError, pick_bucket, resolve, split_config


def test_bucket_rule():
    b = {"M_LEQ_16": 1, "M_LEQ_256": 2, "M_GEQ_4096": 3, "any": 4}
    assert [pick_bucket(b, m) for m in (1, 16, 17, 256, 257, 4095, 4096, 10**6)] == [
        "M_LEQ_16",
        "M_LEQ_16",
        "M_LEQ_256",
        "M_LEQ_256",
        "any",
        "any",
        "M_GEQ_4096",
        "M_GEQ_4096",
    ]
    assert pick_bucket({"M_LEQ_16": 1}, 17) is None


def test_resolve_specific_file_replaces_default(tmp_path):
    (tmp_path / "sm90-X.json").write_text('{"any": {"BLOCK_SIZE_M": 64}}')
    (tmp_path / "sm90-X-N=512-K=128.json").write_text('{"M_LEQ_32": {"BLOCK_SIZE_M": 16}, "any": {"BLOCK_SIZE_N": 8}}')
    r = resolve("X", "sm90", 16, "N=512-K=128", directory=tmp_path)
    assert r.config == {"BLOCK_SIZE_M": 16} and r.tuned and "N=512-K=128" in r.file
    r = resolve("X", "sm90", 64, "N=512-K=128", directory=tmp_path)
    assert r.config == {"BLOCK_SIZE_N": 8} and not r.tuned  # 'any' of the N/K file: not tuned, never merged
    r = resolve("X", "sm90", 64, "N=256-K=128", directory=tmp_path, overrides={"num_warps": 8})
    assert r.config == {"BLOCK_SIZE_M": 64, "num_warps": 8} and r.file == "sm90-X.json"
    with pytest.raises(ConfigError, match="no default config"):
        resolve("X", "gfx950", 1, "N=1-K=1", directory=tmp_path)


def test_backend_only_options_never_reach_nvidia():
    cfg = {
        "BLOCK_SIZE_M": 64,
        "num_warps": 8,
        "num_stages": 2,
        "waves_per_eu": 2,
        "matrix_instr_nonkdim": 16,
        "kpack": 1,
    }
    meta, opts = split_config(cfg, "cuda")
    assert meta == {"BLOCK_SIZE_M": 64} and opts == {"num_warps": 8, "num_stages": 2}
    meta, opts = split_config(cfg, "hip")
    assert opts["waves_per_eu"] == 2 and opts["kpack"] == 1


def test_every_shipped_config_file_parses():
    from harness.kernel_api.configs import CONFIG_DIR, _read

    files = sorted(CONFIG_DIR.glob("*.json"))
    assert len(files) >= 20
    for f in files:
        assert _read(str(f))


def test_buckets_on_another_parameter(tmp_path):
    """A kernel's ConfigLookup may bucket on any parameter (attention: the sequence length S)."""
    (tmp_path / "sm90-ATTN.json").write_text(
        '{"S_LEQ_1024": {"BLOCK_M": 64}, "S_GEQ_8192": {"BLOCK_M": 256}, "any": {}}'
    )
    (tmp_path / "sm90-ATTN-D=128.json").write_text('{"S_LEQ_512": {"BLOCK_M": 32}, "any": {"BLOCK_M": 128}}')
    assert resolve("ATTN", "sm90", 512, "D=64", "S", tmp_path).config == {"BLOCK_M": 64}
    assert resolve("ATTN", "sm90", 16384, "", "S", tmp_path).config == {"BLOCK_M": 256}
    assert resolve("ATTN", "sm90", 4096, "D=128", "S", tmp_path).bucket == "any"
    with pytest.raises(ConfigError, match="buckets are on S, but this kernel looks up by M"):
        resolve("ATTN", "sm90", 16, "", "M", tmp_path)
    (tmp_path / "sm90-MIX.json").write_text('{"S_LEQ_1": {}, "M_LEQ_1": {}}')
    with pytest.raises(ConfigError, match="buckets on more than one parameter"):
        resolve("MIX", "sm90", 1, "", "M", tmp_path)


def test_a_tuned_for_note_is_skipped_by_the_lookup_and_the_suite_checks(tmp_path, monkeypatch):
    """`harness retune` records the Triton a bucket was tuned for in a ``_tuned_for`` note: the lookup and the
    suite's config-file checks read past it, and past any key starting with "_" (AITER's "_note"); another key
    that is not a bucket is still refused (a typo'd bucket would silently serve another config)."""
    import shutil

    from harness.errors import HarnessError
    from harness.inputs.suite import load_suite
    from harness.kernel_api.configs import CONFIG_DIR, bad_config_values, unknown_config_keys
    from harness.retune.configtext import with_note
    from tests.conftest import ROOT

    f = tmp_path / "sm90-X.json"
    f.write_text(with_note('{\n  "any": {"BLOCK_SIZE_M": 64}\n}\n', "any", {"triton": "3.9.0", "gpu": "H100"}))
    assert resolve("X", "sm90", 5, directory=tmp_path).config == {"BLOCK_SIZE_M": 64}
    assert unknown_config_keys(f, ("BLOCK_SIZE_M",)) == [] and bad_config_values(f) == []
    (tmp_path / "sm90-Y.json").write_text('{"_note": "AITER writes these", "_tuned": {"any": {}}, "any": {}}')
    assert resolve("Y", "sm90", 5, directory=tmp_path).config == {}  # notes: any key starting with "_"
    (tmp_path / "sm90-Z.json").write_text('{"M_LEQ_16x": {}, "any": {}}')
    with pytest.raises(ConfigError, match="unknown bucket key 'M_LEQ_16x'"):
        resolve("Z", "sm90", 5, directory=tmp_path)
    configs = tmp_path / "configs"
    shutil.copytree(CONFIG_DIR, configs)
    a8w8 = configs / "sm90-BATCHED_GEMM-A8W8-N=512-K=128.json"
    a8w8.write_text(with_note(a8w8.read_text(), "any", {"triton": "3.9.0"}))
    monkeypatch.setenv("HARNESS_CONFIG_DIR", str(configs))
    assert load_suite(ROOT / "suites" / "batched_gemm.yaml")  # the note passes the suite's checks
    a8w8.write_text(a8w8.read_text().replace('"_tuned_for"', '"_note"'))
    assert load_suite(ROOT / "suites" / "batched_gemm.yaml")  # AITER's "_note": a note too
    a8w8.write_text(a8w8.read_text().replace('"_note"', '"M_LEQ_1x"'))
    with pytest.raises(HarnessError, match="unknown bucket key 'M_LEQ_1x'"):
        load_suite(ROOT / "suites" / "batched_gemm.yaml")

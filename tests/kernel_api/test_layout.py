"""harness/kernel_api/layout.py: where AITER's lookup looks and in which order, its bounds, the keys it skips."""

from __future__ import annotations

from pathlib import Path

from harness.kernel_api.layout import AITER_BOUNDS, is_family_file, pick, places, split_buckets


def test_aiter_places_nested_first_then_flat_with_batch_files_before_nk():
    got = places("aiter", "BATCHED_GEMM-A16W16", "gfx950", ("B=4-N=64-K=128", "N=64-K=128"), Path("/c"))
    assert [str(p.default) for p in got] == [
        "/c/gfx950/triton/gemm/batched_gemm_a16w16/DEFAULT.json",
        "/c/gfx950/gluon/gemm/batched_gemm_a16w16/DEFAULT.json",
        "/c/gemm/gfx950-BATCHED_GEMM-A16W16.json",
    ]
    assert [p.name for p in got[0].specific] == [
        "BATCHED_GEMM-A16W16-B=4-N=64-K=128.json",
        "BATCHED_GEMM-A16W16-N=64-K=128.json",
    ]
    assert [p.name for p in got[2].specific] == [
        "gfx950-BATCHED_GEMM-A16W16-B=4-N=64-K=128.json",
        "gfx950-BATCHED_GEMM-A16W16-N=64-K=128.json",
    ]
    harness = places("harness", "X", "sm90", ("N=1-K=2",), Path("/k"))
    assert [(str(p.default), [str(s) for s in p.specific]) for p in harness] == [
        ("/k/sm90-X.json", ["/k/sm90-X-N=1-K=2.json"])
    ]


def test_only_the_callers_bounds_are_searched():
    buckets = {"M_LEQ_1": "one", "M_LEQ_256": "a", "M_LEQ_320": "b", "M_GEQ_4096": "big", "any": "rest"}
    afp4 = (4, 8, 16, 32, 64, 128, 256, 320, 512, 1024, 2048, 4096, 8192)
    assert pick(buckets, 1, "M", afp4) == "M_LEQ_256"  # 1 is not among afp4wfp4's bounds
    assert pick(buckets, 1, "M", AITER_BOUNDS) == "M_LEQ_1"
    assert pick(buckets, 300, "M", afp4) == "M_LEQ_320"
    assert pick(buckets, 300, "M", AITER_BOUNDS) == "any"  # the standard list has no 320: AITER skips the bucket
    assert pick(buckets, 300, "M", None) == "M_LEQ_320"  # harness's own files: the file's bounds
    assert pick(buckets, 5000, "M", AITER_BOUNDS) == "M_GEQ_4096"
    assert pick({"M_LEQ_16": 1}, 17, "M", AITER_BOUNDS) is None


def test_keys_that_are_not_buckets_are_skipped():
    data = {"_note": "stopgap", "M_LEQ_8": {"BLOCK_SIZE_M": 16}, "comment": {"x": 1}, "any": {"BLOCK_SIZE_M": 32}}
    buckets, skipped = split_buckets(data)
    assert buckets == {"M_LEQ_8": {"BLOCK_SIZE_M": 16}, "any": {"BLOCK_SIZE_M": 32}}
    assert skipped == ["_note", "comment"]


def test_family_files_a_lookup_can_reach():
    fam = "BATCHED_GEMM-A8W8"
    assert is_family_file("aiter", fam, ("gemm", "gfx950-BATCHED_GEMM-A8W8.json"))
    assert is_family_file("aiter", fam, ("gemm", "gfx950-BATCHED_GEMM-A8W8-N=128-K=512.json"))
    assert not is_family_file("aiter", fam, ("gemm", "gfx950-BATCHED_GEMM-A8W8-A_PER_TOKEN_GROUP_PREQUANT.json"))
    assert not is_family_file("aiter", fam, ("gemm", "gluon", "gfx1250-BATCHED_GEMM-A8W8.json"))
    assert is_family_file("aiter", fam, ("gfx942", "triton", "gemm", "batched_gemm_a8w8", "DEFAULT.json"))
    assert is_family_file(
        "aiter", fam, ("gfx942", "gluon", "gemm", "batched_gemm_a8w8", "BATCHED_GEMM-A8W8-B=4-N=1-K=2.json")
    )
    assert not is_family_file("harness", fam, ("gemm", "gfx950-BATCHED_GEMM-A8W8.json"))
    assert is_family_file("harness", fam, ("sm90-BATCHED_GEMM-A8W8-N=1-K=2.json",))


def test_an_op_that_names_its_backend_is_looked_up_where_aiter_looks_for_it(tmp_path):
    """AITER's batched bf16 op takes its gluon kernel on gfx1250 and asks get_gemm_config(backend="gluon"): the
    nested gluon folder, then the legacy gemm/gluon/, then the flat gemm/ (the stand-in's files: its gluon-only
    legacy folder, which a lookup without the backend never reaches)."""
    from harness.kernel_api import ConfigLookup, resolve_in
    from tests.conftest import DATA

    folder = DATA / "fake_aiter" / "aiter" / "ops" / "triton" / "configs"
    got = places("aiter", "BATCHED_GEMM-A16W16", "gfx1250", (), tmp_path, "gluon")
    assert [p.default.relative_to(tmp_path).as_posix() for p in got] == [
        "gfx1250/gluon/gemm/batched_gemm_a16w16/DEFAULT.json",
        "gemm/gluon/gfx1250-BATCHED_GEMM-A16W16.json",
        "gemm/gfx1250-BATCHED_GEMM-A16W16.json",
    ]
    lookup = ConfigLookup("BATCHED_GEMM-A16W16", layout="aiter", batch="B", backends=(("gfx1250", "gluon"),))
    gluon = resolve_in(
        [folder], lookup.family, "gfx1250", 16, (), "M", "aiter", None, None, lookup.backend_on("gfx1250")
    )
    triton = resolve_in([folder], lookup.family, "gfx1250", 16, (), "M", "aiter")
    assert gluon.source.startswith("gemm/gluon/gfx1250-BATCHED_GEMM-A16W16.json:")
    assert triton.source.startswith("gemm/gfx1250-BATCHED_GEMM-A16W16.json:")
    assert "NUM_BUFFERS" in gluon.config or gluon.config != triton.config
    rel = ("gemm", "gluon", "gfx1250-BATCHED_GEMM-A16W16.json")
    assert is_family_file("aiter", "BATCHED_GEMM-A16W16", rel, ("gluon",))
    assert not is_family_file("aiter", "BATCHED_GEMM-A16W16", rel)  # an op that names no backend never reads it

"""A likely cause for every explained regression (harness/explain/causes.py, issue 47 item 2): the class named
first is what most likely cost the time, with its evidence; the real H100 pair (AITER's a8w8 under Triton 3.9.0,
+22.5 %) reads as lost occupancy from registers, then TOT's new proxy fence, as found by hand before."""

from __future__ import annotations

import shutil

from harness.explain.causes import CLASSES, KernelFacts, classify, shares
from harness.explain.explain import diff_kernels, explain_cases, load_kernel
from harness.explain.pages import write_explain


def facts(g=None, t=None, gm=None, tm=None, ttgir=None, same=False, diff=()):
    return KernelFacts("k", g or {}, t or {}, gm or {}, tm or {}, ttgir or {}, same, tuple(diff))


def test_each_class_from_its_evidence_most_likely_first():
    spill = facts(
        {"registers": 255, "spills": 0, "occupancy": 0.25}, {"registers": 255, "spills": 24, "occupancy": 0.25}
    )
    assert [c.kind for c in classify([spill])] == ["spills"]
    assert "spills 0→24" in classify([spill])[0].evidence
    smem = facts({"shared_bytes": 98304, "occupancy": 0.5}, {"shared_bytes": 131072, "occupancy": 0.25})
    (c,) = classify([smem])
    assert c.kind == "occupancy" and "shared_bytes 98304→131072" in c.evidence and "50%→25%" in c.evidence
    mma = facts({"num_stages": 3}, {"num_stages": 4}, {"matrix HGMMA": 2}, {"matrix HGMMA": 4})
    assert [c.kind for c in classify([mma])] == ["structure"]
    fence = facts(diff=["+  FENCE.VIEW.ASYNC.S ;", " HGMMA.64x128x16", "-  NOP ;"])
    assert [c.kind for c in classify([fence])] == ["barrier"] and "FENCE.VIEW.ASYNC.S" in classify([fence])[0].evidence
    assert [c.kind for c in classify([facts(same=True)])] == ["runtime"]
    assert [c.kind for c in classify([facts(diff=["+ IADD3 R1, R2, R3"])])] == ["code"]
    assert [c.kind for c in classify([])] == ["unknown"]


def test_a_config_that_resolved_differently_comes_first():
    both = classify([facts({"occupancy": 0.5}, {"occupancy": 0.25})], {"BLOCK_M": 64}, {"BLOCK_M": 128})
    assert [c.kind for c in both] == ["config", "occupancy"] and both[0].evidence == "BLOCK_M 64→128"
    assert classify([facts(same=True)], {"BLOCK_M": 64}, {"BLOCK_M": 64})[0].kind == "runtime"


def test_a_barrier_moved_is_not_a_new_one():
    moved = facts(diff=["-  BAR.SYNC 0x0 ;", "+  BAR.SYNC 0x0 ;", "+ IADD3 R1, R2, R3"])
    assert [c.kind for c in classify([moved])] == ["code"]


def test_shares_count_each_case_under_its_first_cause():
    assert shares(["occupancy", "barrier", "occupancy", "runtime"]) == [
        ("occupancy", 2, 50.0), ("barrier", 1, 25.0), ("runtime", 1, 25.0)
    ]  # fmt: skip
    assert set(CLASSES) >= {"config", "spills", "occupancy", "barrier", "structure", "code", "runtime"}


def test_the_real_h100_pair_names_registers_then_the_proxy_fence():
    from tests.explain.test_explain import ART, GID, TID

    kd = diff_kernels(load_kernel(ART / "golden", GID), load_kernel(ART / "tot", TID))
    first, second = classify([kd.facts])[:2]
    assert first.kind == "occupancy" and "19%→12%" in first.evidence and "registers 168→200" in first.evidence
    assert second.kind == "barrier" and "FENCE.VIEW.ASYNC.S" in second.evidence


def test_pages_and_index_lead_with_the_likely_cause_and_say_a_limit(tmp_path, capsys):
    from harness.compare.compare import compare_files
    from harness.compare.store import write_compare
    from tests.conftest import cli
    from tests.explain.test_explain import ART, GID, TID, _results_with_artifacts

    for side in ("golden", "tot"):
        shutil.copytree(ART / side, tmp_path / f"{side}.artifacts")
    g = _results_with_artifacts(tmp_path / "golden.csv", GID, 69.83)
    t = _results_with_artifacts(tmp_path / "tot.csv", TID, 85.53)
    cmp_csv = write_compare(compare_files(g, t), tmp_path / "compare.csv")
    index = write_explain(explain_cases(cmp_csv), tmp_path / "explain").read_text()
    assert "**Likely causes**" in index and "| occupancy lost | 1 | 100 % |" in index
    page = (tmp_path / "explain" / "batched_gemm_a8w8__B128_M1024_N512_K128.md").read_text()
    assert "**Likely cause**: occupancy lost: _batched_gemm_a8w8_kernel: occupancy 19%→12%" in page
    assert "- a new barrier or fence:" in page
    code, out, _ = cli(capsys, "explain", cmp_csv, "--out", tmp_path / "e2", "--case", ".", "--limit", "1")
    # both cases of the comparison match, one is explained: the cut is said in the terminal and on the index
    assert code == 0 and "explained 1 cases" in out and "1 more case matched and not explained" in out
    assert "(1 more matched, not explained here: raise --limit)" in (tmp_path / "e2" / "index.md").read_text()

"""`harness explain` on real compiled kernels.

tests/data/artifacts holds one kernel pair captured by `harness run --artifacts` on an H100 (2026-11-22,
reports/h100-triton-3.6.0-vs-3.9.0): batched_gemm_a8w8 for B=128 M=1024 N=512 K=128 under Triton 3.6.0 and
3.9.0 (ttgir, sass and meta.json kept; +22 % in that run). The capture itself is tested by compiling a kernel
ahead of time for sm_90 on this CPU under both installed Triton versions.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.compare.compare import compare_files
from harness.compare.store import write_compare
from harness.errors import HarnessError
from harness.explain.explain import diff_kernels, explain_cases, headline, load_kernel, register_agnostic
from harness.explain.facts import (
    amdgcn_mix,
    amdgcn_resources,
    nvidia_occupancy,
    ptx_mix,
    sass_instructions,
    sass_mix,
    ttgir_facts,
)
from harness.explain.pages import write_explain
from harness.results.schema import COLUMNS
from tests.conftest import DATA, ROOT, cli

ART = DATA / "artifacts"
GID = "e33b0e1ff21e7990-_batched_gemm_a8w8_kernel"
TID = "c7060343e86b4d9b-_batched_gemm_a8w8_kernel"


def test_real_pair_resources_and_mix():
    kd = diff_kernels(load_kernel(ART / "golden", GID), load_kernel(ART / "tot", TID))
    res = {k: (a, b) for k, a, b, _ in kd.resources}
    assert res["registers"] == ("168", "200")
    assert res["blocks_per_sm"] == ("3", "2")  # 168 regs: 5376 a warp → 12 warps → 3 blocks of 4; 200: 6400 → 10 → 2
    assert res["num_warps"] == ("4", "4") and res["shared_bytes"] == ("49152", "49152")
    mix = {k: (a, b) for k, a, b, _ in kd.mix}
    assert mix["matrix IGMMA"][0] == mix["matrix IGMMA"][1] > 0  # int8 warp-group MMA in both
    assert kd.ttgir["ops"] == [("ttng.fence_async_shared", 0, 1)]
    assert kd.diff and kd.structural and len(kd.structural) < len(kd.diff)
    assert headline(kd).startswith("registers 168→200; occupancy 19%→12%")


def test_sass_parsing_of_both_listing_forms():
    nvdisasm = "Function:k\n--:-:0:-:1\tLDC R1, c[0x0][0x28];\n02:-:-:Y:5\t@!P0 LDG.E.128 R4, desc[UR4][R2.64];\n"
    cuobjdump = "        /*0010*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], RZ ;\n"
    assert sass_instructions(nvdisasm) == ["LDC R1, c[0x0][0x28]", "@!P0 LDG.E.128 R4, desc[UR4][R2.64]"]
    # a stall count of 10 or more is written in hex: those instructions were dropped, HGMMAs among them
    hex_stall = "02:-:1:Y:c\tMUFU.RCP R3, R3;\n--:-:-:Y:f\tHGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], RZ;\n"
    assert sass_instructions(hex_stall) == ["MUFU.RCP R3, R3", "HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], RZ"]
    mix = sass_mix(nvdisasm + cuobjdump + "STG.E.U16 [R2], R5 ;\n")
    assert mix["global load 128-bit"] == 1 and mix["matrix HGMMA"] == 1 and mix["global store 16-bit"] == 1
    assert register_agnostic(["IADD3 R7, R11, 0x380, UR4", "v_add v[4:7], s3"]) == [
        "IADD3 R#, R#, 0x380, UR#",
        "v_add v[#], s#",
    ]


def test_ptx_and_amdgcn_mix():
    ptx = (
        "\twgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {..};\n\tld.global.v4.b32 {%r1,%r2,%r3,%r4}, [%rd1];\n"
    )
    ptx += "\tcp.async.cg.shared.global [%r5], [%rd2], 16;\n\tbar.sync 0;\n\tst.global.b16 [%rd3], %rs1;\n"
    m = ptx_mix(ptx)
    assert m["matrix wgmma"] == 1 and m["global load vector x4"] == 1 and m["barrier bar.sync"] == 1
    assert m["async copy global→shared (cp.async)"] == 1 and m["global store scalar"] == 1
    gcn = "  v_mfma_f32_32x32x8_bf16 a[0:15], v[0:1], v[2:3], a[0:15]\n  global_load_dwordx4 v[4:7], v[8:9], off\n"
    gcn += "  ds_read_b128 v[10:13], v14\n  s_barrier\n  .vgpr_count: 128\n  .agpr_count: 64\n  .vgpr_spill_count: 3\n"
    gm = amdgcn_mix(gcn)
    assert gm["matrix MFMA"] == 1 and gm["global load dwordx4"] == 1 and gm["barrier/sync s_barrier"] == 1
    assert amdgcn_resources(gcn) == {"vgpr": 128, "agpr": 64, "vgpr_spill": 3}


def test_occupancy_limits():
    assert nvidia_occupancy("sm90", 8, 64, 0)["blocks_per_sm"] == 4  # 64 warps / 8
    o = nvidia_occupancy("sm90", 4, 255, 0)
    assert o["blocks_per_sm"] == 2 and o["limited_by"] == "registers"  # 256 regs × 32 × 4 = 32K per block
    o = nvidia_occupancy("sm90", 4, 32, 160 * 1024)
    assert o["blocks_per_sm"] == 1 and o["limited_by"] == "shared memory"


def test_ttgir_facts_from_the_real_file():
    f = ttgir_facts((ART / "golden" / GID / "ttgir").read_text())
    assert any("nvidia_mma" in v and "versionMajor = 3" in v for v in f["layouts"].values())
    assert f["attrs"]["ttg.num-warps"] == "4"
    assert f["ops"]["ttng.warp_group_dot"] > 0


def _results_with_artifacts(path: Path, ids: str, time_us: float) -> Path:
    row = dict.fromkeys(COLUMNS, "")
    row.update(kernel="batched_gemm_a8w8", case_id="B128_M1024_N512_K128", B=128, M=1024, N=512, K=128)
    row.update(dtype="int8", time_us=time_us, status="ok", artifacts=ids)
    other = dict(row, case_id="B128_M16_N512_K128", M=16, time_us=10.0, artifacts="")
    lines = [",".join(COLUMNS)] + [",".join(str(r[c]) for c in COLUMNS) for r in (row, other)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_explain_end_to_end(tmp_path):
    for side in ("golden", "tot"):
        shutil.copytree(ART / side, tmp_path / f"{side}.artifacts")
    g = _results_with_artifacts(tmp_path / "golden.csv", GID, 69.83)
    t = _results_with_artifacts(tmp_path / "tot.csv", TID, 85.53)
    cmp_csv = write_compare(compare_files(g, t), tmp_path / "compare.csv")
    cases = explain_cases(cmp_csv)
    assert [(c.kernel, c.case_id) for c in cases] == [("batched_gemm_a8w8", "B128_M1024_N512_K128")]
    index = write_explain(cases, tmp_path / "explain")
    text = index.read_text()
    assert "+22.5 %" in text and "registers 168→200" in text
    page = (tmp_path / "explain" / "batched_gemm_a8w8__B128_M1024_N512_K128.md").read_text()
    assert "| registers | 168 | 200 | +32 |" in page and "ttng.fence_async_shared" in page
    assert (tmp_path / "explain" / f"diff-{GID[:16]}-{TID[:16]}.diff").read_text().startswith("--- golden/")
    html = (tmp_path / "explain" / "index.html").read_text()
    assert "<table>" in html and "batched_gemm_a8w8__B128_M1024_N512_K128.html" in html

    with pytest.raises(HarnessError, match="no case of .* matches"):
        explain_cases(cmp_csv, cases=["nothing-like-this"])
    shutil.rmtree(tmp_path / "tot.artifacts")
    with pytest.raises(HarnessError, match="TOT artifacts folder not found"):
        explain_cases(cmp_csv)


def test_cli_without_artifacts_is_one_line(tmp_path, capsys):
    out = write_compare(compare_files(DATA / "golden.csv", DATA / "tot.csv"), tmp_path / "c.csv")
    code, _, err = cli(capsys, "explain", out, "--out", tmp_path / "e")
    assert code == 2 and "run them with `harness run --artifacts`" in err and "Traceback" not in err


AOT = r"""
import json, sys
sys.path.insert(0, sys.argv[2])
import triton, triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from harness.worker.artifacts import dump_compiled  # plain stdlib + triton, as the worker runs it

@triton.jit
def scale_rows(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, (tl.load(x_ptr + offs, mask=m).to(tl.float32) * 2).to(tl.float16), mask=m)

src = ASTSource(scale_rows, signature={"x_ptr": "*fp16", "y_ptr": "*fp16", "n": "i32", "BLOCK": "constexpr"},
                constexprs={"BLOCK": 1024})
k = triton.compile(src, target=GPUTarget("cuda", 90, 32))
print(json.dumps(dump_compiled(k, sys.argv[1])))
"""


def _pythons() -> dict[str, str]:
    """The two stacks the test command builds (.venvs/golden: Triton 3.6.0, .venvs/tot: 3.9.0), never the base
    interpreter, whose Triton is whatever `triton>=3.4` installed on this machine."""
    found = {side: ROOT / ".venvs" / side / "bin" / "python" for side in ("golden", "tot")}
    return {side: str(py) for side, py in found.items() if py.exists()}


@pytest.mark.slow
def test_capture_from_real_compilations_under_both_tritons(tmp_path):
    """Compile one kernel for sm_90 on this CPU (ptxas and cuobjdump come with the Triton wheel) under each
    installed Triton and store it as the worker does; then explain the pair."""
    pythons = _pythons()
    if len(pythons) < 2:
        pytest.skip("needs .venvs/golden and .venvs/tot (made by the test command): Triton 3.6.0 and 3.9.0")
    script = tmp_path / "aot.py"
    script.write_text(AOT)
    kernels = {}
    for side, py in pythons.items():
        env = {
            k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"
        }  # a real compilation, not the interpreter
        r = subprocess.run([py, str(script), str(tmp_path / side), str(ROOT)], capture_output=True, text=True, env=env)
        if r.returncode != 0 and "ptxas" in r.stderr:
            pytest.skip(f"{side}: ptxas cannot run here: {r.stderr.strip().splitlines()[-1]}")
        assert r.returncode == 0, r.stderr[-2000:]
        kid = json.loads(r.stdout.strip().splitlines()[-1])
        # stored once: a second dump of the same kernel is a no-op
        kernels[side] = load_kernel(tmp_path / side, kid)
        meta = kernels[side].meta
        assert {"ttir", "ttgir", "llir", "ptx", "sass"} <= set(meta["files"])
        assert meta["cubin_resources"]["reg"] > 0 and meta["metadata"]["num_warps"] == 4
    assert kernels["golden"].meta["triton"] == "3.6.0" and kernels["tot"].meta["triton"] == "3.9.0"
    kd = diff_kernels(kernels["golden"], kernels["tot"])
    assert dict((k, a) for k, a, _, _ in kd.resources)["registers"] == str(
        kernels["golden"].meta["cubin_resources"]["reg"]
    )
    assert sum(a for k, a, _, _ in kd.mix if k.startswith("global store")) > 0


# ------------------------------------------------------------------------------ refusals: one line, exit 2


def _explain_cli(capsys, *args) -> str:
    from harness.cli import main

    with pytest.raises(SystemExit) as ex:
        main(["explain", *map(str, args)])
    err = capsys.readouterr().err
    assert ex.value.code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


@pytest.fixture
def explained(tmp_path) -> Path:
    for side in ("golden", "tot"):
        shutil.copytree(ART / side, tmp_path / f"{side}.artifacts")
    g = _results_with_artifacts(tmp_path / "golden.csv", GID, 69.83)
    t = _results_with_artifacts(tmp_path / "tot.csv", TID, 85.53)
    return write_compare(compare_files(g, t), tmp_path / "compare.csv")


def test_an_artifacts_archive_is_named_as_such(explained, capsys):
    txz = explained.with_name("golden.txz")
    txz.write_bytes(b"\xfd7zXZ")
    err = _explain_cli(capsys, explained, "--out", explained.parent / "e", "--golden-artifacts", txz)
    assert f"--golden-artifacts {txz}: is a file, not a folder (unpack an archive first)" in err
    err = _explain_cli(capsys, explained, "--out", explained.parent / "e", "--tot-artifacts", explained.parent / "no")
    assert "--tot-artifacts" in err and "no such folder" in err


def test_out_holding_the_comparison_is_refused(explained, capsys):
    err = _explain_cli(capsys, explained, "--out", explained.parent)
    assert f"--out {explained.parent} holds the input {explained}" in err
    assert not list(explained.parent.glob("index.*"))


def test_out_inside_an_artifacts_folder_is_refused(explained, capsys):
    arts = explained.parent / "golden.artifacts"
    err = _explain_cli(capsys, explained, "--out", arts / "e", "--golden-artifacts", arts)
    assert "lies inside the input" in err and not (arts / "e").exists()


def test_a_bad_case_regex_is_one_line(explained, capsys):
    err = _explain_cli(capsys, explained, "--out", explained.parent / "e", "--case", "(")
    assert "--case: not a valid regular expression" in err


def test_interpreter_results_say_no_kernels_were_compiled(explained, capsys):
    for side in ("golden", "tot"):
        explained.with_name(f"{side}.csv.env.json").write_text(json.dumps({"backend": "interp"}))
    err = _explain_cli(capsys, explained, "--out", explained.parent / "e")
    assert "CPU interpreter, which compiles no kernels" in err


def test_cli_writes_a_marked_folder_and_writes_it_again(explained, capsys):
    from harness.cli import main
    from harness.outdir import written_by

    for _ in range(2):
        with pytest.raises(SystemExit) as ex:
            main(["explain", str(explained), "--out", str(explained.parent / "e")])
        assert ex.value.code == 0
    assert written_by(explained.parent / "e") == "harness explain"


def test_pages_name_the_stacks_as_the_comparison_does(tmp_path, capsys):
    """Two checkouts of a kernel library under one Triton, run with env specs named main and pr: the pages say
    main and pr (title, case line, table heads, diff headers, 'no artifacts in'), never golden or TOT."""
    runs = {}
    for name, art, kid, us in (("main", "golden", GID, 69.83), ("pr", "tot", TID, 85.53)):
        shutil.copytree(ART / art, tmp_path / f"{name}.artifacts")
        runs[name] = _results_with_artifacts(tmp_path / f"{name}.csv", kid, us)
        runs[name].with_name(f"{name}.csv.env.json").write_text(json.dumps({"env_name": name}))
    cmp_csv = write_compare(compare_files(runs["main"], runs["pr"]), tmp_path / "compare.csv")
    code, out, _ = cli(capsys, "explain", cmp_csv, "--out", tmp_path / "e", "--case", "batched_gemm_a8w8/")
    assert code == 0 and "explained 2 cases" in out
    index = (tmp_path / "e" / "index.md").read_text()
    assert index.startswith("# Why pr is slower than main\n") and "no artifacts for this case in main" in index
    page = (tmp_path / "e" / "batched_gemm_a8w8__B128_M1024_N512_K128.md").read_text()
    assert "main 69.83 µs → pr 85.53 µs" in page and "| registers | 168 | 200 | +32 |" in page
    assert "|  | main | pr | Δ |" in page and "| op | main | pr |" in page
    diff = (tmp_path / "e" / f"diff-{GID[:16]}-{TID[:16]}.diff").read_text()
    assert diff.startswith(f"--- main/{GID}/sass\n+++ pr/{TID}/sass\n")
    for f in (tmp_path / "e").iterdir():
        if f.suffix in (".md", ".html", ".diff"):
            assert not re.search(r"\b(TOT|golden|tot)\b", f.read_text()), f.name
    assert write_explain([], tmp_path / "none", labels=("main", "pr")).read_text().startswith("# Why pr is slower than")

    shutil.rmtree(tmp_path / "pr.artifacts")  # the options keep their names
    with pytest.raises(HarnessError, match=r"pr artifacts folder not found \(pass --tot-artifacts DIR\)"):
        explain_cases(cmp_csv)


def test_a_page_without_cases_is_titled_from_one_reading_of_the_metadata(tmp_path, capsys, monkeypatch):
    """No regression to explain: the index still names the stacks as the comparison does (main and pr), from the
    same reading of compare.csv.meta.json that found the results, not a second one."""
    runs = {}
    for name, kid, us in (("main", GID, 85.53), ("pr", TID, 69.83)):  # pr faster: nothing regressed
        shutil.copytree(ART / ("golden" if name == "main" else "tot"), tmp_path / f"{name}.artifacts")
        runs[name] = _results_with_artifacts(tmp_path / f"{name}.csv", kid, us)
        runs[name].with_name(f"{name}.csv.env.json").write_text(json.dumps({"env_name": name}))
    cmp_csv = write_compare(compare_files(runs["main"], runs["pr"]), tmp_path / "compare.csv")
    reads = []
    read_text = Path.read_text

    def counting(self: Path, *args, **kwargs) -> str:
        reads.append(self.name)
        return read_text(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", counting)
    code, out, err = cli(capsys, "explain", cmp_csv, "--out", tmp_path / "e")
    assert code == 0 and "explained 0 cases" in out, err
    assert (tmp_path / "e" / "index.md").read_text().startswith("# Why pr is slower than main\n")
    assert reads.count("compare.csv.meta.json") == 1


def test_an_autotuned_op_pairs_what_each_stack_ran_then_each_config_under_both(tmp_path):
    """A library's autotuner compiles every candidate it tries; the rows record the config it chose (FlagGems on
    an H200: golden TILE_N 4096 with 4 warps, TOT 2048 with 8). The kernels each stack ran come first, then the
    config each ran compiled by both; candidates pair by the arguments they were launched with, and the likely
    cause is read from the kernels that ran."""
    configs = {"a": {"TILE_N": 4096, "num_warps": 4}, "b": {"TILE_N": 2048, "num_warps": 8}}
    ids = {}
    for side, real in (("golden", GID), ("tot", TID)):
        for tag in ("b", "a"):  # the autotuner tried b first
            kid = f"{side[0]}{tag}" * 8 + "-_batched_gemm_a8w8_kernel"
            shutil.copytree(ART / side / real, tmp_path / f"{side}.artifacts" / kid)
            meta_p = tmp_path / f"{side}.artifacts" / kid / "meta.json"
            meta = json.loads(meta_p.read_text())
            meta_p.write_text(json.dumps(dict(meta, launch={**configs[tag], "eps": 1e-6})))
            ids.setdefault(side, []).append(kid)
    files = {}
    for side, chosen, us in (("golden", "a", 69.83), ("tot", "b", 85.53)):
        path = _results_with_artifacts(tmp_path / f"{side}.csv", ";".join(ids[side]), us)
        text = path.read_text().splitlines()
        header = text[0].split(",")
        cells = text[1].split(",")
        cells[header.index("config")] = '"' + json.dumps(configs[chosen]).replace('"', '""') + '"'
        path.write_text("\n".join([text[0], ",".join(cells), *text[2:]]) + "\n")
        files[side] = path
    cmp_csv = write_compare(compare_files(files["golden"], files["tot"]), tmp_path / "compare.csv")
    (case,) = explain_cases(cmp_csv)
    assert [(kd.ran, kd.golden.id[:2], kd.tot.id[:2]) for kd in case.diffs] == [
        ("each", "ga", "tb"),
        ("tot", "gb", "tb"),
        ("golden", "ga", "ta"),
    ]
    assert case.causes()[0].kind == "config"
    write_explain([case], tmp_path / "explain")
    page = (tmp_path / "explain" / "batched_gemm_a8w8__B128_M1024_N512_K128.md").read_text()
    assert "*what each stack ran: golden and TOT chose other configs (golden TILE_N 4096, eps 1e-06, num_warps 4; " \
        "TOT TILE_N 2048, eps 1e-06, num_warps 8)*" in page  # fmt: skip
    assert "*the config TOT ran, compiled by both" in page and "*the config golden ran, compiled by both" in page


def test_pairs_of_an_autotuned_op_with_a_second_kernel_and_the_same_choice():
    """Review findings: both stacks choosing the same config is one pair that says so; the op's second kernel,
    compiled once a stack, ran (it is not a candidate only tried); a config golden never compiled is not said to
    be 'compiled by both'."""
    from harness.explain.explain import Kernel, pair_kernels

    def k(kid, name, **launch):
        return Kernel(kid, Path("/nowhere"), {"name": name, "launch": launch})

    golden = [k("g1", "gemm", TILE=1), k("g2", "gemm", TILE=2), k("gr", "reduce", B=4)]
    tot = [k("t1", "gemm", TILE=1), k("t2", "gemm", TILE=2), k("t3", "gemm", TILE=3), k("tr", "reduce", B=4)]
    got = [(g and g.id, t and t.id, what) for g, t, what in pair_kernels(golden, tot, {"TILE": 2}, {"TILE": 2})]
    assert got == [("g2", "t2", "same"), ("gr", "tr", "ran"), ("g1", "t1", ""), (None, "t3", "")]
    from harness.explain.explain import KernelDiff
    from harness.explain.pages import ran_text

    same = KernelDiff("gemm", golden[1], tot[1], [], [], {}, [], False, ran="same")
    assert ran_text(same, "golden", "TOT") == "what each stack ran: golden and TOT chose the same config (golden " \
        "TILE 2; TOT TILE 2)"  # fmt: skip
    got = [(g and g.id, t and t.id, what) for g, t, what in pair_kernels(golden, tot, {"TILE": 2}, {"TILE": 3})]
    assert got[0] == ("g2", "t3", "each") and (None, "t3", "") in got, "golden never compiled TILE 3"
    assert ("g2", "t2", "golden") in got and not any(w == "tot" for _, _, w in got)

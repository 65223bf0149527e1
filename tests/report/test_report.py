"""`harness report`: pure helpers, and the page made from the committed H100 results checked in a real headless
browser (Debian's chromium through selenium): no console errors, every image renders, tables sort."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.errors import HarnessError
from harness.report.data import dispatch_table, load_runs, parse_vendor
from harness.report.peaks import kernel_ceiling, peaks_for
from harness.report.plots import config_label
from harness.report.report import write_report
from tests.conftest import DATA, REPORTS_DIR, ROOT, needs_reports

H100 = DATA / "h100-triton-3.6.0-vs-3.9.0"
SWEEP = REPORTS_DIR / "tuning" / "sweep-sm90.csv"


def test_peaks_and_ceilings():
    label, peaks = peaks_for("NVIDIA H100 80GB HBM3")
    assert label == "H100 SXM" and peaks["bf16"] == 989.0 and peaks["hbm_tbs"] == 3.35
    assert peaks_for("NVIDIA H100 PCIe")[0] == "H100 PCIe"
    assert peaks_for("AMD Instinct MI300X")[1]["fp8"] == 2615.0
    label, peaks = peaks_for("NVIDIA H200", {"bf16": 700, "hbm_tbs": 4.1})
    assert label == "H200 (measured ceilings)" and peaks["bf16"] == 700 and peaks["fp8"] == 1979.0
    assert peaks_for("Some GPU")[0] == ""
    # fp4 has no native path on Hopper: bounded by the bf16 MMA it is emulated with
    assert kernel_ceiling("fp4", peaks_for("H100")[1]) == ("bf16", 989.0)
    assert kernel_ceiling("fp4", peaks_for("MI355X")[1]) == ("fp4", 10000.0)
    assert kernel_ceiling("int8", peaks_for("H100")[1]) == ("int8", 1979.0)
    assert kernel_ceiling("memory", peaks_for("H100")[1]) == ("memory", None)  # its roof is bandwidth


def test_config_labels():
    cfg = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4}
    assert config_label(json.dumps(cfg)) == "BK64 BM64 BN128 GM8 w4"  # the contract's config_label: one vocabulary
    assert config_label(json.dumps({**cfg, "num_stages": 3, "NUM_KSPLIT": 4})) == "BK64 BM64 BN128 GM8 KS4 s3 w4"
    assert config_label("") == "default"


def test_vendor_markdown_is_parsed():
    v = parse_vendor(H100 / "vendor-ratios.md")
    # 5 kernels x 3 shapes; the fp8 kernel has up to three torch paths a shape (row-wise, same math, blockwise)
    assert len(v.drop_duplicates(["kernel", "case_id"])) == 15 and len(v) > 15
    assert set(v["kernel"]) >= {"batched_gemm_bf16", "batched_gemm_a8w8"}
    row = v[(v["kernel"] == "batched_gemm_bf16") & v["case_id"].str.contains("N8192")].iloc[0]
    assert row["case_id"] == "B16_M2048_N8192_K8192" and row["vendor"] == "torch.bmm"


def test_vendor_without_table_is_one_line(tmp_path):
    p = tmp_path / "v.md"
    p.write_text("# nothing here\n")
    with pytest.raises(HarnessError, match="no vendor table rows"):
        parse_vendor(p)


def test_dispatch_table_splits_multi_kernel_ops(tmp_path):
    src = pd.read_csv(H100 / "golden.csv", dtype={"dispatch_us": str})
    src.loc[0, "dispatch_us"] = json.dumps({"_batched_gemm_bf16_kernel": 8.0, "_splitk_reduce_kernel": 2.0})
    src.to_csv(tmp_path / "g.csv", index=False)
    t = dispatch_table(load_runs([tmp_path / "g.csv"]))
    mine = t[(t["kernel"] == src.loc[0, "kernel"]) & (t["case_id"] == src.loc[0, "case_id"])]
    assert list(mine["dispatch"]) == ["_batched_gemm_bf16_kernel", "_splitk_reduce_kernel"]
    assert mine["share"].tolist() == pytest.approx([0.8, 0.2])
    # the real two-kernel ops of the H100 run (fp8 with X quantized in a first kernel) are split too
    real = t[t["dispatch"].str.contains("_quant_x_kernel")]
    assert len(real) > 0 and (real["share"] < 0.2).all()


@pytest.fixture(scope="module")
def browser():
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_bin = shutil.which("chromedriver")
    if not (chromium and driver_bin):
        pytest.skip("chromium + chromedriver not installed (apt-get install chromium chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    opts = Options()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        opts.add_argument(arg)
    opts.binary_location = chromium
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service(driver_bin), options=opts)
    yield d
    d.quit()


def _load(browser, index: Path) -> None:
    browser.get(index.resolve().as_uri())
    browser.get_log("browser")  # drop anything from an earlier page


def _check_page(browser, index: Path) -> None:
    _load(browser, index)
    errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert errors == []
    images = browser.execute_script(
        "return Array.from(document.images).map(i => [i.complete, i.naturalWidth, i.naturalHeight])"
    )
    assert images and all(ok and w > 200 and h > 100 for ok, w, h in images)


@pytest.mark.slow
def test_compare_report_in_a_browser(browser, tmp_path):
    out = tmp_path / "report"
    # copy the results beside the comparison, as a CI artifact folder would hold them
    for name in (
        "compare.csv",
        "compare.csv.meta.json",
        "golden.csv",
        "golden.csv.env.json",
        "tot.csv",
        "tot.csv.env.json",
    ):
        shutil.copy(H100 / name, tmp_path / name)
    index = write_report([], out, compare_csv=tmp_path / "compare.csv", vendor=H100 / "vendor-ratios.md")
    names = {p.name for p in out.glob("*.png")}
    assert names >= {"delta.png", "roofline.png", "scatter-0.png", "vendor.png", "family-0.png"}
    _check_page(browser, index)
    # offline: no external URL anywhere in the page
    html = index.read_text()
    assert "http://" not in html and "https://" not in html

    from selenium.webdriver.common.by import By

    ths = browser.find_elements(By.CSS_SELECTOR, "table#compare-table thead th")
    heads = [th.get_attribute("textContent") for th in ths]
    col = heads.index("delta_pct")

    def column() -> list[float]:
        cells = browser.execute_script(
            "return Array.from(document.getElementById('compare-table').tBodies[0].rows)"
            ".map(r => r.cells[arguments[0]].getAttribute('data-v'))",
            col,
        )
        return [float(c) for c in cells if c]

    header = ths[col]
    header.click()
    up = column()
    assert up == sorted(up) and len(up) == 120
    header.click()
    down = column()
    assert down == sorted(down, reverse=True)
    assert "desc" in header.get_attribute("class")


@pytest.mark.slow
@needs_reports
def test_sweep_report_with_many_configurations(browser, tmp_path):
    df = pd.read_csv(SWEEP)
    assert len(df) >= 800 and df["config"].nunique() >= 40  # the scale: 1,000-ish points, 40+ configs
    shutil.copy(SWEEP, tmp_path / "sweep.csv")
    shutil.copy(SWEEP.with_name(SWEEP.name + ".env.json"), tmp_path / "sweep.csv.env.json")
    index = write_report([tmp_path / "sweep.csv"], tmp_path / "r")
    _check_page(browser, index)
    text = index.read_text()
    kernels = df[df["status"] == "ok"]["kernel"].nunique()
    # roofline, one family plot per kernel (TFLOPS vs M per (N, K)), the scatter (one panel per kernel)
    assert text.count("data:image/png;base64,") == 2 + kernels
    ok_configs = df[df["status"] == "ok"]["config"].nunique()  # configs that compiled (shared memory limits)
    assert ok_configs >= 40 and f"<p>{ok_configs} configurations.</p>" in text


@pytest.fixture(scope="module")
def h100_page(tmp_path_factory):
    """The report of the committed H100 comparison (golden and TOT results beside it, as in a CI artifact)."""
    tmp = tmp_path_factory.mktemp("h100")
    for name in (
        "compare.csv",
        "compare.csv.meta.json",
        "golden.csv",
        "golden.csv.env.json",
        "tot.csv",
        "tot.csv.env.json",
    ):
        shutil.copy(H100 / name, tmp / name)
    index = write_report([], tmp / "report", compare_csv=tmp / "compare.csv")
    return index.read_text(encoding="utf-8")


@pytest.mark.slow
def test_report_tables_print_plain_numbers(h100_page):
    import re

    cells = re.findall(r'<td class="num" data-v="[^"]*">([^<]*)</td>', h100_page)
    assert len(cells) > 1000
    assert not [c for c in cells if re.search(r"\de[+-]?\d", c)], "no exponent notation"
    golden_max = pd.read_csv(H100 / "compare.csv")["golden_us"].max()  # 58488.9203 µs
    assert f">{golden_max:,.1f}<" in h100_page and ">58,488.9<" in h100_page


@pytest.mark.slow
def test_report_navigation_names_every_section(h100_page):
    import re

    nav = re.search(r"<nav>(.*?)</nav>", h100_page).group(1)
    links = re.findall(r'<a href="#([^"]+)">([^<]+)</a>', nav)
    texts = [t for _, t in links]
    assert len(texts) == len(set(texts)), texts
    assert {"Scatter: golden", "Scatter: tot", "Tables: golden", "Tables: tot"} <= set(texts)
    ids = re.findall(r'<h2 id="([^"]+)">', h100_page)
    assert [a for a, _ in links] == ids, "every link leads to its own section"


def test_plain_numbers():
    from harness.render.html import plain

    assert [plain(v) for v in (58490.12, 12.3456, 0.5, 0.000123456, -9.53, 16.0, 1234567.0)] == [
        "58,490.1",
        "12.35",
        "0.5",
        "0.0001235",
        "-9.53",
        "16",
        "1,234,567",
    ]


def _report_cli(capsys, *args) -> str:
    from harness.cli import main

    with pytest.raises(SystemExit) as ex:
        main(["report", *map(str, args)])
    err = capsys.readouterr().err
    assert ex.value.code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize(
    "text, expect",
    [
        ("bf16: [800\n", "not YAML"),
        ("- 800\n- 3.0\n", "expected a mapping like {bf16: 800, hbm_tbs: 3.0}, got list"),
        ("bf61: 800\n", "unknown ceiling 'bf61' (did you mean 'bf16'?)"),
        ("bf16: fast\n", "bf16: expected a positive number"),
        ("hbm_tbs: -3\n", "hbm_tbs: expected a positive number"),
        ("bf16: true\n", "bf16: expected a positive number"),
        ("", "expected a mapping"),
    ],
)
def test_bad_ceilings_are_one_line(tmp_path, capsys, text, expect):
    p = tmp_path / "ceilings.yaml"
    p.write_text(text)
    err = _report_cli(capsys, H100 / "golden.csv", "--out", tmp_path / "r", "--ceilings", p)
    assert err.startswith(f"harness: error: {p}: ") and expect in err
    assert not (tmp_path / "r").exists(), "nothing is written before the inputs are checked"


def test_missing_vendor_and_ceilings_files_are_one_line(tmp_path, capsys):
    err = _report_cli(capsys, H100 / "golden.csv", "--out", tmp_path / "r", "--vendor", tmp_path / "missing.md")
    assert err.strip() == f"harness: error: {tmp_path / 'missing.md'}: no such vendor baseline file"
    err = _report_cli(capsys, H100 / "golden.csv", "--out", tmp_path / "r", "--ceilings", tmp_path / "nope.yaml")
    assert err.strip() == f"harness: error: {tmp_path / 'nope.yaml'}: no such ceilings file"


def test_report_without_matplotlib_is_one_line(tmp_path):
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['matplotlib'] = None  # import matplotlib now raises ImportError\n"
        "from harness.cli import main; main(sys.argv[1:])"
    )
    r = subprocess.run(
        [sys.executable, "-c", code, "report", str(H100 / "golden.csv"), "--out", str(tmp_path / "r")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert r.returncode == 2, r.stderr
    assert r.stderr.splitlines() == [
        "harness: error: harness report needs matplotlib: pip install 'harness[report]' (or matplotlib)"
    ]


def _multi_gpu_run(tmp_path) -> Path:
    """A results file of a multi-GPU kernel at world sizes 1, 2, 4 under two configs (synthetic times)."""
    from harness.results.write import write_results

    rows = []
    for w in (1, 2, 4):
        for n in (4096, 8192):
            for cfg, slow in (({"BLOCK_M": 64}, 1.0), ({"BLOCK_M": 128}, 1.2)):
                flops = 2.0 * 1024 * n * 4096
                t = flops / w / 400e12 * 1e6 * slow + 5.0
                rows.append({"kernel": "gemm_all_scatter", "case_id": f"M1024_N{n}_W{w}_{cfg['BLOCK_M']}",
                             "params": json.dumps({"M": 1024, "N": n, "K": 4096, "dtype": "bf16", "W": w, "seed": 0}),
                             "world_size": w, "status": "ok", "time_us": t, "flops": flops, "bytes": 1e8,
                             "tflops": flops / (t * 1e-6) / 1e12, "config": cfg})  # fmt: skip
    out = tmp_path / "mg.csv"
    write_results(out, rows)
    return out


def test_multi_gpu_results_get_scaling_plots_and_best_configs(tmp_path):
    from harness.report.plots import best_configs

    path = _multi_gpu_run(tmp_path)
    index = write_report([path], tmp_path / "r")
    names = {p.name for p in (tmp_path / "r").glob("*.png")}
    assert "scaling-0-0.png" in names and "scatter-0.png" in names
    page = index.read_text()
    assert "Multi-GPU scaling" in page and "Best configuration per shape" in page
    best = best_configs(load_runs([path])[0].df)
    assert len(best) == 6 and set(best["best config"]) == {"BLOCK_M64"} and (best["configs"] == 2).all()


@pytest.mark.slow
def test_a_retune_section(tmp_path):
    """`harness report --retune OUT/retune.json`: the retune's before/after, changes and cost as a section."""
    from tests.retune.test_report import DATA

    for name in ("compare.csv", "compare.csv.meta.json", "golden.csv", "golden.csv.env.json", "tot.csv",
                 "tot.csv.env.json"):  # fmt: skip
        shutil.copy(H100 / name, tmp_path / name)
    (tmp_path / "retune.json").write_text(json.dumps(DATA))
    page = write_report([], tmp_path / "r", compare_csv=tmp_path / "compare.csv", retune=tmp_path / "retune.json")
    text = page.read_text()
    assert '<a href="#retune">Retune</a>' in text and '<h2 id="retune">' in text and "11 / 15 → 4 / 15" in text
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(HarnessError, match="not a retune.json"):
        write_report([], tmp_path / "r", compare_csv=tmp_path / "compare.csv", retune=tmp_path / "bad.json")


def test_best_configs_of_kernels_with_other_parameters():
    """Kernels with different parameters in one run (the demo's CI suite): a parameter a kernel does not have is
    missing from its shape, not "nan" (pandas 3 keeps it NaN through astype(str), which broke `make demo`)."""
    from harness.report.plots import best_configs

    rows = []
    for cfg, t in (({"BLOCK": 32}, 10.0), ({"BLOCK": 64}, 8.0)):
        rows.append({"kernel": "softmax", "case_id": "R4_C8", "params": json.dumps({"R": 4, "C": 8}), "t": t, "c": cfg})
        rows.append({"kernel": "gemm", "case_id": "M1_N2_K3", "params": json.dumps({"M": 1, "N": 2, "K": 3}),
                     "t": 2 * t, "c": cfg})  # fmt: skip
    df = pd.DataFrame([{"kernel": r["kernel"], "case_id": r["case_id"], "params": r["params"], "status": "ok",
                        "time_us": r["t"], "config": json.dumps(r["c"])} for r in rows])  # fmt: skip
    best = best_configs(df).set_index("kernel")
    assert best.loc["softmax", "shape"] == "4 8" and best.loc["gemm", "shape"] == "1 2 3"
    assert best.loc["gemm", "best_us"] == 16.0 and (best["configs"] == 2).all()


# --------------------------------------------------------------------- --out never over what the report reads


def test_out_holding_an_input_is_refused_before_anything_is_drawn(tmp_path, capsys):
    shutil.copy(H100 / "golden.csv", tmp_path / "golden.csv")
    shutil.copy(H100 / "golden.csv.env.json", tmp_path / "golden.csv.env.json")
    err = _report_cli(capsys, tmp_path / "golden.csv", "--out", tmp_path)
    assert f"--out {tmp_path} holds the input {tmp_path / 'golden.csv'}" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["golden.csv", "golden.csv.env.json"]


def test_out_of_unrelated_files_is_refused(tmp_path, capsys):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "notes.md").write_text("mine")
    err = _report_cli(capsys, H100 / "golden.csv", "--out", tmp_path / "r")
    assert "holds files harness did not write (notes.md)" in err


def test_out_under_a_file_is_one_line(tmp_path, capsys):
    (tmp_path / "f").write_text("x")
    err = _report_cli(capsys, H100 / "golden.csv", "--out", tmp_path / "f" / "r")
    assert f"{tmp_path / 'f'} is a file, not a folder" in err


def test_multi_gpu_points_are_one_gpus_share_and_the_links_bytes_come_from_the_spec(tmp_path):
    """A multi-GPU kernel counts the FLOPs of all its ranks and the bytes of one: the roofline puts each case at
    one GPU's share (FLOPs and TFLOPS over the world size), never above one GPU's roof; what a rank sends over
    NVLink comes from the kernel's SPEC (gemm_all_scatter: e·M·(N/W)·(W−1); the GEMM-only twin sends nothing),
    and with ``nvlink_gbs`` in the ceilings the roofline gets its NVLink panel."""
    from harness.report.data import timed

    run = load_runs([_multi_gpu_run(tmp_path)])[0]
    d = timed(run.df)
    w = d["world_size"].astype(float)
    assert (d["gpus"] == w).all()
    assert np.allclose(d["intensity"], d["flops"] / w / 1e8)
    assert np.allclose(d["tflops_gpu"] * w, d["tflops"])
    link = run.link_bytes(d)
    params = [json.loads(p) for p in d["params"]]
    want = [2 * 1024 * (p["N"] // p["W"]) * (p["W"] - 1) for p in params]  # bf16: 2 bytes an element
    assert np.allclose(link.to_numpy(), want)
    twin = run.df.assign(kernel="torch_gemm")
    assert run.link_bytes(timed(twin)).isna().all()  # the SPEC says nothing: no point on the NVLink roof
    ceilings = tmp_path / "c.yaml"
    ceilings.write_text("nvlink_gbs: 350\nhbm_tbs: 3.0\nbf16: 800\n")
    write_report([tmp_path / "mg.csv"], tmp_path / "r", ceilings=ceilings)
    import matplotlib.image as mpimg

    wide = mpimg.imread(tmp_path / "r" / "roofline.png").shape[1]
    write_report([tmp_path / "mg.csv"], tmp_path / "r2")
    assert wide > mpimg.imread(tmp_path / "r2" / "roofline.png").shape[1]  # two panels side by side

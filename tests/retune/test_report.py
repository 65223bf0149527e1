"""harness/retune/report.py: the report's markdown and HTML from its data."""

from __future__ import annotations

from harness.retune.report import html_section, kernel_rows, load_summary, render_html, render_markdown, write_reports

CASE = {"case": "k/M1024", "golden_old": 70.0, "tot_old": 86.09, "golden_new": 70.2, "tot_new": 69.5,
        "verdict": "fixed", "why": "TOT vs golden +23.0% → -0.7%"}  # fmt: skip
DATA = {
    "compare": "c.csv",
    "rule": "ignore golden < 4 us; regression iff tot > 1.005 x golden + 0.5 us",
    "golden": {"env": "golden", "triton": "3.6.0"},
    "tot": {"env": "tot", "triton": "3.9.0"},
    "gpu": "NVIDIA H100 80GB HBM3",
    "arch": "sm90",
    "dry_run": True,
    "written_to": "out/configs",
    "files": ["sm90-K-N=512-K=128.json"],
    "budget_min": 30.0,
    "kernels": [
        {
            "kernel": "k",
            "cases": 15,
            "regressions_before": 11,
            "fixed": 6,
            "retimed": 1,
            "regressions_after": 4,
            "failed_before": 1,
            "failed_after": 0,
        },
        {
            "kernel": "j",
            "cases": 5,
            "regressions_before": 0,
            "fixed": 0,
            "retimed": 0,
            "regressions_after": 0,
            "failed_before": 0,
            "failed_after": 0,
        },
    ],  # fmt: skip
    "kept": [
        {
            "slot": "sm90-K.json:any (N=512-K=128)",
            "kind": "per-shape",
            "file": "sm90-K-N=512-K=128.json",
            "bucket": "any",
            "old": {"BK": 64},
            "new": {"BK": 128},
            "change": "BK 64→128",
            "why": "fixes 1 of 1 cases it changes, none slower",
            "cases": [CASE],
        },
    ],  # fmt: skip
    "rejected": [
        {
            "slot": "sm90-K.json:any (N=512-K=128)",
            "stage": "guard",
            "config": {"BK": 128},
            "why": "shared sm90-K.json:any: k M512_N128: TOT slower: 30 µs → 33 µs (+10.0%)",
        },
    ],  # fmt: skip
    "left": [{"case": "k/M16", "verdict": "regression", "delta_pct": 4.8, "why": "every config slows golden"}],
    "slots": [
        {
            "slot": "sm90-K.json:any (N=512-K=128)",
            "targets": ["k/M1024"],
            "seed": {"BK": 64},
            "moves": [{"level": 1, "change": "BK 64→128", "config": {"BK": 128}}],
            "searched": 9,
            "ended": "no neighbour is better (converged)",
            "outcome": "kept",
            "why": "fixes 1 of 1",
        },
    ],  # fmt: skip
    "cost": {
        "compiled": 40,
        "timed": 38,
        "failed": {"compile_error": 2},
        "from_cache": 5,
        "pruned": 3,
        "configs_searched": 9,
        "runs": 4,
        "minutes": {"search": 3.25, "guard1": 1.5},
        "total_min": 4.75,
    },  # fmt: skip
    "notes": ["sm90-K.json:any: shared edit rejected"],
}


def test_before_after_per_kernel_in_the_seeds_form():
    cols, rows = kernel_rows(DATA)
    assert cols[:3] == ["kernel", "cases", "regressions: before → left"]
    assert cols[3:6] == ["fixed by a kept change", "not regressed when timed again (config unchanged)",
                         "TOT failures: before → left"]  # fmt: skip
    assert rows == [["k", 15, "11 / 15 → 4 / 15", 6, 1, "1 → 0", ""], ["j", 5, "0 / 5 → 0 / 5", 0, 0, "0 → 0", ""],
                    ["all", 20, "11 / 20 → 4 / 20", 6, 1, "1 → 0", ""]]  # fmt: skip


def test_an_older_retune_json_without_the_split_counts_shows_dashes():
    old = {**DATA, "kernels": [{k: v for k, v in r.items() if k not in ("fixed", "retimed")} for r in DATA["kernels"]]}
    rows = kernel_rows(old)[1]
    assert rows[0][:5] == ["k", 15, "11 / 15 → 4 / 15", "—", "—"] and rows[-1][3] == "—"


def test_what_was_asked_and_done_heads_the_report():
    data = {**DATA, "asked": {"kernels": ["k", "nocfg"], "targets": 14, "searched": 12, "slots": 1, "left_alone": 2}}
    md = render_markdown(data)
    assert md.splitlines()[2].startswith(
        "Asked: the 14 regressions and TOT failures of --kernel k, nocfg. Searched 12 in 1 slots; 1 change kept. "
        "Left alone: 2 (no config files to change"
    )


def test_a_kernel_left_alone_is_in_the_table_with_why():
    data = {**DATA, "kernels": [*DATA["kernels"], {"kernel": "nocfg", "cases": 3, "regressions_before": 2, "fixed": 0,
            "retimed": 0, "regressions_after": 2, "failed_before": 0, "failed_after": 0,
            "why": "its kernel looks up no config files: left alone"}]}  # fmt: skip
    rows = kernel_rows(data)[1]
    assert rows[2] == ["nocfg", 3, "2 / 3 → 2 / 3", 0, 0, "0 → 0", "its kernel looks up no config files: left alone"]
    assert rows[-1][2] == "13 / 23 → 6 / 23"


def test_markdown_names_every_change_its_reason_and_the_cost():
    md = render_markdown(DATA)
    assert "| k | 15 | 11 / 15 → 4 / 15 | 6 | 1 | 1 → 0 |" in md
    assert "### sm90-K-N=512-K=128.json:any (per-shape)\n\nBK 64→128: fixes 1 of 1 cases it changes, none slower." in md
    assert "| k/M1024 | 70 | 86.09 | 70.2 | 69.5 | fixed | TOT vs golden +23.0% → -0.7% |" in md
    assert '| sm90-K.json:any (N=512-K=128) | guard | {"BK": 128} | shared sm90-K.json:any: k M512_N128' in md
    assert "| sm90-K.json:any (N=512-K=128) | M1024 | BK 64→128 (level 1) | 9 | kept | fixes 1 of 1 |" in md
    assert "| k/M16 | regression | 4.8 | every config slows golden |" in md
    assert (
        "9 configs searched (3 more pruned before compiling); 40 case × config × stack compiled, 38 timed, failed: "
        "2 compile_error; 5 timings from the cache; 4 runs; measuring minutes: search 3.25, guard1 1.50 "
        "(total 4.75 of a 30-minute budget)."
    ) in md
    assert "1 config files proposed in out/configs: sm90-K-N=512-K=128.json" in md
    assert "- sm90-K.json:any: shared edit rejected" in md


def test_html_section_and_files(tmp_path):
    section = html_section(DATA)
    assert section.count("<table") == 5 and "11 / 15 → 4 / 15" in section and "<script" not in section
    assert render_html(DATA).startswith("<!doctype html>")
    paths = write_reports(DATA, tmp_path)
    assert load_summary(paths["json"])["kept"][0]["new"] == {"BK": 128}
    assert paths["md"].read_text() == render_markdown(DATA)

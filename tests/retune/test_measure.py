"""harness/retune/measure.py: candidates timed by `harness run`'s own machinery, through the cache; a guard's four
measurements interleaved, each worker resolving its case's config from the files it is pointed at."""

from __future__ import annotations

import shutil
import sys
import time

import pytest

from harness.envs.spec import load_env_spec
from harness.inputs.kernel import load_kernel
from harness.inputs.suite import Case
from harness.retune.cache import Cache
from harness.retune.configtext import replace_bucket
from harness.retune.measure import GuardCase, Item, Measurer, Stack
from harness.run.options import RunOptions
from harness.run.orchestrate import Driver
from harness.run.workers import WorkerPool
from tests.conftest import DATA

pytestmark = pytest.mark.slow


@pytest.fixture
def measurer(tmp_path, monkeypatch):
    """A Measurer as the retune makes it: its runs keep their workers in one pool (the retune's, for its whole run)."""
    monkeypatch.setenv("HARNESS_TEST_PYTHON", sys.executable)
    spec = load_env_spec(DATA / "cpu-env.yaml")
    stacks = {s: Stack(s, spec, "3.9.0", f"{s} stack", "cpu") for s in ("golden", "tot")}
    opts = RunOptions(launches=1, heat_s=0, timing="wallclock")
    with WorkerPool() as workers:
        cache = Cache(tmp_path / "out" / "cache.jsonl")
        yield Measurer(tmp_path / "out", stacks, cache, opts, Driver(workers=workers))


def toy(m: int, n: int) -> Case:
    k = load_kernel(str(DATA / "retune_kernel.py"))
    return Case(k, k.spec.case_params({"M": m, "N": n}, "test"))


def test_a_batch_is_timed_once_then_read_from_the_cache(measurer):
    fast, slow = {"BLOCK_N": 64, "SPLIT": 1, "num_warps": 1}, {"BLOCK_N": 16, "SPLIT": 1, "num_warps": 1}
    items = [Item(toy(32, 16), fast), Item(toy(32, 16), slow), Item(toy(32, 16), {**fast, "BLOCK_N": 128})]
    measurer.batch("tot", items, DATA / "retune_configs", "search")
    t = {it.config["BLOCK_N"]: measurer.lookup(it.case, it.config, "tot") for it in items}
    assert t[64].status == "ok" and t[16].status == "ok" and t[16].time_us > 2 * t[64].time_us  # 8 vs 3 units
    assert t[128].status == "compile_error" and "out of resource" in t[128].error
    assert (measurer.cost.runs, measurer.cost.timed, measurer.cost.failed) == (1, 2, {"compile_error": 1})
    measurer.batch("tot", items, DATA / "retune_configs", "search")
    assert measurer.cost.runs == 1 and measurer.cost.cached == 3
    assert measurer.lookup(items[0].case, fast, "golden") is None  # another stack: not timed yet


def test_a_guard_measures_the_files_it_is_given(measurer, tmp_path):
    new = tmp_path / "new"
    shutil.copytree(DATA / "retune_configs", new)
    f = new / "interp-RETUNE-TOY.json"
    f.write_text(replace_bucket(f.read_text(), "any", {"BLOCK_N": 64, "SPLIT": 1, "num_warps": 1}))
    old_cfg, new_cfg = {"BLOCK_N": 16, "SPLIT": 1, "num_warps": 1}, {"BLOCK_N": 64, "SPLIT": 1, "num_warps": 1}
    g = GuardCase(toy(32, 16), old_cfg, old_cfg, new_cfg)
    dirs = {"golden_old": DATA / "retune_configs", "tot_old": DATA / "retune_configs", "golden_new": new,
            "tot_new": new}  # fmt: skip
    m = measurer.guard([g], dirs)["retune_toy/M32_N16"]
    assert m.status == ("ok", "ok", "ok", "ok") and m.tot_old > 2 * m.tot_new
    assert measurer.cost.runs == 1 and len(list((tmp_path / "out" / "runs").glob("guard-*-tot_new.csv"))) == 1
    assert measurer.guard([g], dirs)["retune_toy/M32_N16"] == m and measurer.cost.runs == 1  # cached
    wrong = GuardCase(toy(32, 16), old_cfg, old_cfg, {**new_cfg, "num_warps": 2})  # not what the files give
    with pytest.raises(RuntimeError, match="the worker resolved"):
        measurer.guard([wrong], dirs)


def test_a_guard_keeps_apart_two_kernels_with_one_case_id(measurer, tmp_path):
    """The batched GEMMs share case ids (a8w8 and a16wfp4 both have B128_M512_N512_K128): each measurement is its
    own kernel's, not the other's row of the same run."""
    twin_file = tmp_path / "twin_kernel.py"
    text = (DATA / "retune_kernel.py").read_text()
    twin_file.write_text(text.replace('name="retune_toy"', 'name="retune_twin"').replace("UNIT = 0.01", "UNIT = 0.03"))
    twin = load_kernel(str(twin_file))
    cfg = {"BLOCK_N": 16, "SPLIT": 1, "num_warps": 1}
    # N=32 BLOCK_N 16: the toy's cheapest case under either Triton (3 units: 60 ms a launch, the twin's 180 ms)
    cases = [toy(32, 32), Case(twin, twin.spec.case_params({"M": 32, "N": 32}, "test"))]
    assert cases[0].case_id == cases[1].case_id
    dirs = dict.fromkeys(("golden_old", "tot_old", "golden_new", "tot_new"), DATA / "retune_configs")
    got = measurer.guard([GuardCase(c, cfg, cfg, cfg) for c in cases], dirs)
    mine, its = got["retune_toy/M32_N32"], got["retune_twin/M32_N32"]
    assert (mine.kernel, its.kernel) == ("retune_toy", "retune_twin")
    assert its.tot_new > 2 * mine.tot_new and its.golden_old > 2 * mine.golden_old  # 3 × the sleep


def test_a_cut_run_still_costs_its_time(measurer, monkeypatch):
    """A batch cut by a deadline (SIGTERM unwinds as an exception) charges what it ran to the budget and saves it,
    so that a retune cut again and again in the same place still reaches the end of its budget."""
    import harness.run.orchestrate as orchestrate

    class Cut(Exception):
        pass

    def cut(*a, **kw):
        time.sleep(0.2)
        raise Cut

    saved = []
    measurer.progress = lambda cost: saved.append(dict(cost.seconds))
    monkeypatch.setattr(orchestrate, "run_suite", cut)
    with pytest.raises(Cut):
        measurer.batch("tot", [Item(toy(32, 16), {"BLOCK_N": 64, "SPLIT": 1, "num_warps": 1})],
                       DATA / "retune_configs", "search")  # fmt: skip
    assert measurer.cost.runs == 1 and measurer.cost.seconds["search"] >= 0.2
    assert saved and saved[-1]["search"] >= 0.2

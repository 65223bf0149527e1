"""Fuzz-style: the argument space of the commands built since the first hardening pass (env unpack, bisect,
retune, merge, explain, report, run's --shard/--gpus/--times/--record), each call with at least one bad input,
drawn from a seeded generator. Every one must be refused in exactly one line, exit 2, without a traceback and
without touching a file that was there before (no exit 0 on a refused input, no exit 3)."""

from __future__ import annotations

import hashlib
import os
import random
import sys
from pathlib import Path

import pytest

from harness.cli import main
from tests.bisect.known_times import comparison
from tests.conftest import DATA, ROOT

CALLS = 400  # sampled argument lists
SEED = 31


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict[str, Path]:
    """Inputs of every kind a user may hand over: a comparison and its results, a bundle, a file, a folder of
    someone's files, a folder under a file, missing paths."""
    from harness.envs.pack import pack
    from tests.envs.wheels import synthetic_wheel

    root = tmp_path_factory.mktemp("fuzz")
    cmp = comparison(root / "cmp", {"step380": [40.0, 40.2, 40.1]}, {"step380": [60.0, 60.1, 60.2]})
    pack("3.7.1", root / "bundle", wheel=synthetic_wheel(root / "wheels"), part_mb=0.1, log=lambda m: None)
    (root / "afile").write_text("not a folder\n")
    (root / "busy").mkdir()
    (root / "busy" / "thesis.tex").write_text("mine\n")
    (root / "notcsv.csv").write_bytes(b"\x00\xff garbage")
    (root / "nometa").mkdir()
    (root / "nometa" / "compare.csv").write_bytes(cmp.read_bytes())  # a comparison whose .meta.json was lost
    return {
        "root": root,
        "cmp": cmp,
        "golden": cmp.with_name("golden.csv"),
        "tot": cmp.with_name("tot.csv"),
        "bundle": root / "bundle",
        "afile": root / "afile",
        "busy": root / "busy",
        "notcsv": root / "notcsv.csv",
        "nometa": root / "nometa" / "compare.csv",
        "missing": root / "no" / "such",
    }


def _bad_out(w: dict[str, Path]) -> list[str]:
    """--out folders that must be refused: a file, under a file, someone's folder, over or around an input."""
    return [str(w["afile"]), str(w["afile"] / "o"), str(w["busy"]), str(w["cmp"].parent), str(w["cmp"]),
            str(w["root"]), str(w["golden"].with_name("golden.artifacts") / "x")]  # fmt: skip


def _bad_input(w: dict[str, Path]) -> list[str]:
    return [str(w["missing"]), str(w["afile"]), str(w["notcsv"]), str(w["busy"]), str(w["bundle"])]


def _numbers() -> list[str]:
    return ["0", "-1", "nan", "inf", "-inf", "x", "1e999", ""]


def draw(rng: random.Random, w: dict[str, Path]) -> list[str]:
    """One argument list with at least one bad input."""
    out_ok = str(w["root"] / f"new-{rng.randrange(10**6)}")
    bad_out, bad_in, nums = _bad_out(w), _bad_input(w), _numbers()
    cmd = rng.choice(["unpack", "pack", "compare", "bisect", "retune", "merge", "explain", "report", "run", "history"])
    if cmd == "unpack":
        src = rng.choice([str(w["bundle"]), *bad_in])
        dest = rng.choice([str(w["bundle"]), str(w["bundle"] / "p0"), str(w["root"]), str(w["afile"]), str(w["busy"]),
                           str(w["bundle"].parent)])  # fmt: skip
        return ["env", "unpack", src, "--dest", dest, *(["--force"] if rng.random() < 0.7 else [])]
    if cmd == "bisect":
        versions = rng.choice(["", ",", "3.8", "x.y.z", "3.8.0,3.8.0", "3.8.0", "3.7.1,3.8.0", "nope.yaml"])
        args = ["bisect", rng.choice([str(w["cmp"]), *bad_in]), "--versions", versions,
                "--out", rng.choice([out_ok, *bad_out])]  # fmt: skip
        extra = rng.choice([[], ["--reps", rng.choice(["0", "-2", "x"])], ["--timeout", rng.choice(nums)],
                            ["--remeasure", "-1"], ["--mode", rng.choice(["bogus", "", "VENV"])],
                            ["--case", rng.choice(["(", "[", "nothing-like-this"])], ["--launches", "0"]])  # fmt: skip
        return args + extra
    if cmd == "retune":
        args = ["retune", rng.choice([str(w["cmp"]), *bad_in]), "--env", rng.choice(["nope", str(w["afile"])]),
                "--golden-env", "nope2", "--out", rng.choice([out_ok, *bad_out])]  # fmt: skip
        extra = rng.choice([[], ["--budget-min", rng.choice(nums)], ["--search-min", rng.choice(["-1", "99", "x"])],
                            ["--timeout", rng.choice(nums)], ["--hints", rng.choice([*bad_in, str(w["cmp"])])],
                            ["--reps", "0"]])  # fmt: skip
        return args + extra
    if cmd == "merge":
        parts = rng.sample([str(w["golden"]), str(w["tot"]), *bad_in], k=rng.randint(1, 3))
        out = rng.choice([*parts, str(w["afile"] / "m.csv"), str(w["busy"]), str(w["cmp"]), str(w["golden"])])
        return ["merge", *parts, "--out", out]
    if cmd == "explain":
        args = ["explain", rng.choice([str(w["cmp"]), *bad_in]), "--out", rng.choice([out_ok, *bad_out])]
        extra = rng.choice([[], ["--golden-artifacts", rng.choice([str(w["afile"]), str(w["missing"])])],
                            ["--tot-artifacts", str(w["notcsv"])], ["--case", "("], ["--limit", "0"]])  # fmt: skip
        return args + extra
    if cmd == "report":
        src = rng.choice([str(w["golden"]), *bad_in])
        own = [o for o in bad_out if "artifacts" not in o]  # inside an artifacts folder: no input of a report's
        out = rng.choice(own) if src == str(w["golden"]) else rng.choice([out_ok, *bad_out])
        extra = rng.choice([[], ["--compare", rng.choice(bad_in)], ["--ceilings", rng.choice(bad_in)],
                            ["--retune", rng.choice(bad_in)]])  # fmt: skip
        return ["report", src, "--out", out, *extra]
    if cmd == "pack":
        bad = rng.choice([
            ["--out", rng.choice([str(w["bundle"]), str(w["busy"]), str(w["afile"]), str(w["afile"] / "b")])],
            ["--out", out_ok, "--level", rng.choice(["-1", "10", "x"])],
            ["--out", out_ok, "--part-mb", rng.choice(["0", "-1", "nan", "x"])],
            ["--out", out_ok, "--python", rng.choice(["3", "x.y", "2.7.1", ""])],
            ["--out", out_ok, "--arch", rng.choice(["sparc", ""])],
        ])  # fmt: skip
        version = rng.choice(["3.7.1", "3.8", "latest", "x"])
        wheel = rng.choice([str(w["missing"]), str(w["afile"]), str(w["busy"])])
        return ["env", "pack", version, "--wheel", wheel, *bad]
    if cmd == "compare":
        g, t = str(w["golden"]), str(w["tot"])
        return rng.choice([
            ["compare", g, t, "--out", rng.choice([g, t, str(w["afile"] / "c.csv"), str(w["busy"])])],
            ["compare", g, t, "--out", str(w["root"] / "c.csv"), "--markdown", str(w["root"] / "c.csv")],
            ["compare", g, t, "--markdown", rng.choice([g, str(w["golden"]) + ".env.json"])],
            ["compare", rng.choice(bad_in), t],
            ["compare", g, t, "--rel", rng.choice(["0", "-1", "nan", "inf"])],
            ["compare", g, t, "--unstable", "maybe"],
            ["compare", g, t, "--worst", "0"],
        ])  # fmt: skip
    if cmd == "history":
        db = rng.choice([str(w["root"] / "none.sqlite"), str(w["afile"]), str(w["busy"]), "mysql://u@h/db"])
        return rng.choice([
            ["history", "add", "--db", str(w["root"] / "h.sqlite"), str(w["nometa"])],  # a compare CSV without meta
            ["history", "add", "--db", str(w["root"] / "h.sqlite"), rng.choice(bad_in)],
            ["history", "remove", rng.choice(["run", "comparison", "table", ""]), rng.choice(["1", "0", "-1", "x"]),
             "--db", db],
            ["compare", str(w["golden"]), str(w["tot"]), "--record", "--db-is-not-an-option"],
        ])  # fmt: skip
    args = ["run", "--env", str(DATA / "cpu-env.yaml"), "--suite", str(ROOT / "examples" / "softmax.yaml")]
    bad = rng.choice([
        ["--shard", rng.choice(["0/2", "3/2", "x", "1/0", "-1/2", "", "1/2/3"])],
        ["--gpus", rng.choice(["", "x", "-1", "0,0", "a,b"])],
        ["--times", str(w["golden"])],  # without --shard or --gpus
        ["--timeout", rng.choice(nums)],
        ["--launch-gap", rng.choice(["-1", "nan", "inf", "soon"])],
        ["--timing", "sundial"],
        ["--with-env", "x"],  # without --with-out
        ["--filter", "nothing-like-this"],
        ["--kernel", "no_such_kernel"],
    ])  # fmt: skip
    out = rng.choice([str(w["root"] / "r.csv"), str(w["afile"] / "r.csv"), str(w["busy"]), str(w["golden"])])
    return [*args, "--out", out, *bad]


def _snapshot(root: Path) -> dict[str, str]:
    """Every path under ``root``: a file by its bytes' hash, a folder as such."""
    return {str(p): hashlib.sha1(p.read_bytes()).hexdigest() if p.is_file() else "dir" for p in root.rglob("*")}


@pytest.fixture(autouse=True)
def _python(monkeypatch):
    monkeypatch.setenv("HARNESS_TEST_PYTHON", os.environ.get("HARNESS_TEST_PYTHON", sys.executable))
    monkeypatch.delenv("HARNESS_DB", raising=False)


@pytest.mark.parametrize("n", range(CALLS))
def test_a_refused_input_is_one_line_and_exit_2(world, capsys, monkeypatch, n):
    monkeypatch.chdir(world["root"])  # release envs a bisection would write land here, never in the repository
    rng = random.Random(SEED * 100_003 + n)
    argv = draw(rng, world)
    before = _snapshot(world["root"])
    with pytest.raises(SystemExit) as ex:
        main(argv)
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    shown = " ".join(argv)
    assert ex.value.code == 2, f"{shown}: exit {ex.value.code}\n{err[-2000:]}"
    assert "Traceback" not in err, f"{shown}\n{err}"
    assert len(lines) == 1 and lines[0].startswith("harness: error: "), f"{shown}\n{err}"
    after = _snapshot(world["root"])
    changed = [p for p, h in before.items() if after.get(p) != h]
    assert not changed, f"{shown}: changed or removed {changed[:3]}"
    made = sorted(set(after) - set(before))
    assert not made, f"{shown}: a refused command made {made[:3]}"

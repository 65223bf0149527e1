"""The bundle's rules as data: what an NVIDIA node never loads, entry points and RECORD without it, wheel names,
pip's arguments, the manifest's checks and the parts' plan."""

from __future__ import annotations

import copy

import pytest

from harness.envs import bundle as B
from harness.errors import HarnessError


@pytest.mark.parametrize(
    "name,why",
    [
        ("triton/backends/amd/compiler.py", "AMD backend"),
        ("triton/backends/amd/lib/ockl.bc", "AMD backend"),
        ("triton/backends/nvidia/lib/libcupti_static.a", "static library (used only to link, never loaded)"),
        ("triton/_C/include/foo_static.a", "static library (used only to link, never loaded)"),
        ("triton/backends/nvidia/bin/ptxas-blackwell", None),  # Triton 3.9 looks it up even on sm_90
        ("triton/backends/nvidia/bin/ptxas", None),
        ("triton/backends/nvidia/lib/libcupti.so", None),
        ("triton/backends/amdgpu_helper.py", None),  # not the amd/ folder
        ("triton/_C/libtriton.so", None),
    ],
)
def test_what_is_dropped(name, why):
    assert B.drop_reason(name) == why


def test_keep_wins_over_drop(monkeypatch):
    monkeypatch.setattr(B, "DROP", (("triton/backends/*", "everything"),))
    assert B.drop_reason("triton/backends/nvidia/bin/ptxas-blackwell") is None
    assert B.drop_reason("triton/backends/nvidia/compiler.py") == "everything"


def test_executables():
    assert B.executable("triton/backends/nvidia/bin/cuobjdump")
    assert not B.executable("triton/backends/nvidia/lib/libcupti.so")


def test_entry_points_and_record_lose_the_dropped_backend():
    text = (
        "[console_scripts]\nproton = triton.profiler.proton:main\n\n"
        "[triton.backends]\namd = triton.backends.amd\namdx = triton.backends.amdx\nnvidia = triton.backends.nvidia\n"
    )
    assert B.dropped_packages() == ["triton/backends/amd"]
    got = B.entry_points_without_dropped(text, B.dropped_packages())
    assert "amd = " not in got and "amdx = triton.backends.amdx" in got and "nvidia = triton.backends.nvidia" in got
    assert "proton = triton.profiler.proton:main" in got
    record = "a/x.py,sha256=1,3\ntriton/backends/amd/c.py,sha256=2,4\nb.a,,\n"
    assert B.record_without_dropped(record, {"triton/backends/amd/c.py", "b.a"}) == "a/x.py,sha256=1,3\n"


@pytest.mark.parametrize("name", ["/etc/passwd", "../x", "a/../../x", "a\\b", "C:x", ""])
def test_unsafe_members(name):
    assert not B.safe_member(name)


def test_wheel_names_and_python_tags():
    info = B.wheel_info("triton-3.8.0-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl")
    assert (info["name"], info["version"], info["python"]) == ("triton", "3.8.0", "cp312")
    with pytest.raises(HarnessError, match="not a wheel file name"):
        B.wheel_info("triton-3.8.0.tar.gz")
    assert B.python_tag("3.12") == "cp312"
    with pytest.raises(HarnessError, match="expected MAJOR.MINOR"):
        B.python_tag("3.12.1")


def test_pip_download_arguments():
    args = B.pip_download_args("3.8.0", "3.12", "x86_64", "/tmp/d", find_links="/w")
    assert args[-3:] == ["-d", "/tmp/d", "triton==3.8.0"]
    assert "--no-deps" in args and "--only-binary=:all:" in args and "manylinux_2_28_x86_64" in args
    assert args[args.index("--python-version") + 1] == "3.12" and "cp312" in args
    assert "--no-index" in args  # find-links alone: no index
    assert "--no-index" not in B.pip_download_args("3.8.0", "3.12", "x86_64", "d", "https://i/simple", "/w")
    with pytest.raises(HarnessError, match="--arch 'ppc'"):
        B.pip_download_args("3.8.0", "3.12", "ppc", "d")


def test_part_sizes():
    assert B.part_bytes(45) == 45 * 2**20
    assert B.part_count(100, 40) == 3 and B.part_count(80, 40) == 2 and B.part_count(0, 40) == 1
    for bad in (0, -1, 0.0001, float("nan"), float("inf")):
        with pytest.raises(HarnessError, match="--part-mb"):
            B.part_bytes(bad)
    assert B.part_name("triton-3.8.0.tar.xz", 3) == "triton-3.8.0.tar.xz.part03"


def good_manifest() -> dict:
    sha = "ab" * 32
    return B.manifest(
        version="3.8.0",
        python="3.12",
        wheel={"name": "w.whl"},
        archive={"name": "triton-3.8.0.tar.xz", "bytes": 30, "sha256": sha},
        parts=[{"name": "a.part00", "bytes": 20, "sha256": sha}, {"name": "a.part01", "bytes": 10, "sha256": sha}],
        dropped={},
        executables=["triton/backends/nvidia/bin/ptxas"],
        created_at="now",
    )


@pytest.mark.parametrize(
    "change,message",
    [
        (lambda m: m.update(format="x"), "not a bundle manifest"),
        (lambda m: m.update(format_version=2), "format_version 2"),
        (lambda m: m.pop("python"), "'python' missing"),
        (lambda m: m.update(parts=[]), "'parts' missing"),
        (lambda m: m["parts"][0].update(sha256="xyz"), r"parts\[0\]: no sha256"),
        (lambda m: m["parts"][1].update(name="../p"), r"parts\[1\]: no file name"),
        (lambda m: m["parts"][1].update(bytes=True), r"parts\[1\]: no size"),
        (lambda m: m["parts"][1].update(bytes=11), "do not add up"),
        (lambda m: m.update(executables=["/bin/sh"]), "outside the bundle"),
        (lambda m: m["archive"].update(name="../a.tar.xz"), "'archive' missing"),
    ],
)
def test_bad_manifests_are_one_line(change, message):
    m = copy.deepcopy(good_manifest())
    change(m)
    with pytest.raises(HarnessError, match=message) as err:
        B.check_manifest(m, "p0/manifest.json")
    assert str(err.value).startswith("p0/manifest.json: ") and "\n" not in str(err.value)


def test_plan_parts_names_what_is_missing_or_short():
    m = good_manifest()
    assert B.plan_parts(m, {"a.part00": [("x/a.part00", 20)], "a.part01": [("y/a.part01", 10)]}, "S") == [
        "x/a.part00",
        "y/a.part01",
    ]
    with pytest.raises(HarnessError, match=r"S: part 2 of 2 \(a.part01\) is not there"):
        B.plan_parts(m, {"a.part00": [("x/a.part00", 20)]}, "S")
    with pytest.raises(HarnessError, match="y/a.part01: 9 bytes, the manifest says 10"):
        B.plan_parts(m, {"a.part00": [("x/a.part00", 20)], "a.part01": [("y/a.part01", 9)]}, "S")
    # a short copy beside a full one: the full one is used
    got = B.plan_parts(m, {"a.part00": [("x", 20)], "a.part01": [("short", 3), ("full", 10)]}, "S")
    assert got == ["x", "full"]

"""`harness env pack` / `unpack` on a synthetic wheel (and one real Triton release when the network allows):
parts and checksums, what is dropped and kept, exec bits, refusals, and the overlay as a `mode: overlay` env."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import main
from harness.envs import bundle as B
from harness.envs.pack import pack
from harness.envs.spec import load_env_spec
from harness.envs.unpack import read_bundle, unpack
from harness.envs.venv import OVERLAY_MARKER, check_venv, probe
from harness.errors import HarnessError
from tests.conftest import ROOT
from tests.envs.wheels import synthetic_wheel

QUIET = {"log": lambda m: None}
HERE = f"{sys.version_info[0]}.{sys.version_info[1]}"  # this Python, MAJOR.MINOR


@pytest.fixture
def wheel(tmp_path) -> Path:
    return synthetic_wheel(tmp_path / "wheels")


@pytest.fixture
def bundle(tmp_path, wheel) -> Path:
    pack("3.7.1", tmp_path / "bundle", wheel=wheel, part_mb=0.1, **QUIET)
    return tmp_path / "bundle"


def run_cli(argv: list[str], capsys) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out, err = capsys.readouterr()
    return exc.value.code or 0, out, err


def one_line_refusal(argv: list[str], capsys) -> str:
    code, _, err = run_cli(argv, capsys)
    lines = [line for line in err.splitlines() if line.startswith("harness: error:")]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# ------------------------------------------------------------------------------------------------ pack


def test_parts_have_the_chosen_size_and_add_up_to_the_archive(bundle):
    folders = sorted(p.name for p in bundle.iterdir())
    man = json.loads((bundle / "p0" / B.MANIFEST).read_text())
    assert folders == [f"p{i}" for i in range(len(man["parts"]))] and len(folders) == 3
    whole = hashlib.sha256()
    for i, part in enumerate(man["parts"]):
        data = (bundle / f"p{i}" / part["name"]).read_bytes()
        assert len(data) == part["bytes"] <= 0.1 * 2**20 and hashlib.sha256(data).hexdigest() == part["sha256"]
        assert json.loads((bundle / f"p{i}" / B.MANIFEST).read_text()) == man  # every folder knows the whole
        whole.update(data)
    assert whole.hexdigest() == man["archive"]["sha256"]
    assert (man["version"], man["python"], man["dropped"]["files"]) == ("3.7.1", HERE, 4)
    assert "triton/backends/nvidia/bin/ptxas-blackwell" in man["executables"]


def test_the_same_wheel_packs_to_the_same_archive(tmp_path, wheel, bundle):
    again = pack("3.7.1", tmp_path / "again", wheel=wheel, part_mb=0.1, **QUIET)
    assert again["archive"]["sha256"] == json.loads((bundle / "p0" / B.MANIFEST).read_text())["archive"]["sha256"]


def test_pack_through_pip_download(tmp_path, wheel):
    """A real `pip download` from a folder of wheels (no network): the release, for the Python asked for."""
    man = pack("3.7.1", tmp_path / "b", find_links=str(wheel.parent), python="3.10", **QUIET)
    assert man["python"] == "3.10" and man["wheel"]["name"] == wheel.name
    assert man["wheel"]["sha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest()
    with pytest.raises(HarnessError, match=r"pip download triton==3.7.2 \(Python 3.10, x86_64\) failed: "):
        pack("3.7.2", tmp_path / "c", find_links=str(wheel.parent), python="3.10", **QUIET)
    assert not (tmp_path / "c").exists()


def test_pack_refusals(tmp_path, wheel, bundle):
    with pytest.raises(HarnessError, match="exists and is not empty"):
        pack("3.7.1", bundle, wheel=wheel, **QUIET)
    with pytest.raises(HarnessError, match="is triton 3.7.1, not triton 3.8.0"):
        pack("3.8.0", tmp_path / "x", wheel=wheel, **QUIET)
    with pytest.raises(HarnessError, match="not a release version"):
        pack("latest", tmp_path / "x", wheel=wheel, **QUIET)
    bad = tmp_path / "triton-3.7.1-py3-none-any.whl"
    bad.write_bytes(b"not a zip")
    with pytest.raises(HarnessError, match="not a zip archive"):
        pack("3.7.1", tmp_path / "x", wheel=bad, **QUIET)
    assert not (tmp_path / "x").exists() and not list(tmp_path.glob(".x.pack-*"))  # nothing left behind


# ---------------------------------------------------------------------------------------------- unpack


def test_unpack_drops_amd_and_static_libs_keeps_tools_executable(tmp_path, bundle):
    dest, rec = unpack(bundle, tmp_path / "ov", **QUIET)
    names = {str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file()}
    assert not any("backends/amd" in n or n.endswith("_static.a") for n in names)
    for tool in ("ptxas", "ptxas-blackwell", "cuobjdump"):  # cuobjdump: no mode in the wheel
        assert os.access(dest / "triton/backends/nvidia/bin" / tool, os.X_OK), tool
    dist = dest / "triton-3.7.1.dist-info"
    assert "amd" not in (dist / "entry_points.txt").read_text()
    assert "backends/amd" not in (dist / "RECORD").read_text()
    assert rec["version"] == "3.7.1" and json.loads((dest / OVERLAY_MARKER).read_text()) == rec
    r = subprocess.run(
        [sys.executable, "-c", "import triton; print(triton.__version__, triton.__file__)"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(dest)},
    )
    version, path = r.stdout.split()
    assert version == "3.7.1" and Path(path).parent == dest / "triton"  # ahead of site-packages' Triton


def test_unpack_from_one_folder_holding_every_part(tmp_path, bundle):
    flat = tmp_path / "flat"
    flat.mkdir()
    for f in bundle.rglob("*.part*"):
        shutil.copy(f, flat)
    shutil.copy(bundle / "p1" / B.MANIFEST, flat)
    dest, _ = unpack(flat, tmp_path / "ov", **QUIET)
    assert (dest / "triton/__init__.py").exists()


def test_a_missing_or_damaged_part_unpacks_nothing(tmp_path, bundle):
    shutil.rmtree(bundle / "p1")
    with pytest.raises(HarnessError, match=r"part 2 of 3 \(triton-3.7.1.tar.xz.part01\) is not there"):
        unpack(bundle, tmp_path / "ov", **QUIET)
    assert not (tmp_path / "ov").exists()


def test_a_damaged_part_is_named(tmp_path, wheel):
    b = tmp_path / "b"
    pack("3.7.1", b, wheel=wheel, part_mb=0.1, **QUIET)
    part = next((b / "p2").glob("*.part02"))
    data = bytearray(part.read_bytes())
    data[100] ^= 0xFF
    part.write_bytes(bytes(data))
    with pytest.raises(HarnessError, match=r"part02: its sha256 is not the manifest's: a damaged copy"):
        unpack(b, tmp_path / "ov", **QUIET)
    assert not (tmp_path / "ov").exists() and not list(tmp_path.glob(".ov.unpack-*"))


def test_two_bundles_in_one_folder_are_refused(tmp_path, wheel, bundle):
    other = synthetic_wheel(tmp_path / "w2", "3.8.0", noise=1000)
    pack("3.8.0", bundle / "more", wheel=other, **QUIET)
    with pytest.raises(HarnessError, match=r"holds two bundles \(triton 3\.(7\.1|8\.0) in .*, triton 3\.(7\.1|8\.0)"):
        read_bundle(bundle)


def test_unpack_twice_and_over_something_else(tmp_path, wheel, bundle):
    dest, rec = unpack(bundle, tmp_path / "ov", **QUIET)
    said = []
    assert unpack(bundle, dest, log=said.append)[1] == rec and "unpacked there already" in said[0]
    other = tmp_path / "other"
    pack("3.8.0", other, wheel=synthetic_wheel(tmp_path / "w2", "3.8.0", noise=1000), **QUIET)
    with pytest.raises(HarnessError, match=r"exists and holds triton 3.7.1: pass --force"):
        unpack(other, dest, **QUIET)
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "mine.txt").write_text("x")
    with pytest.raises(HarnessError, match="exists and is not an overlay unpacked by harness"):
        unpack(other, tmp_path / "busy", **QUIET)
    dest2, rec2 = unpack(other, dest, force=True, **QUIET)
    assert dest2 == dest and rec2["version"] == "3.8.0" and "3.8.0" in (dest / "triton/__init__.py").read_text()
    assert not list(tmp_path.glob(".ov.*"))


def test_unpack_defaults_to_harness_triton_dir(tmp_path, bundle, monkeypatch):
    monkeypatch.setenv("HARNESS_TRITON_DIR", str(tmp_path / "tri"))
    dest, _ = unpack(bundle, **QUIET)
    assert dest == tmp_path / "tri" / "3.7.1"


# ------------------------------------------------------------------------------------- overlay env specs


def overlay_spec(tmp_path: Path, dest: Path, version: str = "3.7.1") -> Path:
    p = tmp_path / "ov.yaml"
    p.write_text(f'name: ov\ntriton: "{version}"\nmode: overlay\noverlay: {dest}\npython: {sys.executable}\n')
    return p


def test_an_overlay_spec_runs_the_unpacked_release(tmp_path, bundle):
    dest, _ = unpack(bundle, tmp_path / "ov", **QUIET)
    spec = load_env_spec(overlay_spec(tmp_path, dest))
    check_venv(spec)
    assert spec.pythonpath[0] == str(dest) and spec.summary()["triton"] == "3.7.1"
    info = probe(spec)
    assert info["triton"]["version"] == "3.7.1" and Path(info["triton"]["path"]) == dest / "triton"


def test_overlay_spec_refusals(tmp_path, wheel, bundle):
    dest = tmp_path / "ov"
    with pytest.raises(HarnessError, match=r"overlay .*ov does not exist: unpack the release there: `harness env unpa"):
        check_venv(load_env_spec(overlay_spec(tmp_path, dest)))
    dest.mkdir()
    with pytest.raises(HarnessError, match=r"has no record of a completed unpack \(\.harness-overlay\.json\)"):
        check_venv(load_env_spec(overlay_spec(tmp_path, dest)))
    unpack(bundle, dest, force=True, **QUIET)
    with pytest.raises(HarnessError, match="holds triton 3.7.1 but the spec names triton 3.8.0"):
        check_venv(load_env_spec(overlay_spec(tmp_path, dest, "3.8.0")))
    old = tmp_path / "py310"
    pack("3.7.1", old, wheel=wheel, python="3.10", **QUIET)
    unpack(old, tmp_path / "ov310", **QUIET)

    with pytest.raises(HarnessError, match=rf"packed for Python 3.10 but .* is Python {HERE}: pack it again with "):
        check_venv(load_env_spec(overlay_spec(tmp_path, tmp_path / "ov310")))


# ------------------------------------------------------------------------------------------------- CLI


def test_cli_pack_and_unpack(tmp_path, wheel, capsys):
    code, out, _ = run_cli(
        ["env", "pack", "3.7.1", "--wheel", str(wheel), "--out", str(tmp_path / "b"), "--part-mb", "0.2"], capsys
    )
    assert code == 0 and "packed triton 3.7.1" in out and "2 parts" in out
    code, out, _ = run_cli(["env", "unpack", str(tmp_path / "b"), "--dest", str(tmp_path / "ov")], capsys)
    assert code == 0 and f"PYTHONPATH={tmp_path / 'ov'}" in out
    assert "already" in run_cli(["env", "unpack", str(tmp_path / "b"), "--dest", str(tmp_path / "ov")], capsys)[2]


def test_cli_refusals_are_one_line(tmp_path, wheel, capsys):
    assert "--part-mb 0: expected a size" in one_line_refusal(
        ["env", "pack", "3.7.1", "--wheel", str(wheel), "--out", str(tmp_path / "b"), "--part-mb", "0"], capsys
    )
    assert "--level 12" in one_line_refusal(
        ["env", "pack", "3.7.1", "--wheel", str(wheel), "--out", str(tmp_path / "b"), "--level", "12"], capsys
    )
    missing = ["env", "pack", "3.7.1", "--wheel", str(tmp_path / "no.whl"), "--out", str(tmp_path / "c")]
    assert "--wheel" in one_line_refusal(missing, capsys)
    assert "not a bundle written by" in one_line_refusal(["env", "unpack", str(tmp_path)], capsys)
    assert "no such folder" in one_line_refusal(["env", "unpack", str(tmp_path / "nope")], capsys)


# ------------------------------------------------------------------------------------- a real release


def _download_or_skip(tmp_path: Path, version: str, python: str) -> Path:
    d = tmp_path / "dl"
    args = B.pip_download_args(version, python, "x86_64", str(d))
    r = subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True, timeout=600)
    if r.returncode:
        pytest.skip(f"cannot download triton=={version}: {(r.stderr.strip().splitlines() or ['?'])[-1]}")
    return next(d.glob("*.whl"))


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux" or os.uname().machine != "x86_64", reason="Linux x86-64 wheels")
def test_a_real_release_packs_unpacks_and_imports(tmp_path, capsys):
    """Triton 3.8.0 from the package index, for this Python (pip's cache has it after the test command built
    .venvs/v380): packed at xz level 0, unpacked, and imported over site-packages' Triton by `harness env show`."""

    whl = _download_or_skip(tmp_path, "3.8.0", HERE)
    man = pack("3.8.0", tmp_path / "b", wheel=whl, level=0, **QUIET)
    assert man["dropped"]["files"] > 0 and "AMD backend" in man["dropped"]["why"]
    assert "triton/backends/nvidia/bin/ptxas-blackwell" in man["executables"]
    assert all(p["bytes"] <= 45 * 2**20 for p in man["parts"])
    dest, _ = unpack(tmp_path / "b", tmp_path / "ov", **QUIET)
    assert not (dest / "triton/backends/amd").exists()
    assert os.access(dest / "triton/backends/nvidia/bin/ptxas-blackwell", os.X_OK)
    assert not list(dest.rglob("*_static.a"))
    spec = overlay_spec(tmp_path, dest, "3.8.0")
    code, out, err = run_cli(["env", "show", str(spec)], capsys)
    assert code == 0, err
    shown = json.loads(out)
    assert shown["triton"]["version"] == "3.8.0" and Path(shown["triton"]["path"]) == dest / "triton"
    assert shown["triton"]["path"] != str(ROOT)


# ------------------------------------------------------------------- unpack never destroys what it did not write


def test_unpack_force_onto_the_bundle_itself_is_refused_and_keeps_it(tmp_path, bundle, capsys):
    before = sorted(p.name for p in bundle.rglob("*"))
    line = one_line_refusal(["env", "unpack", str(bundle), "--dest", str(bundle), "--force"], capsys)
    assert f"--dest {bundle} is the input {bundle}" in line
    assert sorted(p.name for p in bundle.rglob("*")) == before


def test_unpack_force_into_the_bundles_parent_is_refused_and_deletes_nothing(tmp_path, bundle, capsys):
    (tmp_path / "notes.txt").write_text("mine")
    line = one_line_refusal(["env", "unpack", str(bundle), "--dest", str(tmp_path), "--force"], capsys)
    assert "holds the input" in line
    assert (tmp_path / "notes.txt").read_text() == "mine" and bundle.is_dir()


def test_unpack_dest_inside_the_bundle_is_refused(tmp_path, bundle):
    with pytest.raises(HarnessError, match="lies inside the input"):
        unpack(bundle, bundle / "p0" / "ov", force=True, **QUIET)
    assert not (bundle / "p0" / "ov").exists()


def test_unpack_force_replaces_only_an_overlay_harness_wrote(tmp_path, bundle):
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "mine.txt").write_text("x")
    with pytest.raises(HarnessError, match=r"not an overlay unpacked by harness .*--force replaces only an overlay"):
        unpack(bundle, busy, force=True, **QUIET)
    assert (busy / "mine.txt").read_text() == "x"
    (tmp_path / "afile").write_text("y")
    with pytest.raises(HarnessError, match="is a file, expected a folder"):
        unpack(bundle, tmp_path / "afile", force=True, **QUIET)
    assert (tmp_path / "afile").read_text() == "y"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert unpack(bundle, empty, **QUIET)[0] == empty and (empty / OVERLAY_MARKER).is_file()


# ----------------------------------------------------------------------------------------- strip debug


def test_strippable_members_are_large_triton_shared_objects_never_the_bundled_tools():
    big = B.STRIP_MIN_BYTES
    assert B.strippable("triton/_C/libtriton.so", big)
    assert B.strippable("triton/backends/nvidia/lib/cupti/libcupti.so.12", big)
    assert not B.strippable("triton/_C/libtriton.so", big - 1)  # small: not worth a process
    assert not B.strippable("triton/backends/nvidia/bin/ptxas", big)  # KEEP: the tools as NVIDIA shipped them
    assert not B.strippable("triton/language/core.py", big)


def test_record_with_rewrites_only_the_changed_rows():
    text = "triton/_C/libtriton.so,sha256=old,500\ntriton/__init__.py,sha256=a,3\nx/RECORD,,\n"
    got = B.record_with(text, {"triton/_C/libtriton.so": ("new", 200)})
    assert got == "triton/_C/libtriton.so,sha256=new,200\ntriton/__init__.py,sha256=a,3\nx/RECORD,,\n"


def _debug_so(folder: Path) -> bytes:
    """A real shared object with DWARF sections (gcc -g), padded with a large debug-only array."""
    src = folder / "lib.c"
    src.write_text("static const char pad[1 << 16] = {1};\nint f(int x) { return x + pad[x & 1]; }\n")
    so = folder / "lib.so"
    subprocess.run(["gcc", "-g3", "-shared", "-fPIC", "-o", str(so), str(src)], check=True)
    return so.read_bytes()


@pytest.mark.skipif(not (shutil.which("gcc") and shutil.which("strip")), reason="needs gcc and binutils")
def test_pack_strips_debug_sections_and_the_record_tells_the_truth(tmp_path, monkeypatch):
    import base64
    import tarfile
    import zipfile

    monkeypatch.setattr(B, "STRIP_MIN_BYTES", 0)
    so = _debug_so(tmp_path)
    whl = synthetic_wheel(tmp_path / "wheels", noise=1000)
    with zipfile.ZipFile(whl) as zf:
        files = {n: zf.read(n) for n in zf.namelist()}
    record = next(n for n in files if n.endswith("/RECORD"))
    files[record] = f"triton/_C/libdebug.so,sha256=wheel,{len(so)}\n".encode() + files[record]
    files["triton/_C/libdebug.so"] = so
    with zipfile.ZipFile(whl, "w") as zf:
        for n, data in files.items():
            zf.writestr(n, data)
    logs: list[str] = []
    man = pack("3.7.1", tmp_path / "b", wheel=whl, part_mb=0.1, log=logs.append)
    assert man["stripped"]["files"] == 1 and man["stripped"]["bytes"] > 0
    assert any("stripped the debug sections of 1 shared objects" in m for m in logs)
    dest, _ = unpack(tmp_path / "b", tmp_path / "o", log=lambda m: None)
    thin = (dest / "triton/_C/libdebug.so").read_bytes()
    assert len(thin) == len(so) - man["stripped"]["bytes"]
    sections = subprocess.run(["readelf", "-S", str(dest / "triton/_C/libdebug.so")], capture_output=True, text=True)
    assert ".debug_info" not in sections.stdout and ".symtab" in sections.stdout  # symbols kept for backtraces
    record = next(dest.glob("triton-*.dist-info/RECORD")).read_text()
    digest = base64.urlsafe_b64encode(hashlib.sha256(thin).digest()).rstrip(b"=").decode()
    assert f"triton/_C/libdebug.so,sha256={digest},{len(thin)}" in record
    # --keep-debug: the member as the wheel has it
    man = pack("3.7.1", tmp_path / "k", wheel=whl, part_mb=0.1, strip_debug=False, **QUIET)
    assert man["stripped"] == {"files": 0, "bytes": 0}
    with tarfile.open(fileobj=_joined(tmp_path / "k"), mode="r|xz") as tar:
        for m in tar:
            if m.name == "triton/_C/libdebug.so":
                assert tar.extractfile(m).read() == so


def _joined(folder: Path):
    import io

    return io.BytesIO(b"".join(p.read_bytes() for p in sorted(folder.glob("p*/*.part*"))))

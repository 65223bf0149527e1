"""A small synthetic Triton wheel with what `harness env pack` must handle: an AMD backend, static libraries,
NVIDIA tools with and without recorded exec bits (ptxas-blackwell among them), entry points and a RECORD."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

PY = '__version__ = "{version}"\n'
ENTRY_POINTS = (
    "[console_scripts]\nproton = triton.profiler.proton:main\n\n"
    "[triton.backends]\namd = triton.backends.amd\nnvidia = triton.backends.nvidia\n"
)


def members(version: str, noise: int) -> dict[str, tuple[bytes, int | None]]:
    """name -> (bytes, unix mode recorded in the zip or None). ``noise`` incompressible bytes make parts."""
    dist = f"triton-{version}.dist-info"
    files: dict[str, tuple[bytes, int | None]] = {
        "triton/__init__.py": (PY.format(version=version).encode(), 0o644),
        "triton/backends/__init__.py": (b"", 0o644),
        "triton/backends/amd/__init__.py": (b"", 0o644),
        "triton/backends/amd/compiler.py": (b"# amd\n", 0o644),
        "triton/backends/amd/lib/libamdhip_static.a": (b"!<arch>\n", 0o644),
        "triton/backends/nvidia/__init__.py": (b"", 0o644),
        "triton/backends/nvidia/bin/ptxas": (b"\x7fELF ptxas", 0o755),
        "triton/backends/nvidia/bin/ptxas-blackwell": (b"\x7fELF ptxas-blackwell", 0o755),
        "triton/backends/nvidia/bin/cuobjdump": (b"\x7fELF cuobjdump", None),  # no mode recorded
        "triton/backends/nvidia/lib/libcupti_static.a": (b"!<arch>\n" + b"s" * 1000, 0o644),
        "triton/_C/libtriton.so": (os.urandom(noise), 0o755),
        f"{dist}/METADATA": (f"Metadata-Version: 2.1\nName: triton\nVersion: {version}\n".encode(), 0o644),
        f"{dist}/WHEEL": (b"Wheel-Version: 1.0\nTag: py3-none-any\n", 0o644),
        f"{dist}/entry_points.txt": (ENTRY_POINTS.encode(), 0o644),
        f"{dist}/top_level.txt": (b"triton\n", 0o644),
    }
    record = "".join(f"{n},sha256=x,{len(d)}\n" for n, (d, _) in files.items()) + f"{dist}/RECORD,,\n"
    files[f"{dist}/RECORD"] = (record.encode(), 0o644)
    return files


def synthetic_wheel(folder: Path, version: str = "3.7.1", noise: int = 300_000) -> Path:
    """Write ``triton-VERSION-py3-none-any.whl`` into ``folder``; return its path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"triton-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, (data, mode) in members(version, noise).items():
            zi = zipfile.ZipInfo(name, date_time=(2026, 1, 2, 3, 4, 5))
            zi.compress_type = zipfile.ZIP_DEFLATED
            if mode is not None:
                zi.external_attr = (0o100000 | mode) << 16
            zf.writestr(zi, data)
    return path


SHIM = '''"""Triton {version} for tests: the next Triton on sys.path, run under this package's name and version."""
import os as _os
import sys as _sys

_here = _os.path.realpath(_os.path.dirname(__file__))
for _p in _sys.path:
    _cand = _os.path.realpath(_os.path.join(_p or ".", "triton"))
    if _cand != _here and _os.path.isfile(_os.path.join(_cand, "__init__.py")):
        break
else:
    raise ImportError("no Triton behind the test shim")
__path__ = [_cand]
__file__ = _os.path.join(_cand, "__init__.py")
with open(__file__) as _f:
    exec(compile(_f.read(), __file__, "exec"))
__version__ = "{version}"
'''


def shim_wheel(folder: Path, version: str) -> Path:
    """A wheel of a Triton "release" that runs the Triton installed behind it under another version number: the
    CPU tests' stand-in for a release (only ``triton.__version__`` differs), packed and unpacked like a real one."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"triton-{version}-py3-none-any.whl"
    dist = f"triton-{version}.dist-info"
    files = {
        "triton/__init__.py": SHIM.format(version=version),
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: triton\nVersion: {version}\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nTag: py3-none-any\n",
        f"{dist}/RECORD": "",
    }
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in files.items():
            zf.writestr(zipfile.ZipInfo(name, date_time=(2026, 1, 2, 3, 4, 5)), text)
    return path

"""What one compiled kernel is, read from its artifacts' text: its resources (registers, spills, shared memory, an
occupancy estimate), the static instruction mix of its assembly (SASS, PTX or AMDGCN) and its TTGIR facts. Pure:
text in, figures out; explain.py pairs and diffs them."""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

# ------------------------------------------------------------------------------------------ resources

#: per-SM limits used by the occupancy estimate (CUDA occupancy calculator values)
SM_LIMITS = {
    "sm90": {"regs": 65536, "warps": 64, "blocks": 32, "smem": 233472, "smem_per_block_reserved": 1024},
    "sm80": {"regs": 65536, "warps": 64, "blocks": 32, "smem": 167936, "smem_per_block_reserved": 1024},
    "sm89": {"regs": 65536, "warps": 48, "blocks": 24, "smem": 102400, "smem_per_block_reserved": 1024},
    "sm100": {"regs": 65536, "warps": 64, "blocks": 32, "smem": 233472, "smem_per_block_reserved": 1024},
}
#: AMD CDNA: waves per SIMD, unified VGPR+AGPR file per lane, LDS per CU
CU_LIMITS = {"gfx942": {"waves": 8, "vgprs": 512, "lds": 65536}, "gfx950": {"waves": 8, "vgprs": 512, "lds": 163840}}


def nvidia_occupancy(arch: str, num_warps: int, regs: int, shared: int) -> dict[str, Any]:
    """Resident warps per SM (and what limits them) for one block shape: registers are allocated per warp in
    units of 256, shared memory per block with 1 KiB reserved."""
    lim = SM_LIMITS.get(arch, SM_LIMITS["sm90"])
    if num_warps <= 0:
        return {}
    regs_per_warp = math.ceil(max(regs, 1) * 32 / 256) * 256
    by = {
        "warps": lim["warps"] // num_warps,
        "registers": (lim["regs"] // regs_per_warp) // num_warps,
        "shared memory": lim["smem"] // (shared + lim["smem_per_block_reserved"]) if shared else lim["blocks"],
        "blocks": lim["blocks"],
    }
    blocks = min(by.values())
    limiter = min(by, key=lambda k: (by[k], k != "registers"))
    return {"blocks_per_sm": blocks, "occupancy": blocks * num_warps / lim["warps"], "limited_by": limiter}


def amdgcn_resources(text: str) -> dict[str, int]:
    """Register, spill and LDS counts from the amdhsa metadata of an AMDGCN listing."""
    keys = {
        ".vgpr_count": "vgpr",
        ".agpr_count": "agpr",
        ".sgpr_count": "sgpr",
        ".vgpr_spill_count": "vgpr_spill",
        ".sgpr_spill_count": "sgpr_spill",
        ".private_segment_fixed_size": "scratch",
        ".group_segment_fixed_size": "lds",
    }
    out: dict[str, int] = {}
    for key, name in keys.items():
        m = re.search(re.escape(key) + r":\s+(\d+)", text)
        if m:
            out[name] = int(m.group(1))
    return out


def resources(meta: dict[str, Any], amdgcn: str = "") -> dict[str, Any]:
    md = meta.get("metadata", {})
    res: dict[str, Any] = {
        "num_warps": md.get("num_warps"),
        "num_stages": md.get("num_stages"),
        "shared_bytes": md.get("shared"),
    }
    cub = meta.get("cubin_resources") or {}
    regs = meta.get("n_regs") or cub.get("reg")
    if regs is not None:
        res["registers"] = regs
    if cub:
        res["local_bytes"] = cub.get("local", 0)  # spills live in local memory
    if meta.get("n_spills") is not None:
        res["spills"] = meta["n_spills"]
    if amdgcn:
        res.update(amdgcn_resources(amdgcn))
    arch = str(md.get("arch") or "")
    target = str(meta.get("target") or "")
    if "cuda" in target or arch.startswith("sm"):
        if regs and md.get("num_warps"):
            res.update(nvidia_occupancy(arch or "sm90", md["num_warps"], int(regs), int(md.get("shared") or 0)))
    elif "vgpr" in res:
        gfx = next((g for g in CU_LIMITS if g in target or g in arch), "gfx942")
        lim = CU_LIMITS[gfx]
        regs_used = math.ceil((res.get("vgpr", 0) + res.get("agpr", 0)) / 8) * 8 or 8
        res["waves_per_simd"] = min(lim["waves"], lim["vgprs"] // regs_used)
        res["occupancy"] = res["waves_per_simd"] / lim["waves"]
    return res


# ------------------------------------------------------------------------------------------ instruction mix

#: nvdisasm's control codes, "--:-:0:-:1" or "02:-:1:Y:c": the last field, the stall count, is hex
_SASS_CTRL = re.compile(r"^\s*(?:[-\w]{1,2}:){4}[0-9a-fA-F]+\s+")
_SASS_ADDR = re.compile(r"/\*[0-9a-fx]+\*/")


def sass_instructions(text: str) -> list[str]:
    """The instructions of a SASS listing (nvdisasm or cuobjdump form), without control codes and addresses."""
    out = []
    for line in text.splitlines():
        s = _SASS_CTRL.sub("", line)
        s = _SASS_ADDR.sub("", s).strip().rstrip(";").strip()
        if not s or s.endswith(":") or s.startswith(("Function", ".", "//", "#", "code for", "-")) or "{" in s:
            continue
        if not re.match(r"^(@!?U?P\w+\s+)?[A-Z][A-Z0-9_.]+", s):
            continue
        out.append(re.sub(r"\s+", " ", s))
    return out


def _opcode(instr: str) -> str:
    parts = instr.split()
    return parts[1] if parts[0].startswith("@") and len(parts) > 1 else parts[0]


def _width(op: str, default: int = 32) -> int:
    for w in (128, 64):
        if f".{w}" in op:
            return w
    for tag, w in ((".U8", 8), (".S8", 8), (".U16", 16), (".S16", 16)):
        if tag in op:
            return w
    return default


def sass_mix(text: str) -> Counter:
    mix: Counter = Counter()
    for ins in sass_instructions(text):
        op = _opcode(ins)
        base = op.split(".")[0]
        mix["instructions"] += 1
        if base in ("HGMMA", "IGMMA", "QGMMA", "BGMMA", "HMMA", "IMMA", "UTCHMMA", "UTCQMMA", "UTCIMMA"):
            mix[f"matrix {base}"] += 1
        elif base == "LDG":
            mix[f"global load {_width(op)}-bit"] += 1
        elif base == "STG":
            mix[f"global store {_width(op)}-bit"] += 1
        elif base == "LDGSTS":
            mix["async copy global→shared (cp.async)"] += 1
        elif base in ("UTMALDG", "UBLKCP"):
            mix["TMA load"] += 1
        elif base == "UTMASTG":
            mix["TMA store"] += 1
        elif base in ("LDS", "LDSM"):
            mix[f"shared load ({base})"] += 1
        elif base in ("STS", "STSM"):
            mix[f"shared store ({base})"] += 1
        elif base in ("BAR", "SYNCS", "WARPSYNC", "DEPBAR", "MEMBAR", "ARRIVES"):
            mix[f"barrier/sync {base}"] += 1
        elif base in ("F2F", "F2I", "I2F", "F2FP", "I2FP", "I2I"):
            mix[f"conversion {base}"] += 1
        elif base in ("LDL", "STL"):
            mix[f"local memory {base} (spills)"] += 1
        elif base in ("BRA", "BRX", "EXIT", "RET", "CALL"):
            mix["control flow"] += 1
        elif base in ("FFMA", "FMUL", "FADD", "FMNMX", "HFMA2", "HMUL2", "HADD2"):
            mix["fp arithmetic"] += 1
        elif base in ("IMAD", "IADD3", "LEA", "SHF", "LOP3", "ISETP", "IMNMX", "IABS"):
            mix["integer arithmetic"] += 1
    return mix


_PTX_PATTERNS = (
    (r"wgmma\.mma_async", "matrix wgmma"),
    (r"\bmma\.sync", "matrix mma.sync"),
    (r"cp\.async\.bulk\.tensor", "TMA copy"),
    (r"cp\.async\.(?:ca|cg)", "async copy global→shared (cp.async)"),
    (r"ld\.global(?:\.\w+)*\.v4", "global load vector x4"),
    (r"ld\.global(?:\.\w+)*\.v2", "global load vector x2"),
    (r"st\.global(?:\.\w+)*\.v4", "global store vector x4"),
    (r"st\.global(?:\.\w+)*\.v2", "global store vector x2"),
    (r"ldmatrix", "shared load (ldmatrix)"),
    (r"stmatrix", "shared store (stmatrix)"),
    (r"\bbar\.sync|\bbarrier\.sync", "barrier bar.sync"),
    (r"mbarrier\.", "barrier mbarrier"),
    (r"\bcvt\.", "conversion cvt"),
)


def ptx_mix(text: str) -> Counter:
    mix: Counter = Counter()
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith(("//", ".", "{", "}", "$")):
            continue
        mix["instructions"] += 1
        for pat, name in _PTX_PATTERNS:
            if re.search(pat, s):
                mix[name] += 1
                break
        else:
            if re.match(r"(@%p\d+\s+)?ld\.global", s):
                mix["global load scalar"] += 1
            elif re.match(r"(@%p\d+\s+)?st\.global", s):
                mix["global store scalar"] += 1
    return mix


def amdgcn_mix(text: str) -> Counter:
    mix: Counter = Counter()
    for line in text.splitlines():
        s = line.strip()
        m = re.match(r"([sv]_\w+|global_\w+|buffer_\w+|ds_\w+|flat_\w+|scratch_\w+)", s)
        if not m:
            continue
        op = m.group(1)
        mix["instructions"] += 1
        if op.startswith("v_mfma") or op.startswith("v_smfmac"):
            mix["matrix MFMA"] += 1
        elif op.startswith(("global_load", "buffer_load", "flat_load")):
            mix[f"global load {op.split('_', 2)[-1]}"] += 1
        elif op.startswith(("global_store", "buffer_store", "flat_store")):
            mix[f"global store {op.split('_', 2)[-1]}"] += 1
        elif op.startswith(("ds_read", "ds_load")):
            mix[f"shared load {op}"] += 1
        elif op.startswith(("ds_write", "ds_store")):
            mix[f"shared store {op}"] += 1
        elif op in ("s_barrier", "s_waitcnt"):
            mix[f"barrier/sync {op}"] += 1
        elif op.startswith("v_cvt"):
            mix["conversion v_cvt"] += 1
        elif op.startswith("scratch_"):
            mix["scratch (spills)"] += 1
    return mix


# ------------------------------------------------------------------------------------------ TTGIR

_TTGIR_OPS = re.compile(r"(?:^|=\s*|\s)((?:tt|ttg|ttng|amdgpu|nvgpu|scf)\.[a-z_]+)\b")


def ttgir_facts(text: str) -> dict[str, Any]:
    """Layouts (``#name = …`` definitions), module attributes and op counts of a TTGIR module."""
    layouts = {}
    for m in re.finditer(r"^#(\w+) = (#(?:ttg|triton_gpu)\.\w+<.*>)\s*$", text, re.M):
        layouts[m.group(1)] = m.group(2)
    attrs = dict(re.findall(r'"(ttg\.[\w-]+|triton_gpu\.[\w-]+)"\s*=\s*([^,}\s]+)', text))
    ops: Counter = Counter()
    for line in text.splitlines():
        s = line.strip()
        if s.startswith(("#", "//", "loc(")):
            continue
        m = _TTGIR_OPS.search(s.split(" loc(")[0])
        if m:
            ops[m.group(1)] += 1
    return {"layouts": layouts, "attrs": attrs, "ops": ops}

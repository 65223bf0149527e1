"""Config lookup of the stand-in library, written from AITER's documented behaviour (the harness's tests compare
harness's own lookup with this one)."""

import json
import os

CONFIGS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "configs")
STANDARD_M_BOUNDS = (1, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)


def _load(path):
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def _default_dir(config_name, arch, backend=None):
    """The folder of the lookup: with no backend the nested triton, then gluon folder, then the flat gemm/; with
    one (the gluon path of an op asks for it) its nested folder, then the legacy gemm/<backend>/, then gemm/."""
    nested = config_name.lower().replace("-", "_")
    candidates = [
        (os.path.join(CONFIGS, arch, b, "gemm", nested), "") for b in ([backend] if backend else ["triton", "gluon"])
    ]
    if backend:
        candidates.append((os.path.join(CONFIGS, "gemm", backend), arch + "-"))
    candidates.append((os.path.join(CONFIGS, "gemm"), arch + "-"))
    for folder, prefix in candidates:
        default = prefix + config_name if prefix else "DEFAULT"
        if os.path.exists(os.path.join(folder, default + ".json")):
            return folder, prefix, default
    return os.path.join(CONFIGS, "gemm"), arch + "-", arch + "-" + config_name


def get_gemm_config(config_name, M, N=None, K=None, bounds=None, B=None, arch=None, backend=None):
    """(config, is_tuned, file relative to the configs folder, bucket); ``arch`` by default the library's own arch
    query's answer, as AITER's lookup asks it; ``backend`` as its gluon path names it."""
    if arch is None:
        from aiter.ops.triton.utils._triton import arch_info

        arch = arch_info.get_arch()
    folder, prefix, default = _default_dir(config_name, arch, backend)
    path = os.path.join(folder, default + ".json")
    data, tuned = _load(path), False
    assert data is not None, f"Required config file doesn't exist: {path}"
    suffixes = ([f"B={B}-N={N}-K={K}"] if B is not None else []) + ([f"N={N}-K={K}"] if N and K else [])
    for suffix in suffixes:
        candidate = os.path.join(folder, f"{prefix}{config_name}-{suffix}.json")
        found = _load(candidate)
        if found is not None:
            data, tuned, path = found, True, candidate
            break
    rel = os.path.relpath(path, CONFIGS)
    search = bounds or STANDARD_M_BOUNDS
    for key in [f"M_LEQ_{b}" for b in search if b >= M] + [f"M_GEQ_{b}" for b in reversed(search) if b <= M]:
        if key in data:
            return dict(data[key]), tuned, rel, key
    return dict(data["any"]), False, rel, "any"


def compute_splitk_params(config, K):
    """The split-K fields a config needs before a launch (this library's post-processing of a looked-up config)."""
    config.setdefault("NUM_KSPLIT", 1)
    config["SPLITK_BLOCK_SIZE"] = -(-K // config["NUM_KSPLIT"])
    if config["BLOCK_SIZE_K"] > config["SPLITK_BLOCK_SIZE"]:
        config["BLOCK_SIZE_K"] = max(16, config["SPLITK_BLOCK_SIZE"])
    return config

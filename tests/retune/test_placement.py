"""harness/retune/placement.py: where a new config goes by AITER's lookup rule, and which cases it moves."""

from __future__ import annotations

import itertools
import json

from harness.inputs.kernel import load_kernel, registry
from harness.kernel_api.configs import CONFIG_DIR
from harness.kernel_api.configs import resolve as lookup_rule
from harness.retune.inputs import snapshot
from harness.retune.placement import Lookup, changes, file_names, options, per_shape_text, resolve

DEFAULT = (
    "{\n"
    '  "M_LEQ_16": {"BLOCK_SIZE_M": 16, "num_warps": 4},\n'
    '  "M_LEQ_256": {"BLOCK_SIZE_M": 64, "num_warps": 4},\n'
    '  "any": {"BLOCK_SIZE_M": 128, "num_warps": 8}\n'
    "}\n"
)
OWN = '{\n  "any": {"BLOCK_SIZE_M": 32, "num_warps": 2}\n}\n'
FILES = {"sm90-F.json": DEFAULT, "sm90-F-N=8-K=8.json": OWN}
STAMP = {"triton": "3.9.0"}


def lk(m, n=512, k=128):
    return Lookup("F", "sm90", f"N={n}-K={k}", "M", m)


def test_the_rule_is_kernels_config_resolve_on_every_shipped_file():
    files = snapshot(CONFIG_DIR)
    checked = 0
    for name in registry():
        spec = load_kernel(name).spec
        if spec.config is None:
            continue
        for arch, m, n, k in itertools.product(("sm90", "gfx942", "interp"), (1, 16, 100, 256, 5000), (128, 512, 8192),
                                               (128, 512, 8192)):  # fmt: skip
            params = {"M": m, "N": n, "K": k, "S": m, "D": 128, "causal": True, "W": 1}
            key = spec.config.file_key(params)
            mine = resolve(files, Lookup(spec.config.family, arch, key, spec.config.bucket, m))
            real = lookup_rule(spec.config.family, arch, m, key, spec.config.bucket, directory=CONFIG_DIR)
            assert (mine.file, mine.bucket, mine.config) == (real.file, real.bucket, real.config)
            checked += 1
    assert checked > 1000


def test_a_default_bucket_is_shared_then_a_per_shape_file_copies_the_default():
    shared, per_shape = options(FILES, lk(100), {"BLOCK_SIZE_M": 128, "num_warps": 4}, STAMP)
    assert (shared.kind, shared.file, shared.bucket) == ("shared", "sm90-F.json", "M_LEQ_256")
    assert (per_shape.kind, per_shape.file) == ("per-shape", "sm90-F-N=512-K=128.json")
    text = per_shape.files["sm90-F-N=512-K=128.json"]
    new, old = text.splitlines(), DEFAULT.splitlines()
    assert new[1] == '  "_tuned_for": {"M_LEQ_256": {"triton": "3.9.0"}},'
    assert new[2] == old[1] and new[4] == old[3]  # the other buckets, byte for byte
    assert new[3] == '  "M_LEQ_256": {"BLOCK_SIZE_M": 128, "num_warps": 4},'
    assert text == per_shape_text(DEFAULT, "M_LEQ_256", {"BLOCK_SIZE_M": 128, "num_warps": 4}, STAMP)


def test_a_per_shape_file_is_edited_in_place():
    (edit,) = options(FILES, lk(100, 8, 8), {"BLOCK_SIZE_M": 64, "num_warps": 2}, STAMP)
    assert (edit.kind, edit.file, edit.bucket) == ("edit", "sm90-F-N=8-K=8.json", "any")
    assert json.loads(edit.files[edit.file])["any"] == {"BLOCK_SIZE_M": 64, "num_warps": 2}
    assert options({}, lk(1), {}, STAMP) == []  # no default file: nowhere to put it


def test_changes_are_exactly_the_cases_the_new_files_move():
    cases = {**{f"M{m}_N512": lk(m) for m in (8, 16, 64, 256, 1024)}, **{f"M{m}_N8": lk(m, 8, 8) for m in (8, 64)}}
    shared, per_shape = options(FILES, lk(100), {"BLOCK_SIZE_M": 128, "num_warps": 4}, STAMP)
    # the shared edit moves every M of the bucket of every shape without its own file; not N=8 (own file)
    assert sorted(changes(FILES, shared.apply(FILES), cases)) == ["M256_N512", "M64_N512"]
    # the per-shape file moves the same cases here (one shape uses the default); the other buckets, copied, none
    moved = changes(FILES, per_shape.apply(FILES), cases)
    assert sorted(moved) == ["M256_N512", "M64_N512"]
    before, after = moved["M64_N512"]
    assert (before.file, after.file) == ("sm90-F.json", "sm90-F-N=512-K=128.json")
    assert after.config == {"BLOCK_SIZE_M": 128, "num_warps": 4}
    other = {**cases, "M64_N2048": lk(64, 2048, 2048)}  # another shape on the default: only the shared edit moves it
    assert "M64_N2048" in changes(FILES, shared.apply(FILES), other)
    assert "M64_N2048" not in changes(FILES, per_shape.apply(FILES), other)
    assert file_names(Lookup("F", "sm90", "", "N", 1)) == ("sm90-F.json", None)

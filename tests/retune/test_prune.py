"""harness/retune/prune.py: configs that cannot work, refused before compiling; resource failures learned."""

from __future__ import annotations

from harness.retune.prune import Learned, shared_memory_floor, static_problem, tile_of

GEMM = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "num_warps": 8, "num_stages": 3}
P = {"M": 1024, "N": 512, "K": 128}


def problem(cfg, arch="sm90", backend="cuda", peak="bf16", params=P):
    return static_problem({**GEMM, **cfg}, params, arch, backend, peak)


def test_configs_that_work_pass():
    assert problem({}) is None
    assert problem({"num_stages": 4, "BLOCK_SIZE_K": 128}, peak="int8") is None


def test_values_tiles_and_warps():
    assert problem({"BLOCK_SIZE_N": 96}) == "BLOCK_SIZE_N=96 is not a power of two"
    assert "positive integer" in problem({"GROUP_SIZE_M": 0})
    assert problem({"num_warps": 6}).startswith("num_warps=6")
    assert problem({"num_warps": 64}).startswith("num_warps=64")  # 2048 threads
    assert problem({"num_warps": 32}) is None and problem({"num_warps": 32}, "gfx942", "hip") is not None


def test_shared_memory_floor():
    # bf16, 2 buffers of (128 + 256) x 128: 192 KiB fit in an H100's 227, not in an MI300's 64
    big = {"BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 128}
    assert shared_memory_floor({**GEMM, **big}, 2) == 2 * (128 + 256) * 128 * 2
    assert problem(big) is None and "64 KiB" in problem(big, "gfx942", "hip")
    huge = {"BLOCK_SIZE_M": 256, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 256, "num_stages": 4}
    assert problem(huge) == "needs at least 768 KiB of shared memory, sm90 has 227 KiB"
    assert problem(huge, peak="memory") is None  # no operand size known: no claim
    assert problem(huge, arch="interp", backend="interp") is None  # the interpreter has no limit
    assert shared_memory_floor({"BLOCK_N": 64}, 2) is None


def test_split_k_finer_than_the_k_blocks():
    assert problem({"NUM_KSPLIT": 2}) is None  # K=128: two blocks of 64
    assert problem({"NUM_KSPLIT": 4}) == "NUM_KSPLIT=4 splits K=128 finer than its 2 blocks of 64"
    assert problem({"NUM_KSPLIT": 4}, params={"M": 1}) is None  # a kernel without K


def test_a_resource_failure_prunes_its_tile_at_as_many_stages_or_more():
    learned = Learned()
    error = "OutOfResources: out of resource: shared memory, Required: 262144, Hardware limit: 232448."
    assert not learned.note("k", GEMM, "CompilationError: at 12:4: ...")  # not a resource failure
    assert learned.note("k", GEMM, error)
    assert learned.problem("k", {**GEMM, "num_warps": 4}) == (
        "the tile BLOCK_SIZE_K=64 BLOCK_SIZE_M=128 BLOCK_SIZE_N=128 ran out of resources at num_stages=3"
    )
    assert learned.problem("k", {**GEMM, "num_stages": 4}) is not None
    assert learned.problem("k", {**GEMM, "num_stages": 2}) is None  # fewer buffers may fit
    assert learned.problem("k", {**GEMM, "BLOCK_SIZE_K": 32}) is None  # another tile
    assert learned.problem("other", GEMM) is None  # another kernel
    assert tile_of({"BLOCK_N": 128, "SPLIT": 2}) == (("BLOCK_N", 128),)

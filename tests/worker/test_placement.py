"""Where a case's buffers sit: the random-sized shim before a launch, the launch plan, inputs moved to a random aligned place."""

from __future__ import annotations


def test_shuffled_launch_allocates_first_and_frees_after():
    import random
    import weakref

    from harness.worker.placement import shuffled

    class Block:
        def __init__(self, n):
            self.n = n

    sizes, alive = [], []

    def empty(n):
        b = Block(n)
        sizes.append(n)
        alive.append(weakref.ref(b))
        return b

    order = []

    def launch():
        order.append(len(sizes))  # the shim exists before the op allocates anything
        return "y"

    op = shuffled(launch, empty, random.Random(1))
    assert [op() for _ in range(50)] == ["y"] * 50
    assert order == list(range(1, 51))
    assert all((1 << 20) <= n < (64 << 20) for n in sizes) and len(set(sizes)) > 40, "sizes vary launch to launch"
    assert all(r() is None for r in alive), "each shim is released once its launch is queued"


def test_launch_plan_moves_inputs_before_runs_of_launches():
    from harness.worker.placement import launch_plan

    assert launch_plan(4) == [(False, True)] * 4
    M, U, T = (True, False), (True, True), (False, True)  # move + untimed, move + timed, timed
    assert launch_plan(5, 2, warm=True) == [M, T, T, M, T, T, M, T]
    assert launch_plan(5, 2) == [U, T, U, T, U]
    assert launch_plan(3, 1, warm=False) == [U, U, U]
    n, places = 10, 5
    plan = launch_plan(n, -(-n // places), warm=True)
    assert sum(t for _, t in plan) == n and sum(m for m, _ in plan) == places


def test_rehomed_inputs_keep_values_and_layout_at_a_new_aligned_place():
    import random

    import torch

    from harness.worker.placement import PLACE_ALIGN, rehomed

    bufs = []

    def empty(nbytes):
        bufs.append(torch.empty(nbytes, dtype=torch.uint8))
        return bufs[-1]

    x = torch.randn(8, 6)[:, ::2]  # strided: (6, 2)
    inputs = {
        "x": x,
        "w": torch.randn(3, 5).to(torch.float8_e4m3fn),
        "packed": torch.randint(0, 255, (7,), dtype=torch.uint8),
        "bias": None,
        "flag": 3,
        "nothing": torch.empty(0),
    }
    offsets = set()
    for seed in range(20):
        out = rehomed(inputs, empty, random.Random(seed))
        assert out.keys() == inputs.keys() and out["bias"] is None and out["flag"] == 3
        assert out["nothing"] is inputs["nothing"]
        for name in ("x", "w", "packed"):
            a, b = inputs[name], out[name]
            assert (b.dtype, b.shape, b.stride()) == (a.dtype, a.shape, a.stride())
            assert torch.equal(b.float(), a.float())
            assert b.untyped_storage().data_ptr() != a.untyped_storage().data_ptr()
            at = b.data_ptr() - b.untyped_storage().data_ptr()
            assert at % PLACE_ALIGN == 0
            offsets.add((name, at))
        out["x"].fill_(0)  # a copy, not a view of the caller's tensor
        assert x.abs().sum() > 0
    assert len({at for name, at in offsets if name == "x"}) > 10, "the place varies from call to call"


def test_tensors_that_must_stay_keep_their_place():
    """A rank's symmetric memory is where its peers store: moving it would time stores into a copy nobody reads."""
    import random

    import torch

    from harness.worker.placement import rehomed

    a, y = torch.randn(4, 4), torch.zeros(4, 8)
    out = rehomed({"a": a, "y": y}, lambda n: torch.empty(n, dtype=torch.uint8), random.Random(0), lambda t: t is y)
    assert out["y"] is y and out["a"] is not a and torch.equal(out["a"], a)

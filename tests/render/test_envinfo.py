"""The environment lines every renderer shows: a run that imported a library checkout names it with its commit, so
two runs under one Triton on two checkouts (a PR against main) are told apart in the comparison's header."""

from __future__ import annotations

from harness.render.envinfo import libraries, one_line, side_by_side

MAIN = {
    "env_name": "golden",
    "triton": {"version": "3.6.0"},
    "gpu": {"name": "NVIDIA H100"},
    "libraries": {"aiter": {"path": "/s/main", "commit": "e2ff4b3c88e4d2d0bded5c2741d654138028610c"}},
}
PR = {**MAIN, "libraries": {"aiter": {"path": "/s/pr", "commit": "fc01c4f00f3ed5a038167a1a839bac9c382e9f49"}}}


def test_a_library_checkout_is_named_with_its_commit():
    assert one_line(MAIN) == "golden: triton 3.6.0, aiter e2ff4b3c88, NVIDIA H100"
    assert libraries({"libraries": {"aiter": {"path": "/x", "commit": None}}}) == "aiter (commit unknown)"
    assert libraries({"triton": {"version": "3.6.0"}}) == ""
    rows = side_by_side(MAIN, PR)
    assert ("libraries", "aiter e2ff4b3c88", "aiter fc01c4f00f") in rows
    assert [r[0] for r in rows] == ["environment", "triton", "libraries", "GPU"]
    assert "libraries" not in [r[0] for r in side_by_side({"triton": {"version": "3.6.0"}}, {})]

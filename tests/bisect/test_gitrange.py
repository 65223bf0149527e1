"""Where a step lies in Triton's history: tags, commands, the compare view."""

from __future__ import annotations

from harness.bisect.gitrange import git_range, ref, release_branch


def test_releases_are_tags():
    r = git_range("3.7.0", "3.7.1")
    assert r["range"] == "v3.7.0..v3.7.1"
    assert r["compare_url"] == "https://github.com/triton-lang/triton/compare/v3.7.0...v3.7.1"
    assert r["bisect"] == "git bisect start v3.7.1 v3.7.0"
    assert r["log"] == "git log --oneline --no-merges --cherry-pick --right-only v3.7.0...v3.7.1"
    assert r["branches"] == "release/3.7.x"
    assert git_range("3.6.0", "3.9.0")["branches"] == "release/3.6.x, release/3.9.x"


def test_builds_are_placed_by_their_commit():
    assert ref("3.6.0+git1a2b3c4d") == "1a2b3c4d"
    assert ref("3.9.0", commit="deadbeef") == "deadbeef"
    assert ref("3.5.0rc1") == "v3.5.0rc1"
    assert git_range("3.8.0", "3.9.0+gitabcdef12")["range"] == "v3.8.0..abcdef12"


def test_an_unplaceable_version_says_why():
    r = git_range("3.8.0", "?")
    assert r["range"] == "" and "Triton ? is neither a release" in r["note"]
    assert release_branch("nightly") is None

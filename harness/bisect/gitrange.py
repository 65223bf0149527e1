"""Where a step between two Triton releases lies in Triton's history, for someone who can build from source: the
tag range, the commands that list and bisect it, and GitHub's compare view. Pure.

Releases are tagged ``vX.Y.Z`` in triton-lang/triton (tags exist from 3.0.0 on, triton-lang/triton#6422) and cut
from release branches ``release/X.Y.x``: ``v3.7.0..v3.7.1`` holds the 3.7.x cherry-picks, ``v3.6.0..v3.7.0``
everything merged on main since the 3.6 branch point plus 3.7.x's cherry-picks. Cherry-picks present on both
branches are hidden by ``git log --cherry-pick --right-only``. A version with a local part (``3.6.0+git1a2b3c4d``,
a source build) is placed by its commit.
"""

from __future__ import annotations

import re

REPO = "https://github.com/triton-lang/triton"
_RELEASE = re.compile(r"\d+\.\d+\.\d+(?:(?:a|b|rc)\d+)?(?:\.post\d+)?")
_LOCAL_COMMIT = re.compile(r"\+git(?P<sha>[0-9a-f]{7,40})\b")


def ref(version: str, commit: str | None = None) -> str | None:
    """The git ref of a Triton version: the recorded commit, else ``v3.7.1`` for a release, else the commit in a
    local version (``+gitabc1234``), else None."""
    if commit:
        return commit
    v = (version or "").strip()
    if _RELEASE.fullmatch(v):
        return f"v{v}"
    m = _LOCAL_COMMIT.search(v)
    return m["sha"] if m else None


def release_branch(version: str) -> str | None:
    m = re.match(r"(\d+)\.(\d+)\.", version or "")
    return f"release/{m[1]}.{m[2]}.x" if m else None


def git_range(good: str, bad: str, good_commit: str | None = None, bad_commit: str | None = None) -> dict[str, str]:
    """For the step good → bad (two Triton versions): ``range`` (``v3.7.0..v3.7.1``), ``log`` and ``bisect``
    commands, ``compare_url``; a version that cannot be placed gives ``range`` '' and a ``note`` saying why."""
    a, b = ref(good, good_commit), ref(bad, bad_commit)
    if not a or not b:
        which = good if not a else bad
        return {"range": "", "note": f"Triton {which} is neither a release nor a build with a recorded commit"}
    return {
        "range": f"{a}..{b}",
        "log": f"git log --oneline --no-merges --cherry-pick --right-only {a}...{b}",
        "bisect": f"git bisect start {b} {a}",
        "compare_url": f"{REPO}/compare/{a}...{b}",
        "branches": ", ".join(dict.fromkeys(x for x in (release_branch(good), release_branch(bad)) if x)),
    }

"""The README is for a user: at most 150 lines, the two set-up commands first (CI runs the second: .ci/run), and
every link in it and in the reference it hands on to (docs/) leads to a file that exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

README = ROOT / "README.md"
LINKED = [README, *sorted((ROOT / "docs").glob("*.md"))]


def test_the_readme_is_at_most_150_lines():
    assert len(README.read_text().splitlines()) <= 150


def test_the_first_commands_are_make_demo_and_make_test():
    first = re.search(r"```bash\n(.*?)```", README.read_text(), re.S).group(1).splitlines()
    assert [line.split()[:2] for line in first] == [["make", "demo"], ["make", "test"]]
    assert "make test" in (ROOT / ".ci" / "run").read_text()


@pytest.mark.parametrize("doc", LINKED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file(doc: Path):
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", doc.read_text())
    missing = [t for t in targets if "://" not in t and not (doc.parent / t).exists()]
    assert not missing, missing

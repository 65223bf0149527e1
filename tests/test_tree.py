"""The tracked tree stays small (a GPU machine gets the repository in one upload, beside a Triton bundle), and
reports/ keeps only what a reader opens: the bulk data of each report lives in the commit reports/README.md names."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.conftest import ROOT

#: what a report keeps in the tree; everything else of it is in its data commit (scripts/report-data.sh)
KEPT = (".md", ".png", ".yaml", ".txt", ".sh", ".py")


def tracked() -> list[str]:
    r = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True)
    if r.returncode:
        pytest.skip("not a git checkout")
    return [p for p in r.stdout.decode().split("\0") if p]


def test_the_tracked_tree_is_at_most_15_mb():
    size = sum((ROOT / p).stat().st_size for p in tracked() if (ROOT / p).is_file())
    assert size <= 15_000_000, f"{size / 1e6:.1f} MB tracked"


def test_reports_keep_no_bulk_data_in_the_tree():
    bulk = [p for p in tracked() if p.startswith("reports/") and not p.endswith(KEPT)]
    assert not bulk, bulk[:10]


def test_every_report_folder_has_a_data_commit_in_the_index():
    index = (ROOT / "reports" / "README.md").read_text()
    named = set(re.findall(r"^\| `([^`]+)` \| `[0-9a-f]{40}` \|", index, re.M))
    folders = {p.name for p in (ROOT / "reports").iterdir() if p.is_dir() and p.name != "demo"}
    assert folders <= named, sorted(folders - named)

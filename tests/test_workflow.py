"""Structural checks of the GitHub workflow (actionlint cannot be installed on these machines: see
docs/publishing.md): triggers, least privilege, no token for fork PRs, every script it calls exists."""

from __future__ import annotations

import re

import yaml

from tests.conftest import ROOT

WF = ROOT / ".github" / "workflows" / "perf-regression.yml"


def test_workflow_shape():
    wf = yaml.safe_load(WF.read_text())
    on = wf[True] if True in wf else wf["on"]  # YAML 1.1 reads the key `on` as True
    assert set(on) == {"pull_request", "workflow_dispatch"}
    assert wf["permissions"] == {"contents": "read"}
    job = wf["jobs"]["compare"]
    assert job["runs-on"] == ["self-hosted", "gpu"]
    assert job["permissions"] == {"contents": "read", "pull-requests": "write"}
    steps = {s.get("name", s.get("uses")): s for s in job["steps"]}
    comment = steps["Sticky PR comment"]
    assert "head.repo.full_name == github.repository" in comment["if"]  # no token use for fork PRs
    text = WF.read_text()
    for script in re.findall(r"scripts/[\w.]+\.sh", text):
        assert (ROOT / script).is_file(), script
    assert "--fail-on-regression" in text and "GITHUB_STEP_SUMMARY" in text and "upload-artifact" in text
    for step in job["steps"]:
        assert "secrets." not in step.get("run", ""), "secrets only through env"
    sheets = steps["Google spreadsheet"]
    assert "head.repo.full_name == github.repository" in sheets["if"] and "vars.HARNESS_SPREADSHEET" in sheets["if"]
    assert sheets["env"]["HARNESS_SHEETS_CREDENTIALS"] == "${{ secrets.HARNESS_SHEETS_CREDENTIALS }}"
    assert "harness publish sheets" in sheets["run"]

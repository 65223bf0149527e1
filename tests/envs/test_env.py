"""Env specs (issue 21 items 1, 2, 6): the schema, ${VAR} expansion, `harness env show` checking what it prints,
venvs used only with their pins installed, the same-Triton warning of a two-env run, and a fuzz test."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.envs.schema import TOP_KEYS, VENV_KEYS, expand, pins
from harness.envs.spec import EnvSpec, load_env_spec
from harness.envs.venv import MARKER, check_venv, create_env
from harness.errors import HarnessError
from tests.conftest import DATA, ROOT


def spec_file(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def refused(argv: list[str], capsys) -> str:
    """Run the CLI in process; assert one line on stderr and exit 2; return the line."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err.strip()


def load(tmp_path: Path, text: str, environ: dict[str, str] | None = None) -> EnvSpec:
    return load_env_spec(spec_file(tmp_path, text), environ={} if environ is None else environ)


# ------------------------------------------------------------------------------------------ variables


def test_an_unset_variable_is_an_error_naming_file_key_and_variable(tmp_path):
    with pytest.raises(HarnessError) as err:
        load(tmp_path, 'pythonpath: ["${TOT_TRITON}"]\n')
    assert str(err.value) == (
        f"{tmp_path / 's.yaml'}: pythonpath[0]: ${{TOT_TRITON}} is not set (export it, or give a default: "
        "${TOT_TRITON:-...})"
    )


@pytest.mark.parametrize(
    "text,key",
    [
        ("python: $PY\n", "python"),
        ("python: /x/${PY}/bin/python\n", "python"),
        ("venv: {path: '${V}'}\n", "venv: path"),
        ("venv: {path: v, requirements: ['triton @ ${WHEEL}']}\n", "venv: requirements[0]"),
        ("venv: {path: v, base_python: '${BASE}'}\n", "venv: base_python"),
        ("venv: {path: v, index_url: '${IDX}'}\n", "venv: index_url"),
        ("env: {TRITON_X: '${X}'}\n", "env: TRITON_X"),
        ("cache_dir: ${CACHE}/triton\n", "cache_dir"),
    ],
)
def test_unset_variables_anywhere_are_errors(tmp_path, text, key):
    with pytest.raises(HarnessError, match=rf"s\.yaml: {re.escape(key)}: \$\{{\w+\}} is not set"):
        load(tmp_path, text)


def test_defaults_and_escapes():
    env = {"SET": "a", "EMPTY": ""}
    assert expand("${SET:-d}/${UNSET:-d}/${EMPTY:-d}/${EMPTY-d}/${UNSET-d}", "w", env) == "a/d/d//d"
    assert expand("$SET-$$HOME-${UNSET:-$SET}", "w", env) == "a-$HOME-a"
    for bad in ("${", "${SET", "${1X}", "${A B}"):
        with pytest.raises(HarnessError, match="malformed variable reference"):
            expand(bad, "f.yaml: python", env)


def test_an_entry_that_expands_to_nothing_is_refused(tmp_path):
    with pytest.raises(HarnessError, match=r"pythonpath\[0\]: is empty \(after expanding"):
        load(tmp_path, 'pythonpath: ["${T:-}"]\n')
    with pytest.raises(HarnessError, match="python: is empty"):
        load(tmp_path, "python: ${PY}\n", {"PY": ""})


def test_shipped_specs_resolve(monkeypatch):
    monkeypatch.chdir(ROOT)
    golden = load_env_spec("envs/golden.yaml", environ={})
    assert golden.python == "python3"  # HARNESS_GOLDEN_PYTHON unset: the default
    assert load_env_spec("envs/golden.yaml", environ={"HARNESS_GOLDEN_PYTHON": "/opt/py"}).python == "/opt/py"
    with pytest.raises(HarnessError, match=r"tot\.yaml: pythonpath\[0\]: \$\{HARNESS_TOT_TRITON\} is not set"):
        load_env_spec("envs/tot.yaml", environ={})
    tot = load_env_spec("envs/tot.yaml", environ={"HARNESS_TOT_TRITON": "/tmp/triton-3.9.0"})
    assert tot.pythonpath == ["/tmp/triton-3.9.0"] and tot.python == "python3"
    for name in ("venv-golden", "venv-tot", "example-amd"):
        assert load_env_spec(f"envs/{name}.yaml", environ={}).venv["requirements"]


def test_the_scripts_use_specs_that_resolve():
    """run_golden.sh / run_tot.sh default to envs/golden.yaml / envs/tot.yaml; the workflow sets the overlay."""
    wf = (ROOT / ".github" / "workflows" / "perf-regression.yml").read_text()
    assert "HARNESS_TOT_TRITON:" in wf
    for script, spec in (("run_golden.sh", "envs/golden.yaml"), ("run_tot.sh", "envs/tot.yaml")):
        assert spec in (ROOT / "scripts" / script).read_text()


# ------------------------------------------------------------------------------------------ types and keys


@pytest.mark.parametrize(
    "text,message",
    [
        ("python: 3.11\n", r"python: expected a string, got 3.11 \(a number\)"),
        ("pythonpath: /x\n", r'pythonpath: expected a list of strings, got a string: write \["/x"\]'),
        ("pythonpath: [/x, 3]\n", r"pythonpath\[1\]: expected a string, got 3"),
        ("venv: {path: v, requirements: triton==3.6.0}\n", "venv: requirements: expected a list of strings"),
        ("venv: {path: v, requirments: [triton]}\n", "venv: unknown key 'requirments' .did you mean 'requirements'.."),
        ("venv: {requirements: [triton]}\n", "venv: missing key 'path'"),
        ("venv: {path: v, system_site_packages: 'yes'}\n", "venv: system_site_packages: expected true or false"),
        ("venv: .venvs/tot\n", r"venv: expected a mapping \(path, requirements, ...\), got a string"),
        ("pyhton: python3\n", "unknown key 'pyhton' .did you mean 'python'.."),
        ("defaults: {}\n", "unknown key 'defaults' .known: cache_dir, description, env,"),
        ("env: [A, B]\n", "env: expected a mapping of variable -> value, got a list"),
        ("env: {TRITON_X: [1]}\n", "env: TRITON_X: expected a string or a number, got a list"),
        ("env: {TRITON_X: true}\n", 'env: TRITON_X: expected a string or a number, got true/false .quote it: "1"'),
        ("env: {'A=B': '1'}\n", "env: 'A=B' is not a variable name"),
        ("timing: cuptii\n", "timing: expected one of auto, .*got 'cuptii' .did you mean 'cupti'.."),
        ("timing: 3\n", "timing: expected one of auto, .*got 3"),
        ("name: 123\n", "name: expected a name of letters"),
        ("name: ../../elsewhere\n", "name: expected a name of letters"),
        ("description: [a]\n", "description: expected a string, got a list"),
        ("python: python3\nvenv: {path: v}\n", "give either 'python' or 'venv', not both"),
        ("- python: python3\n", r"expected a mapping \(name, python, venv, ...\), got a list"),
        ("python: [\n", "not valid YAML"),
        ('python: "a\\0b"\n', "python: contains a control character or line break"),
        ('pythonpath: ["/x\\r"]\n', r"pythonpath\[0\]: contains a control character or line break"),
        ('"\\x85": 1\n', r"unknown key '\\x85'"),
        ("cache_dir: 7\n", "cache_dir: expected a string, got 7"),
    ],
)
def test_bad_specs_are_refused_in_one_line(tmp_path, capsys, text, message):
    with pytest.raises(HarnessError, match=message):
        load(tmp_path, text)
    line = refused(["env", "show", str(spec_file(tmp_path, text))], capsys)
    assert line.startswith("harness: error: ") and str(tmp_path / "s.yaml") in line


def test_list_values_are_never_split_into_characters(tmp_path):
    assert load(tmp_path, "pythonpath: [/x]\n").pythonpath == ["/x"]
    spec = load(tmp_path, "venv: {path: v, requirements: [triton==3.6.0]}\nenv: {N: 3, F: 1.5, U: null}\n")
    assert spec.venv["requirements"] == ["triton==3.6.0"] and spec.env == {"N": "3", "F": "1.5", "U": None}
    assert pins(["triton==3.6.0", "torch>=2", "x[extra] == 1.0", "./w.whl"]) == {"triton": "3.6.0", "x": "1.0"}


def test_missing_spec_file(tmp_path, capsys):
    assert "no such env spec" in refused(["env", "show", str(tmp_path / "nope.yaml")], capsys)


# ------------------------------------------------------------------------------------------ env show


def overlay(tmp_path: Path, body: str) -> Path:
    d = tmp_path / "overlay"
    (d / "triton").mkdir(parents=True)
    (d / "triton" / "__init__.py").write_text(body)
    return d


@pytest.mark.slow  # imports torch in a subprocess
def test_env_show_prints_the_triton_the_interpreter_really_imports(tmp_path, capsys, monkeypatch):
    import triton

    monkeypatch.setenv("MY_PY", sys.executable)
    with pytest.raises(SystemExit) as exc:
        main(["env", "show", str(spec_file(tmp_path, "python: ${MY_PY}\nenv: {TRITON_INTERPRET: '1'}\n"))])
    assert exc.value.code in (0, None)
    shown = json.loads(capsys.readouterr().out)
    assert shown["python"] == sys.executable and "${" not in json.dumps(shown)
    assert shown["triton"] == {"version": triton.__version__, "path": os.path.dirname(triton.__file__)}
    assert shown["torch"]["version"]
    # the overlay is honoured: a Triton ahead of site-packages is the one shown
    d = overlay(tmp_path, "__version__ = '9.9.9'\n")
    monkeypatch.setenv("OVERLAY", str(d))
    with pytest.raises(SystemExit):
        main(["env", "show", str(spec_file(tmp_path, 'python: ${MY_PY}\npythonpath: ["$OVERLAY"]\n'))])
    shown = json.loads(capsys.readouterr().out)
    assert shown["triton"] == {"version": "9.9.9", "path": str(d / "triton")} and shown["pythonpath"] == [str(d)]


@pytest.mark.slow  # imports torch in a subprocess
def test_env_show_refuses_a_triton_that_does_not_import(tmp_path, capsys):
    d = overlay(tmp_path, "raise ImportError('libtriton.so: cannot open shared object file')\n")
    line = refused(["env", "show", str(spec_file(tmp_path, f"python: {sys.executable}\npythonpath: [{d}]\n"))], capsys)
    assert "triton is not importable in" in line and "libtriton.so" in line


def test_env_show_refuses_an_interpreter_that_does_not_run(tmp_path, capsys):
    line = refused(["env", "show", str(spec_file(tmp_path, "python: /nonexistent/python3.11\n"))], capsys)
    assert "python /nonexistent/python3.11 cannot run" in line
    fake = spec_file(tmp_path, "#!/bin/sh\necho broken >&2\nexit 3\n", "fakepy")
    fake.chmod(0o755)
    line = refused(["env", "show", str(spec_file(tmp_path, f"python: {fake}\n"))], capsys)
    assert "did not answer: broken" in line


# ------------------------------------------------------------------------------------------ venv pins


def yaml_version() -> str:
    from importlib.metadata import version

    return version("pyyaml")


def make_venv(path: Path) -> None:
    """A venv over the base environment, without pip of its own (fast; the base's pip installs into it)."""
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(path)], check=True)


def venv_spec(tmp_path: Path, reqs: list[str], name: str = "v.yaml") -> EnvSpec:
    text = yaml.safe_dump({"venv": {"path": str(tmp_path / "venv"), "requirements": reqs}})
    return load_env_spec(spec_file(tmp_path, text, name), environ={})


def test_a_venv_that_does_not_exist_is_refused(tmp_path, capsys):
    spec = venv_spec(tmp_path, ["pyyaml"])
    with pytest.raises(HarnessError, match=r"venv .*/venv does not exist: run `harness env create .*v\.yaml`"):
        check_venv(spec)
    line = refused(["run", "--env", str(spec.path), "--suite", str(DATA / "slow.yaml"), "--out", "x.csv"], capsys)
    assert "does not exist: run `harness env create" in line and not Path("x.csv").exists()


def test_env_create_records_the_install_and_run_checks_it(tmp_path):
    make_venv(tmp_path / "venv")
    (tmp_path / "venv" / "sentinel").write_text("made before the marker existed")
    spec = venv_spec(tmp_path, [f"pyyaml=={yaml_version()}"])
    with pytest.raises(HarnessError, match=f"has no record of a completed install .{MARKER}"):
        check_venv(spec)  # a venv made before the marker: refused until `env create` verified it
    assert create_env(spec, log=lambda m: None) == spec.interpreter()
    assert (tmp_path / "venv" / "sentinel").exists()  # completed in place, not recreated
    assert json.loads((tmp_path / "venv" / MARKER).read_text())["requirements"] == [f"pyyaml=={yaml_version()}"]
    check_venv(spec)
    # the spec's requirements changed since: refused
    other = venv_spec(tmp_path, [f"pyyaml=={yaml_version()}", "six"], "w.yaml")
    with pytest.raises(HarnessError, match=r"was installed with \['pyyaml==.*'\] .*but the spec asks for"):
        check_venv(other)
    # a record that claims a pin the venv does not have (installed by hand since): the pin is checked
    (tmp_path / "venv" / MARKER).write_text(json.dumps({"requirements": ["pyyaml==0.0.1"], "index_url": None}))
    bad = venv_spec(tmp_path, ["pyyaml==0.0.1"], "b.yaml")
    with pytest.raises(HarnessError, match=f"pyyaml is {yaml_version()} but the spec pins pyyaml==0.0.1: run"):
        check_venv(bad)


def test_a_failed_install_leaves_no_record(tmp_path):
    make_venv(tmp_path / "venv")
    good = venv_spec(tmp_path, [f"pyyaml=={yaml_version()}"])
    create_env(good, log=lambda m: None)
    broken = venv_spec(tmp_path, [str(tmp_path / "missing-1.0-py3-none-any.whl")], "b.yaml")
    with pytest.raises(HarnessError, match="failed"):
        create_env(broken, log=lambda m: None)
    assert not (tmp_path / "venv" / MARKER).exists()
    with pytest.raises(HarnessError, match="no record of a completed install"):
        check_venv(good)


def test_env_create_again_keeps_the_record_while_it_verifies(tmp_path, monkeypatch):
    """`harness env create` on a completed venv (scripts/demo.sh does it while other tests run in the venv)
    leaves the venv usable throughout: the record of the same requirements is never missing."""
    import harness.envs.venv as env_mod

    make_venv(tmp_path / "venv")
    spec = venv_spec(tmp_path, [f"pyyaml=={yaml_version()}"])
    create_env(spec, log=lambda m: None)
    seen = []
    real = env_mod._check
    monkeypatch.setattr(
        env_mod, "_check", lambda cmd, s: (seen.append((tmp_path / "venv" / MARKER).exists()), real(cmd, s))
    )
    create_env(spec, log=lambda m: None)
    assert seen == [True]
    check_venv(spec)


def test_a_pin_that_is_not_installed_is_refused_by_create(tmp_path):
    make_venv(tmp_path / "venv")
    spec = venv_spec(tmp_path, ["harness-no-such-dist==1.0"])
    spec.venv["requirements"] = []  # nothing to install: only the check of the pins below
    with pytest.raises(HarnessError, match="harness-no-such-dist is not installed but the spec pins"):
        from harness.envs.venv import _check_pins

        _check_pins(spec, ["harness-no-such-dist==1.0"])


# ------------------------------------------------------------------------------------------ same Triton twice


def test_two_envs_with_the_same_triton_are_named_loudly(tmp_path):
    from harness.run.interleave import same_triton

    a = load(tmp_path, "name: golden\npython: python3\n")
    b = load_env_spec(spec_file(tmp_path, "name: tot\npython: python3\n", "t.yaml"), environ={})
    same = {"version": "3.9.0", "path": "/site/triton"}
    msg = same_triton([(a, same), (b, dict(same))])
    assert msg and "golden" in msg and "tot" in msg and "3.9.0" in msg and "/site/triton" in msg
    assert same_triton([(a, same), (b, {"version": "3.9.0", "path": "/overlay/triton"})]) is None
    assert same_triton([(a, same), (a, same)]) is None  # the same spec twice: an A/A on purpose


@pytest.mark.slow
def test_interleaved_run_warns_when_both_envs_run_one_triton(tmp_path, monkeypatch):
    from harness.inputs.suite import load_suite
    from harness.run import interleave
    from harness.run.options import RunOptions

    monkeypatch.setenv("HARNESS_TEST_PYTHON", sys.executable)
    a = load_env_spec(DATA / "cpu-env.yaml")
    b = load_env_spec(spec_file(tmp_path, (DATA / "cpu-env.yaml").read_text().replace("name: cpu", "name: cpu2")))
    suite = spec_file(
        tmp_path,
        "name: s\ndefaults: {dtype: fp16}\nentries:\n"
        "  - kernel: batched_gemm_bf16\n    B: 1\n    N: 32\n    K: 64\n    M: [16]\n",
        "suite.yaml",
    )
    warnings: list[str] = []
    interleave.run_interleaved(
        [(a, tmp_path / "a.csv"), (b, tmp_path / "b.csv")],
        load_suite(suite),
        RunOptions(launches=1, heat_s=0, reps=1),
        warn=warnings.append,
    )
    assert len(warnings) == 1 and "compares a stack with itself" in warnings[0]
    assert "envs cpu (" in warnings[0] and " cpu2 (" in warnings[0]


# ------------------------------------------------------------------------------------------ fuzz

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=12), st.just("${NOPE}")
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.one_of(st.text(max_size=8), st.integers()), inner, max_size=3)
    ),
    max_leaves=8,
)
venvs = st.dictionaries(st.sampled_from([*VENV_KEYS, "requirments"]), values, max_size=4)
documents = st.one_of(
    values,
    st.dictionaries(
        st.sampled_from([*TOP_KEYS, "pyhton"]),
        st.one_of(values, venvs, st.lists(st.text(max_size=8), max_size=2)),
        max_size=5,
    ),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=documents)
def test_fuzz_the_loader_never_raises_anything_but_a_one_line_error(tmp_path, doc):
    p = spec_file(tmp_path, yaml.safe_dump(doc))
    try:
        spec = load_env_spec(p, environ={})
        spec.summary()
        spec.environ()
    except HarnessError as err:
        assert len(str(err).splitlines()) == 1 and str(err)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.one_of(st.text(max_size=60), documents.map(yaml.safe_dump)))
def test_fuzz_env_show_exits_2_with_one_line_or_shows(tmp_path, capsys, monkeypatch, text):
    from harness.envs import venv as envspec

    # the interpreter probe itself is tested above; here only what the spec's text can do to the CLI
    monkeypatch.setattr(envspec, "probe", lambda spec: {"version": "3", "triton": {}, "torch": {}})
    p = spec_file(tmp_path, text)
    with pytest.raises(SystemExit) as exc:
        main(["env", "show", str(p)])
    out, err = capsys.readouterr()
    if exc.value.code in (0, None):
        assert json.loads(out)["name"]
    else:
        assert exc.value.code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err


# ------------------------------------------------------------------------------------------ releases (issue 19)


def test_a_release_spec_gets_a_venv_by_default(tmp_path):
    s = load(tmp_path, 'triton: "3.8.0"\n')
    assert (s.triton, s.mode, s.overlay) == ("3.8.0", "venv", None)
    assert s.venv["path"] == ".venvs/triton-3.8.0" and s.venv["requirements"] == ["triton==3.8.0"]
    assert s.venv["system_site_packages"] is True and s.summary()["triton"] == "3.8.0"
    s = load(tmp_path, "triton: 3.8.0\nvenv: {path: .venvs/v380, requirements: [numpy, triton==3.8.0]}\n")
    assert s.venv["path"] == ".venvs/v380" and s.venv["requirements"] == ["triton==3.8.0", "numpy"]
    shipped = load_env_spec(ROOT / "envs" / "venv-v380.yaml", environ={})
    assert shipped.venv["requirements"] == ["triton==3.8.0"] and shipped.venv_dir() == ROOT / ".venvs" / "v380"


def test_a_release_spec_in_overlay_mode(tmp_path):
    s = load(tmp_path, "triton: 3.8.0\nmode: overlay\npythonpath: [/extra]\n")
    assert s.venv is None and s.overlay == ".harness/triton/3.8.0"
    assert s.pythonpath == [".harness/triton/3.8.0", "/extra"] and s.overlay_dir() == tmp_path / ".harness/triton/3.8.0"
    s = load(tmp_path, "triton: 3.8.0\nmode: overlay\n", {"HARNESS_TRITON_DIR": "/opt/tri"})
    assert s.overlay == "/opt/tri/3.8.0"
    s = load(tmp_path, "triton: 3.8.0\nmode: overlay\noverlay: ${X}/t\npython: /usr/bin/python3\n", {"X": "/a"})
    assert s.overlay == "/a/t" and s.interpreter() == "/usr/bin/python3"


@pytest.mark.parametrize(
    "text,message",
    [
        ("triton: 3.8\n", r'triton: expected a release such as "3.8.0", got 3.8 \(a number\): quote it'),
        ("triton: latest\n", "triton: 'latest' is not a release version"),
        ("mode: overlay\n", "mode: only with 'triton: VERSION'"),
        ("overlay: /x\n", "overlay: only with 'triton: VERSION'"),
        (
            "triton: 3.8.0\nmode: overlya\n",
            "mode: expected one of venv, overlay, got 'overlya' .did you mean 'overlay'.",
        ),
        ("triton: 3.8.0\npython: python3\n", "python: a 'mode: venv' release makes its own venv"),
        ("triton: 3.8.0\noverlay: /x\n", "overlay: only with 'mode: overlay'"),
        ("triton: 3.8.0\nmode: overlay\nvenv: {path: v}\n", "venv: 'mode: overlay' puts the release over an interp"),
        (
            "triton: 3.8.0\nvenv: {path: v, requirements: ['triton>=3.9']}\n",
            r"venv: requirements\[0\]: 'triton>=3.9' names triton too; 'triton: 3.8.0' installs triton==3.8.0",
        ),
        ("triton: 3.8.0\nvenv: {requirements: ['/w/triton-3.7.0-cp312-x.whl']}\n", "names triton too"),
    ],
)
def test_release_spec_mistakes_are_one_line(tmp_path, text, message):
    with pytest.raises(HarnessError, match=message) as err:
        load(tmp_path, text)
    assert "\n" not in str(err.value) and str(err.value).startswith(str(tmp_path / "s.yaml"))


def test_release_env_is_golden_with_another_triton(tmp_path, monkeypatch):
    from harness.envs.spec import release_env

    monkeypatch.delenv("HARNESS_TRITON_DIR", raising=False)
    golden = load(tmp_path, "name: g\npython: /usr/bin/python3\nenv: {TRITON_X: '1'}\ntiming: events\n")
    ov = release_env("3.7.1", "overlay", golden, tmp_path / "envs", root=tmp_path)
    assert ov.path == tmp_path / "envs" / "triton-3.7.1.yaml" and ov.name == "triton-3.7.1"
    assert ov.interpreter() == "/usr/bin/python3" and ov.overlay_dir() == tmp_path / ".harness/triton/3.7.1"
    assert ov.env == {"TRITON_X": "1"} and ov.timing == "events"
    assert ov.triton_cache() == tmp_path / ".harness/cache/triton-3.7.1"
    v = release_env("3.7.1", "venv", golden, tmp_path / "envs", root=tmp_path)
    assert v.venv_dir() == tmp_path / ".venvs/triton-3.7.1" and v.venv["requirements"] == ["triton==3.7.1"]
    assert v.venv["base_python"] == "/usr/bin/python3"
    with pytest.raises(HarnessError, match="--mode: expected one of venv, overlay"):
        release_env("3.7.1", "conda", golden, tmp_path / "envs")
    with pytest.raises(HarnessError, match="--versions: 'main' is not a release version"):
        release_env("main", "venv", golden, tmp_path / "envs")

"""The identity of a run, defined once: what a results file's sidecar says was measured, facet by facet (the suite's
content, the kernels' source files, the library checkouts, the env and its stack, the timing method, the config
arch, the rule it re-measured against, the GPU, the shard), and, for each way two files are put together, which
differences make the answer meaningless (``REFUSE``: one line, exit 2) and which a user may want (``WARN``: a
named warning in the terminal and the markdown). Pure: sidecars in, differences out.

A facet a sidecar does not record (an older harness, a CPU run with no GPU UUID) is unknown, never a difference.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REFUSE, WARN = "refuse", "warn"


def _at(env: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    v: Any = env
    for k in path:
        v = v.get(k) if isinstance(v, Mapping) else None
    return v


@dataclass(frozen=True)
class Facet:
    """One part of a run's identity: its ``fields`` (sidecar paths, each compared and named on its own) or a
    ``read`` of its own (one value)."""

    name: str
    words: str
    fields: tuple[tuple[str, ...], ...] = ()
    read: Callable[[Mapping[str, Any]], Any] | None = None
    #: the field's name in messages where ``read`` gives the value (the sidecar field a user would look at)
    label: str = ""
    #: a mapping kernel → value: only the kernels both files ran are compared (a shard or a filter runs fewer)
    per_kernel: bool = False

    def values(self, env: Mapping[str, Any]) -> dict[str, Any]:
        """Field name → value, None where the sidecar does not say."""
        if self.read is not None:
            return {self.label or self.name: self.read(env)}
        return {".".join(p): _clean(p, _at(env, p)) for p in self.fields}


def _clean(path: tuple[str, ...], v: Any) -> Any:
    if path == ("knobs",) and isinstance(v, Mapping):  # which GPU a process was shown is not a knob
        return {k: x for k, x in v.items() if not k.endswith("VISIBLE_DEVICES")}
    return v


def suite_name(env: Mapping[str, Any]) -> str:
    """The suite's file name ('' unknown): what a message names it by (machines check a repository out in other
    folders, so its path says nothing)."""
    return Path(str(env.get("suite") or _at(env, ("run_options", "suite")) or "")).name


def _suite(env: Mapping[str, Any]) -> Any:
    """The suite's content where recorded, else its file name."""
    content = env.get("suite_content")
    if content:
        return ("content", content)
    name = suite_name(env)
    return ("name", name) if name else None


def _config_arch(env: Mapping[str, Any]) -> Any:
    """The arch each kernel's configs were looked up as (``config_arch``; None: the GPU's own)."""
    lookups = env.get("config_lookup")
    if not isinstance(lookups, Mapping) or not lookups:
        return None
    return {k: (v or {}).get("config_arch") if isinstance(v, Mapping) else None for k, v in sorted(lookups.items())}


def _libraries(env: Mapping[str, Any]) -> Any:
    """Each library checkout's commit (its folder differs from machine to machine); unknown without git."""
    libs = env.get("libraries")
    if not isinstance(libs, Mapping):
        return None
    known = {k: v.get("commit") for k, v in libs.items() if isinstance(v, Mapping) and v.get("commit")}
    return known or None


def _gpu(key: str) -> Callable[[Mapping[str, Any]], Any]:
    def read(env: Mapping[str, Any]) -> Any:
        from harness.results.gpu import gpu_field, several_gpus, uuid_text

        if key == "uuid" and several_gpus(dict(env)):
            return None  # merged from parts on several GPUs: the sidecar's is only the first part's
        v = gpu_field(dict(env), key)
        return (uuid_text(v) if key == "uuid" else v) or None

    return read


FACETS: tuple[Facet, ...] = (
    Facet("schema", "results schema", (("schema_version",),)),
    Facet("suite", "suite (its content)", read=_suite, label="suite_content"),
    Facet(
        "kernels",
        "kernels' source files",
        read=lambda env: env.get("kernel_content") or None,
        label="kernel_content",
        per_kernel=True,
    ),  # fmt: skip
    Facet("libraries", "library checkouts", read=_libraries, label="libraries"),
    Facet("env", "env", (("env_name",),)),
    Facet("stack", "stack", (("triton", "version"), ("triton", "commit"), ("torch", "version"))),
    # where the stack was installed and its knobs (its cache folder differs from machine to machine)
    Facet("install", "stack's installation", (("triton", "path"), ("knobs",))),
    Facet(
        "method",
        "timing method",
        (
            ("timing",),
            ("launch_gap",),
            ("launch_gap_auto",),
            ("placement",),
            ("move_inputs",),
            ("launches_per_rep",),
            ("heat_s",),
            ("schedule", "processes"),
        ),
    ),
    Facet("config_arch", "config arch", read=_config_arch, per_kernel=True),
    Facet("rule", "re-measuring rule", (("remeasure", "rule"),)),
    Facet("gpu_model", "GPU model", read=_gpu("name"), label="gpu.name"),
    Facet("gpu", "physical GPU", read=_gpu("uuid"), label="gpu.uuid"),
    Facet("shard", "shard", (("shard",),)),
)
BY_NAME = {f.name: f for f in FACETS}


@dataclass(frozen=True)
class Relation:
    """How two files are put together: each facet's severity where they differ (facets not named are free)."""

    name: str
    severity: Mapping[str, str]


#: the parts of one results file (merge): measured the same way, of one suite, by one stack, on one GPU model
PARTS = Relation("parts", {n: REFUSE for n in ("schema", "suite", "kernels", "libraries", "env", "stack", "install",
                                               "method", "config_arch", "gpu_model")} | {"rule": WARN})  # fmt: skip
#: a run resumed into its own file (run --resume; its options and stack are checked by run/locks.py): the rows
#: measured before and after must be of one kernel code, library commit and config arch
RESUME = Relation("resume", {n: REFUSE for n in ("kernels", "libraries", "config_arch")})
#: one stack's runs over time (history trend): a step in a series may be the code's or the method's, not the
#: compiler's; each difference from the run before is shown beside the time
SERIES = Relation("series", {n: WARN for n in ("suite", "kernels", "libraries", "stack", "method", "config_arch")})
#: golden and TOT (compare): everything but the stack should be the same; a warning names each difference
#: (the suite, the GPUs, the shards and the rule have warnings of their own in compare/notes.py)
PAIR = Relation("pair", {n: WARN for n in ("kernels", "method", "config_arch")})
#: a comparison and the bisection of its regressions (bisect: golden and the releases measured now, TOT measured
#: again): the code bisected may have changed since, or run on another GPU; each difference is named, since the
#: comparison's regressions may then not reproduce
BISECT = Relation("bisect", {n: WARN for n in ("kernels", "libraries", "config_arch", "method", "gpu_model")})
#: the same with TOT's verdicts taken from the comparison, not measured again: a culprit found on other code than
#: the comparison's would explain a regression of code that is not there any more
BISECT_BY_VERDICT = Relation(
    "bisect-by-verdict", {**BISECT.severity, **{n: REFUSE for n in ("kernels", "libraries", "config_arch")}}
)
#: one side of two comparisons (agree: two machines, pools or days): a user may want two GPU models or two
#: config arches, but each difference is named, since the agreement then measures more than the noise
REPEAT = Relation("repeat", {n: WARN for n in ("suite", "kernels", "libraries", "stack", "method", "config_arch",
                                               "gpu_model")})  # fmt: skip


@dataclass(frozen=True)
class Difference:
    facet: str
    field: str
    a: Any
    b: Any
    severity: str

    def text(self, a: str = "A", b: str = "B") -> str:
        """``A and B differ in the kernels' source files (kernel_content): {k: 3f2a…} vs {k: 9b1c…}``."""
        words = BY_NAME[self.facet].words
        what = words if self.field == words else f"{words} ({self.field})"
        return f"{a} and {b} differ in {what}: {self.shown()}"

    def shown(self) -> str:
        return f"{show(self.a)} vs {show(self.b)}"


def show(v: Any) -> str:
    """A facet's value in a message: a content digest by its first 12 hex digits."""
    if isinstance(v, tuple) and len(v) == 2 and v[0] in ("content", "name"):
        return v[1][:12] if v[0] == "content" else v[1]
    if isinstance(v, Mapping):
        return "{" + ", ".join(f"{k}: {_short(x)}" for k, x in sorted(v.items())) + "}"
    return repr(v)


def _short(v: Any) -> str:
    s = str(v)
    return s[:12] if len(s) == 64 and all(c in "0123456789abcdef" for c in s) else s


def differences(a: Mapping[str, Any], b: Mapping[str, Any], relation: Relation) -> list[Difference]:
    """Where two sidecars' identities differ, for each facet ``relation`` cares about, in FACETS order."""
    out = []
    for facet in FACETS:
        severity = relation.severity.get(facet.name)
        if severity is None:
            continue
        va, vb = facet.values(a), facet.values(b)
        for field, x in va.items():
            y = vb.get(field)
            if x is None or y is None or x == y:
                continue
            if facet.name == "suite" and x[0] != y[0]:
                continue  # one names its content, the other only its file: not comparable
            if facet.per_kernel:
                changed = sorted(k for k in set(x) & set(y) if x[k] != y[k])
                if not changed:
                    continue
                x, y = {k: x[k] for k in changed}, {k: y[k] for k in changed}
            out.append(Difference(facet.name, field, x, y, severity))
    return out


def changed(a: Mapping[str, Any], b: Mapping[str, Any], relation: Relation, kernel: str | None = None) -> str:
    """What differs from ``a`` to ``b`` in a few words ('kernel code, triton.version'): for ``kernel``, its own
    code and config arch only; '' where nothing the relation cares about does."""
    words = []
    for d in differences(a, b, relation):
        if BY_NAME[d.facet].per_kernel and kernel is not None and kernel not in d.a:
            continue
        words.append({"kernels": "kernel code", "suite": "suite"}.get(d.facet, d.field))
    return ", ".join(dict.fromkeys(words))

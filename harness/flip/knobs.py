"""The knobs `harness flip` tries, one at a time, on TOT. Pure: names, values and the reading of a result.

A knob here is an environment variable the compiler reads (Triton's ``triton.knobs`` declares them): TOT is
measured again with one of them changed, interleaved with golden and TOT as they were, and each variant is judged
against golden by the comparison's rule with the run's confirmed verdicts. The candidates are the ones that change
code generation on each backend and are declared by TOT's Triton (knobs it does not know would change nothing);
``--knob NAME=VALUE`` adds any other (``PTXAS_OPTIONS=--maxrregcount=128``, a library's own switch).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.errors import HarnessError

#: per device backend, (knob, the value tried): what each does to the compiled code
CANDIDATES: dict[str, tuple[tuple[str, str, str], ...]] = {
    "cuda": (
        ("TRITON_DEFAULT_FP_FUSION", "0", "no fused multiply-add (harness pins 1 on both stacks)"),
        ("DISABLE_PTXAS_OPT", "1", "ptxas without its optimizations"),
        ("TRITON_DISABLE_LINE_INFO", "1", "no line info in the binary"),
    ),
    "hip": (
        ("AMDGCN_USE_BUFFER_OPS", "0", "no buffer loads and stores"),
        ("TRITON_HIP_USE_BLOCK_PINGPONG", "1", "block ping-pong scheduling"),
        ("TRITON_HIP_USE_ASYNC_COPY", "1", "asynchronous global-to-shared copies"),
        ("TRITON_HIP_USE_IN_THREAD_TRANSPOSE", "1", "in-thread transpose"),
        ("AMDGCN_SCALARIZE_PACKED_FOPS", "1", "packed float ops scalarized"),
    ),
}
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Knob:
    name: str
    value: str
    what: str = ""

    @property
    def key(self) -> str:
        """The variant's file stem in runs/ (``knob-NAME=VALUE``, characters a file name cannot hold dropped)."""
        return "knob-" + re.sub(r"[^A-Za-z0-9_.=+-]+", "_", f"{self.name}={self.value}")[:80]

    @property
    def label(self) -> str:
        return f"{self.name}={self.value}"


def parse(items: list[str]) -> list[Knob]:
    """``--knob NAME=VALUE`` items; a malformed one is one line."""
    out = []
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not _NAME.match(name):
            raise HarnessError(f"--knob {item}: expected NAME=VALUE (an environment variable and its value)")
        out.append(Knob(name, value, "given with --knob"))
    return out


def candidates(backend: str, declared: list[str] | None, given: list[Knob], tot_env: dict[str, str]) -> list[Knob]:
    """The knobs to try: the backend's candidates that TOT's Triton declares (all of them where it cannot say:
    ``declared`` None) and whose value TOT does not run with already, then those given; each name once."""
    labels = [k.label for k in given]
    twice = next((lb for lb in labels if labels.count(lb) > 1), None)
    if twice:
        raise HarnessError(f"--knob {twice}: named twice")
    out: list[Knob] = []
    for name, value, what in CANDIDATES.get(backend, ()):
        if (declared is None or name in declared) and tot_env.get(name) != value:
            out.append(Knob(name, value, what))
    for k in given:
        if any(o.label == k.label for o in out):
            continue
        clash = next((o for o in out if o.key == k.key), None)
        if clash is not None:  # two values that make one file name would share a results file and a cache
            raise HarnessError(f"--knob {k.label}: reads as {clash.label} in a file name ({k.key}): give one of them")
        out.append(k)
    return out


#: a variant's verdict against golden → what it says of the knob
STATES = ("flips", "flips, not confirmed", "still slower", "fails", "not measured")


def state(verdict: str, confidence: str) -> str:
    """What one variant says of the knob for one case: ``flips`` (TOT with it is confidently within the rule
    against golden), ``flips, not confirmed`` (within the rule, the interval or the fresh processes not sure),
    ``still slower``, ``fails`` (the variant did not run: a compile error, a wrong result) or ``not measured``."""
    if verdict in ("ok", "improvement"):
        return "flips" if confidence == "confident" else "flips, not confirmed"
    if verdict == "regression":
        return "still slower"
    if verdict.startswith("failed") or verdict.startswith("skipped"):
        return "fails"
    return "not measured"

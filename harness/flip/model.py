"""What `harness flip` measures and found: data only, filled by flip.py and written out by render.py, so that neither
imports the other."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.envs.spec import EnvSpec
from harness.flip.knobs import Knob
from harness.inputs.suite import Case


@dataclass
class Flip:
    compare_csv: Path
    out: Path
    cases: list[Case]
    golden: EnvSpec
    tot: EnvSpec
    knobs: list[Knob]
    rule: Any
    suite: Path
    #: per case key: TOT's verdict in this run, and per knob label its state, Δ % against golden and the note
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    seconds: float = 0.0

"""Write tests/durations.json (what tests/conftest.py orders the suite by, longest first) from the junit XML of a
whole run: ``bash scripts/test.sh --junitxml=run.xml``, then
``python3 scripts/test_durations.py run.xml``. Only tests over a second are kept; the rest count as 0."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "durations.json"


def main(junit: str) -> None:
    times: dict[str, float] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        module = case.get("classname", "").replace(".", "/") + ".py"
        times[f"{module}::{case.get('name')}"] = round(float(case.get("time") or 0), 1)
    kept = {k: v for k, v in sorted(times.items()) if v >= 1.0}
    OUT.write_text(json.dumps(kept, indent=0) + "\n")
    print(f"{OUT}: {len(kept)} of {len(times)} tests, {sum(kept.values()):.0f} of {sum(times.values()):.0f} s")


if __name__ == "__main__":
    main(*sys.argv[1:])

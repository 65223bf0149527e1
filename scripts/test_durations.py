"""Write tests/durations.json (what tests/conftest.py orders the suite by, longest first) from the junit XML of a
whole run: ``bash scripts/test.sh --junitxml=run.xml``, then
``python3 scripts/test_durations.py run.xml``. Only tests over a second are kept; the rest count as 0.

``--merge`` takes a partial run instead (some tests, e.g. the ones a change made faster): the tests in its XML get
its numbers (one under a second now drops out), every other test keeps what the file says. A test the run skipped
(an install missing here, say) keeps its number either way: the run did not time it."""

from __future__ import annotations

import argparse
import json
import xml.etree.ElementTree as ET
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "durations.json"


def main(junit: str, merge: bool = False) -> None:
    times: dict[str, float] = {}
    skipped: set[str] = set()
    for case in ET.parse(junit).getroot().iter("testcase"):
        module = case.get("classname", "").replace(".", "/") + ".py"
        name = f"{module}::{case.get('name')}"
        times[name] = round(float(case.get("time") or 0), 1)
        if case.find("skipped") is not None:
            skipped.add(name)
    kept = {k: v for k, v in times.items() if v >= 1.0 and k not in skipped}
    old = json.loads(OUT.read_text()) if OUT.exists() else {}
    kept.update({k: v for k, v in old.items() if k in skipped or (merge and k not in times)})
    kept = dict(sorted(kept.items()))
    OUT.write_text(json.dumps(kept, indent=0) + "\n")
    print(
        f"{OUT}: {len(kept)} tests, {sum(kept.values()):.0f} s ({len(times)} tests, {sum(times.values()):.0f} s read)"
    )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("junit", help="pytest's --junitxml file")
    ap.add_argument("--merge", action="store_true", help="a partial run: replace only the tests it ran")
    a = ap.parse_args()
    main(a.junit, a.merge)

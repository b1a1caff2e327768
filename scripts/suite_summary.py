"""The end of `make test` (scripts/test-suite.sh): the 30 slowest tests over every phase, the time
each test module took, what every failed test said, and one closing line with the totals, from
the phases' junit XML files. The failures come last, beside the totals: phases run side by side
and print one after another, and a log read from its end (as CI shows it) lost a failure printed
by the first phase behind the second one's output.
A test's time is its setup, call and teardown together, so a module's shared cluster counts
against the test that brought it up."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

FAILURE_LINES = 15  # of each failure's traceback: its assertion and what the test printed with it


def cases(paths: list[Path]) -> list[tuple[str, str, float, str, str]]:
    """(phase, test id, seconds, outcome, what a failure or error said) for every test case."""
    out = []
    for path in paths:
        if not path.is_file():
            continue
        for case in ET.parse(path).getroot().iter("testcase"):
            outcome, said = "passed", ""
            for child in case:
                if child.tag in ("failure", "error"):
                    outcome = "failed"
                    said += f"{child.tag}: {child.get('message', '')}\n{child.text or ''}"
                elif child.tag == "skipped" and outcome == "passed":
                    outcome = "skipped"
            test_id = f"{case.get('classname', '')}::{case.get('name', '')}"
            out.append((path.stem, test_id, float(case.get("time") or 0), outcome, said))
    return out


def main(argv: list[str]) -> int:
    rows = cases([Path(a) for a in argv])
    if not rows:
        print("suite summary: no test results (did every phase start?)")
        return 1
    print("\n=== the 30 slowest tests (setup + call + teardown)")
    for phase, test_id, seconds, outcome, _ in sorted(rows, key=lambda r: -r[2])[:30]:
        print(f"{seconds:8.1f} s  {phase:<10} {test_id}{'' if outcome == 'passed' else f'  [{outcome}]'}")
    modules: dict[str, float] = defaultdict(float)
    for phase, test_id, seconds, *_ in rows:
        modules[f"{phase:<10} {test_id.split('::')[0]}"] += seconds
    print("\n=== time by module")
    for module, seconds in sorted(modules.items(), key=lambda m: -m[1]):
        print(f"{seconds / 60:6.1f} min  {module}")
    failed = [r for r in rows if r[3] == "failed"]
    if failed:
        print(f"\n=== what the {len(failed)} failed test(s) said (the end of each; the phase's log has all)")
    for phase, test_id, _, _, said in failed:
        print(f"--- {phase} {test_id}")
        print("\n".join(f"    {line}" for line in said.rstrip().splitlines()[-FAILURE_LINES:]))
    counts = {k: sum(1 for r in rows if r[3] == k) for k in ("passed", "failed", "skipped")}
    print(f"\nsuite: {counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

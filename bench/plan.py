#!/usr/bin/env python3
"""`dfslab plan` speed: examples/plan-1000.yaml (1000 OSDs, 50 hosts, 5 racks, 4 pools, ~126k PG
members) against its target of 30 s, and the same layout scaled to 10,000 OSDs (500 hosts),
which must finish and report its time. Prints seconds per step and the ratio to the target.

    sudo .venv/bin/python bench/plan.py [--skip-10k]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import yaml

from dfslab.plan.analysis import plan
from dfslab.plan.layout import Layout

REPO = Path(__file__).resolve().parent.parent
TARGET_S = 30.0


def run(layout: Layout) -> float:
    steps: list[tuple[str, float]] = []
    last = [time.monotonic()]

    def progress(step: str, detail: str) -> None:
        now = time.monotonic()
        steps.append((step, now - last[0]))
        last[0] = now

    with tempfile.TemporaryDirectory(prefix="bench-plan-") as tmp:
        start = time.monotonic()
        result = plan(layout, Path(tmp) / layout.name, progress)
        total = time.monotonic() - start
    members = sum(p["pg_num"] * p["width"] for p in result["pools"].values())
    print(f"{layout.name}: {result['osds']} OSDs, {members} PG members: {total:.1f} s")
    for (step, _), (_, took) in zip(steps, steps[1:] + [("end", time.monotonic() - last[0])]):
        print(f"  {step:<14} {took:6.1f} s")
    return total


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip-10k", action="store_true", help="only the 1000-OSD layout")
    args = parser.parse_args()
    data = yaml.safe_load((REPO / "examples" / "plan-1000.yaml").read_text())
    seconds = run(Layout.model_validate(data))
    print(f"ratio to the {TARGET_S:.0f} s target: {seconds / TARGET_S:.2f} (<= 1.0 passes)")
    if not args.skip_10k:
        big = {**data, "name": "plan-10000", "racks": 20, "add_hosts": 10,
               "hosts": [{**data["hosts"][0], "count": 500}],
               "pools": [{**p, "pg_num": p["pg_num"] * 8} for p in data["pools"]]}
        run(Layout.model_validate(big))


if __name__ == "__main__":
    main()

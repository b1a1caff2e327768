#!/usr/bin/env python3
"""`dfslab plan` speed: examples/plan-1000.yaml (1000 OSDs, 50 hosts, 5 racks, 4 pools, ~126k PG
members) against its target of 30 s, and the same layout scaled to 10,000 OSDs (500 hosts, 20
racks, ~811k PG members) against 60 s. Prints seconds per step and the ratio to each target;
then plan-1000 balanced by dfslab's own upmap balancer beside Ceph's (osdmaptool), the answer
`plan` uses for pools too large for Ceph's: PGs per OSD, fullest OSD, upmap entries, seconds.

    sudo .venv/bin/python bench/plan.py [--skip-10k] [--skip-balancers]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import yaml

from dfslab.plan import analysis
from dfslab.plan.analysis import plan
from dfslab.plan.layout import Layout
from machine import describe

REPO = Path(__file__).resolve().parent.parent
TARGET_S = 30.0
TARGET_10K_S = 60.0


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


def balancers(data: dict) -> None:
    """plan-1000 balanced by each balancer in turn (no failures, no growth: the balance only)."""
    data = {**data, "failures": [], "add_hosts": 0}
    limit = analysis.CEPH_BALANCER_MAX_WORK
    print("plan-1000 balanced by      seconds  PGs/OSD min-max  stddev  fullest OSD  upmap entries")
    for name, work in (("ceph (osdmaptool)", float("inf")), ("dfslab", 0.0)):
        analysis.CEPH_BALANCER_MAX_WORK = work
        try:
            with tempfile.TemporaryDirectory(prefix="bench-plan-") as tmp:
                start = time.monotonic()
                after = plan(Layout.model_validate(data), Path(tmp) / "balance")["after_balancer"]
                took = time.monotonic() - start
        finally:
            analysis.CEPH_BALANCER_MAX_WORK = limit
        pgs = after["pgs_per_osd"]
        print(f"{name:<25} {took:8.1f}  {pgs['min']:>7.0f}-{pgs['max']:<7.0f}  {pgs['stddev']:6.2f}  "
              f"{100 * after['fill']['max']:10.2f} %  {after['upmap_entries']:13d}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip-10k", action="store_true", help="only the 1000-OSD layout")
    parser.add_argument("--skip-balancers", action="store_true", help="not the two balancers side by side")
    args = parser.parse_args()
    print(describe())
    data = yaml.safe_load((REPO / "examples" / "plan-1000.yaml").read_text())
    seconds = run(Layout.model_validate(data))
    print(f"ratio to the {TARGET_S:.0f} s target: {seconds / TARGET_S:.2f} (<= 1.0 passes)")
    if not args.skip_10k:
        big = {**data, "name": "plan-10000", "racks": 20, "add_hosts": 10,
               "hosts": [{**data["hosts"][0], "count": 500}],
               # 8x the PGs as the OSDs, up to Ceph's 65536 a pool
               "pools": [{**p, "pg_num": min(65536, p["pg_num"] * 8)} for p in data["pools"]]}
        seconds = run(Layout.model_validate(big))
        print(f"ratio to the {TARGET_10K_S:.0f} s target: {seconds / TARGET_10K_S:.2f} (<= 1.0 passes)")
    if not args.skip_balancers:
        balancers(data)


if __name__ == "__main__":
    main()

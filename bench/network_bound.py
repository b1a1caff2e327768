#!/usr/bin/env python3
"""The bottleneck line against a known limit: the same experiment (rados bench write/seq,
fio 1 MiB reads on RBD) on a cluster whose links are capped at 1 Gbit/s by the spec, and on
one that is not. Prints each run's bottleneck lines and whether the report named it
network-bound (expected: capped yes, uncapped no).

    sudo .venv/bin/python bench/network_bound.py
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from scratch_home import scratch_home
from machine import describe

REPO = Path(__file__).resolve().parent.parent
DFSLAB = [sys.executable, "-m", "dfslab.cli"]


def experiment(name: str, bandwidth: str | None) -> dict:
    network = {"bandwidth": bandwidth} if bandwidth else {}
    return {
        "name": name,
        "cluster": {"name": name, "nodes": 3, "network": network,
                    "ceph": {"osd_size": "4GiB", "replica_size": 2, "cephfs": False}},
        "baselines": {"network": True, "disk": True, "seconds": 3},
        "workloads": [{"type": "radosbench", "modes": ["write", "seq"], "seconds": 8, "threads": 16},
                      {"type": "fio", "target": "rbd", "rw": "read", "bs": "1MiB", "iodepth": 16, "size": "256MiB",
                       "seconds": 8}],
    }


def main() -> None:
    print(describe())
    with scratch_home(keep_runs=True), tempfile.TemporaryDirectory() as tmp:
        for name, cap in (("bench-capped", "1gbit"), ("bench-free", None)):
            path = Path(tmp) / f"{name}.yaml"
            path.write_text(yaml.safe_dump(experiment(name, cap)))
            res = subprocess.run([*DFSLAB, "run", str(path)], capture_output=True, text=True, cwd=REPO)
            if res.returncode != 0:
                sys.exit(res.stderr)
            report = Path(res.stdout.strip().split("report: ")[-1])
            lines = re.findall(r"<li>([^<]*(?:-bound|saturated)[^<]*)</li>", report.read_text())
            verdict = "network-bound" if any("network-bound" in line for line in lines) else "not network-bound"
            print(f"== {name} (links {cap or 'unshaped'}): {verdict}  [{report}]")
            for line in lines:
                print("   " + line.replace("&#39;", "'"))


if __name__ == "__main__":
    main()

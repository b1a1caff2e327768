#!/usr/bin/env python3
"""How far the dry run's estimate is from the run: for each example, the plan's total (what
`dfslab run EXAMPLE --dry-run` prints as "about N min") against the wall time of `dfslab run
EXAMPLE` on its own fresh cluster (deploy and teardown included). Prints seconds and the ratio
measured / planned; the target is within 25 % (0.8-1.25).

    sudo .venv/bin/python bench/estimates.py [tour quickstart fault-matrix gluster-faults]
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from scratch_home import scratch_home
from machine import describe

REPO = Path(__file__).resolve().parent.parent
DEFAULT = ["tour", "quickstart", "fault-matrix"]


def planned_seconds(path: Path) -> float:
    sys.path.insert(0, str(REPO / "src"))
    from dfslab.dryrun import plan
    from dfslab.experiment import load_experiment
    exp = load_experiment(path)
    return plan(exp, exp.cluster, owned=True).seconds


def measured_seconds(path: Path) -> tuple[float, int]:
    started = time.monotonic()
    res = subprocess.run([sys.executable, "-m", "dfslab.cli", "run", str(path)], cwd=REPO, capture_output=True, text=True)
    return time.monotonic() - started, res.returncode


def main(names: list[str]) -> None:
    print(describe())
    print(f"{'example':16} {'planned s':>10} {'measured s':>11} {'ratio':>6}  exit")
    with scratch_home():
        for name in names:
            path = REPO / "examples" / f"{name}.yaml"
            planned = planned_seconds(path)
            measured, code = measured_seconds(path)
            ratio = measured / planned
            flag = "" if 0.8 <= ratio <= 1.25 else "  outside 25 %"
            print(f"{name:16} {planned:10.0f} {measured:11.0f} {ratio:6.2f}  {code}{flag}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or DEFAULT)

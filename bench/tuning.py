#!/usr/bin/env python3
"""Cluster settings swept in place versus a fresh cluster for each: examples/tuning.yaml's
settings that Ceph changes at run time, run both ways; seconds per combination and the ratio.

    sudo .venv/bin/python bench/tuning.py [--experiment examples/tuning.yaml]

Each combination's time includes getting the cluster into that setting and running the
experiment on it; the in-place path brings one cluster up and changes options (read back from
every daemon), the other brings a cluster up per combination.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from machine import describe

REPO = Path(__file__).resolve().parent.parent


def timed(exp, live: bool, runs_root: Path) -> float:
    from dfslab.campaign import _run_settings
    plan = [(v.label, replace(exp, cluster=v.cluster, variants=[]), v.settings) for v in exp.variants]
    start = time.monotonic()
    outcomes = _run_settings(exp, plan, lambda *a: None, runs_root, live=live)
    took = time.monotonic() - start
    failures = [f for o in outcomes for f in o.failures]
    if failures:
        raise SystemExit(f"a run failed: {failures[0]}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default=str(REPO / "examples" / "tuning.yaml"))
    args = parser.parse_args()
    print(describe())
    with tempfile.TemporaryDirectory(prefix="bench-tuning-") as tmp:
        os.environ.setdefault("DFSLAB_HOME", str(Path(tmp) / "home"))
        from dfslab.experiment import load_experiment
        exp = load_experiment(args.experiment)
        if not exp.variants:
            raise SystemExit(f"{args.experiment} sweeps no cluster setting")
        n = len(exp.variants)
        live = timed(exp, True, Path(tmp) / "live")
        fresh = timed(exp, False, Path(tmp) / "fresh")
    print(f"{exp.name}: {n} combinations")
    print(f"  changed in place where possible: {live:.1f} s ({live / n:.1f} s per combination)")
    print(f"  a fresh cluster for each:        {fresh:.1f} s ({fresh / n:.1f} s per combination)")
    print(f"  ratio in place / fresh: {live / fresh:.2f}")


if __name__ == "__main__":
    main()

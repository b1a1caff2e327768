#!/usr/bin/env python3
"""Time from `dfslab up` to HEALTH_OK (all PGs active+clean) for 1 MON / 3 OSD and
3 MONs / 3 OSD, next to bringup_by_hand.sh doing the same steps with the ceph CLI, in the
same run, alternating so both see the same machine. Prints seconds and the ratio
dfslab / by-hand (target: <= 1.0, and <= 15 s for 1 MON / 3 OSD).

With --kubernetes, one more row: the same cluster (1 MON / 3 OSD, replica 2, CephFS) deployed
by Rook on dfslab's local Kubernetes (runtime kubernetes: control plane, a containerd + kubelet
per node, Rook's operator) against dfslab's local runtime, alternating; the ratio is
Rook / local. The OSDs are 6 GiB there (ceph-volume's floor) and the image must be built
already (the first `up` builds it).

    sudo .venv/bin/python bench/bringup.py [--reps 2] [--kubernetes]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scratch_home import scratch_home
from machine import describe

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SPEC = """name: bench-up
runtime: {runtime}
nodes: 3
ceph: {{mons: {mons}, osds_per_node: 1, osd_size: {osd_size}, replica_size: 2, cephfs: true}}
"""


def time_dfslab(mons: int, workdir: Path, runtime: str = "local", osd_size: str = "4GiB") -> tuple[float, list[str]]:
    """(seconds to HEALTH_OK, the finished steps as `dfslab up` printed them: "✓ step detail (N.Ns)")."""
    spec = workdir / f"bench-{mons}-{runtime}.yaml"
    spec.write_text(SPEC.format(mons=mons, runtime=runtime, osd_size=osd_size))
    dfslab = [sys.executable, "-m", "dfslab.cli"]
    start = time.monotonic()
    res = subprocess.run([*dfslab, "up", str(spec)], capture_output=True, text=True, cwd=REPO)
    elapsed = time.monotonic() - start
    subprocess.run([*dfslab, "down", "bench-up"], capture_output=True, cwd=REPO)
    if res.returncode != 0:
        sys.exit(f"dfslab up failed:\n{res.stderr}")
    return elapsed, [line.strip() for line in res.stderr.splitlines() if line.startswith("✓")]


def time_by_hand(mons: int) -> float:
    res = subprocess.run(["bash", str(HERE / "bringup_by_hand.sh"), str(mons)], capture_output=True, text=True, timeout=300)
    if res.returncode != 0:
        sys.exit(f"bringup_by_hand.sh failed:\n{res.stdout}\n{res.stderr}")
    return float(res.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--kubernetes", action="store_true", help="add the Rook on local Kubernetes row")
    args = parser.parse_args()
    print(describe())
    with scratch_home(), tempfile.TemporaryDirectory() as tmp:
        print(f"{'config':<16}{'dfslab s':>10}{'by hand s':>11}{'ratio':>8}   runs")
        for mons in (1, 3):
            ours, hand = [], []
            for _ in range(args.reps):
                ours.append(time_dfslab(mons, Path(tmp))[0])
                hand.append(time_by_hand(mons))
            a, b = statistics.median(ours), statistics.median(hand)
            runs = " ".join(f"{x:.1f}/{y:.1f}" for x, y in zip(ours, hand))
            print(f"{mons} MON / 3 OSD  {a:>10.1f}{b:>11.1f}{a / b:>8.2f}   {runs}")
        if args.kubernetes:
            print(f"\n{'config':<16}{'Rook s':>10}{'local s':>11}{'ratio':>8}   runs (Rook/local)")
            rook, local, phases = [], [], []
            for _ in range(args.reps):
                seconds, phases = time_dfslab(1, Path(tmp), "kubernetes", "6GiB")
                rook.append(seconds)
                local.append(time_dfslab(1, Path(tmp), "local", "6GiB")[0])
            a, b = statistics.median(rook), statistics.median(local)
            runs = " ".join(f"{x:.1f}/{y:.1f}" for x, y in zip(rook, local))
            print(f"1 MON / 3 OSD  {a:>10.1f}{b:>11.1f}{a / b:>8.2f}   {runs}")
            print("\nthe last Rook bring-up, step by step:")
            for line in phases:
                text, _, took = line.rpartition(" (")
                print(f"  {text[:110]} ({took}")


if __name__ == "__main__":
    main()

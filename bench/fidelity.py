#!/usr/bin/env python3
"""Does dfslab measure what the tools measure by hand? On one cluster, in one run, the same
rados bench and the same fio job are run by hand (nsenter into the client namespace, the
tool's own command line) and through `dfslab run --cluster`, alternating, `--reps` times.
Prints medians and the ratio dfslab / by hand (target: within ±3 %).

    sudo .venv/bin/python bench/fidelity.py [--reps 3] [--seconds 10]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from scratch_home import scratch_home
from machine import describe

REPO = Path(__file__).resolve().parent.parent
NAME = "bench-fid"
MAX_OBJECTS = 1000  # 4 GiB: both runs write the same at most, well inside 3 × 10 GiB OSDs at replica 2
DFSLAB = [sys.executable, "-m", "dfslab.cli"]


def sh(argv, **kw) -> str:
    res = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, **kw)
    if res.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed:\n{res.stdout}\n{res.stderr}")
    return res.stdout


def by_hand(state: Path, seconds: int) -> dict[str, float]:
    conf, keyring = state / "ceph/conf/ceph.conf", state / "ceph/conf/ceph.client.admin.keyring"
    ns = ["nsenter", f"--net=/run/netns/dfs-{NAME}-client", "--"]
    out = sh([*ns, "rados", "-c", str(conf), "-k", str(keyring), "-p", "dfslab", "bench", str(seconds), "write",
              "-t", "16", "-b", "4194304", "--no-cleanup", "--max-objects", str(MAX_OBJECTS), "--run-name", "byhand"])
    sh([*ns, "rados", "-c", str(conf), "-k", str(keyring), "-p", "dfslab", "cleanup", "--run-name", "byhand"])
    rados = float(re.search(r"Bandwidth \(MB/sec\):\s+([\d.]+)", out).group(1))
    env = {**os.environ, "CEPH_CONF": str(conf)}
    out = sh([*ns, "fio", "--name=byhand", "--output-format=json", "--group_reporting", "--rw=write", "--bs=1048576",
              "--iodepth=16", "--numjobs=1", "--size=268435456", f"--runtime={seconds}", "--time_based",
              "--ioengine=rbd", "--clientname=admin", "--pool=rbd", "--rbdname=dfslab-fio"], env=env)
    fio = json.loads(out[out.index("{"):])["jobs"][0]["write"]["bw_bytes"] / 1e6
    return {"rados bench write 4M t16": rados, "fio rbd write 1M qd16": fio}


def through_dfslab(tmp: Path, seconds: int) -> dict[str, float]:
    exp = {"name": "fidelity", "cluster": {"name": NAME, "nodes": 3},
           "baselines": {"network": False, "disk": False},
           "workloads": [{"type": "radosbench", "modes": ["write"], "seconds": seconds, "threads": 16, "object_size": "4MiB",
                          "max_objects": MAX_OBJECTS},
                         {"type": "fio", "target": "rbd", "rw": "write", "bs": "1MiB", "iodepth": 16, "size": "256MiB",
                          "seconds": seconds}]}
    path = tmp / "fidelity.yaml"
    path.write_text(yaml.safe_dump(exp))
    out = sh([*DFSLAB, "run", str(path), "--cluster", NAME])
    run = Path(out.strip().split("report: ")[-1]).parent
    with open(run / "results.csv") as fh:
        rows = [r for r in csv.DictReader(fh) if r["metric"] == "bandwidth"]
    return {"rados bench write 4M t16": float(next(r["value"] for r in rows if r["workload"] == "radosbench")),
            "fio rbd write 1M qd16": float(next(r["value"] for r in rows if r["workload"] == "fio"))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=10)
    args = parser.parse_args()
    print(describe())
    with scratch_home() as home, tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "spec.yaml"
        spec.write_text(f"name: {NAME}\nnodes: 3\nceph: {{osd_size: 10GiB, replica_size: 2, cephfs: false}}\n")
        sh([*DFSLAB, "up", str(spec)])
        try:
            hand: dict[str, list[float]] = {}
            ours: dict[str, list[float]] = {}
            through_dfslab(Path(tmp), 2)  # warm-up; also creates and fills the RBD image both use
            for _ in range(args.reps):
                for key, value in through_dfslab(Path(tmp), args.seconds).items():
                    ours.setdefault(key, []).append(value)
                for key, value in by_hand(home / "clusters" / NAME, args.seconds).items():
                    hand.setdefault(key, []).append(value)
        finally:
            subprocess.run([*DFSLAB, "down", NAME], capture_output=True, cwd=REPO)
    print(f"{'benchmark':<26}{'dfslab MB/s':>12}{'by hand MB/s':>14}{'ratio':>8}   runs (dfslab/hand)")
    for key in hand:
        a, b = statistics.median(ours[key]), statistics.median(hand[key])
        runs = " ".join(f"{x:.0f}/{y:.0f}" for x, y in zip(ours[key], hand[key]))
        print(f"{key:<26}{a:>12.1f}{b:>14.1f}{a / b:>8.3f}   {runs}")


if __name__ == "__main__":
    main()

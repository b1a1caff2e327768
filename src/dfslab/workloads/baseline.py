"""Baselines measured before the workloads, the limits the bottleneck line compares with:
iperf3 between every pair of nodes (the client included) and fio on the disk that backs
the OSDs (the state directory's file system)."""

from __future__ import annotations

import itertools
import json
import subprocess
import time

from . import Measurement, Runner, WorkloadError
from .fio import fio_argv, parse_json

IPERF_PORT = 5201


def network(runner: Runner, seconds: int) -> list[Measurement]:
    rows = _between_nodes(runner, seconds) if runner.nodes else []
    for endpoint in runner.storage.iperf_servers() if runner.storage is not None else []:
        host, _, port = endpoint.replace(",", ":").partition(":")
        out = runner.run(["iperf3", "-c", host, "-p", port or str(IPERF_PORT), "-t", str(seconds), "-J"],
                         f"baseline-iperf3-client-{host}", timeout=seconds + 30)
        bps = json.loads(out)["end"]["sum_received"]["bits_per_second"]
        rows.append(Measurement("baseline", "network_bandwidth", bps / 8e6, "MB/s", {"src": "client", "dst": endpoint}))
    return rows


def _between_nodes(runner: Runner, seconds: int) -> list[Measurement]:
    nodes = [*runner.nodes, "client"]
    servers = {n: runner.popen(["iperf3", "-s", "-B", runner.addresses[n], "-p", str(IPERF_PORT)], node=n,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for n in nodes}
    rows = []
    try:
        time.sleep(0.3)
        for src, dst in itertools.combinations(nodes, 2):
            out = runner.run(["iperf3", "-c", runner.addresses[dst], "-p", str(IPERF_PORT), "-t", str(seconds), "-J"],
                             f"baseline-iperf3-{src}-{dst}", node=src, timeout=seconds + 30)
            bps = json.loads(out)["end"]["sum_received"]["bits_per_second"]
            rows.append(Measurement("baseline", "network_bandwidth", bps / 8e6, "MB/s", {"src": src, "dst": dst}))
    finally:
        for proc in servers.values():
            proc.terminate()
            proc.wait(timeout=10)
    return rows


def disk(runner: Runner, seconds: int) -> list[Measurement]:
    base = runner.storage.disk_baseline_dir() if runner.storage is not None else None
    base = base or runner.scratch
    if base is None:
        raise WorkloadError("no scratch directory for the disk baseline")
    directory = base / "baseline-disk"
    directory.mkdir(parents=True, exist_ok=True)
    rows = []
    jobs = {"write": dict(rw="write", bs="1M", iodepth=16), "read": dict(rw="read", bs="1M", iodepth=16),
            "randread": dict(rw="randread", bs="4k", iodepth=32)}
    for label, job in jobs.items():
        argv = fio_argv(f"baseline-{label}", ioengine="libaio", direct=1, size="512M", runtime=seconds,
                        time_based=True, directory=str(directory), **job)
        out = runner.run(argv, f"baseline-fio-{label}", timeout=seconds * 4 + 120)
        for row in parse_json(out, "baseline", {}, 0):
            if row.metric in ("bandwidth", "iops"):
                rows.append(Measurement("baseline", f"disk_{label}_{row.metric}", row.value, row.unit, {}))
    for path in directory.iterdir():
        path.unlink()
    directory.rmdir()
    return rows

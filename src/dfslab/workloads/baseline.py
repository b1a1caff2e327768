"""Baselines measured before the workloads, the limits the bottleneck line compares with:
iperf3 between every pair of nodes (the client included) and fio on the disk that backs
the OSDs (the state directory's file system)."""

from __future__ import annotations

import itertools
import json
import subprocess
import time
from pathlib import Path

from ..backends.abilities import ClusterElsewhere, ability
from . import Measurement, Runner, WorkloadError
from .fiotool import fio_jobs, job_rows

IPERF_PORT = 5201
# A server in a pod (runtime kubernetes) listens only once its pod runs, seconds after dfslab
# asked for it; a refused connection is tried again until then.
CONNECT_WAIT = 90


def _iperf3(runner: Runner, host: str, port: str, seconds: int, name: str, node: str = "client") -> float:
    """MB/s received in one iperf3 client run from `node` to host:port."""
    deadline = time.monotonic() + CONNECT_WAIT
    while True:
        # CONNECT_WAIT beyond its seconds: on Kubernetes the client is a Job whose pod starts first
        # (over 30 s in the suite beside cluster-b, when the deadline was seconds + 30)
        runner.run(["iperf3", "-c", host, "-p", port, "-t", str(seconds), "-J"], name, node=node,
                   timeout=seconds + CONNECT_WAIT, check=False)
        text = (runner.raw_dir / f"{name}.txt").read_text()  # iperf3's report, also when it failed
        try:
            report = json.loads(text)
        except ValueError:
            report = {}
        received = report.get("end", {}).get("sum_received")
        if received:
            return received["bits_per_second"] / 8e6
        error = report.get("error") or "no report"
        if "Connection refused" not in error or time.monotonic() > deadline:
            raise WorkloadError(f"iperf3 from {node} to {host}:{port}: {error}; output in raw/{name}.txt")
        time.sleep(1)


def network(runner: Runner, seconds: int) -> list[Measurement]:
    rows = _between_nodes(runner, seconds) if runner.nodes else []
    for endpoint in runner.tool_servers("iperf3"):
        host, _, port = endpoint.replace(",", ":").partition(":")
        mbs = _iperf3(runner, host, port or str(IPERF_PORT), seconds, f"baseline-iperf3-client-{host}")
        rows.append(Measurement("baseline", "network_bandwidth", mbs, "MB/s", {"src": "client", "dst": endpoint}))
    return rows


def _between_nodes(runner: Runner, seconds: int) -> list[Measurement]:
    nodes = [*runner.nodes, "client"]
    servers = {n: runner.popen(["iperf3", "-s", "-B", runner.addresses[n], "-p", str(IPERF_PORT)], node=n,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for n in nodes}
    rows = []
    try:
        time.sleep(0.3)
        for src, dst in itertools.combinations(nodes, 2):
            mbs = _iperf3(runner, runner.addresses[dst], str(IPERF_PORT), seconds, f"baseline-iperf3-{src}-{dst}", node=src)
            rows.append(Measurement("baseline", "network_bandwidth", mbs, "MB/s", {"src": src, "dst": dst}))
    finally:
        for proc in servers.values():
            proc.terminate()
            proc.wait(timeout=60)  # a server in a pod returns once its pod is gone
    return rows


def disk(runner: Runner, seconds: int) -> list[Measurement]:
    """fio on the disk that backs the OSDs: once where every node's data is on this machine's
    disk, on each node where the nodes have disks of their own (rows labelled with the node)."""
    if runner.disk_per_node:  # each node's own disk: all at once, as no two share a device
        return _fio_disks(runner, {node: runner.raw_dir / f"baseline-disk-{node}" for node in runner.nodes}, seconds)
    elsewhere = ability(runner.storage, ClusterElsewhere)
    base = elsewhere.disk_baseline_dir() if elsewhere else None
    base = base or runner.scratch
    if base is None:
        raise WorkloadError("no scratch directory for the disk baseline")
    return _fio_disk(runner, base / "baseline-disk", seconds)


DISK_JOBS = {"write": dict(rw="write", bs="1M", iodepth=16), "read": dict(rw="read", bs="1M", iodepth=16),
             "randread": dict(rw="randread", bs="4k", iodepth=32)}
DISK_FILE_SIZE = "512M"


def disk_argv(directory: Path, seconds: int, remove: bool) -> list[str]:
    """One fio run of DISK_JOBS one after another (`stonewall`: each waits for the one before and
    is its own reporting group) on one file: the write lays it out, the reads read it. One run, not
    one per job: on a Kubernetes you run each run is a Job (a pod started and its log read: 9 Jobs
    took 148 s for three nodes' 2-s jobs) and each job had its own 512 MiB file to lay out.
    `remove`: the last job removes the file (`unlink`), where nothing should come back through the
    pod's log or stay on the node."""
    argv = ["fio", "--output-format=json", "--group_reporting", "--lat_percentiles=1", "--ioengine=libaio", "--direct=1",
            f"--size={DISK_FILE_SIZE}", f"--runtime={seconds}", "--time_based", f"--directory={directory}",
            "--filename=baseline-disk.dat"]  # options before the first --name are every job's
    for i, (label, job) in enumerate(DISK_JOBS.items()):
        argv += [f"--name=baseline-{label}", *(["--stonewall"] if i else []), *(f"--{k}={v}" for k, v in job.items())]
    return argv + (["--unlink=1"] if remove else [])


def _fio_disk(runner: Runner, directory: Path, seconds: int) -> list[Measurement]:
    """DISK_JOBS in `directory` on the client: rows per job."""
    directory.mkdir(parents=True, exist_ok=True)
    out = runner.run(disk_argv(directory, seconds, remove=False), "baseline-fio", timeout=_disk_timeout(seconds))
    _remove(directory)
    return _disk_rows(out, {})


def _fio_disks(runner: Runner, directories: dict[str, Path], seconds: int) -> list[Measurement]:
    """DISK_JOBS on each node at once, each in its directory (on a node of a Kubernetes you run, the
    Job's emptyDir on the kubelet's disk, removed by the last job): rows per job, labelled with the node."""
    for directory in directories.values():
        directory.mkdir(parents=True, exist_ok=True)
    outputs = runner.run_at_once({node: (disk_argv(directory, seconds, remove=True), f"baseline-fio-{node}")
                                  for node, directory in directories.items()}, timeout=_disk_timeout(seconds))
    rows = []
    for node, directory in directories.items():
        _remove(directory)
        rows += _disk_rows(outputs[node], {"node": node})
    return rows


def _disk_timeout(seconds: int) -> float:
    return len(DISK_JOBS) * seconds * 4 + 120


def _disk_rows(out: str, labels: dict[str, str]) -> list[Measurement]:
    jobs = {job["jobname"]: job for job in fio_jobs(out)}
    rows = []
    for label in DISK_JOBS:
        for row in job_rows(jobs[f"baseline-{label}"], "baseline", {}, 0, 1.0):
            if row.metric in ("bandwidth", "iops"):
                rows.append(Measurement("baseline", f"disk_{label}_{row.metric}", row.value, row.unit, labels))
    return rows


def _remove(directory: Path) -> None:
    for path in directory.iterdir():
        path.unlink()
    directory.rmdir()

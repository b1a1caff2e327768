"""No step waits blind, on a real cluster: rados bench told to write for 60 s into two 1 GiB OSDs
fills them in seconds; the cluster raises OSD_FULL / POOL_FULL or an OSD aborts on ENOSPC and its
PGs go inactive, writes block, and `dfslab run` stops the tool (and the cleanup after it), fails
the step naming why and what fills the OSDs, and exits 1 within a few minutes, its cluster removed
(without the watch it waited on the blocked writes until rados bench's deadline, then on its cleanup)."""

from __future__ import annotations

import json
import time

import yaml

import pytest

from conftest import dfslab
from dfslab import cluster
from dfslab.polling import wait_until

pytestmark = pytest.mark.cluster


def test_a_cluster_that_fills_fails_the_step_in_seconds_and_names_it(tmp_path):
    name = "t-fill"
    exp = tmp_path / "fill.yaml"
    exp.write_text(yaml.safe_dump({
        "name": "fill", "baselines": {"network": False, "disk": False},
        "cluster": {"name": name, "nodes": 2, "ceph": {"osd_size": "1GiB", "replica_size": 1, "cephfs": False}},
        "workloads": [{"type": "radosbench", "mode": ["write"], "seconds": 60, "threads": 16, "object_size": "4MiB",
                       "max_objects": 100000},  # far past what fits: the 40 % default cap lifted
                      {"type": "radosbench", "mode": ["write"], "seconds": 2, "threads": 1, "object_size": "4KiB"}],
        "on_failure": "stop"}))  # the second step is not run on the full cluster
    started = time.monotonic()
    res = dfslab("run", str(exp), check=False, timeout=600)
    took = time.monotonic() - started
    assert res.returncode == 1, res.stdout[-2000:] + res.stderr[-2000:]
    assert took < 180, took  # bring-up, a few seconds of writing, the stop, teardown
    run = next(line.split("report: ")[1].strip() for line in res.stdout.splitlines() if "report: " in line)
    (interval,) = [iv for iv in json.load(open(f"{run.rsplit('/', 1)[0]}/intervals.json")) if iv["workload"] == "radosbench"]
    # Either the full ratio trips first (OSD_FULL / POOL_FULL), or an OSD aborts on ENOSPC before it
    # does (seen on 1 GiB OSDs: BlueFS needs its share) and its PGs' writes block
    error = interval["error"]
    assert "stopped after" in error and ("FULL" in error or "exited during the step: it ran out of space" in error), error
    assert "% used" in error and "BlueFS/RocksDB metadata" in error, error  # what fills the OSDs
    assert interval["end"] - interval["start"] < 60, interval  # not rados bench's 300 s deadline
    skipped = json.load(open(f"{run.rsplit('/', 1)[0]}/provenance.json"))["skipped"]
    assert len(skipped) == 1 and "object_size=4KiB" in skipped[0] and "on_failure is stop" in skipped[0], skipped
    assert name not in dfslab("list").stdout


def test_a_monitor_quorum_lost_during_a_step_fails_it_in_seconds_and_names_it(tmp_path):
    """The one MON stopped (SIGSTOP: alive, silent, as a MON cut off from its peers is) while
    rados bench writes: the watch sees the monitors silent for 20 s, stops the tool and fails the
    step; the MON is resumed once the tool is gone, so the run's status and teardown can finish."""
    import os
    import signal
    import subprocess

    import psutil

    from conftest import DFSLAB, REPO
    name = "t-quorum"
    exp = tmp_path / "quorum.yaml"
    exp.write_text(yaml.safe_dump({
        "name": "quorum", "baselines": {"network": False, "disk": False},
        "cluster": {"name": name, "nodes": 2, "ceph": {"osd_size": "2GiB", "replica_size": 1, "cephfs": False}},
        "workloads": [{"type": "radosbench", "mode": ["write"], "seconds": 60, "threads": 1, "object_size": "4KiB"}]}))
    run = subprocess.Popen([*DFSLAB, "run", str(exp)], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    mon = None
    try:
        def rados() -> list[psutil.Process]:
            found = []
            for child in psutil.Process(run.pid).children(recursive=True):
                try:
                    if child.name() == "rados":
                        found.append(child)
                except psutil.NoSuchProcess:  # a short-lived child (ceph, ip) gone since the listing
                    pass
            return found
        deadline = time.monotonic() + 180
        while not rados() and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
        assert rados(), "rados bench never started"
        # writing: its objects on their way to the OSDs, on its namespace's link (a messenger's
        # sendmsg is not in /proc/PID/io's wchar; the link's counters see it)
        def sent() -> int:
            lines = open(f"/proc/{rados()[0].pid}/net/dev").read().splitlines()[2:]
            return sum(int(line.split(":", 1)[1].split()[8]) for line in lines if line.split(":")[0].strip() != "lo")
        before = sent()
        wait_until(lambda: sent() - before > 1 << 20, "rados bench writing", timeout=60, interval=0.2,
                   retry_on=(psutil.NoSuchProcess, FileNotFoundError, IndexError))
        daemons = json.loads(dfslab("status", name, "--json").stdout)["daemons"]
        (mon,) = [d["pid"] for d in daemons if d["name"].startswith("mon")]
        stopped_at = time.monotonic()
        os.kill(mon, signal.SIGSTOP)
        while rados() and time.monotonic() - stopped_at < 120:
            time.sleep(0.5)
        tool_gone = time.monotonic() - stopped_at
        os.kill(mon, signal.SIGCONT)
        mon = None
        out, _ = run.communicate(timeout=300)
    finally:
        if mon is not None:
            os.kill(mon, signal.SIGCONT)
        if run.poll() is None:
            run.kill()
            run.wait()
            cluster.down(name, missing_ok=True)  # the killed run's own cluster (the test failed)
    assert 20 <= tool_gone < 40, tool_gone  # the monitors' 20 s of silence, then one watch interval
    assert run.returncode == 1, out[-3000:]
    report = next(line.split("report: ")[1].strip() for line in out.splitlines() if "report: " in line)
    (interval,) = [iv for iv in json.load(open(f"{report.rsplit('/', 1)[0]}/intervals.json")) if iv["workload"] == "radosbench"]
    assert "the monitors have not answered for" in interval["error"] and "quorum lost" in interval["error"], interval["error"]
    assert name not in dfslab("list").stdout

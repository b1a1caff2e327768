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

pytestmark = pytest.mark.cluster


def test_a_cluster_that_fills_fails_the_step_in_seconds_and_names_it(tmp_path):
    name = "t-fill"
    exp = tmp_path / "fill.yaml"
    exp.write_text(yaml.safe_dump({
        "name": "fill", "baselines": {"network": False, "disk": False},
        "cluster": {"name": name, "nodes": 2, "ceph": {"osd_size": "1GiB", "replica_size": 1, "cephfs": False}},
        "workloads": [{"type": "radosbench", "mode": ["write"], "seconds": 60, "threads": 16, "object_size": "4MiB",
                       "max_objects": 100000}]}))  # far past what fits: the 40 % default cap lifted
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
    assert name not in dfslab("list").stdout

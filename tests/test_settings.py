"""Cluster settings as sweep axes: each combination on a cluster that really has it (changed in
place where Ceph can, read back from every daemon; else a fresh cluster), each compared with the
first in the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from conftest import dfslab
from dfslab import cluster

pytestmark = pytest.mark.cluster


def test_each_setting_gets_a_cluster_that_has_it_and_a_comparison(tmp_path):
    exp = {"name": "t-set", "repetitions": 2,
           "cluster": {"name": "t-set", "nodes": 2,
                       "ceph": {"replica_size": [1, 2], "osd_size": "1GiB", "pg_num": 8, "cephfs": False,
                                "conf": {"osd": {"osd_max_backfills": [3, 5]}}}},
           "baselines": {"network": False, "disk": False},
           "workloads": [{"type": "radosbench", "seconds": 2, "modes": ["write"], "threads": 4, "object_size": "1MiB"}]}
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(exp, sort_keys=False))  # axes in the order written: replica size outermost
    try:
        res = dfslab("run", str(path))
    finally:
        cluster.down("t-set", missing_ok=True)
    reports = [Path(line.removeprefix("report: ")) for line in res.stdout.splitlines() if line.startswith("report: ")]
    assert len(reports) == 4 and "B/A" in res.stdout
    runs = [r.parent for r in reports]
    settings = [json.loads((r / "provenance.json").read_text())["settings"] for r in runs]
    assert [(s["ceph.replica_size"], s["ceph.conf.osd.osd_max_backfills"]) for s in settings] == [(1, 3), (1, 5), (2, 3), (2, 5)]
    # A run-time option changes in place (read back from both OSDs); a replica size needs a fresh cluster.
    applied = [s["applied"] for s in settings]
    assert applied[0] == applied[2] == "fresh cluster"
    assert applied[1].startswith("changed in place: osd osd_max_backfills=5 (read back from 2 daemon(s))")
    assert applied[3].startswith("changed in place")
    # The pools really had each replica size: what the cluster said at the end of each run.
    assert [json.loads((r / "status.json").read_text())["write_amplification"] for r in runs] == [1, 1, 2, 2]
    comparison = json.loads((runs[-1] / "comparison.json").read_text())
    assert comparison["what"] == "settings" and "ceph.replica_size=2" in comparison["runtime"]
    html = reports[-1].read_text()
    assert "<h2>Settings ceph.replica_size=2" in html and "against settings ceph.replica_size=1" in html
    ranking = json.loads((runs[-1] / "settings.json").read_text())["ranking"]
    assert ranking and all(len(r["ranking"]) == 4 for r in ranking)
    assert "<h2>Settings ranked</h2>" in html
    assert cluster.leftovers("t-set") == []

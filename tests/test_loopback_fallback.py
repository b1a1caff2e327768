"""Without network namespaces (DFSLAB_NO_NETNS=1 stands in for a missing CAP_NET_ADMIN),
dfslab gives each node its own 127.x address, says so, and still builds a healthy cluster."""

import os
import subprocess

import pytest

from conftest import DFSLAB, REPO, status_json, write_spec
from dfslab import cluster

pytestmark = pytest.mark.cluster
NAME = "t-lo"

SPEC = f"""
name: {NAME}
nodes: 1
ceph: {{mons: 1, osds_per_node: 1, osd_size: 2GiB, replica_size: 1, cephfs: false}}
"""


def test_loopback_fallback_cluster(tmp_path):
    spec = write_spec(tmp_path, SPEC)
    env = {**os.environ, "DFSLAB_NO_NETNS": "1"}
    try:
        res = subprocess.run([*DFSLAB, "up", str(spec)], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr
        assert "no CAP_NET_ADMIN" in res.stderr
        info = status_json(NAME)
        assert info["runtime"] == "loopback"
        assert info["health"] == "HEALTH_OK"
        assert all(addr.startswith("127.77.") for addr in info["addresses"].values())
        assert not any(p.startswith(f"dfs-{NAME}-") for p in os.listdir("/run/netns")) if os.path.isdir("/run/netns") else True
    finally:
        cluster.down(NAME, missing_ok=True)
    assert cluster.leftovers(NAME) == []


def test_shaping_is_refused_without_namespaces(tmp_path):
    spec = write_spec(tmp_path, SPEC + "network: {bandwidth: 1gbit}\n")
    env = {**os.environ, "DFSLAB_NO_NETNS": "1"}
    res = subprocess.run([*DFSLAB, "up", str(spec)], cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 2
    assert "shaping needs network namespaces" in res.stderr
    assert cluster.leftovers(NAME) == []

"""MooseFS on runtime kubernetes (the local Kubernetes): the master, the metalogger and each chunk
server a StatefulSet of one pod pinned to its node, fio as Jobs that mount MooseFS in their pod;
docs/kubernetes.md's MooseFS block run verbatim: a chunk server's pod and the master's pod
deleted during writes, nothing acknowledged lost; down leaves nothing."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO
from test_kubernetes_gluster import check_job_fault_run, docs_cluster, reader_home
from test_readme import sh, user_env
from dfslab.state import ClusterState

pytestmark = [pytest.mark.cluster, pytest.mark.kubernetes]  # needs the Kubernetes and Rook build (scripts/build-kubernetes.sh)

DOCS_NAME = "moosefs-k8s"  # examples/moosefs-k8s.yaml, as docs/kubernetes.md brings it up
# docs/kubernetes.md's MooseFS block, run verbatim here (tests/test_docs_commands.py counts it)
DOCS_BLOCK = ["dfslab up examples/moosefs-k8s.yaml",
              "dfslab run examples/moosefs-k8s-faults.yaml --cluster moosefs-k8s", "dfslab down moosefs-k8s"]
DAEMONS = {"master": "node1", "metalogger": "node2", "chunkserver": ("node2", "node3")}


@pytest.fixture(scope="module")
def moosefs_k8s():
    """`dfslab up examples/moosefs-k8s.yaml` from the repository root with the reader's
    environment; `dfslab down moosefs-k8s` after the module's tests."""
    with docs_cluster(DOCS_NAME, DOCS_BLOCK) as name:
        yield name


def _pods(name: str) -> dict[str, tuple[str, str]]:
    """{pod name: (node, uid)} of the cluster's MooseFS namespace."""
    from kubernetes import client

    from dfslab.backends.moosefs.kube import NAMESPACE
    from dfslab.runtime import attach_runtime
    with reader_home():
        api = attach_runtime(ClusterState(name)).api()
    return {p.metadata.name: (p.spec.node_name, p.metadata.uid)
            for p in client.CoreV1Api(api).list_namespaced_pod(NAMESPACE).items}


def test_each_daemon_is_a_statefulset_pod_on_its_node_and_the_cluster_is_whole(moosefs_k8s):
    status = json.loads(sh(f"dfslab status {moosefs_k8s} --json").stdout)
    assert status["health"] == "HEALTH_OK", status["summary"]
    assert len(status["chunk_servers"]) == 2 and len(status["metaloggers"]) == 1, status["summary"]
    assert "master on node1 (3.0.117)" in status["summary"][0], status["summary"]
    pods = _pods(moosefs_k8s)
    assert {name: node for name, (node, _) in pods.items()} == {
        "mfs-master-node1-0": "node1", "mfs-metalogger-node2-0": "node2",
        "mfs-chunkserver-node2-0": "node2", "mfs-chunkserver-node3-0": "node3"}
    # the chunk servers registered with their node's own address (host network), not a pod's
    addresses = json.loads(sh(f"dfslab status {moosefs_k8s} --json").stdout)["chunk_servers"]
    with reader_home():
        nodes = ClusterState(moosefs_k8s).read()["addresses"]
    assert sorted(s["ip"] for s in addresses) == sorted([nodes["node2"], nodes["node3"]])


def test_the_docs_faults_delete_a_chunk_servers_and_the_masters_pod_during_writes_and_lose_nothing(moosefs_k8s):
    """`dfslab run examples/moosefs-k8s-faults.yaml --cluster moosefs-k8s` as the page shows it."""
    before = _pods(moosefs_k8s)
    made: list[Path] = []  # the run directory dfslab printed: cluster-b's tests write into ./runs meanwhile
    try:
        sh(DOCS_BLOCK[1], timeout=1800, made=made)
        (run,) = made
        _check_the_docs_faults(moosefs_k8s, run, before)
    finally:
        for path in made:
            shutil.rmtree(path, ignore_errors=True)
    # a fault the pods' runtime cannot do is refused, naming the one that can
    res = subprocess.run(["bash", "-c", f"dfslab fault {moosefs_k8s} kill master.node1"], cwd=REPO, env=user_env(),
                         capture_output=True, text=True, timeout=120)
    assert res.returncode != 0 and "fault pod" in res.stderr, res.stderr


def _check_the_docs_faults(name: str, run: Path, before: dict) -> None:
    check_job_fault_run(name, run, [("pod", "chunkserver.node3"), ("pod", "master.node1")])
    # the sampler named the pods' processes as the local runtime names its daemons
    with open(run / "timeseries.csv") as fh:
        series = {r["series"] for r in csv.DictReader(fh)}
    assert {"cpu.master.node1", "cpu.metalogger.node2", "cpu.chunkserver.node2", "cpu.chunkserver.node3"} <= series
    status = json.loads(sh(f"dfslab status {name} --json").stdout)
    assert status["health"] == "HEALTH_OK", status["summary"]
    after = _pods(name)
    assert set(after) == set(before)  # each StatefulSet made its pod again, on the same node
    changed = {pod for pod in after if after[pod][1] != before[pod][1]}
    assert changed == {"mfs-chunkserver-node3-0", "mfs-master-node1-0"}, (before, after)
    assert all(after[pod][0] == before[pod][0] for pod in after)

"""Runtime kubernetes on a Kubernetes you run (`kubernetes.kubeconfig`): dfslab installs Rook
into a namespace of its own, Rook puts Ceph on the named nodes' devices, the workloads run as
Jobs whose files come back through their logs, and `down` deletes what dfslab made, nothing else.

The cluster "you run" is a real one: the local Kubernetes dfslab starts with
`kubernetes.local.rook: false` (nodes, their loop disks, an admin kubeconfig), used only
through that kubeconfig, as any other cluster would be."""

from __future__ import annotations

import csv
import json

import pytest
import yaml

from conftest import dfslab, run_against
from dfslab.state import ClusterState

pytestmark = pytest.mark.cluster
HOST = "t-k8s-host"
NAME = "t-k8s-yours"
NAMESPACE = "dfslab-yours"

HOST_SPEC = {"name": HOST, "runtime": "kubernetes", "kubernetes": {"local": {"rook": False}}, "nodes": 3,
             "network": {"subnet": "10.80.0.0/24"},
             "ceph": {"mons": 1, "osds_per_node": 1, "osd_size": "6GiB", "replica_size": 2, "cephfs": False}}


def _host_api():
    from dfslab.runtime import attach_runtime
    from dfslab.runtime.kubernetes.existing import api_for
    rt = attach_runtime(ClusterState(HOST))
    return rt, api_for(str(rt.admin_kubeconfig), None)


def _spec(**kubernetes) -> dict:
    from dfslab.runtime.kubernetes import rook_host_path
    rt, _ = _host_api()
    devices = {loop["node"]: [loop["device"]] for loop in rt.state.resources("loop")}
    return {"name": NAME, "runtime": "kubernetes", "nodes": 3,
            "kubernetes": {"kubeconfig": str(rt.admin_kubeconfig), "namespace": NAMESPACE,
                           "image": rt.state.read()["k8s_images"]["rook"],
                           # the host cluster's nodes each bind their own directory there
                           "data_dir_host_path": str(rook_host_path()), "devices": devices,
                           "clients": ["client"], **kubernetes},
            "ceph": {"mons": 1, "osds_per_node": 1, "replica_size": 2, "cephfs": False}}


def _cluster_scoped_names(api) -> set[str]:
    from kubernetes import client
    crds = client.ApiextensionsV1Api(api).list_custom_resource_definition().items
    roles = client.RbacAuthorizationV1Api(api).list_cluster_role().items
    return {c.metadata.name for c in crds} | {r.metadata.name for r in roles}


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("k8s-host")
    (tmp / "host.yaml").write_text(yaml.safe_dump(HOST_SPEC))
    dfslab("up", str(tmp / "host.yaml"), "--timeout", "600", timeout=1200)
    try:
        yield tmp
    finally:
        dfslab("down", HOST, timeout=600)
        assert not ClusterState(HOST).dir.exists()


def test_the_local_kubernetes_alone_hands_over_an_admin_kubeconfig(host):
    status = json.loads(dfslab("status", HOST, "--json").stdout)
    nodes = next(t for t in status["tables"] if t["title"] == "Kubernetes nodes")
    assert sorted((r[0], r[2]) for r in nodes["rows"]) == [(n, "Ready") for n in ("client", "node1", "node2", "node3")]
    from kubernetes import client
    _, api = _host_api()
    assert not client.ApiextensionsV1Api(api).list_custom_resource_definition().items  # no Rook in it


def test_a_spec_your_cluster_cannot_hold_is_refused_before_anything_is_made(host):
    bad = host / "bad.yaml"
    bad.write_text(yaml.safe_dump({**_spec(), "nodes": [{"name": "node1"}, {"name": "node2"}, {"name": "nodex"}],
                                   "kubernetes": {**_spec()["kubernetes"], "devices": {
                                       "node1": ["/dev/loop0"], "node2": ["/dev/loop1"], "nodex": ["/dev/loop2"]}}}))
    res = dfslab("up", str(bad), check=False)
    assert res.returncode != 0 and "nodes: ['nodex'] are not nodes of the Kubernetes cluster" in res.stderr, res.stderr
    from kubernetes import client
    _, api = _host_api()
    assert NAMESPACE not in {n.metadata.name for n in client.CoreV1Api(api).list_namespace().items}
    assert not ClusterState(NAME).dir.exists()


def test_rook_on_your_cluster_to_health_ok_jobs_measure_and_down_removes_only_what_it_made(host):
    from kubernetes import client
    _, api = _host_api()
    before = _cluster_scoped_names(api)
    spec = host / "yours.yaml"
    spec.write_text(yaml.safe_dump(_spec()))
    dfslab("up", str(spec), "--timeout", "900", timeout=1500)
    try:
        status = json.loads(dfslab("status", NAME, "--json").stdout)
        assert status["health"] == "HEALTH_OK" and status["osds"] == {"total": 3, "up": 3, "in": 3}, status
        rook_objects = next(t for t in status["tables"] if t["title"] == "Rook objects")
        assert ["CephCluster", "dfslab", "Ready"] == rook_objects["rows"][0][:3], rook_objects
        pods = client.CoreV1Api(api).list_namespaced_pod(NAMESPACE, label_selector="app=rook-ceph-osd").items
        assert sorted(p.spec.node_name for p in pods) == ["node1", "node2", "node3"]
        # exec: a Job on the named node, with the cluster's conf and keyring
        assert dfslab("exec", NAME, "--node", "node2", "--", "ceph", "health").stdout.split()[-1] == "HEALTH_OK"

        exp = host / "exp.yaml"
        exp.write_text(yaml.safe_dump({
            "name": "t-k8s-yours-exp", "cluster": _spec(), "repetitions": 1,
            "baselines": {"network": False, "disk": False},
            "workloads": [{"type": "radosbench", "modes": ["write", "seq"], "seconds": 3, "threads": 8},
                          {"type": "fio", "target": ["rbd", "rados"], "rw": ["write"], "bs": "1MiB", "size": "32MiB",
                           "seconds": 2}]}))
        run, out = run_against(exp, NAME)
        with open(run / "results.csv") as fh:
            rows = list(csv.DictReader(fh))
        params = [json.loads(r["params"]) for r in rows]
        metrics = {(r["workload"], r["metric"], p.get("target", p.get("mode"))) for r, p in zip(rows, params)}
        assert {("radosbench", "bandwidth", "write"), ("radosbench", "bandwidth", "seq"),
                ("fio", "bandwidth", "rbd"), ("fio", "bandwidth", "rados")} <= metrics, (sorted(metrics), out)
        assert all(float(r["value"]) > 0 for r in rows if r["metric"] == "bandwidth")
        # fio's bandwidth logs were written in the pods and came back through the Jobs' logs
        assert list(run.glob("raw/**/bw*.log")) or list(run.glob("**/bw*.log")), sorted(str(p) for p in run.rglob("*"))
        jobs = [json.loads(line) for line in (ClusterState(NAME).dir / "kubernetes/jobs.jsonl").read_text().splitlines()]
        assert ("fio", "client", "Succeeded", 0) in {(j["tool"], j["node"], j["phase"], j["rc"]) for j in jobs}
    finally:
        dfslab("down", NAME, timeout=900)
    # dfslab's namespace and the cluster-wide objects it installed (Rook's CRDs, roles) are gone;
    # what the cluster had before is all still there, its nodes Ready
    assert NAMESPACE not in {n.metadata.name for n in client.CoreV1Api(api).list_namespace().items}
    assert _cluster_scoped_names(api) == before
    assert not ClusterState(NAME).dir.exists()
    from dfslab.runtime.kubernetes.objects import node_ready
    assert all(node_ready(n) for n in client.CoreV1Api(api).list_node().items)

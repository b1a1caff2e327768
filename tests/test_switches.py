"""Every boolean / enum switch of the spec either comes up healthy or is refused with its
reason (mgr: false, test_spec.py). The values other modules' clusters do not bring up are
brought up here once: 3 MONs with failure_domain osd, GlusterFS replica 2, an arbiter, and MooseFS
without a metalogger."""

import json

import pytest

from conftest import cluster_up, dfslab, status_json, write_spec
from dfslab import cluster
from dfslab.spec import ClusterSpec

pytestmark = pytest.mark.cluster

SPECS = {
    "t-sw-mons3": "nodes: 3\nceph: {mons: 3, failure_domain: osd, replica_size: 2, osd_size: 1GiB, pg_num: 8, cephfs: false}\n",
    "t-sw-rep2": "filesystem: gluster\nnodes: 2\ngluster: {volume: replicate, replica: 2}\n",
    "t-sw-arb": "filesystem: gluster\nnodes: 3\ngluster: {volume: replicate, replica: 3, arbiter: true}\n",
    "t-sw-mfs": "filesystem: moosefs\nnodes: 2\nnetwork: {subnet: 10.77.8.0/24}\nmoosefs: {metalogger: false, goal: 1}\n",
}


def test_every_switch_value_is_covered_somewhere():
    """Each Literal/bool field of the spec, with the values this file or others bring up."""
    switches = {(section, field): getattr(model.model_fields[field].annotation, "__args__", (True, False))
                for section, model in (("", ClusterSpec), ("ceph", ClusterSpec.model_fields["ceph"].annotation),
                                       ("gluster", ClusterSpec.model_fields["gluster"].annotation),
                                       ("moosefs", ClusterSpec.model_fields["moosefs"].annotation))
                for field in model.model_fields
                if model.model_fields[field].annotation is bool
                or str(model.model_fields[field].annotation).startswith("typing.Literal")}
    # Where each value is brought up (or refused), so a new switch cannot go untested unnoticed.
    # external and host: tests/test_external.py; kubernetes: tests/test_kubernetes.py; moosefs
    # with its metalogger: tests/test_moosefs.py.
    covered = {("", "filesystem"): {"ceph", "gluster", "external", "moosefs"}, ("", "runtime"): {"local", "docker", "host", "kubernetes"},
               ("ceph", "mons"): {1, 3}, ("ceph", "mgr"): {True, False}, ("ceph", "failure_domain"): {"host", "osd"},
               ("ceph", "cephfs"): {True, False}, ("gluster", "volume"): {"distribute", "replicate", "disperse"},
               ("gluster", "replica"): {2, 3}, ("gluster", "arbiter"): {True, False},
               ("moosefs", "metalogger"): {True, False}}
    assert set(switches) == set(covered), set(switches) ^ set(covered)
    for key, values in switches.items():
        assert set(values) == covered[key], key


@pytest.mark.parametrize("name", list(SPECS))
def test_switch_comes_up_healthy(tmp_path, name):
    spec = write_spec(tmp_path, f"name: {name}\n" + SPECS[name])
    cluster_up(spec, name)
    try:
        info = status_json(name)
        assert info["health"] == "HEALTH_OK", info.get("checks")
        if name == "t-sw-mons3":
            quorum = json.loads(dfslab("exec", name, "--", "ceph", "quorum_status", "-f", "json").stdout)
            assert len(quorum["quorum_names"]) == 3
            rules = json.loads(dfslab("exec", name, "--", "ceph", "osd", "crush", "rule", "dump", "-f", "json").stdout)
            assert any(step.get("type") == "osd" for rule in rules for step in rule["steps"])
        elif name == "t-sw-mfs":  # one chunk server, goal 1, no metalogger registered or started
            assert len(info["chunk_servers"]) == 1 and info["metaloggers"] == []
            assert not any(d["name"].startswith("metalogger.") for d in info["daemons"])
        elif name == "t-sw-rep2":
            assert len(info["bricks"]) == 2 and all(b["online"] for b in info["bricks"])
        else:
            out = dfslab("exec", name, "--node", "node1", "--", "gluster", "volume", "info", "dfslab").stdout
            assert "1 x (2 + 1) = 3" in out  # two data bricks and an arbiter
    finally:
        dfslab("down", name, check=False)
    assert cluster.leftovers(name) == []

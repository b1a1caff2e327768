"""GlusterFS on a Kubernetes you run, without a cluster: the objects dfslab makes there, and the
two shell scripts that decide what is dfslab's on your nodes (run here with sh on real
directories: the claim before glusterd starts, the cleanup at down)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from dfslab.backends.gluster import pods, yours
from dfslab.spec import parse_spec

SPEC = {"name": "g", "filesystem": "gluster", "runtime": "kubernetes", "nodes": [{"name": n} for n in ("w1", "w2", "w3")],
        "kubernetes": {"kubeconfig": "/k", "image": "r/i:1", "clients": ["w4"], "namespace": "dfslab-g",
                       "data_dir_host_path": "/srv/dfs", "allow_faults": ["kill", "partition"]}}
MARK = yours.owner("g", "dfslab-g")


def _claim(root: Path, node: str = "w1") -> subprocess.CompletedProcess:
    return subprocess.run(["sh", "-c", yours.claim_script(MARK), str(root)], env={**os.environ, "NODE_NAME": node},
                          capture_output=True, text=True)


def _cleanup(data: Path, root: Path) -> subprocess.CompletedProcess:
    script = yours.cleanup_job("ns", "img", "w1", str(data), root, MARK)["spec"]["template"]["spec"]["containers"][0]["command"]
    return subprocess.run(script, capture_output=True, text=True)


def test_glusterd_claims_only_a_directory_that_is_new_or_already_this_clusters(tmp_path):
    root = tmp_path / "dfslab-g"
    (root / "w1" / "lib").mkdir(parents=True)  # what the kubelet makes for the pod's subPath mounts
    assert _claim(root).returncode == 0 and (root / yours.OWNER_MARK).read_text().strip() == MARK
    assert _claim(root).returncode == 0  # its own restart: the mark is this cluster's
    (root / yours.OWNER_MARK).write_text("dfslab cluster other, namespace x\n")
    res = _claim(root)
    assert res.returncode == 3 and "not dfslab's to use" in res.stderr, res.stderr
    foreign = tmp_path / "foreign"
    (foreign / "w1").mkdir(parents=True)
    (foreign / "someones.db").write_text("x")
    res = _claim(foreign)
    assert res.returncode == 3 and "files dfslab did not make" in res.stderr and not (foreign / yours.OWNER_MARK).exists()


def test_the_cleanup_removes_only_a_directory_marked_as_this_clusters(tmp_path):
    data = tmp_path / "data"
    root = data / "dfslab-g"
    (root / "w1" / "bricks" / "b0").mkdir(parents=True)
    (data / "users-own").mkdir()
    res = _cleanup(data, root)
    assert res.returncode == 3 and "left as it is" in res.stderr and root.exists()  # not marked
    assert _claim(root).returncode == 0
    res = _cleanup(data, root)
    assert res.returncode == 0 and "removed" in res.stdout and not root.exists(), res.stderr
    assert (data / "users-own").is_dir()  # beside it: untouched
    assert _cleanup(data, root).returncode == 0  # nothing there: nothing to do (a second down)


def test_on_your_nodes_glusterd_keeps_its_state_under_data_dir_host_path_on_the_spec_nodes_only():
    spec = parse_spec(SPEC)
    where = yours.placement(spec, "g")
    assert where.root == Path("/srv/dfs/dfslab-dfslab-g") and where.namespace == "dfslab-g"
    sts = pods.statefulset(where, "r/i:1", 3)
    pod = sts["spec"]["template"]["spec"]
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["w1", "w2", "w3"]}]}]
    assert "podAntiAffinity" in pod["affinity"] and "nodeSelector" not in pod  # your nodes carry no label of dfslab's
    assert pod["volumes"] == [{"name": "gluster", "hostPath": {"path": "/srv/dfs/dfslab-dfslab-g", "type": "DirectoryOrCreate"}}]
    container = pod["containers"][0]
    assert container["imagePullPolicy"] == "IfNotPresent" and container["command"][-1] == str(where.root)
    assert container["command"][2].index(yours.OWNER_MARK) < container["command"][2].index("exec glusterd")
    cleanup = yours.cleanup_job("dfslab-g", "r/i:1", "w2", "/srv/dfs", where.root, "m")
    assert cleanup["spec"]["template"]["spec"]["nodeSelector"] == {"kubernetes.io/hostname": "w2"}
    assert yours.cleanup_name("n" * 60).startswith(yours.CLEANUP) and len(yours.cleanup_name("n" * 60)) <= 63


def test_on_your_cluster_faults_need_consent_and_what_acts_on_this_machine_is_refused():
    from dfslab.backends.gluster.kube import GlusterKubernetesBackend as G
    spec = parse_spec(SPEC)
    assert G.refusal(spec, fault="kill") is None and G.refusal(spec, fault="partition") is None
    assert "needs the owner's consent" in G.refusal(spec, fault="stop")
    assert "kill glusterd.NODE" in G.refusal(spec, fault="brick")
    assert "which are yours" in G.refusal(spec, fault="nodeloss")
    assert "confine" not in G.targets_for(spec) and "no route to your nodes" in G.refusal(spec, target="confine")
    assert G.daemon_of_pod({"app": pods.APP, "dfslab.io/daemon": "glusterd"}, "w2") == "glusterd.w2"
    assert G.daemon_of_pod({"app": "dfslab-toolbox"}, "w4") is None



def test_capabilities_of_glusterfs_on_your_kubernetes_refuse_only_what_acts_on_what_is_not_dfslabs():
    from dfslab.capabilities import sample_cells
    cells = {c.capability: c for c in sample_cells() if (c.cluster, c.filesystem) == ("kubernetes-yours", "gluster")}
    refused = {name for name, c in cells.items() if not c.ok}
    # what GlusterFS does not offer anywhere, what acts on your nodes or from this machine, and the
    # rolling upgrade (on Kubernetes a new release is a new image)
    assert refused == {"radosbench", "fio target=rados", "fio target=rbd", "pushdown where=storage",
                       "pushdown where=client", "s3", "servers", "fault brick", "fault drain", "fault nodeloss",
                       "fault fill", "fault out", "fault operator", "fault upgrade"}, refused
    assert len(cells) - len(refused) >= 14

"""Runtime kubernetes without a cluster: what dfslab renders for Rook from a spec, what it
refuses before anything starts, and how a Job's pod log and state are read."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from dfslab.backends import PreflightError
from dfslab.backends.ceph import rook
from dfslab.runtime.kubernetes import job
from dfslab.spec import SpecError, parse_spec

SPEC = {"name": "k", "runtime": "kubernetes", "nodes": 3,
        "ceph": {"mons": 1, "osd_size": "6GiB", "replica_size": 2, "conf": {"osd": {"osd max backfills": 1}}}}
LOOPS = {"node1": ["/dev/loop0"], "node2": ["/dev/loop1"], "node3": ["/dev/loop2"]}


def test_the_spec_becomes_a_ceph_cluster_pools_and_a_filesystem():
    objs = rook.cluster_objects(parse_spec(SPEC), "rook-ceph", "dfslab/rook:1", "/var/lib/x", LOOPS)
    kinds = [(o["kind"], o["metadata"]["name"]) for o in objs]
    assert kinds == [("CephCluster", "dfslab"), ("CephBlockPool", "dfslab"), ("CephBlockPool", "rbd"),
                     ("CephFilesystem", "cephfs")]
    cluster = objs[0]["spec"]
    assert cluster["mon"] == {"count": 1, "allowMultiplePerNode": False}
    assert cluster["network"] == {"provider": "host"}
    assert cluster["storage"]["nodes"] == [{"name": n, "devices": [{"name": d[0]}]} for n, d in LOOPS.items()]
    assert all(o["spec"]["replicated"]["size"] == 2 for o in objs if o["kind"] == "CephBlockPool")
    no_fs = rook.cluster_objects(parse_spec({**SPEC, "ceph": {**SPEC["ceph"], "cephfs": False}}), "ns", "i", "/x", LOOPS)
    assert "CephFilesystem" not in [o["kind"] for o in no_fs]
    three = rook.cluster_objects(parse_spec({**SPEC, "ceph": {**SPEC["ceph"], "mons": 3}}), "ns", "i", "/x", LOOPS)
    assert three[0]["spec"]["mon"] == {"count": 3, "allowMultiplePerNode": False}


def test_the_tuning_override_holds_the_box_tuning_and_the_spec_wins():
    text = rook.config_override(parse_spec(SPEC), "rook-ceph")["data"]["config"]
    osd = [line.strip() for line in text.split("[osd]\n", 1)[1].split("\n[", 1)[0].splitlines()]
    assert "osd max backfills = 1" in osd and "osd max backfills = 4" not in osd
    assert "mon data avail warn = 5" in text  # a shared test box's disk is not "low" at 30 % free


def test_preflight_refuses_an_osd_ceph_volume_would_skip():
    spec = parse_spec({**SPEC, "ceph": {**SPEC["ceph"], "osd_size": "2GiB"}})
    with pytest.raises(PreflightError, match="ceph.osd_size.*5 GiB"):
        rook.RookCephBackend.preflight(spec)


def test_filesystems_without_a_kubernetes_engine_are_refused_on_kubernetes():
    with pytest.raises(SpecError, match="runtime: external starts nothing"):
        parse_spec({"name": "x", "filesystem": "external", "runtime": "kubernetes", "external": {"posix": {"path": "/mnt"}}})
    # GlusterFS has one (a StatefulSet and a bootstrap Job), on the local Kubernetes and on yours;
    # MooseFS's is the local Kubernetes' only
    from dfslab.backends.gluster.kube import GlusterKubernetesBackend
    from dfslab.backends.moosefs.kube import MooseFSKubernetesBackend
    from dfslab.registry import backend_class_of
    gluster = parse_spec({"name": "g", "filesystem": "gluster", "runtime": "kubernetes", "nodes": 3})
    assert backend_class_of("gluster", "kubernetes") is GlusterKubernetesBackend
    GlusterKubernetesBackend.preflight(gluster)
    yours = {"kubeconfig": "/k", "image": "r/i:1", "clients": ["c1"]}
    GlusterKubernetesBackend.preflight(parse_spec({"name": "g", "filesystem": "gluster", "runtime": "kubernetes",
                                                  "nodes": 3, "kubernetes": yours}))
    with pytest.raises(PreflightError, match="kubernetes.kubeconfig: MooseFS"):
        MooseFSKubernetesBackend.preflight(parse_spec({"name": "m", "filesystem": "moosefs", "runtime": "kubernetes",
                                                      "nodes": 3, "kubernetes": yours}))
    with pytest.raises(SpecError, match="namespace"):
        parse_spec({**SPEC, "kubernetes": {"local": {}, "namespace": "Bad_NS"}})


def test_a_pod_log_splits_into_stdout_stderr_and_exit_code():
    log = f"out line\n\n{job.MARK}\nerr line\n\n{job.RC_MARK} 3\n"
    assert job.split_output(log) == ("out line\n", "err line\n", 3)
    assert job.split_output("killed before the end") == ("", "killed before the end", None)


def _pod(phase="Pending", node=None, waiting=None, scheduled_msg=None):
    statuses = [NS(state=NS(waiting=NS(reason=waiting, message="no image")))] if waiting else None
    conds = [NS(type="PodScheduled", message=scheduled_msg)] if scheduled_msg else None
    return NS(status=NS(phase=phase, container_statuses=statuses, conditions=conds), spec=NS(node_name=node))


def test_a_job_whose_pod_cannot_run_fails_fast_with_the_reason():
    assert job.cannot_start(_pod(node="client", waiting="ContainerCreating"), 5) is None
    assert "ErrImageNeverPull" in job.cannot_start(_pod(node="client", waiting="ErrImageNeverPull"), 5)
    assert job.cannot_start(_pod(scheduled_msg="0/4 nodes are available"), 10) is None
    assert "0/4 nodes" in job.cannot_start(_pod(scheduled_msg="0/4 nodes are available"), job.SCHEDULE_TIMEOUT + 1)
    assert job.cannot_start(None, 1) is None and "no pod" in job.cannot_start(None, job.SCHEDULE_TIMEOUT + 1)


def test_a_storage_daemon_in_a_pod_is_named_as_on_the_local_runtime():
    # Each filesystem names its own daemons from their command lines; the other's are not its.
    from dfslab.backends.ceph.rook import RookCephBackend
    from dfslab.backends.gluster.kube import GlusterKubernetesBackend
    argvs = [["ceph-osd", "--foreground", "--id", "0", "--fsid", "x"], ["/usr/bin/ceph-mon", "--fsid=f", "--id=a", "--foreground"],
             ["rook", "ceph", "operator"], ["ceph-osd", "--id"], ["glusterd", "-N", "--log-level", "INFO"],
             ["/usr/sbin/glusterfsd", "-s", "10.0.0.1", "--volfile-id", "dfslab.x", "--brick-name", "/g/node1/bricks/b0",
              "-l", "/x.log"], ["glusterfsd", "--brick-name"], []]
    assert [RookCephBackend.daemon_of_process(a, "node1") for a in argvs] == ["osd.0", "mon.a"] + [None] * 6
    assert [GlusterKubernetesBackend.daemon_of_process(a, "node1") for a in argvs] == \
        [None] * 4 + ["glusterd.node1", "brick.node1.b0", None, None]


def test_progress_names_the_newest_event():
    from datetime import datetime, timezone

    def event(minute, kind, name, msg):
        t = datetime(2026, 1, 1, 0, minute, tzinfo=timezone.utc)
        return NS(last_timestamp=t, event_time=None, metadata=NS(creation_timestamp=t), message=msg, reason="R",
                  involved_object=NS(kind=kind, name=name))
    core = NS(list_namespaced_event=lambda ns: NS(items=[event(1, "Pod", "mon-a", "Started"),
                                                         event(3, "Job", "osd-prepare-node1", "Completed"),
                                                         event(2, "Pod", "osd-0", "Pulled")]))
    assert rook.newest_event(core, "rook-ceph") == " · last event: Job osd-prepare-node1: Completed"
    assert rook.newest_event(NS(list_namespaced_event=lambda ns: NS(items=[])), "x") == ""


def test_daemon_faults_on_kubernetes_find_the_daemons_pods():
    from dfslab import chaos
    from dfslab.backends import PodSelector
    from dfslab.backends.ceph.rook import RookCephBackend
    from dfslab.backends.gluster.kube import GlusterKubernetesBackend
    from dfslab.chaos.pod import selector
    assert selector(RookCephBackend, "osd.0") == PodSelector("ceph_daemon_type=osd,ceph_daemon_id=0")
    assert selector(RookCephBackend, "mds.cephfs-a") == PodSelector("ceph_daemon_type=mds,ceph_daemon_id=cephfs-a")
    assert selector(GlusterKubernetesBackend, "glusterd.node2") == PodSelector("dfslab.io/daemon=glusterd", "node2", 1)
    with pytest.raises(chaos.FaultInputError, match=r"daemons \(osd.0, mon.a, mgr.a, mds.cephfs-a, rgw.node1, rgw.dfslab\), "
                                                     r"not 'node1'"):
        selector(RookCephBackend, "node1")
    # each filesystem names only its own daemons: a Ceph daemon on a GlusterFS cluster is refused
    with pytest.raises(chaos.FaultInputError, match="glusterd.node2: a node's glusterd"):
        selector(GlusterKubernetesBackend, "osd.0")
    with pytest.raises(chaos.FaultInputError, match="not 'glusterd.node2/x'"):
        selector(GlusterKubernetesBackend, "glusterd.node2/x")
    spec = parse_spec(SPEC)
    with pytest.raises(chaos.FaultInputError, match="nodeloss"):
        chaos.check_applies("node", spec)  # a node of Rook's is lost with its kubelet and containerd
    chaos.check_applies("kill", spec)  # its containers' processes; their kubelet starts them again
    chaos.check_applies("pod", spec)
    chaos.check_applies("partition", spec)  # the node's link is the local runtime's


def test_containerd_counts_as_started_only_once_its_cri_is_initialized(tmp_path):
    # A kubelet exits when its first CRI call fails, and a containerd restarted over a dead node's
    # containers serves its socket while still recovering them: start_containerd waits for the
    # CRI's own "initialized" line of *this* start (the log is appended to across restarts).
    import time
    from dfslab.procs import ProcessTable
    from dfslab.runtime.base import RuntimeError_
    from dfslab.runtime.kubernetes import node
    from dfslab.state import ClusterState

    state = ClusterState("t-cri")
    state.create({"name": "t-cri"})
    table = ProcessTable(state)
    log = table.log_path("ctrd")
    log.write_bytes(b'time="earlier" level=info msg="Start streaming server"\n')
    sock = tmp_path / "containerd.sock"
    recovering = f'touch {sock}; echo \'level=info msg="Start recovering state"\'; sleep 1'
    try:
        t0 = time.monotonic()
        proc = node.start_containerd(
            lambda: table.spawn("ctrd", "n1", ["sh", "-c", recovering + '; echo \'level=info msg="Start streaming server"\'; sleep 60']),
            log, sock, "containerd of n1")
        assert time.monotonic() - t0 >= 1.0 and proc.alive()
        table.stop("ctrd")
        sock.unlink()
        with pytest.raises(RuntimeError_, match=r"exited before its CRI was ready.*failed to recover state"):
            node.start_containerd(
                lambda: table.spawn("ctrd", "n1", ["sh", "-c", recovering + "; echo 'level=fatal msg=\"failed to recover state\"'; exit 1"]),
                log, sock, "containerd of n1")
    finally:
        table.stop_all(timeout=1)
        state.destroy()


def _container_pod(restarts: int, running: bool = True):
    status = NS(name="rgw", container_id="containerd://" + "a" * 64, restart_count=restarts,
                state=NS(running=NS() if running else None), ready=running)
    return NS(metadata=NS(name="rook-ceph-rgw-dfslab-a-x", uid="u1", deletion_timestamp=None),
              status=NS(phase="Running", container_statuses=[status]))


def test_kill_on_kubernetes_signals_the_daemons_containers_and_waits_for_their_kubelet(monkeypatch):
    """`kill rgw.node1` on Rook: every process of the gateway's containers gets SIGKILL (here a
    real process stands in for the container's), the pod stays; the undo waits until the kubelet
    has started the container again (its restart count up, running), and fails naming what it
    waited for when that never comes."""
    import signal
    import subprocess
    import dfslab.runtime.kubernetes as kube_runtime
    from dfslab.chaos import FaultError, daemon
    from dfslab.chaos.pod import SignalDaemonContainers
    victim = subprocess.Popen(["sleep", "60"])
    seen = {}
    monkeypatch.setattr(kube_runtime, "container_pids", lambda cid: [victim.pid] if cid == "a" * 64 else None)
    answers = [_container_pod(0)]

    def list_pods(namespace, label_selector, field_selector):
        seen["asked"] = (namespace, label_selector, field_selector)
        return NS(items=[answers[0]])
    monkeypatch.setattr(SignalDaemonContainers, "core", lambda self: NS(list_namespaced_pod=list_pods))
    monkeypatch.setattr(SignalDaemonContainers, "wait", lambda self, done, what, timeout=0: done() or
                        (_ for _ in ()).throw(FaultError(f"{what} not within {timeout} s")))
    # the local Kubernetes' own way: the container's processes from this machine (its cgroups)
    local = lambda pod, cid, sig: kube_runtime.KubernetesRuntime.signal_container(None, pod, cid, sig)  # noqa: E731
    cluster = NS(runtime=NS(kind="kubernetes", daemons_in_pods=True, namespace="rook-ceph", signal_container=local),
                 backend=rook.RookCephBackend, state=NS(name="k"))
    fault = daemon.KillDaemon(cluster)
    record = fault.inject("rgw.node1")
    assert victim.wait(timeout=10) == -signal.SIGKILL
    assert seen["asked"] == ("rook-ceph", "ceph_daemon_type=rgw,ceph_daemon_id=dfslab", "spec.nodeName=node1")
    assert record == {"containers": [{"pod": "rook-ceph-rgw-dfslab-a-x", "uid": "u1", "container": "rgw", "restarts": 0}],
                      "signalled": 1}
    with pytest.raises(FaultError, match="rgw.node1's containers started again by their kubelet"):
        fault.undo("rgw.node1", record)  # the kubelet has not restarted it yet
    answers[0] = _container_pod(1, running=False)
    with pytest.raises(FaultError):
        fault.undo("rgw.node1", record)  # restarted but not running yet (back-off)
    answers[0] = _container_pod(1)
    fault.undo("rgw.node1", record)


def test_a_gateway_on_a_kubernetes_you_run_gets_keys_its_toolbox_holds_and_osds_load_dfslabs_class():
    """On your Kubernetes the S3 user's keys are chosen by dfslab and mounted in the toolbox (which
    runs the s3 load) at the path the worker reads; Rook's OSDs may load dfslab's object class."""
    spec = parse_spec({"name": "yours", "runtime": "kubernetes", "nodes": [{"name": "w1"}],
                       "kubernetes": {"kubeconfig": "/nonexistent/config", "image": "r/x:1", "devices": {"w1": ["/dev/sdb"]},
                                      "clients": ["w2"]},
                       "ceph": {"rgw": 1, "replica_size": 1, "mons": 1}})
    rook.RookCephBackend.preflight(spec)  # not refused
    assert {"s3", "objclass"} <= rook.RookCephBackend.targets_for(spec)
    from dfslab.backends.ceph import rgw
    keys = rgw.new_keys()
    assert len(keys["access_key"]) == 20 and len(keys["secret_key"]) == 40 and keys != rgw.new_keys()
    files = {"conf": "/s/ceph/conf/ceph.conf", "keyring": "/s/ceph/conf/keyring", "s3keys": "/s/ceph/conf/s3-credentials.json"}
    toolbox = rook.toolbox_deployment("ns", "r/x:1", "w2", files)["spec"]["template"]["spec"]
    mounts = {m["mountPath"]: m["subPath"] for m in toolbox["containers"][0]["volumeMounts"]}
    assert mounts["/s/ceph/conf/s3-credentials.json"] == "s3keys", mounts
    config = rook.config_override(spec, "ns")["data"]["config"]
    osd = config[config.index("[osd]"):]
    assert "osd class load list = *" in osd and "osd class default list = *" in osd, config

"""The target table and the filesystems' own series, as the layers above use them: a store for
every target that has one, the fault runs' writer on the first a cluster offers, and each
filesystem's sampler series exposed as its package declares (dfslab.registry)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from dfslab.backends import Backend
from dfslab.backends.abilities import ClientSetup, ObjectPools
from dfslab.chaos.integrity import FileStore, open_store
from dfslab.monitor import metric_families
from dfslab.registry import TARGETS, store_class


def test_every_target_with_a_store_names_a_class_that_writes_and_reads():
    for target, entry in TARGETS.items():
        if entry.store:
            cls = store_class(target)
            assert all(callable(getattr(cls, op, None)) for op in ("put", "get", "close")), target
    with pytest.raises(KeyError):
        store_class("rbd")


def test_a_file_store_round_trips_and_an_unknown_target_is_named(tmp_path):
    store = open_store(f"fs:{tmp_path / 'x'}")
    assert isinstance(store, FileStore)
    store.put("a", b"abc")
    assert store.get("a", 3) == b"abc"
    with pytest.raises(ValueError, match=r"unknown store 'rbd:pool'.*fs:\.\.\."):
        open_store("rbd:pool")


class _Offers(Backend, ObjectPools):
    """A backend as the fault run sees it: what it offers, where its mount and pool are."""

    name = "t"
    offered: frozenset = frozenset()

    def __init__(self):
        pass

    def targets_for(self, spec):
        return self.offered

    def mount(self, node):
        return Path("/mnt") / node

    def bench_pool(self, requested):
        return "bench"



_Offers.__abstractmethods__ = frozenset()  # only the methods above are asked


class _OffersToolboxMount(_Offers, ClientSetup):
    """... whose mount, where only pods have it, the checker's toolbox pod holds too (GlusterFS on yours)."""

    def checker_sees_mount(self) -> bool:
        return True


def _stores(offered: set[str], mount_is_here: bool = True, toolbox_mount: bool = False) -> list[str]:
    from dfslab.faultrun import FaultRun
    backend = _OffersToolboxMount() if toolbox_mount else _Offers()
    backend.offered = frozenset(offered)
    run = FaultRun.__new__(FaultRun)
    run.attached, run._stores = SimpleNamespace(backend=backend, spec=None), None
    run.runner = SimpleNamespace(mount_is_here=mount_is_here)
    return run.stores()


def test_the_writer_takes_the_first_offered_target_with_a_store():
    assert _stores({"fs", "rados", "rbd"}) == ["rados:bench", "fs:/mnt/client/dfslab-integrity"]
    assert _stores({"fs", "gfapi"}) == ["fs:/mnt/client/dfslab-integrity"]
    assert _stores({"rbd"}) == []
    # where the checker runs without the mount (a Kubernetes you run: only the Jobs' pods have it),
    # no files: they would land on its own disk, not the filesystem's
    assert _stores({"fs", "rados"}, mount_is_here=False) == ["rados:bench"]
    # ... unless the pod the checker runs in holds the mount too
    assert _stores({"fs", "gfapi"}, mount_is_here=False, toolbox_mount=True) == ["fs:/mnt/client/dfslab-integrity"]
    assert _stores({"fs", "gfapi"}, mount_is_here=False) == []


def test_each_filesystems_series_are_exposed_as_its_package_declares():
    latest = {"ceph.health": (1, ""), "gluster.bricks_online": (2, ""), "gluster.degraded": (1, ""),
              "ceph.osds_up": (3, "")}
    families = {f.name: f for f in metric_families(SimpleNamespace(latest=latest, totals={}), "c")}
    assert families["dfslab_ceph_health_status"].samples[0].value == 1
    assert families["dfslab_gluster_bricks_online"].samples[0].value == 2
    assert families["dfslab_ceph_osds"].samples[0].labels == {"cluster": "c", "status": "up"}
    # the degraded flag is one metric for every filesystem, not one of GlusterFS' own
    assert families["dfslab_degraded"].samples[0].labels == {"cluster": "c", "filesystem": "gluster"}
    assert "dfslab_gluster_degraded" not in families


def test_fio_runs_on_the_targets_the_table_gives_an_engine_and_keeps_their_rules():
    from pydantic import ValidationError

    from dfslab.workloads.fio import FioParams
    assert {"rbd", "rados", "gfapi", "fs", "machine"} <= set(FioParams.model_fields["target"].annotation.__args__)
    with pytest.raises(ValidationError, match="input_value=.s3."):  # fio has no engine for it here
        FioParams(target="s3")
    with pytest.raises(ValidationError, match="measures writes .* not read: fio's rados engine reads objects it created empty"):
        FioParams(target="rados", rw="read")
    with pytest.raises(ValidationError, match="client_cache is librbd's write-back cache \\(target rbd\\), not target fs's"):
        FioParams(target="fs", client_cache=True)
    assert FioParams(target="rbd", client_cache=False, rw="write").client_cache is False


def test_faults_and_pod_names_that_are_rooks_live_in_the_ceph_package():
    from dfslab.backends import PodSelector
    from dfslab.backends.ceph.rook import RookCephBackend
    from dfslab.backends.gluster.kube import GlusterKubernetesBackend
    from dfslab.chaos import fault_class
    from dfslab.registry import fault_owner
    from dfslab.chaos.kube import KubernetesFault
    assert fault_owner("operator") == "ceph" and fault_owner("kill") is None and issubclass(fault_class("operator"), KubernetesFault)
    osd = {"app": "rook-ceph-osd", "ceph_daemon_type": "osd", "ceph_daemon_id": "0", "pod-template-hash": "x"}
    assert RookCephBackend.pod_identity(osd) == {"ceph_daemon_type": "osd", "ceph_daemon_id": "0"}
    assert RookCephBackend.pod_identity({"app": "rook-ceph-crashcollector", "node_name": "n1"}) == \
        {"app": "rook-ceph-crashcollector"}
    assert GlusterKubernetesBackend.pod_identity({"app": "glusterd", "controller-revision-hash": "y"}) == {"app": "glusterd"}
    assert RookCephBackend.pod_identity({"job-name": "x"}) == {}
    # the gateways Rook's CephObjectStore runs go by their nodes, as on the other runtimes (the
    # store's name takes all of them): faults and the sampler say rgw.node1 on every runtime
    assert RookCephBackend.pod_selector("rgw.dfslab") == PodSelector("ceph_daemon_type=rgw,ceph_daemon_id=dfslab")
    assert RookCephBackend.pod_selector("rgw.node2") == PodSelector("ceph_daemon_type=rgw,ceph_daemon_id=dfslab", "node2")
    assert RookCephBackend.daemon_of_process(["radosgw", "--fsid=x", "--id=rgw.dfslab.a"], "node2") == "rgw.node2"


def test_target_local_is_the_former_name_of_machine_in_files_and_in_old_runs(tmp_path):
    """`target: local` named this machine's disk, and also read as the runtime `local`: it is
    `machine` now; a file that still says local gets machine, and an old run's rows that say
    local read as machine, so old and new runs compare."""
    from dfslab.results import RunDir
    from dfslab.workloads.fio import FioParams
    from dfslab.workloads.sql import SqlParams
    assert FioParams(target="local").target == "machine" and SqlParams(target="local").target == "machine"
    assert FioParams(target="fs").target == "fs"
    with pytest.raises(ValueError, match="machine"):  # the error lists today's name
        FioParams(target="locl")
    run = RunDir(tmp_path)
    (tmp_path / "results.csv").write_text(
        "workload,params,repetition,metric,value,unit,t,step\n"
        'fio,"{""target"": ""local"", ""rw"": ""write""}",0,bandwidth,120.5,MB/s,,s1\n'
        'fio,"{""target"": ""fs"", ""rw"": ""write""}",0,bandwidth,80.0,MB/s,,s2\n')
    assert [r["params"]["target"] for r in run.rows()] == ["machine", "fs"]

"""Ceph through Rook on runtime kubernetes: the spec becomes Rook's objects, Rook deploys.

dfslab renders a CephCluster (MON count, host networking, OSDs on each node's loop devices,
ceph.conf overrides as Rook's `rook-config-override`), a CephBlockPool per pool dfslab's
workloads use (`dfslab`, `rbd`) with the spec's replica size, and a CephFilesystem when
`ceph.cephfs`; applies Rook's own CRDs, RBAC and operator (from the Rook module the binary
was built from) through the Kubernetes API; and waits for the CephCluster to report
HEALTH_OK and every PG active+clean, with progress from its status and events.

Once Rook has made the cluster, dfslab reads the MON addresses and the admin key Rook keeps
(ConfigMap rook-ceph-mon-endpoints, Secret rook-ceph-mon) into the same ceph.conf and keyring
the local backend writes, so status, health, sampling and pools work as on every runtime.
"""

from __future__ import annotations

import base64
import re
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from ..abilities import KubernetesManifests, PodsOnKubernetes
from .. import BackendError, PodSelector, PreflightError, Progress, table
from ..kube_consent import consent_refusal
from ..kube_tables import nodes_table, pods_table
from . import client as cephfs_client, health, pools, rgw
from .conf import RELEASE_CONF, box_tuning, conf_text
from .backend import CephBackend
from ... import deps
from ...native import IMAGE_CLASS_DIR
from ...registry import release_of
from ...runtime.kubernetes.binaries import engine_of, k8s_cache
from ...runtime.kubernetes.job import CLIENT_SECRET, POD_MOUNTS_KEY
from ...runtime.kubernetes.objects import apply_all, delete_object, exists, namespace_object, patch_merge, validate_all
from ...polling import poll, wait_until
from ...registry import fault_owner

GROUP, VERSION = "ceph.rook.io", "v1"
CLUSTER_NAME = "dfslab"
FS_NAME = "cephfs"
OBJECT_STORE = "dfslab"  # its gateways' pods carry rook_object_store=dfslab
# radosgw-admin's arguments for the store's realm, zone group and zone (Rook names all three after it)
STORE_WHERE = tuple(f"--rgw-{part}={OBJECT_STORE}" for part in ("realm", "zonegroup", "zone"))
MON_PORT = 6789


def rook_of(spec) -> str:
    """The Rook version that runs `spec`'s release (its `engine`, rook-VERSION: v1.12.11 for
    Pacific, v1.18 for Reef and Tentacle)."""
    return engine_of(release_of(spec)).removeprefix("rook-")


def rook_manifests(version: str) -> Path:
    """Where Rook `version`'s manifests are (crds.yaml, common.yaml, operator.yaml)."""
    return k8s_cache() / "rook" / version


def load_manifests(name: str, namespace: str, version: str) -> list[dict]:
    """Rook `version`'s deploy/examples/<name>.yaml as objects, moved to `namespace`."""
    docs = [d for d in yaml.safe_load_all((rook_manifests(version) / name).read_text()) if d]
    return [_renamespace(d, namespace) for d in docs]


def _renamespace(obj: Any, namespace: str) -> Any:
    if isinstance(obj, dict):
        return {k: (namespace if k == "namespace" and v == "rook-ceph" else _renamespace(v, namespace)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_renamespace(v, namespace) for v in obj]
    return obj


def operator_objects(namespace: str, image: str, version: str, local: bool = True) -> list[dict]:
    """Rook's operator.yaml with dfslab's image: loop devices allowed (raw-mode OSDs, no LVM), no
    CSI (dfslab's clients are Jobs, and CSI's images come from registries). On the local
    Kubernetes: the operator on the host network of a client node (there is no kube-proxy but
    for the API server's ClusterIP), the image never pulled; on yours, pulled if not present."""
    objs = load_manifests("operator.yaml", namespace, version)
    for obj in objs:
        if obj["kind"] == "ConfigMap" and obj["metadata"]["name"] == "rook-ceph-operator-config":
            # From v1.17 Rook hands CSI to ceph-csi-operator, or with its driver disabled to none.
            obj["data"].update({"ROOK_CSI_ENABLE_CEPHFS": "false", "ROOK_CSI_ENABLE_RBD": "false",
                                "ROOK_CSI_ENABLE_NFS": "false", "ROOK_USE_CSI_OPERATOR": "false",
                                "ROOK_CSI_DISABLE_DRIVER": "true", "ROOK_CEPH_ALLOW_LOOP_DEVICES": "true",
                                "ROOK_ENABLE_DISCOVERY_DAEMON": "false", "ROOK_LOG_LEVEL": "INFO"})
        if obj["kind"] == "Deployment" and obj["metadata"]["name"] == "rook-ceph-operator":
            pod = obj["spec"]["template"]["spec"]
            if local:
                pod.update({"hostNetwork": True, "dnsPolicy": "ClusterFirstWithHostNet",
                            "nodeSelector": {"dfslab.io/role": "client"}})
            for container in pod["containers"]:
                container.update({"image": image, "imagePullPolicy": "Never" if local else "IfNotPresent"})
    return objs


def server_placement(spec) -> dict:
    """Ceph's daemons on the spec's nodes: by name on your Kubernetes, by role on the local one."""
    expr = ({"key": "kubernetes.io/hostname", "operator": "In", "values": spec.node_names()}
            if spec.kubernetes.user_cluster else {"key": "dfslab.io/role", "operator": "In", "values": ["server"]})
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [expr]}]}}}


def cluster_objects(spec, namespace: str, image: str, host_path: str, devices: dict[str, list[str]],
                    pull: str = "Never") -> list[dict]:
    """CephCluster, CephBlockPools and CephFilesystem for `spec`; OSDs on `devices` of each node."""
    c = spec.ceph
    server = server_placement(spec)
    failure_domain = "host" if len(spec.nodes) >= c.replica_size else "osd"
    cluster = {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "CephCluster",
        "metadata": {"name": CLUSTER_NAME, "namespace": namespace},
        "spec": {
            "cephVersion": {"image": image, "allowUnsupported": True, "imagePullPolicy": pull},
            "dataDirHostPath": host_path,
            "skipUpgradeChecks": True,
            "mon": {"count": c.mons, "allowMultiplePerNode": False},  # the spec has a node per MON
            "mgr": {"count": 1, "allowMultiplePerNode": True},
            "dashboard": {"enabled": False},
            "crashCollector": {"disable": True},
            # no ceph-exporter (Rook runs one per node from Reef on: Debian packages none)
            "monitoring": {"enabled": False, "metricsDisabled": True},
            "network": {"provider": "host"},
            "placement": {"all": server},
            "disruptionManagement": {"managePodBudgets": False},
            # status: how often Rook copies `ceph status` into the CR (its default 60 s left
            # `kubectl get cephcluster` saying HEALTH_WARN for a minute after Ceph was HEALTH_OK).
            "healthCheck": {"daemonHealth": {"mon": {"interval": "10s"}, "osd": {"interval": "10s"},
                                             "status": {"interval": "10s"}},
                            # Rook starts the OSDs only once the MGR's pod is Ready, which its startup
                            # probe (first asked 10 s after the start, then every 10 s) held back for
                            # 10-20 s after the MGR answered; asked from 1 s, every 2 s, for up to 2 min.
                            "startupProbe": {"mgr": {"probe": {"initialDelaySeconds": 1, "periodSeconds": 2,
                                                               "failureThreshold": 60}}}},
            "storage": {"useAllNodes": False, "useAllDevices": False,
                        "nodes": [{"name": node, "devices": [{"name": dev} for dev in devs]}
                                  for node, devs in devices.items()]},
        },
    }
    replicated = {"size": c.replica_size, "requireSafeReplicaSize": c.replica_size > 1}
    objs = [cluster]
    for pool in pools.POOLS:
        objs.append({"apiVersion": f"{GROUP}/{VERSION}", "kind": "CephBlockPool",
                     "metadata": {"name": pool, "namespace": namespace},
                     # Rook enables application rbd on every CephBlockPool (rados bench does not mind)
                     "spec": {"failureDomain": failure_domain, "replicated": replicated}})
    if c.rgw:
        objs += object_store_objects(spec, namespace, failure_domain, replicated)
    if c.cephfs:
        objs.append({"apiVersion": f"{GROUP}/{VERSION}", "kind": "CephFilesystem",
                     "metadata": {"name": FS_NAME, "namespace": namespace},
                     "spec": {"metadataPool": {"failureDomain": failure_domain, "replicated": replicated},
                              "dataPools": [{"name": "data0", "failureDomain": failure_domain, "replicated": replicated}],
                              "preserveFilesystemOnDelete": False,
                              "metadataServer": {"activeCount": 1, "activeStandby": False, "placement": server}}})
    return objs


def object_store_objects(spec, namespace: str, failure_domain: str, replicated: dict) -> list[dict]:
    """S3 through Rook: a CephObjectStore with `ceph.rgw` gateways (radosgw on the servers, host
    network, rgw.PORT as on the other runtimes). dfslab's S3 user is made with radosgw-admin once
    they answer (Rook's CephObjectStoreUser goes through the gateway's Service by DNS name, which
    the local Kubernetes does not serve)."""
    pool = {"failureDomain": failure_domain, "replicated": replicated}
    return [{"apiVersion": f"{GROUP}/{VERSION}", "kind": "CephObjectStore",
             "metadata": {"name": OBJECT_STORE, "namespace": namespace},
             "spec": {"metadataPool": pool, "dataPool": pool, "preservePoolsOnDelete": False,
                      "gateway": {"port": rgw.PORT, "instances": spec.ceph.rgw, "placement": gateway_placement(spec)},
                      # Rook's gateway probes run curl, which dfslab's image (Debian's Ceph) has not:
                      # the startup probe failed with 127 until kubelet would restart the gateway.
                      # dfslab waits for each gateway to answer HTTP from the client node instead.
                      "healthCheck": {"readinessProbe": {"disabled": True}, "startupProbe": {"disabled": True}}}}]


def gateway_placement(spec) -> dict:
    """The gateways on the first `ceph.rgw` nodes, as on the other runtimes: with host networking a
    gateway's endpoint is its node's address, so a pod made again (a deleted pod, a restart) must
    land on the same node for the clients' endpoint to hold."""
    expr = {"key": "kubernetes.io/hostname", "operator": "In", "values": spec.node_names()[:spec.ceph.rgw]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [expr]}]}}}


def config_override(spec, namespace: str) -> dict:
    """dfslab's box tuning plus the spec's ceph.conf options as Rook's rook-config-override
    ConfigMap (Rook's tuning hook)."""
    sections = box_tuning()
    # dfslab's object class is in the image's class directory beside Ceph's; an OSD loads only the
    # classes these lists name (Ceph's own by default), as on the other runtimes (conf.py).
    # Trixie's and forky's ceph-osd default to a relative class dir ("lib/x86_64-linux-gnu/rados-classes",
    # not found from the pod's working directory: no cls_lock, so the MGR's sqlite pool failed):
    # named in full, as Debian installs it (Pacific's default is the same path).
    sections.setdefault("osd", {}).update({"osd class load list": "*", "osd class default list": "*",
                                          "osd class dir": IMAGE_CLASS_DIR})
    for section, opts in [*RELEASE_CONF.get(spec.ceph.release, {}).items(), *(spec.ceph.conf or {}).items()]:
        sections.setdefault(section, {}).update(opts)
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "rook-config-override", "namespace": namespace},
            "data": {"config": conf_text(sections)}}


# Rook labels every daemon's pod with its Ceph type and id (osd.0: ceph_daemon_type=osd, ceph_daemon_id=0).
CEPH_DAEMON_KINDS = ("mon", "mgr", "osd", "mds", "rgw")  # Rook's ceph_daemon_type (rgw: its id is the store's)
# A gateway goes by its node, as on the other runtimes (rgw.node1: each is pinned to a node), and
# rgw.dfslab names every gateway of the store (their pods' ceph_daemon_id).
ROOK_DAEMON = re.compile(rf"({'|'.join(CEPH_DAEMON_KINDS)})\.([A-Za-z0-9-]+)")


class RookCephBackend(CephBackend, PodsOnKubernetes, KubernetesManifests):
    name = "ceph"
    facts = replace(CephBackend.facts, required_programs=("ceph", "rados", "nsenter", "ip", "tc"),
                    log_dirs=("logs", "ceph/conf", "kubernetes/nodes/*/pod-logs"))
    pod_daemons = f"osd.0, mon.a, mgr.a, mds.cephfs-a, rgw.node1, rgw.{OBJECT_STORE}"

    @classmethod
    def daemon_names(cls, spec) -> list[str] | None:
        return None  # Rook names its daemons (mon.a, mgr.a, mds.cephfs-a); pod_selector finds them

    @classmethod
    def pod_selector(cls, target: str) -> PodSelector | None:
        match = ROOK_DAEMON.fullmatch(target)
        if not match:
            return None
        if match[1] == "rgw" and match[2] != OBJECT_STORE:
            return PodSelector(f"ceph_daemon_type=rgw,ceph_daemon_id={OBJECT_STORE}", node=match[2])
        return PodSelector(f"ceph_daemon_type={match[1]},ceph_daemon_id={match[2]}")

    @classmethod
    def daemon_of_process(cls, argv: list[str], node: str) -> str | None:
        """'osd.0' for `ceph-osd ... --id 0 ...`, 'mon.a' for `ceph-mon ... --id=a`, 'rgw.node1' for
        the `radosgw` on node1 (as on the other runtimes), else None."""
        if argv and Path(argv[0]).name == "radosgw":
            return f"rgw.{node}"
        kind = Path(argv[0]).name.removeprefix("ceph-") if argv and Path(argv[0]).name.startswith("ceph-") else ""
        if kind not in CEPH_DAEMON_KINDS:
            return None
        for i, arg in enumerate(argv):
            if arg.startswith("--id="):  # Rook's MON, MGR and MDS pods
                return f"{kind}.{arg.split('=', 1)[1]}"
            if arg == "--id" and i + 1 < len(argv):  # its OSD start script
                return f"{kind}.{argv[i + 1]}"
        return None

    @classmethod
    def daemon_of_pod(cls, labels: dict[str, str], node: str = "") -> str | None:
        """'osd.0' for a Rook OSD pod (its ceph_daemon_type and ceph_daemon_id labels); crash
        collectors and the like are not daemons of the cluster's."""
        kind, daemon_id = labels.get("ceph_daemon_type"), labels.get("ceph_daemon_id")
        return f"{kind}.{daemon_id}" if kind in CEPH_DAEMON_KINDS and daemon_id else None

    @classmethod
    def pod_identity(cls, labels: dict[str, str]) -> dict[str, str]:
        """Rook's daemon type and id (osd.0's next pod), else the app label."""
        if "ceph_daemon_type" in labels and "ceph_daemon_id" in labels:
            return {k: labels[k] for k in ("ceph_daemon_type", "ceph_daemon_id")}
        return super().pod_identity(labels)

    @classmethod
    def preflight(cls, spec) -> None:
        if spec.kubernetes.user_cluster:
            return  # nothing of Ceph runs on this machine; the devices are your nodes'
        # ceph-volume (which Rook runs) skips a device under 5 GiB: "Insufficient space (<5GB)".
        if spec.ceph.osd_size < 5 * 2**30:
            raise PreflightError(f"ceph.osd_size: Rook's ceph-volume takes no device under 5 GiB; "
                                 f"{spec.ceph.osd_size / 2**30:.1f} GiB was asked: use 6GiB (the file is sparse)")
        CephBackend.preflight(spec)

    # Every target of Ceph's, on your Kubernetes too: CephFS in each client Job's pod (which makes
    # the directories its tool asks for), the s3 load, the checksummed objects and the pushdown
    # engine in the toolbox, dfslab's object class in the OSD pods (all in dfslab's image).

    # What dfslab injects on a Kubernetes you run with the owner's consent: through the API, or its fault agent.
    CONSENTED_FAULTS = ("pod", "out", "fill", "kill", "stop", "node", "partition", "degrade")  # from kill: its agent
    # ... and why not the rest there (upgrade: as on any Kubernetes, the runtime's refusal says why).
    NOT_ON_YOURS = {"operator": "its operator may be the one your other Rook clusters use",
                    "drain": "draining evicts every pod of your node, not only dfslab's",
                    "nodeloss": "it kills a node's kubelet and container runtime, which are yours, not dfslab's"}

    @classmethod
    def refusal(cls, spec, target: str | None = None, fault: str | None = None) -> str | None:
        if fault is not None:
            return cls._fault_refusal(spec, fault)
        return super().refusal(spec, target)

    @classmethod
    def _fault_refusal(cls, spec, kind: str) -> str | None:
        if fault_owner(kind) not in (None, spec.filesystem):
            return None  # another filesystem's kind: the fault check says whose
        if spec.kubernetes.user_cluster:
            return consent_refusal(spec, kind, cls.CONSENTED_FAULTS, cls.NOT_ON_YOURS)
        if kind == "node":
            return (f"fault node: on runtime kubernetes a node is lost with fault nodeloss (its kubelet, containerd "
                    f"and pods die at once, e.g. dfslab fault {spec.name} nodeloss node2)")
        return None

    @classmethod
    def manifests(cls, spec, image: str | None, progress=lambda *_: None) -> dict[str, list[dict]]:
        """What `up` applies on a Kubernetes you run, for review: Rook's CRDs, RBAC and operator
        (skipped at up where Rook is already installed), the tuning override, the cluster."""
        k = spec.kubernetes
        if not k.user_cluster:
            raise BackendError("kubernetes.kubeconfig: render writes the objects for a Kubernetes you run (its "
                               "devices and nodes are in the spec: see examples/rook-yours.yaml); the local "
                               "Kubernetes is rendered and validated by `dfslab up` itself")
        image = image or k.image
        if not image:
            raise BackendError("render: give --image (the name your registry gives dfslab's image); with "
                               "kubernetes.image_registry the name is known only once `dfslab up` pushed it")
        # Rook's own manifests, from its module (the Kubernetes build leaves them there too)
        rook = rook_of(spec)
        deps.ensure_fetched(rook_manifests(rook) / "crds.yaml", ["manifests", f"rook-{rook}"], f"Rook {rook}'s manifests",
                            progress)
        ns = k.namespace
        return {"00-namespace": [namespace_object(ns)],
                "10-rook-crds": load_manifests("crds.yaml", ns, rook),
                "11-rook-rbac": load_manifests("common.yaml", ns, rook),
                "12-rook-operator": operator_objects(ns, image, rook, local=False),
                "20-ceph-tuning": [config_override(spec, ns)],
                "30-ceph-cluster": cluster_objects(spec, ns, image, k.data_dir_host_path, k.devices, "IfNotPresent")}

    @property
    def namespace(self) -> str:
        return self.spec.kubernetes.namespace

    @property
    def existing(self) -> bool:
        """A Kubernetes you run (kubeconfig), not the local one dfslab starts."""
        return self.spec.kubernetes.user_cluster

    def mount(self, node: str = "client") -> Path:
        """On a Kubernetes you run: where each client Job's pod mounts CephFS (job.py), a path
        that is only a name on this machine, which has no route to your nodes."""
        if not self.existing:
            return super().mount(node)
        if not self.spec.ceph.cephfs:
            raise BackendError("this cluster has no CephFS; set ceph.cephfs: true in the spec")
        return cephfs_client.mount_point(self.ctx, node)[1]

    def deploy(self, progress: Progress, timeout: float) -> None:
        if self.existing:
            devices, host_path, pull = self.spec.kubernetes.devices, self.spec.kubernetes.data_dir_host_path, "IfNotPresent"
        else:
            devices, host_path, pull = self._start_local(progress), str(self._rook_host_path()), "Never"
            if not self.spec.kubernetes.local.rook:
                self._hand_over(progress)
                return
        c = self.spec.ceph
        image = self.state.read()["k8s_images"]["rook"]
        api = self.api()
        self._install_rook(api, image, progress)
        progress("creating Ceph through Rook", f"CephCluster {CLUSTER_NAME}: {c.mons} MON(s), "
                                               f"{sum(map(len, devices.values()))} OSD(s) on {', '.join(devices)}")
        objs = cluster_objects(self.spec, self.namespace, image, host_path, devices, pull)
        validate_all(api, objs)  # all judged before any is made: no half-made cluster for Rook to chase
        self._apply(api, objs)
        deadline = time.monotonic() + timeout
        self.wait_cluster_ready(api, progress, deadline)
        self.adopt_credentials(api)
        if self.existing:
            self._start_toolbox(api, image, progress)
        self.ctx.admin.start(timeout=60)
        if c.rgw:  # before the health wait: the gateways' pools are then among the PGs it waits for
            self._adopt_gateways(api, progress, max(120, deadline - time.monotonic()))
        health.wait_healthy(self.ctx.admin, self.runtime.procs, sum(map(len, devices.values())), c.cephfs, progress,
                            max(60, deadline - time.monotonic()))
        self._check_release(progress)

    def _check_release(self, progress: Progress) -> None:
        """Every daemon runs the spec's release: Rook runs whatever Ceph the image holds (dfslab
        allows it any: allowUnsupported), so an image of another release (a `kubernetes.image`
        given by name) would measure that one under this one's name."""
        release = release_of(self.spec)
        overall = (self.ctx.admin.cmd("versions") or {}).get("overall", {})
        # "ceph version 20.2.4 (7f79...) tentacle (stable - RelWithDebInfo)": the codename after the commit
        others = {v: n for v, n in overall.items() if f") {release.name} (" not in v}
        if others:
            found = "; ".join(f"{n} daemon(s) on {v}" for v, n in others.items())
            raise BackendError(f"ceph.release: {release.name} ({release.says}) asked, but {found}: the image "
                               f"({self.state.read()['k8s_images']['rook']}) holds another Ceph; give the image dfslab "
                               f"built for {release.name} (dfslab up builds it when kubernetes.image is left out)")
        progress("checking versions", f"every daemon on {release.says}: {', '.join(overall)}")

    def _gateway_pods(self, core) -> list:
        return core.list_namespaced_pod(self.namespace, label_selector=f"rook_object_store={OBJECT_STORE}").items

    def gateways(self) -> list[tuple[str, str, bool]]:
        """Each gateway pod Rook runs: (pod, S3 endpoint on its node, running and ready)."""
        if not self.spec.ceph.rgw:
            return []
        from kubernetes import client
        from ...runtime.kubernetes.objects import running_ready
        return [(p.metadata.name, f"http://{p.status.host_ip}:{rgw.PORT}", running_ready(p))
                for p in self._gateway_pods(client.CoreV1Api(self.api())) if p.status.host_ip]

    def _adopt_gateways(self, api, progress: Progress, timeout: float) -> None:
        """Rook's gateways answering S3 from the client node, then dfslab's S3 user, made in the
        store's realm, zone group and zone (Rook names all three after the store), its keys in the
        same 0600 credentials file the other runtimes write."""
        from kubernetes import client
        from ...runtime.kubernetes.objects import running_ready
        core = client.CoreV1Api(api)
        progress("starting RADOS gateways", f"CephObjectStore {OBJECT_STORE}: {self.spec.ceph.rgw} radosgw (S3) "
                                            f"on port {rgw.PORT}")
        log = f"`kubectl -n {self.namespace} describe cephobjectstore {OBJECT_STORE}` and the operator's log"

        def ready() -> list | None:
            pods = [p for p in self._gateway_pods(core) if running_ready(p) and p.status.host_ip]
            return pods if len(pods) >= self.spec.ceph.rgw else None
        pods = wait_until(ready, f"{self.spec.ceph.rgw} gateway pod(s) ready", timeout, 2.0,
                          lambda msg: BackendError(f"{msg}; see {log}"))
        urls = [f"http://{p.status.host_ip}:{rgw.PORT}" for p in pods]
        for pod, url in zip(pods, urls):
            rgw.wait_answering(self.runtime, url.removeprefix("http://"), pod.metadata.name, 120, log)
        keys = rgw.credentials(self.layout.root) if self.existing else None  # your pods have them already
        rgw.make_user(self.ctx, urls, *STORE_WHERE, keys=keys)

    @staticmethod
    def _rook_host_path() -> Path:
        from ...runtime.kubernetes import rook_host_path
        return rook_host_path()

    def _start_local(self, progress: Progress) -> dict[str, list[str]]:
        """The local Kubernetes and each node's loop disks; {node: [device]}."""
        rt = self.runtime
        c = self.spec.ceph
        progress("creating disks", f"{c.osds_per_node} loop device(s) of {c.osd_size / 2**30:.1f} GiB (sparse) per node")
        loops = {node: [rt.add_loop(node, rt.home / "disks" / f"{node}-{i}.img", c.osd_size) for i in range(c.osds_per_node)]
                 for node in self.spec.node_names()}
        rt.start_kubernetes(self.spec, progress)
        return loops

    def _hand_over(self, progress: Progress) -> None:
        """kubernetes.local.rook: false: the Kubernetes only, with an admin kubeconfig for you."""
        path = self.runtime.write_admin_kubeconfig()
        progress("Kubernetes ready", f"no Rook (kubernetes.local.rook: false); admin kubeconfig: {path}")

    def _install_rook(self, api, image: str, progress: Progress) -> None:
        """Rook's CRDs, RBAC and operator; on your Kubernetes, the Rook already there if it has one."""
        from kubernetes import client
        crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "name": "cephclusters.ceph.rook.io"}
        if self.existing and exists(api, crd):
            pods = client.CoreV1Api(api).list_pod_for_all_namespaces(label_selector="app=rook-ceph-operator").items
            running = [p for p in pods if p.status.phase == "Running"]
            if not running:
                raise BackendError("Rook's CRDs are installed but no rook-ceph-operator pod runs: start the operator, "
                                   "or remove Rook's CRDs so that dfslab installs its own")
            progress("using Rook", f"the operator in namespace {running[0].metadata.namespace}")
            self._apply(api, [config_override(self.spec, self.namespace)])
            return
        rook = rook_of(self.spec)
        progress("installing Rook", f"CRDs, RBAC, operator ({rook})")
        self._apply(api, load_manifests("crds.yaml", self.namespace, rook) + load_manifests("common.yaml", self.namespace, rook))
        self._apply(api, [config_override(self.spec, self.namespace)])
        self._apply(api, operator_objects(self.namespace, image, rook, local=not self.existing))

    def _apply(self, api, objs: list[dict]) -> None:
        """Server-side apply; on your Kubernetes only objects that do not exist yet, each recorded
        before it is made (down deletes those, and never what was there before)."""
        if self.existing:
            objs = [o for o in objs if not exists(api, o)]
            for obj in objs:
                self.runtime.record(obj)
        apply_all(api, objs)

    def _start_toolbox(self, api, image: str, progress: Progress) -> None:
        """A pod on the client node that dfslab's control commands exec into (Rook's toolbox)."""
        from ...runtime.kubernetes.existing import toolbox_name, toolbox_pod
        # One on each client node: its exec reads that node's link for the byte ledger.
        toolboxes = {toolbox_name(c): node for c, node in zip(self.spec.client_names(), self.spec.kubernetes.clients)}
        progress("starting toolbox", ", ".join(f"{name} on {node}" for name, node in toolboxes.items()))
        self._apply(api, [toolbox_deployment(self.namespace, image, node, self.state.read()["k8s_client_files"], name)
                          for name, node in toolboxes.items()])
        for name in toolboxes:
            toolbox_pod(api, self.namespace, timeout=300, name=name)

    def _remove_rbd_images(self, ours: list[dict]) -> None:
        """Rook deletes no pool that holds RBD images; the pools (and dfslab-fio in rbd) are
        dfslab's own and go anyway."""
        from ...runtime import CLIENT
        from ...runtime.kubernetes.existing import TOOLBOX
        if not any(o["kind"] == "Deployment" and o["name"] == TOOLBOX for o in self.state.resources("k8s_object")):
            return  # up stopped before the toolbox, so before any workload made an image
        for pool in (o["name"] for o in ours if o["kind"] == "CephBlockPool"):
            res = self.runtime.run(CLIENT, ["rbd", "ls", "-p", pool], timeout=120, check=False)
            for image in res.stdout.split() if res.returncode == 0 else []:
                self.runtime.run(CLIENT, ["rbd", "rm", "--no-progress", f"{pool}/{image}"], timeout=300, check=False)

    def release(self) -> list[str]:
        """On your Kubernetes: Rook removes Ceph, with its cleanup policy (it wipes dataDirHostPath
        and the OSD devices dfslab was given), before the runtime deletes the rest."""
        if not self.existing or self.runtime.kubernetes_gone():
            return []
        api = self.api()
        ours = [o for o in self.state.resources("k8s_object") if o["kind"] in ROOK_CR_ORDER]
        if not ours:
            return []
        self._remove_rbd_images(ours)
        cluster = next((o for o in ours if o["kind"] == "CephCluster"), None)
        hosts: set[str] = set()
        if cluster and exists(api, cluster):
            patch_merge(api, cluster, {"spec": {"cleanupPolicy": {"confirmation": "yes-really-destroy-data"}}})
            hosts = ceph_hosts(api, self.namespace)  # the nodes Rook makes a cleanup Job for, as it lists them
        problems = []
        for obj in sorted(ours, key=lambda o: ROOK_CR_ORDER.index(o["kind"])):
            if not exists(api, obj):
                continue
            delete_object(api, obj)
            if obj["kind"] == "CephObjectStore" and not wait_gone(api, obj, timeout=STORE_WAIT):
                self._let_store_go(api, obj)
            if not wait_gone(api, obj, timeout=240):
                problems.append(f"Rook did not finish deleting {obj['kind']} {obj['name']} in 240 s; "
                                f"see `kubectl -n {self.namespace} describe {obj['kind'].lower()} {obj['name']}`")
                break
        if not problems:
            problems += wait_cleanup_jobs(api, self.namespace, hosts, self.spec.kubernetes.data_dir_host_path)
        return problems

    @staticmethod
    def _let_store_go(api, obj: dict) -> None:
        """Rook deletes a CephObjectStore only once its operator has listed the store's buckets
        through the gateway's admin API, which it reaches by the store's Service DNS name; where
        that name does not resolve (a Kubernetes without cluster DNS, as the one the tests run) it
        retries forever, and where buckets are left (a run stopped mid-step: CI, 2026-11-30) it
        waits for them forever. The store is dfslab's own, made by `up`, and `down` destroys its
        data with it: its finalizer goes, Rook's gateway objects with it, and its pools with the
        CephCluster's cleanup."""
        patch_merge(api, obj, {"metadata": {"finalizers": None}})

    def status(self) -> dict[str, Any]:
        """Ceph's own status, plus the Rook objects' phases and each pod (node, restarts, RSS)."""
        api = self.api()
        if not self.existing and not self.spec.kubernetes.local.rook:
            return {"health": "no Ceph (kubernetes.local.rook: false)",
                    "summary": [f"admin kubeconfig: {self.runtime.admin_kubeconfig}"], "tables": [nodes_table(api)]}
        out = super().status()
        rss = getattr(self.runtime, "container_rss", lambda _: None)  # only the local nodes' containers are here
        out["tables"] = out.get("tables", []) + [rook_objects_table(api, self.namespace),
                                            pods_table(api, self.namespace, rss)]
        return out

    def api(self):
        return self.runtime.api()

    def scrape_sources(self) -> dict:
        """Ceph's MGR Prometheus module (Rook always enables it, behind its Service `rook-ceph-mgr`)
        through the API server's service proxy: OSD operations and pool bytes as Ceph counts them."""
        if not self.existing and not self.spec.kubernetes.local.rook:
            return {}
        from ...runtime.kubernetes.stats import service_fetcher
        return {"rook-ceph-mgr": service_fetcher(self.api, self.namespace, "rook-ceph-mgr:http-metrics", "metrics")}

    def wait_cluster_ready(self, api, progress: Progress, deadline: float) -> None:
        """Until Rook says the CephCluster is Ready (its MONs, MGR and OSDs made), with its status
        message and the newest events as progress."""
        from kubernetes import client
        custom = client.CustomObjectsApi(api)
        core = client.CoreV1Api(api)
        last = {"message": ""}

        def ready() -> bool:
            obj = custom.get_namespaced_custom_object(GROUP, VERSION, self.namespace, "cephclusters", CLUSTER_NAME)
            status = obj.get("status") or {}
            phase, message = status.get("phase", "Pending"), status.get("message", "")
            last["message"] = message
            pods = core.list_namespaced_pod(self.namespace).items
            running = sorted(p.metadata.labels.get("app", p.metadata.name) for p in pods if p.status.phase == "Running")
            progress("Rook deploying Ceph", f"{phase}: {message[:80]} · running: {', '.join(running)[:120]}"
                                            f"{newest_event(core, self.namespace)}")
            if phase == "Failure":
                raise BackendError(f"Rook reports CephCluster {CLUSTER_NAME} Failure: {message}")
            return phase == "Ready" and self._osds_up(core)
        if poll(ready, "Rook's CephCluster Ready", max(0.0, deadline - time.monotonic()), 3.0):
            return
        message = last["message"]
        raise BackendError(f"Rook did not make the CephCluster Ready in time (last: {message}); operator log: "
                           f"{self.state.dir}/kubernetes/nodes/client/pod-logs")

    def _osds_up(self, core) -> bool:
        want = len(self.spec.nodes) * self.spec.ceph.osds_per_node
        pods = core.list_namespaced_pod(self.namespace, label_selector="app=rook-ceph-osd").items
        return sum(1 for p in pods if p.status.phase == "Running") >= want

    def adopt_credentials(self, api) -> None:
        """Rook's MON addresses and admin key into dfslab's ceph.conf and keyring."""
        from kubernetes import client
        core = client.CoreV1Api(api)
        endpoints = core.read_namespaced_config_map("rook-ceph-mon-endpoints", self.namespace).data["data"]
        secret = core.read_namespaced_secret("rook-ceph-mon", self.namespace).data
        fsid = base64.b64decode(secret["fsid"]).decode()
        key = base64.b64decode(secret["ceph-secret"]).decode()
        mons = {name: addr.split(":")[0] for name, addr in (e.split("=", 1) for e in endpoints.split(",") if e)}
        self.ctx.fsid = fsid
        self.ctx.addresses = {**self.ctx.addresses, **{f"mon.{n}": a for n, a in mons.items()}}
        self.state.update(fsid=fsid, rook_mons=mons)
        self.layout.make_dirs()
        self.layout.conf.write_text(
            f"[global]\nfsid = {fsid}\nmon_host = {','.join(f'{a}:{MON_PORT}' for a in mons.values())}\n"
            f"auth_cluster_required = cephx\nauth_service_required = cephx\nauth_client_required = cephx\n"
            f"keyring = {self.layout.admin_keyring}\n[client]\nrbd_default_features = 3\n")
        self.layout.admin_keyring.write_text(f"[client.admin]\n\tkey = {key}\n")
        self.layout.admin_keyring.chmod(0o600)
        # The same two files for the tools that run as Jobs, mounted at the same paths.
        files = {"conf": str(self.layout.conf), "keyring": str(self.layout.admin_keyring)}
        if self.existing and self.spec.ceph.rgw:
            # The S3 user's keys, chosen here and given to radosgw-admin (once, in the toolbox) when
            # the gateways answer: in the Secret from the start, so the toolbox pods, which run the
            # s3 load and the checksummed objects, hold them at the path the workers read them from.
            files["s3keys"] = str(rgw.save_keys(self.layout.root, rgw.new_keys()))
        self._apply(api, [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": CLIENT_SECRET, "namespace": self.namespace},
                         "stringData": {key: Path(path).read_text() for key, path in files.items()}}])
        # What a Job's pod needs to mount CephFS and run Ceph's tools (runtime/kubernetes/job.py).
        self.state.update(k8s_client_files=files, k8s_fuse=client_fuse(files), k8s_client_env={"CEPH_CONF": files["conf"]})
        if self.existing and self.spec.ceph.cephfs:  # no client mount here: the Jobs' pods mount CephFS there
            self.state.update(**{POD_MOUNTS_KEY: str(cephfs_client.mount_point(self.ctx, "client")[1].parent)})


def newest_event(core, namespace: str) -> str:
    """' · last event: <object>: <message>' for the namespace's newest event, or ''."""
    events = core.list_namespaced_event(namespace).items
    stamped = [e for e in events if (e.last_timestamp or e.event_time or e.metadata.creation_timestamp)]
    if not stamped:
        return ""
    e = max(stamped, key=lambda e: e.last_timestamp or e.event_time or e.metadata.creation_timestamp)
    return f" · last event: {e.involved_object.kind} {e.involved_object.name}: {(e.message or e.reason or '')[:100]}"


STORE_WAIT = 45  # s: Rook's own deletion of the object store (its pools), before dfslab looks why not
ROOK_KINDS = ("cephclusters", "cephblockpools", "cephfilesystems", "cephobjectstores")
# Dependents before the CephCluster: Rook refuses to delete a cluster that still has them.
ROOK_CR_ORDER = ("CephObjectStore", "CephFilesystem", "CephBlockPool", "CephCluster")


def wait_gone(api, obj: dict, timeout: float) -> bool:
    # obj: a whole manifest, or {apiVersion, kind, name, namespace} as the state records it
    name = obj.get("metadata", obj)["name"]
    return poll(lambda: not exists(api, obj), f"{obj['kind']} {name} to go", timeout, 2.0)


# The pods Rook's operator counts as Ceph's daemons (its cluster/cleanup.go, getCephHosts): a
# cleanup Job is made for each node that runs one when the CephCluster's deletion begins.
ROOK_DAEMON_APPS = ("rook-ceph-mon", "rook-ceph-mgr", "rook-ceph-osd", "rook-ceph-rgw", "rook-ceph-mds",
                    "rook-ceph-rbd-mirror", "rook-ceph-fs-mirror")
CLEANUP_WAIT = 300.0


def ceph_hosts(api, namespace: str) -> set[str]:
    """The nodes that run a Ceph daemon's pod of dfslab's namespace."""
    from kubernetes import client
    core = client.CoreV1Api(api)
    return {p.spec.node_name for app in ROOK_DAEMON_APPS
            for p in core.list_namespaced_pod(namespace, label_selector=f"app={app}").items if p.spec.node_name}


def wait_cleanup_jobs(api, namespace: str, hosts: set[str], host_path: str, timeout: float = CLEANUP_WAIT) -> list[str]:
    """Rook's cleanup Jobs (one per node in `hosts`: wipe dataDirHostPath, sanitize the OSD
    devices) to be made and to finish before their namespace goes; what did not, as problems.
    Rook makes them only once every daemon pod is gone, after the CephCluster itself: no Job
    yet is not "none to wait for" (their namespace deleted then, no Job ever ran)."""
    if not hosts:
        return []
    from kubernetes import client
    batch = client.BatchV1Api(api)
    seen: dict[str, list[str]] = {"made": [], "running": [], "failed": []}

    def finished() -> bool:
        jobs = batch.list_namespaced_job(namespace, label_selector="app=rook-ceph-cleanup").items
        seen["made"] = [j.metadata.name for j in jobs]
        seen["running"] = [j.metadata.name for j in jobs if not j.status.succeeded]
        seen["failed"] = [j.metadata.name for j in jobs if j.status.failed and not j.status.succeeded]
        return len(jobs) >= len(hosts) and not seen["running"]
    if poll(finished, "Rook's cleanup jobs to finish", timeout, 2.0):
        return []
    left = f"{host_path} on {', '.join(sorted(hosts))} (Ceph's keys among it) and the OSD devices there keep the cluster's data"
    if not seen["made"]:
        return [f"Rook made no cleanup Job in {timeout:.0f} s: {left}; remove them by hand"]
    return [f"Rook's cleanup jobs {seen['running']} did not finish in {timeout:.0f} s"
            + (f" ({', '.join(seen['failed'])} failed at least once)" if seen["failed"] else "")
            + f"; of {len(hosts)} node(s), {left} where no Job finished; `kubectl -n {namespace} logs job/NAME` says why"]


def client_fuse(files: dict[str, str]) -> list[str]:
    """ceph-fuse as a Job's pod mounts CephFS (the mount point appended), with the cluster's files."""
    return ["ceph-fuse", "-c", files["conf"], "-n", "client.admin", "-k", files["keyring"]]


def toolbox_deployment(namespace: str, image: str, node: str, files: dict[str, str], name: str | None = None) -> dict:
    """dfslab's image sleeping on `node` (host network, so it reaches the MONs as the daemons do),
    the cluster's conf and keyring at dfslab's paths."""
    from ...runtime.kubernetes.existing import TOOLBOX
    from ...runtime.kubernetes.job import client_files
    name = name or TOOLBOX
    volumes, mounts = client_files(files)
    labels = {"app": name, "app.kubernetes.io/managed-by": "dfslab"}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}}, "template": {
                "metadata": {"labels": labels},
                "spec": {"hostNetwork": True, "dnsPolicy": "ClusterFirstWithHostNet",
                         "nodeSelector": {"kubernetes.io/hostname": node},
                         "containers": [{"name": "toolbox", "image": image, "imagePullPolicy": "IfNotPresent",
                                         "command": ["sleep", "infinity"],
                                         "env": [{"name": "CEPH_CONF", "value": files["conf"]},
                                                 {"name": "CEPH_ARGS", "value": f"--keyring {files['keyring']}"}],
                                         "volumeMounts": mounts}],
                         "volumes": volumes}}}}


def rook_objects_table(api, namespace: str) -> dict:
    from kubernetes import client
    custom = client.CustomObjectsApi(api)
    rows = []
    for plural in ROOK_KINDS:
        for obj in custom.list_namespaced_custom_object(GROUP, VERSION, namespace, plural)["items"]:
            st = obj.get("status") or {}
            ceph = st.get("ceph") or {}
            rows.append([obj["kind"], obj["metadata"]["name"], st.get("phase", "Pending"),
                         ceph.get("health") or st.get("message", ""), ceph.get("lastChecked", "")])
    # Rook's copy of Ceph's health lags Ceph's own by up to its status interval: the time says how old it is.
    return table("Rook objects", ["kind", "name", "phase", "health / message", "Rook checked at"], rows)

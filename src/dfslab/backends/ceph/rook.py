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
import json
import time
from pathlib import Path
from typing import Any

import yaml

from ...runtime import RuntimeError_
from .. import BackendError, PreflightError, Progress, table
from . import health, pools
from .conf import box_tuning, conf_text
from .backend import CephBackend
from ...runtime.kubernetes.control import raw_call

GROUP, VERSION = "ceph.rook.io", "v1"
CLUSTER_NAME = "dfslab"
FS_NAME = "cephfs"
MON_PORT = 6789


def _rook_manifests() -> Path:
    from ...runtime.kubernetes import k8s_cache
    return k8s_cache() / "rook"


def load_manifests(name: str, namespace: str) -> list[dict]:
    """Rook's deploy/examples/<name>.yaml as objects, moved to `namespace`."""
    docs = [d for d in yaml.safe_load_all((_rook_manifests() / name).read_text()) if d]
    return [_renamespace(d, namespace) for d in docs]


def _renamespace(obj: Any, namespace: str) -> Any:
    if isinstance(obj, dict):
        return {k: (namespace if k == "namespace" and v == "rook-ceph" else _renamespace(v, namespace)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_renamespace(v, namespace) for v in obj]
    return obj


def operator_objects(namespace: str, image: str) -> list[dict]:
    """Rook's operator.yaml, set for this machine: loop devices allowed (raw-mode OSDs, no LVM),
    no CSI (its images come from registries), the operator on the host network of a client node
    (there is no kube-proxy but for the API server's ClusterIP), our image, never pulled."""
    objs = load_manifests("operator.yaml", namespace)
    for obj in objs:
        if obj["kind"] == "ConfigMap" and obj["metadata"]["name"] == "rook-ceph-operator-config":
            obj["data"].update({"ROOK_CSI_ENABLE_CEPHFS": "false", "ROOK_CSI_ENABLE_RBD": "false",
                                "ROOK_CSI_ENABLE_NFS": "false", "ROOK_CEPH_ALLOW_LOOP_DEVICES": "true",
                                "ROOK_ENABLE_DISCOVERY_DAEMON": "false", "ROOK_LOG_LEVEL": "INFO"})
        if obj["kind"] == "Deployment" and obj["metadata"]["name"] == "rook-ceph-operator":
            pod = obj["spec"]["template"]["spec"]
            pod.update({"hostNetwork": True, "dnsPolicy": "ClusterFirstWithHostNet",
                        "nodeSelector": {"dfslab.io/role": "client"}})
            for container in pod["containers"]:
                container.update({"image": image, "imagePullPolicy": "Never"})
    return objs


def cluster_objects(spec, namespace: str, image: str, host_path: str, loops: dict[str, list[str]]) -> list[dict]:
    """CephCluster, CephBlockPools and CephFilesystem for `spec`."""
    c = spec.ceph
    server = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "dfslab.io/role", "operator": "In", "values": ["server"]}]}]}}}
    failure_domain = "host" if len(spec.nodes) >= c.replica_size else "osd"
    cluster = {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "CephCluster",
        "metadata": {"name": CLUSTER_NAME, "namespace": namespace},
        "spec": {
            "cephVersion": {"image": image, "allowUnsupported": True, "imagePullPolicy": "Never"},
            "dataDirHostPath": host_path,
            "skipUpgradeChecks": True,
            "mon": {"count": c.mons, "allowMultiplePerNode": False},  # the spec has a node per MON
            "mgr": {"count": 1, "allowMultiplePerNode": True},
            "dashboard": {"enabled": False},
            "crashCollector": {"disable": True},
            "monitoring": {"enabled": False},
            "network": {"provider": "host"},
            "placement": {"all": server},
            "disruptionManagement": {"managePodBudgets": False},
            "healthCheck": {"daemonHealth": {"mon": {"interval": "10s"}, "osd": {"interval": "10s"}}},
            "storage": {"useAllNodes": False, "useAllDevices": False,
                        "nodes": [{"name": node, "devices": [{"name": dev} for dev in devices]}
                                  for node, devices in loops.items()]},
        },
    }
    replicated = {"size": c.replica_size, "requireSafeReplicaSize": c.replica_size > 1}
    objs = [cluster]
    for pool in pools.POOLS:
        objs.append({"apiVersion": f"{GROUP}/{VERSION}", "kind": "CephBlockPool",
                     "metadata": {"name": pool, "namespace": namespace},
                     # Rook enables application rbd on every CephBlockPool (rados bench does not mind)
                     "spec": {"failureDomain": failure_domain, "replicated": replicated}})
    if c.cephfs:
        objs.append({"apiVersion": f"{GROUP}/{VERSION}", "kind": "CephFilesystem",
                     "metadata": {"name": FS_NAME, "namespace": namespace},
                     "spec": {"metadataPool": {"failureDomain": failure_domain, "replicated": replicated},
                              "dataPools": [{"name": "data0", "failureDomain": failure_domain, "replicated": replicated}],
                              "preserveFilesystemOnDelete": False,
                              "metadataServer": {"activeCount": 1, "activeStandby": False, "placement": server}}})
    return objs


def config_override(spec, namespace: str) -> dict:
    """dfslab's box tuning plus the spec's ceph.conf options as Rook's rook-config-override
    ConfigMap (Rook's tuning hook)."""
    sections = box_tuning()
    for section, opts in (spec.ceph.conf or {}).items():
        sections.setdefault(section, {}).update(opts)
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "rook-config-override", "namespace": namespace},
            "data": {"config": conf_text(sections)}}


class RookCephBackend(CephBackend):
    name = "ceph"
    required_programs = ("ceph", "rados", "nsenter", "ip", "tc")
    log_dirs = ("logs", "ceph/conf", "kubernetes/nodes/*/pod-logs")

    @classmethod
    def preflight(cls, spec) -> None:
        # ceph-volume (which Rook runs) skips a device under 5 GiB: "Insufficient space (<5GB)".
        if spec.ceph.osd_size < 5 * 2**30:
            raise PreflightError(f"ceph.osd_size: Rook's ceph-volume takes no device under 5 GiB; "
                                 f"{spec.ceph.osd_size / 2**30:.1f} GiB was asked: use 6GiB (the file is sparse)")
        CephBackend.preflight(spec)

    @classmethod
    def refuses_faults(cls, spec, kind: str) -> str | None:
        # Rook's daemons are pods: Kubernetes, not dfslab, starts them again.
        if kind in ("kill", "stop", "node"):
            return (f"fault {kind}: on runtime kubernetes Rook runs the daemons as pods; use fault pod "
                    f"(delete the daemon's pod, e.g. dfslab fault {spec.name} pod osd.0)")
        return None

    @property
    def namespace(self) -> str:
        return self.spec.kubernetes.namespace

    def deploy(self, progress: Progress, timeout: float) -> None:
        from ...runtime.kubernetes import rook_host_path
        rt = self.runtime
        c = self.spec.ceph
        progress("creating disks", f"{c.osds_per_node} loop device(s) of {c.osd_size / 2**30:.1f} GiB (sparse) per node")
        loops = {node: [rt.add_loop(node, rt.home / "disks" / f"{node}-{i}.img", c.osd_size) for i in range(c.osds_per_node)]
                 for node in self.spec.node_names()}
        rt.start_kubernetes(self.spec, progress)
        images = self.state.read()["k8s_images"]
        api = self.api()
        progress("installing Rook", "CRDs, RBAC, operator (v1.12.11)")
        apply_all(api, load_manifests("crds.yaml", self.namespace) + load_manifests("common.yaml", self.namespace))
        apply_all(api, [config_override(self.spec, self.namespace)])
        apply_all(api, operator_objects(self.namespace, images["rook"]))
        progress("creating Ceph through Rook", f"CephCluster {CLUSTER_NAME}: {c.mons} MON(s), "
                                               f"{sum(map(len, loops.values()))} OSD(s) on loop devices")
        objs = cluster_objects(self.spec, self.namespace, images["rook"], str(rook_host_path()), loops)
        validate_all(api, objs)  # all judged before any is made: no half-made cluster for Rook to chase
        apply_all(api, objs)
        deadline = time.monotonic() + timeout
        self.wait_cluster_ready(api, progress, deadline)
        self.adopt_credentials(api)
        self.ctx.admin.start(timeout=60)
        n_osds = sum(map(len, loops.values()))
        health.wait_healthy(self.ctx.admin, self.runtime.procs, n_osds, c.cephfs, progress,
                            max(60, deadline - time.monotonic()))

    def status(self) -> dict[str, Any]:
        """Ceph's own status, plus the Rook objects' phases and each pod (node, restarts, RSS)."""
        out = super().status()
        api = self.api()
        out["tables"] = out.get("tables", []) + [rook_objects_table(api, self.namespace),
                                            pods_table(api, self.namespace, self.runtime.container_rss)]
        return out

    def api(self):
        from ...runtime.kubernetes.control import api_client
        return api_client(self.runtime)

    def wait_cluster_ready(self, api, progress: Progress, deadline: float) -> None:
        """Until Rook says the CephCluster is Ready (its MONs, MGR and OSDs made), with its status
        message and the newest events as progress."""
        from kubernetes import client
        custom = client.CustomObjectsApi(api)
        core = client.CoreV1Api(api)
        message = ""
        while time.monotonic() < deadline:
            obj = custom.get_namespaced_custom_object(GROUP, VERSION, self.namespace, "cephclusters", CLUSTER_NAME)
            status = obj.get("status") or {}
            phase, message = status.get("phase", "Pending"), status.get("message", "")
            pods = core.list_namespaced_pod(self.namespace).items
            running = sorted(p.metadata.labels.get("app", p.metadata.name) for p in pods if p.status.phase == "Running")
            progress("Rook deploying Ceph", f"{phase}: {message[:80]} · running: {', '.join(running)[:120]}"
                                            f"{newest_event(core, self.namespace)}")
            if phase == "Ready" and self._osds_up(core):
                return
            if phase == "Failure":
                raise BackendError(f"Rook reports CephCluster {CLUSTER_NAME} Failure: {message}")
            time.sleep(3)
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
        apply_all(api, [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "dfslab-ceph-client", "namespace": self.namespace},
                         "stringData": {"conf": self.layout.conf.read_text(), "keyring": self.layout.admin_keyring.read_text()}}])
        self.state.update(k8s_client_files=files)


def newest_event(core, namespace: str) -> str:
    """' · last event: <object>: <message>' for the namespace's newest event, or ''."""
    events = core.list_namespaced_event(namespace).items
    stamped = [e for e in events if (e.last_timestamp or e.event_time or e.metadata.creation_timestamp)]
    if not stamped:
        return ""
    e = max(stamped, key=lambda e: e.last_timestamp or e.event_time or e.metadata.creation_timestamp)
    return f" · last event: {e.involved_object.kind} {e.involved_object.name}: {(e.message or e.reason or '')[:100]}"


ROOK_KINDS = ("cephclusters", "cephblockpools", "cephfilesystems")


def rook_objects_table(api, namespace: str) -> dict:
    from kubernetes import client
    custom = client.CustomObjectsApi(api)
    rows = []
    for plural in ROOK_KINDS:
        for obj in custom.list_namespaced_custom_object(GROUP, VERSION, namespace, plural)["items"]:
            st = obj.get("status") or {}
            rows.append([obj["kind"], obj["metadata"]["name"], st.get("phase", "Pending"),
                         (st.get("ceph") or {}).get("health") or st.get("message", "")])
    return table("Rook objects", ["kind", "name", "phase", "health / message"], rows)


def pods_table(api, namespace: str, container_rss) -> dict:
    """Each pod: node, phase, restarts and RSS (the sum of its containers', `container_rss(id)`)."""
    from kubernetes import client
    pods = client.CoreV1Api(api).list_namespaced_pod(namespace).items
    rows = []
    for p in sorted(pods, key=lambda p: p.metadata.name):
        containers = p.status.container_statuses or []
        rss = [container_rss(c.container_id.split("://")[-1]) for c in containers if c.container_id]
        known = [r for r in rss if r is not None]
        rows.append([p.metadata.name, p.spec.node_name, "running" if p.status.phase == "Running" else p.status.phase,
                     sum(c.restart_count for c in containers), f"{sum(known) / 2**20:.1f} MiB" if known else None])
    return table("pods", ["pod", "node", "phase", "restarts", "RSS"], rows)


def apply_all(api, objs: list[dict], dry_run: bool = False) -> None:
    """Create each object (server-side apply: what dfslab renders is what the API server holds),
    refused objects reported with the API server's own message."""
    from kubernetes.client.rest import ApiException
    for obj in objs:
        try:
            _server_side_apply(api, obj, dry_run)
        except ApiException as exc:
            kind, name = obj.get("kind"), obj.get("metadata", {}).get("name")
            raise BackendError(f"the API server refused {kind} {name}: {_api_message(exc)}") from None


def validate_all(api, objs: list[dict]) -> None:
    """Every object judged by the API server (Rook's CRD schemas, admission) without making any:
    a refusal names the field, and nothing of the set exists yet."""
    apply_all(api, objs, dry_run=True)


def _server_side_apply(api, obj: dict, dry_run: bool = False) -> None:
    group_version = obj["apiVersion"]
    kind = obj["kind"]
    plural = _plural(api, group_version, kind)
    namespace = obj["metadata"].get("namespace")
    prefix = _api_prefix(group_version)
    path = f"{prefix}/namespaces/{namespace}/{plural}/{obj['metadata']['name']}" if namespace else \
        f"{prefix}/{plural}/{obj['metadata']['name']}"
    query = [("fieldManager", "dfslab"), ("force", "true")] + ([("dryRun", "All")] if dry_run else [])
    raw_call(api, "PATCH", path, query, {"Content-Type": "application/apply-patch+yaml", "Accept": "application/json"},
             json.dumps(obj))


_PLURALS: dict[tuple[str, str], str] = {}


def _api_prefix(group_version: str) -> str:
    """The API server's path of a group/version: the core group is /api/v1, the rest /apis/G/V."""
    return "/api/v1" if group_version == "v1" else f"/apis/{group_version}"


def _plural(api, group_version: str, kind: str) -> str:
    key = (group_version, kind)
    from kubernetes.client.rest import ApiException
    prefix = _api_prefix(group_version)
    deadline = time.monotonic() + 30  # a CRD applied a moment ago is served once it is Established
    while key not in _PLURALS and time.monotonic() < deadline:
        try:
            _, data = raw_call(api, "GET", prefix)
        except ApiException as exc:
            if exc.status != 404:
                raise
            time.sleep(0.5)
            continue
        for res in json.loads(data)["resources"]:
            if "/" not in res["name"]:
                _PLURALS[(group_version, res["kind"])] = res["name"]
        if key not in _PLURALS:
            time.sleep(0.5)
    if key not in _PLURALS:
        raise RuntimeError_(f"the API server serves no kind {kind} in {group_version}")
    return _PLURALS[key]


def _api_message(exc) -> str:
    try:
        return json.loads(exc.body).get("message", exc.reason)
    except (ValueError, TypeError, AttributeError):
        return str(exc.reason)

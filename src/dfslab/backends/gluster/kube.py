"""GlusterFS on runtime kubernetes (the local Kubernetes): glusterd as a StatefulSet, the trusted
pool and the volume made by a bootstrap Job. No operator exists for GlusterFS any more (heketi
and kadalu are archived); plain StatefulSets are what people deploy.

- StatefulSet `glusterd`: one pod per server node (required anti-affinity, host network, so
  each glusterd listens on its node's address as peers and bricks expect; privileged, for the
  bricks' trusted.* xattrs). Its /var/lib/glusterd, /var/log/glusterfs and /run are the node's
  directories under the cluster's state dir (one hostPath, `subPathExpr: $(NODE_NAME)/...`):
  the layout the local runtime gives each glusterd, so a deleted pod comes back as the same
  peer (its UUID is in /var/lib/glusterd) with the same bricks at the same paths.
- Job `gluster-bootstrap` on the first server: peer probe, wait until all are connected,
  `volume create` of the spec's layout, options, start (volume.py's own layout and options).
- dfslab's own CLI calls (status, health, brick waits, faults' checks) run on this machine in
  the node's network namespace with the node's /run bind-mounted in a private mount namespace:
  the socket the pod's glusterd made, no exec into a pod.
- The FUSE client on the client node as on every runtime; Jobs mount the volume in their pod.
"""

from __future__ import annotations

import re
import subprocess
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from ...runtime import CLIENT
from ...runtime.kubernetes.job import POD_MOUNTS_KEY
from ...runtime.kubernetes.objects import DAEMON_LABEL, apply_all, namespace_object, running_ready, validate_all
from ..own_pods import OwnPods
from .. import BackendError, PodSelector, PreflightError, Progress
from ..kube_consent import consent_refusal
from . import volume, yours
from .backend import GlusterBackend, set_alarms
from .glusterd import PRIVATE_PATHS
from .pods import (APP, BOOTSTRAP, DAEMON, NAMESPACE, Placement, bootstrap_job, bootstrap_script, host_cli,
                   one_per_server, statefulset)
from ...polling import poll, wait_until

class GlusterKubernetesBackend(OwnPods, GlusterBackend):
    """GlusterFS whose glusterd run as pods: of the local Kubernetes, or of one you run (yours.py)."""

    facts = replace(GlusterBackend.facts, required_programs=("gluster", "glusterfs", "unshare", "nsenter", "ip", "tc"),
                    log_dirs=("logs", "gluster/*/log", "kubernetes/nodes/*/pod-logs"))

    signal_faults = ("kill", "stop", "node", "brick")
    in_pods = "glusterd and its bricks"

    @classmethod
    def pod_example(cls, spec) -> str:
        return f"glusterd.{spec.node_names()[1]}"

    pod_daemons = "glusterd.node2: a node's glusterd"

    @classmethod
    def refusal(cls, spec, target: str | None = None, fault: str | None = None) -> str | None:
        if spec.kubernetes.user_cluster:
            if fault is not None:
                return consent_refusal(spec, fault, yours.CONSENTED_FAULTS, yours.NOT_ON_YOURS)
            if target == "confine":
                return ("gluster does not offer storage built on some servers only on a Kubernetes you run (its "
                        "volume of new bricks is mounted on this machine, which has no route to your nodes)")
        return super().refusal(spec, target, fault)

    @classmethod
    def targets_for(cls, spec) -> frozenset[str]:
        found = super().targets_for(spec)
        return found - {"confine"} if spec.kubernetes.user_cluster else found

    @classmethod
    def preflight(cls, spec) -> None:
        if not spec.kubernetes.user_cluster:
            return super().preflight(spec)
        refused = cls.refusal(spec)  # nothing of GlusterFS runs on this machine: no programs needed here
        if refused:
            raise PreflightError(refused)

    @classmethod
    def pod_selector(cls, target: str) -> PodSelector | None:
        kind, _, node = target.partition(".")
        if kind != DAEMON or not re.fullmatch(r"[A-Za-z0-9-]+", node):
            return None
        # The StatefulSet's pods carry their kind in DAEMON_LABEL and are told apart by their node.
        # A deleted one gets 1 s: grace 0 is a force delete, which breaks the StatefulSet's
        # at-most-one guarantee: its new pod can start while the old one's glusterd and bricks
        # still hold their host-network ports.
        return PodSelector(f"{DAEMON_LABEL}={DAEMON}", node=node, grace=1)

    @classmethod
    def daemon_of_process(cls, argv: list[str], node: str) -> str | None:
        """'glusterd.node1' for the glusterd of a pod on node1, 'brick.node1.b0' for its brick b0."""
        program = Path(argv[0]).name if argv else ""
        if program == "glusterd":
            return f"glusterd.{node}"
        if program == "glusterfsd" and "--brick-name" in argv[:-1]:
            return f"brick.{node}.{Path(argv[argv.index('--brick-name') + 1]).name}"
        return None

    @classmethod
    def daemon_of_pod(cls, labels: dict[str, str], node: str = "") -> str | None:
        """'glusterd.node1' for the glusterd pod on node1 (the servers are named as their nodes)."""
        return f"glusterd.{node}" if labels.get(DAEMON_LABEL) == DAEMON and labels.get("app") == APP and node else None

    def __init__(self, runtime, spec):
        super().__init__(runtime, spec)
        if self.existing:
            self.where = yours.placement(spec, self.state.name)
            self.ctx.root = self.where.root  # the bricks' paths are your nodes'
            self.ctx.enter = lambda node, argv: argv  # run in the node's glusterd pod, where its /run is
            self.ctx.run_on = self._in_glusterd_pod
        else:
            self.where = Placement(NAMESPACE, self.ctx.root, "Directory", one_per_server(
                {"nodeSelector": {"dfslab.io/role": "server"}}), "Never")
            self.ctx.enter = lambda node, argv: host_cli(self.ctx.root / node, argv)

    @property
    def existing(self) -> bool:
        """A Kubernetes you run (kubeconfig), not the local one dfslab starts."""
        return self.spec.kubernetes.user_cluster

    @property
    def namespace(self) -> str:
        return self.where.namespace

    def api(self):
        return self.runtime.api()

    def _glusterd_pods(self, core) -> list:
        return core.list_namespaced_pod(self.namespace, label_selector=f"app={APP}").items

    def _in_glusterd_pod(self, node: str, argv: list[str], timeout: float) -> subprocess.CompletedProcess:
        """`argv` in the glusterd pod on `node` (a Kubernetes you run), through the API's exec."""
        from kubernetes import client
        pods = [p for p in self._glusterd_pods(client.CoreV1Api(self.api()))
                if p.spec.node_name == self.runtime.kube_node(node) and p.status.phase == "Running"
                and p.metadata.deletion_timestamp is None]
        if not pods:
            return subprocess.CompletedProcess(argv, 1, "", f"no running glusterd pod on {node}")
        return self.runtime.exec_in_pod(pods[0].metadata.name, argv, timeout, container="glusterd")

    @property
    def first(self) -> str:
        """The first server whose glusterd pod is ready (node loss and pod faults)."""
        from kubernetes import client
        ready = {p.spec.node_name for p in self._glusterd_pods(client.CoreV1Api(self.api())) if running_ready(p)}
        for node in self.spec.node_names():
            if node in ready:
                return node
        raise BackendError(f"no glusterd pod is ready; `dfslab status {self.spec.name}` lists the pods")

    def deploy(self, progress: Progress, timeout: float) -> None:
        nodes = self.spec.node_names()
        if self.existing:
            self.state.update(k8s_namespace=self.namespace, k8s_fuse=self.pod_fuse(),
                              **{POD_MOUNTS_KEY: str(self.mount(CLIENT).parent)})
        else:
            self.runtime.start_kubernetes(self.spec, progress)
            self.state.update(k8s_namespace=NAMESPACE, k8s_fuse=self.pod_fuse())
            for node in nodes:
                for sub in (*PRIVATE_PATHS, "bricks"):
                    self.ctx.node_dir(node, sub).mkdir(parents=True, exist_ok=True)
        image = self.state.read()["k8s_images"]["rook"]
        api = self.api()
        sts = statefulset(self.where, image, len(nodes))
        create = [volume.VOLUME, *volume.layout_args(self.ctx), "transport", "tcp", *volume.brick_list(self.ctx), "force"]
        script = bootstrap_script([self.ctx.addresses[n] for n in nodes[1:]], create, volume.options(self.ctx))
        job = bootstrap_job(self.where, image, nodes[0], script)
        if not self.existing:
            apply_all(api, [namespace_object(NAMESPACE)])  # on yours the runtime made dfslab's namespace
        validate_all(api, [sts, job])  # both judged before either is made
        progress("starting glusterd", f"StatefulSet glusterd: {len(nodes)} pod(s), one per server node"
                 + (f", each keeping its state in {self.where.root}/NODE" if self.existing else ""))
        self._apply(api, [sts])
        deadline = time.monotonic() + timeout
        self._wait_ready(api, len(nodes), deadline, progress)
        g = self.spec.gluster
        n_bricks = g.bricks_per_node * len(nodes)
        progress("bootstrap Job", f"peer probe from {nodes[0]}, volume {volume.VOLUME}: {g.volume} of {n_bricks} brick(s)")
        self._run_bootstrap(api, job, deadline)
        progress("waiting for bricks", f"{n_bricks} brick(s) online")
        volume.wait_bricks_online(self.ctx, nodes[0], n_bricks, max(30, deadline - time.monotonic()))
        if self.existing:
            self._start_toolboxes(api, image, progress, deadline)
        else:
            progress("mounting", "FUSE client in the client namespace")
            self.mount(CLIENT)

    def _apply(self, api, objs: list[dict]) -> None:
        """Made, and on a Kubernetes you run recorded first (`down` deletes exactly what it recorded)."""
        if self.existing:
            for obj in objs:
                self.runtime.record(obj)
        apply_all(api, objs)

    def _start_toolboxes(self, api, image: str, progress: Progress, deadline: float) -> None:
        from kubernetes import client
        from ...runtime.kubernetes.existing import toolbox_name
        core = client.CoreV1Api(api)
        boxes = {toolbox_name(c): (node, c) for c, node in zip(self.spec.client_names(), self.spec.kubernetes.clients)}
        progress("starting toolbox", ", ".join(f"{name} on {node} (the volume mounted)" for name, (node, _) in boxes.items()))
        self._apply(api, [yours.toolbox(self.namespace, name, node, image, self.pod_fuse(), str(self.mount(c)))
                          for name, (node, c) in boxes.items()])

        def mounted() -> bool:
            pods = core.list_namespaced_pod(self.namespace, label_selector=f"app in ({','.join(boxes)})").items
            return sum(running_ready(p) for p in pods) >= len(boxes)
        if not poll(mounted, "every toolbox pod with the volume mounted", max(60.0, deadline - time.monotonic()), 1.0):
            raise BackendError(f"the toolbox pods did not mount the volume in time; `kubectl -n {self.namespace} logs "
                               f"deploy/{next(iter(boxes))}` says why")

    def reach(self, runner, target: str, size_bytes: int, client_cache: bool | None = None):
        found = super().reach(runner, target, size_bytes, client_cache)
        if self.existing:
            # libgfapi's Job mounts nothing, so no pod of it makes the directory: the toolbox's mount does
            made = self.runtime.run(CLIENT, ["mkdir", "-p", str(self.mount(CLIENT) / found.directory)], timeout=60,
                                    check=False)
            if made.returncode != 0:
                raise BackendError(f"could not make {found.directory} on the volume through the toolbox's mount: "
                                   f"{(made.stderr or made.stdout).strip()[-300:]}")
        return found

    def checker_sees_mount(self) -> bool:
        return self.existing  # on yours the toolbox holds the volume's mount: the checksummed files go there

    def mount(self, node: str = CLIENT) -> Path:
        """On a Kubernetes you run: where the toolbox and each client Job's pod mount the volume,
        a path that is only a name on this machine."""
        if self.existing:
            return self.state.dir / "mnt" / f"gluster-{node}"
        return super().mount(node)

    def pod_fuse(self) -> list[str]:
        """The FUSE mount a Job's pod runs, the mount point appended (it daemonizes once mounted)."""
        servers = [f"--volfile-server={self.ctx.addresses[n]}" for n in self.spec.node_names()]
        return ["glusterfs", *servers, f"--volfile-id={volume.VOLUME}", "--log-file=/tmp/fuse-client.log"]

    def _wait_ready(self, api, want: int, deadline: float, progress: Progress) -> None:
        from kubernetes import client
        core = client.CoreV1Api(api)

        def all_ready() -> bool:
            pods = self._glusterd_pods(core)
            for pod in pods:
                if said := failed_start(core, pod):
                    raise BackendError(f"glusterd on {pod.spec.node_name} exited at its start: {said}")
            ready = sorted(p.spec.node_name for p in pods if running_ready(p))
            progress("starting glusterd", f"{len(ready)}/{want} ready ({', '.join(ready)})")
            return len(ready) == want
        if poll(all_ready, "every glusterd pod ready", max(0.0, deadline - time.monotonic()), 1.0):
            return
        where = (f"`kubectl -n {self.namespace} logs statefulset/glusterd`" if self.existing
                 else f"{self.state.dir}/kubernetes/nodes/*/pod-logs")
        raise BackendError(f"glusterd pods not all ready in time; see {where} and `dfslab status {self.spec.name}`")

    def _run_bootstrap(self, api, job: dict, deadline: float) -> None:
        from kubernetes import client
        self._apply(api, [job])
        core = client.CoreV1Api(api)

        def finished() -> bool:
            pods = core.list_namespaced_pod(self.namespace, label_selector=f"app={BOOTSTRAP}").items
            if not pods or pods[0].status.phase not in ("Succeeded", "Failed"):
                return False
            if pods[0].status.phase == "Failed":
                log = core.read_namespaced_pod_log(pods[0].metadata.name, self.namespace)
                raise BackendError(f"the bootstrap Job failed: {log.strip()[-600:]}")
            return True
        wait_until(finished, "the bootstrap Job to finish", max(0.0, deadline - time.monotonic()), 1.0,
                   lambda _: BackendError("the bootstrap Job did not finish in time"))

    def alarms(self) -> list[str]:
        if not self.existing:
            return super().alarms()
        # the bricks' filesystems are your nodes': only what the volume itself says
        return set_alarms(self.spec.gluster, self.seen_bricks)

    def release(self) -> list[str]:
        """On your Kubernetes: glusterd and its bricks stopped, then each node's directory of
        dfslab's removed by a cleanup Job there (yours.py), before the runtime deletes the rest."""
        if not self.existing or self.runtime.kubernetes_gone():
            return []
        from kubernetes import client
        from ...runtime.kubernetes.objects import delete_object, exists
        api = self.api()
        core, batch = client.CoreV1Api(api), client.BatchV1Api(api)
        made = [o for o in self.state.resources("k8s_object") if o["kind"] in ("StatefulSet", "Job", "Deployment")]
        if not made:
            return []  # up stopped before glusterd: nothing of it on your nodes
        nodes = yours.glusterd_nodes(core, self.namespace)
        for obj in made:  # glusterd, its bricks and every pod that mounts the nodes' directory
            if exists(api, obj):
                delete_object(api, obj)
        if not poll(lambda: not self._glusterd_pods(core), "the glusterd pods to go", 120, 2.0):
            return [f"the glusterd pods did not stop in 120 s; {self.where.root} stays on {', '.join(sorted(nodes))}"]
        image = self.state.read()["k8s_images"]["rook"]
        data_dir = self.spec.kubernetes.data_dir_host_path
        mark = yours.owner(self.state.name, self.namespace)
        self._apply(api, [yours.cleanup_job(self.namespace, image, node, data_dir, self.where.root, mark)
                          for node in sorted(nodes)])
        return yours.wait_cleanup(core, batch, self.namespace, nodes, self.where.root)

    def status(self) -> dict[str, Any]:
        from ..kube_tables import pods_table
        out = super().status()
        rss = getattr(self.runtime, "container_rss", lambda _: None)  # only the local nodes' containers are here
        out["tables"] = out.get("tables", []) + [pods_table(self.api(), self.namespace, rss)]
        return out


def failed_start(core, pod) -> str | None:
    """What a glusterd container that exited with an error said (its start script refused a node's
    directory, glusterd failed), or None: waiting longer would not help it."""
    for c in pod.status.container_statuses or []:
        ended = c.last_state.terminated if c.last_state else None
        if ended is not None and ended.exit_code:
            if (ended.message or "").strip():
                return f"exit {ended.exit_code}: {ended.message.strip()[-400:]}"
            try:
                log = core.read_namespaced_pod_log(pod.metadata.name, pod.metadata.namespace, container=c.name,
                                                   previous=True)
            except Exception:  # noqa: BLE001 (its log is gone with a replaced container: the code still says it)
                log = ""
            return f"exit {ended.exit_code}: {log.strip()[-400:] or ended.reason}"
    return None


BACKEND = GlusterKubernetesBackend

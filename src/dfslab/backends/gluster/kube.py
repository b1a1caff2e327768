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
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from ...runtime import CLIENT
from ...runtime.kubernetes.objects import DAEMON_LABEL, apply_all, namespace_object, running_ready, validate_all
from ..own_pods import OwnPods
from .. import BackendError, PodSelector, Progress
from . import volume
from .backend import GlusterBackend
from .glusterd import PRIVATE_PATHS
from ...polling import poll, wait_until

NAMESPACE = "dfslab-gluster"
APP = "dfslab-glusterd"
DAEMON = "glusterd"  # the pods' dfslab.io/daemon label: fault pod glusterd.NODE finds them by it
BOOTSTRAP = "gluster-bootstrap"
LABELS = {"app.kubernetes.io/managed-by": "dfslab"}


def host_cli(node_dir: Path, argv: list[str]) -> list[str]:
    """argv with the node's /run (where its glusterd's CLI socket is) and its log directory as
    /run and /var/log/glusterfs, in a private mount namespace of its own: the CLI's log and its
    helpers' (glfsheal's crawl of every brick) go to the node's directory, as on the local
    runtime, not into this machine's /var/log/glusterfs."""
    binds = " && ".join(f'mount --bind "$0"/{sub} {PRIVATE_PATHS[sub]}' for sub in ("run", "log"))
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", f'{binds} && exec "$@"', str(node_dir), *argv]


def node_mounts(root: Path) -> tuple[list[dict], list[dict]]:
    """(volumes, volume mounts): the node's private paths from `root`/<node>/, and `root` itself
    at its own path (the bricks' paths are the same in the pod and on this machine)."""
    mounts = [{"name": "gluster", "mountPath": target, "subPathExpr": f"$(NODE_NAME)/{sub}"}
              for sub, target in PRIVATE_PATHS.items()]
    mounts.append({"name": "gluster", "mountPath": str(root)})
    return [{"name": "gluster", "hostPath": {"path": str(root), "type": "Directory"}}], mounts


# glusterd looks up each peer's address by name; the cluster DNS the pods would get does not exist
# here and every lookup waited ~6 s (a 3-node bootstrap took 66 s). Asking a port that refuses at
# once fails each lookup at once, and glusterd keeps the address.
NO_DNS = {"dnsPolicy": "None", "dnsConfig": {"nameservers": ["127.0.0.1"],
                                             "options": [{"name": "timeout", "value": "1"}, {"name": "attempts", "value": "1"}]}}
NODE_NAME_ENV = [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]


# The pod's /run is the node's directory and outlives the container, but the PIDs in its pidfiles
# were numbered by the old container's PID namespace. A new glusterd (PID 1 again) read the
# self-heal daemon's stale pidfile, found its PID alive (its own brick, just started under that
# number), and stopped it with SIGTERM: the brick stayed offline and the volume never healed.
# When the container starts, every process it had is gone (the PID namespace died with its PID 1),
# so every pidfile there is stale.
FRESH_START = "find /run/gluster -name '*.pid' -type f -delete; exec glusterd -N --log-level INFO"


def statefulset(namespace: str, image: str, root: Path, replicas: int) -> dict:
    volumes, mounts = node_mounts(root)
    labels = {"app": APP, DAEMON_LABEL: DAEMON, **LABELS}
    return {
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "glusterd", "namespace": namespace, "labels": labels},
        "spec": {
            "serviceName": "glusterd", "replicas": replicas, "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": {"app": APP}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "hostNetwork": True, **NO_DNS,
                    "automountServiceAccountToken": False,  # its /run is the node's glusterd /run
                    "terminationGracePeriodSeconds": 10,
                    "nodeSelector": {"dfslab.io/role": "server"},
                    "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": {"app": APP}}, "topologyKey": "kubernetes.io/hostname"}]}},
                    "containers": [{
                        "name": "glusterd", "image": image, "imagePullPolicy": "Never",
                        "command": ["sh", "-c", FRESH_START],
                        "env": NODE_NAME_ENV,
                        "securityContext": {"privileged": True},
                        "readinessProbe": {"exec": {"command": ["gluster", "--mode=script", "--timeout=5", "pool", "list"]},
                                           "periodSeconds": 2, "timeoutSeconds": 8},
                        "volumeMounts": mounts,
                    }],
                    "volumes": volumes,
                }},
        },
    }


def bootstrap_script(peers: list[str], create: list[str], options: dict[str, str]) -> str:
    """The pool and the volume, from the first server: what `up` on the local runtime does."""
    import shlex
    q = lambda args: " ".join(shlex.quote(a) for a in args)  # noqa: E731
    lines = ["set -eu", "g() { gluster --mode=script --timeout=60 \"$@\"; }",
             "until g pool list >/dev/null 2>&1; do sleep 1; done"]
    lines += [f"g peer probe {shlex.quote(p)}" for p in peers]
    lines.append(f'i=0; until [ "$(g pool list | grep -c Connected)" -eq {len(peers) + 1} ]; do '
                 'i=$((i+1)); [ $i -lt 120 ] || { g pool list; exit 3; }; sleep 1; done')
    lines.append(f"g {q(['volume', 'create', *create])}")
    lines += [f"g {q(['volume', 'set', volume.VOLUME, k, v])}" for k, v in options.items()]
    lines.append(f"g volume start {volume.VOLUME}")
    return "\n".join(lines)


def bootstrap_job(namespace: str, image: str, root: Path, node: str, script: str) -> dict:
    volumes, mounts = node_mounts(root)
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": BOOTSTRAP, "namespace": namespace, "labels": LABELS},
        "spec": {"backoffLimit": 0, "template": {
            "metadata": {"labels": {"app": BOOTSTRAP, **LABELS}},
            "spec": {"restartPolicy": "Never", "hostNetwork": True, **NO_DNS,
                     "automountServiceAccountToken": False,
                     "nodeSelector": {"kubernetes.io/hostname": node},
                     "containers": [{"name": "bootstrap", "image": image, "imagePullPolicy": "Never",
                                     "command": ["sh", "-c", script], "env": NODE_NAME_ENV, "volumeMounts": mounts}],
                     "volumes": volumes}}},
    }


class GlusterKubernetesBackend(OwnPods, GlusterBackend):
    """GlusterFS whose glusterd run as pods of the local Kubernetes."""

    facts = replace(GlusterBackend.facts, required_programs=("gluster", "glusterfs", "unshare", "nsenter", "ip", "tc"),
                    log_dirs=("logs", "gluster/*/log", "kubernetes/nodes/*/pod-logs"))

    signal_faults = ("kill", "stop", "node", "brick")
    in_pods = "glusterd and its bricks"
    not_on_yours = "GlusterFS on a Kubernetes you run is not built (its glusterd and bricks need node paths dfslab makes here)"

    @classmethod
    def pod_example(cls, spec) -> str:
        return f"glusterd.{spec.node_names()[1]}"

    pod_daemons = "glusterd.node2: a node's glusterd"

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

    def __init__(self, runtime, spec):
        super().__init__(runtime, spec)
        self.ctx.enter = lambda node, argv: host_cli(self.ctx.root / node, argv)

    @property
    def namespace(self) -> str:
        return NAMESPACE

    def api(self):
        return self.runtime.api()

    @property
    def first(self) -> str:
        """The first server whose glusterd pod is ready (node loss and pod faults)."""
        from kubernetes import client
        pods = client.CoreV1Api(self.api()).list_namespaced_pod(NAMESPACE, label_selector=f"app={APP}").items
        ready = {p.spec.node_name for p in pods if running_ready(p)}
        for node in self.spec.node_names():
            if node in ready:
                return node
        raise BackendError(f"no glusterd pod is ready; `dfslab status {self.spec.name}` lists the pods")

    def deploy(self, progress: Progress, timeout: float) -> None:
        nodes = self.spec.node_names()
        self.runtime.start_kubernetes(self.spec, progress)
        self.state.update(k8s_namespace=NAMESPACE, k8s_fuse=self.pod_fuse())
        for node in nodes:
            for sub in (*PRIVATE_PATHS, "bricks"):
                self.ctx.node_dir(node, sub).mkdir(parents=True, exist_ok=True)
        image = self.state.read()["k8s_images"]["rook"]
        api = self.api()
        sts = statefulset(NAMESPACE, image, self.ctx.root, len(nodes))
        create = [volume.VOLUME, *volume.layout_args(self.ctx), "transport", "tcp", *volume.brick_list(self.ctx), "force"]
        script = bootstrap_script([self.ctx.addresses[n] for n in nodes[1:]], create, volume.options(self.ctx))
        job = bootstrap_job(NAMESPACE, image, self.ctx.root, nodes[0], script)
        apply_all(api, [namespace_object(NAMESPACE)])
        validate_all(api, [sts, job])  # both judged before either is made
        progress("starting glusterd", f"StatefulSet glusterd: {len(nodes)} pod(s), one per server node")
        apply_all(api, [sts])
        deadline = time.monotonic() + timeout
        self._wait_ready(api, len(nodes), deadline, progress)
        g = self.spec.gluster
        n_bricks = g.bricks_per_node * len(nodes)
        progress("bootstrap Job", f"peer probe from {nodes[0]}, volume {volume.VOLUME}: {g.volume} of {n_bricks} brick(s)")
        self._run_bootstrap(api, job, deadline)
        progress("waiting for bricks", f"{n_bricks} brick(s) online")
        volume.wait_bricks_online(self.ctx, nodes[0], n_bricks, max(30, deadline - time.monotonic()))
        progress("mounting", "FUSE client in the client namespace")
        self.mount(CLIENT)

    def pod_fuse(self) -> list[str]:
        """The FUSE mount a Job's pod runs, the mount point appended (it daemonizes once mounted)."""
        servers = [f"--volfile-server={self.ctx.addresses[n]}" for n in self.spec.node_names()]
        return ["glusterfs", *servers, f"--volfile-id={volume.VOLUME}", "--log-file=/tmp/fuse-client.log"]

    def _wait_ready(self, api, want: int, deadline: float, progress: Progress) -> None:
        from kubernetes import client
        core = client.CoreV1Api(api)

        def all_ready() -> bool:
            pods = core.list_namespaced_pod(NAMESPACE, label_selector=f"app={APP}").items
            ready = sorted(p.spec.node_name for p in pods if running_ready(p))
            progress("starting glusterd", f"{len(ready)}/{want} ready ({', '.join(ready)})")
            return len(ready) == want
        if poll(all_ready, "every glusterd pod ready", max(0.0, deadline - time.monotonic()), 1.0):
            return
        raise BackendError(f"glusterd pods not all ready in time; see {self.state.dir}/kubernetes/nodes/*/pod-logs "
                           f"and `dfslab status {self.spec.name}`")

    def _run_bootstrap(self, api, job: dict, deadline: float) -> None:
        from kubernetes import client
        apply_all(api, [job])
        core = client.CoreV1Api(api)

        def finished() -> bool:
            pods = core.list_namespaced_pod(NAMESPACE, label_selector=f"app={BOOTSTRAP}").items
            if not pods or pods[0].status.phase not in ("Succeeded", "Failed"):
                return False
            if pods[0].status.phase == "Failed":
                log = core.read_namespaced_pod_log(pods[0].metadata.name, NAMESPACE)
                raise BackendError(f"the bootstrap Job failed: {log.strip()[-600:]}")
            return True
        wait_until(finished, "the bootstrap Job to finish", max(0.0, deadline - time.monotonic()), 1.0,
                   lambda _: BackendError("the bootstrap Job did not finish in time"))

    def status(self) -> dict[str, Any]:
        from ..kube_tables import pods_table
        out = super().status()
        out["tables"] = out.get("tables", []) + [pods_table(self.api(), NAMESPACE, self.runtime.container_rss)]
        return out


BACKEND = GlusterKubernetesBackend

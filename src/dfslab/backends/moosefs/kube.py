"""MooseFS on runtime kubernetes (the local Kubernetes): each daemon a StatefulSet of one pod
pinned to its node, the client on this machine and in dfslab's Jobs.

- StatefulSet `mfs-<kind>-<node>` (master, metalogger, chunkserver) per daemon the local runtime
  would start: host network, so each daemon binds its node's address as the master's exports and
  the chunk servers' registrations expect; the cluster's `moosefs/` directory mounted at its own
  path (hostPath), so a pod runs exactly the command, config and data directory the local runtime
  gives that daemon, and a deleted pod comes back with the same metadata and chunks. A
  StatefulSet, not a Deployment: its replacement starts only once the old pod is gone, so two
  masters never hold one data directory's lock (a Deployment starts the new pod at once).
- The master is asked (`mfscli`) from this machine in its node's network namespace, as on the
  local runtime; the client mounts on the client node as on every runtime; a Job's pod mounts
  with mfsmount (`k8s_fuse`), which goes to the background once mounted.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from ...runtime.kubernetes.objects import DAEMON_LABEL, apply_all, namespace_object, validate_all
from ..abilities import PodSelector
from ..own_pods import OwnPods
from .. import Progress
from .backend import MooseFSBackend
from .context import MATOCL_PORT, Daemon

NAMESPACE = "dfslab-moosefs"
LABELS = {"app.kubernetes.io/managed-by": "dfslab"}
PROGRAMS = {"mfsmaster": "master", "mfsmetalogger": "metalogger", "mfschunkserver": "chunkserver"}


def app(daemon: Daemon) -> str:
    return f"mfs-{daemon.kind}-{daemon.node}"


def statefulset(daemon: Daemon, image: str, root: Path) -> dict:
    labels = {"app": app(daemon), DAEMON_LABEL: daemon.kind, **LABELS}
    return {
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": app(daemon), "namespace": NAMESPACE, "labels": labels},
        "spec": {
            "serviceName": app(daemon), "replicas": 1,
            "selector": {"matchLabels": {"app": app(daemon)}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "hostNetwork": True,
                    "automountServiceAccountToken": False,
                    # the master saves its metadata on SIGTERM (a 3-node cluster's: well under a second)
                    "terminationGracePeriodSeconds": 10,
                    "nodeSelector": {"kubernetes.io/hostname": daemon.node},
                    "containers": [{
                        "name": daemon.kind, "image": image, "imagePullPolicy": "Never",
                        "command": list(daemon.argv),
                        "volumeMounts": [{"name": "moosefs", "mountPath": str(root)}],
                    }],
                    "volumes": [{"name": "moosefs", "hostPath": {"path": str(root), "type": "Directory"}}],
                }},
        },
    }


class MooseFSKubernetesBackend(OwnPods, MooseFSBackend):
    """MooseFS whose master, metalogger and chunk servers run as pods of the local Kubernetes."""

    facts = replace(MooseFSBackend.facts, required_programs=("mfsmount", "mfscli", "nsenter", "ip", "tc"),
                    log_dirs=(*MooseFSBackend.facts.log_dirs, "kubernetes/nodes/*/pod-logs"))

    in_pods = "MooseFS's daemons"
    not_on_yours = "MooseFS on a Kubernetes you run is not built (its daemons' configs and data are node paths dfslab makes here)"

    @classmethod
    def pod_example(cls, spec) -> str:
        return f"chunkserver.{spec.moosefs.chunk_nodes(spec)[0]}"

    pod_daemons = "master.node1, metalogger.node2, chunkserver.node3: a node's master, metalogger or chunk server"

    @classmethod
    def pod_selector(cls, target: str) -> PodSelector | None:
        kind, _, node = target.partition(".")
        if kind not in PROGRAMS.values() or not re.fullmatch(r"[A-Za-z0-9-]+", node):
            return None
        # 1 s to stop: grace 0 is a force delete, after which the StatefulSet may start the new pod
        # while the old daemon still holds its port and its data directory's lock.
        return PodSelector(f"{DAEMON_LABEL}={kind}", node=node, grace=1)

    @classmethod
    def daemon_of_process(cls, argv: list[str], node: str) -> str | None:
        """'chunkserver.node2' for the mfschunkserver a pod on node2 runs (likewise master, metalogger)."""
        kind = PROGRAMS.get(Path(argv[0]).name) if argv else None
        return f"{kind}.{node}" if kind else None

    @property
    def namespace(self) -> str:
        return NAMESPACE

    def api(self):
        return self.runtime.api()

    def deploy(self, progress: Progress, timeout: float) -> None:
        self.runtime.start_kubernetes(self.spec, progress)
        self.state.update(k8s_namespace=NAMESPACE, k8s_fuse=self.pod_fuse())
        image = self.state.read()["k8s_images"]["rook"]
        daemons = self.daemons()
        sets = [statefulset(d, image, self.ctx.root) for d in daemons]
        api = self.api()
        apply_all(api, [namespace_object(NAMESPACE)])
        validate_all(api, sets)  # every one judged before any is made
        progress("starting the daemons' pods", ", ".join(app(d) for d in daemons))
        apply_all(api, sets)
        self.join(progress, timeout)

    def pod_fuse(self) -> list[str]:
        """The mount a Job's pod runs, the mount point appended (mfsmount goes to the background
        once mounted)."""
        return ["mfsmount", "-H", self.ctx.master_address, "-P", str(MATOCL_PORT),
                "-o", f"mfswritecachesize={self.spec.moosefs.write_cache // 2**20}"]

    def status(self) -> dict[str, Any]:
        from ..kube_tables import pods_table
        out = super().status()
        out["tables"] = out.get("tables", []) + [pods_table(self.api(), NAMESPACE, self.runtime.container_rss)]
        return out


BACKEND = MooseFSKubernetesBackend

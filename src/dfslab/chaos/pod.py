"""Runtime kubernetes: delete a daemon's pod. Its owner (Rook's Deployment) makes a new one,
so the undo is only waiting until it runs: the time to detect and to recover are Kubernetes's
and Rook's own, as on any cluster that runs Ceph this way."""

from __future__ import annotations

import re
from typing import Any

from . import FaultInputError
from ..runtime.kubernetes.objects import DAEMON_LABEL
from .kube import RESTART_TIMEOUT, KubernetesFault, running_ready

# Rook labels every daemon's pod with its Ceph type and id (osd.0: ceph_daemon_type=osd, ceph_daemon_id=0);
# the daemons dfslab deploys itself (GlusterFS's glusterd StatefulSet) carry their kind in
# DAEMON_LABEL and are found by their node (glusterd.node2).
DAEMON = re.compile(r"(mon|mgr|osd|mds)\.([A-Za-z0-9-]+)")
ON_NODE = re.compile(r"(glusterd)\.([A-Za-z0-9-]+)")


def selector(target: str) -> tuple[str, str | None]:
    """(label selector, field selector) of the pods that run `target`."""
    match = DAEMON.fullmatch(target)
    if match:
        return f"ceph_daemon_type={match.group(1)},ceph_daemon_id={match.group(2)}", None
    match = ON_NODE.fullmatch(target)
    if match:
        return f"{DAEMON_LABEL}={match.group(1)}", f"spec.nodeName={match.group(2)}"
    raise FaultInputError(f"fault pod takes a Ceph daemon (osd.0, mon.a, mgr.a, mds.cephfs-a) or a node's glusterd "
                          f"(glusterd.node2), not {target!r}")


class DeletePod(KubernetesFault):
    kind = "pod"
    help = ("runtime kubernetes: delete a daemon's pod (osd.0, mon.a, mds.cephfs-a, glusterd.node2); undo: wait for "
            "the new one to run")

    def _pods(self, core, target: str) -> list:
        labels, fields = selector(target)
        return core.list_namespaced_pod(self.namespace, label_selector=labels, field_selector=fields or "").items

    def inject(self, target: str) -> dict[str, Any]:
        core = self.core()
        pods = [p for p in self._pods(core, target) if p.metadata.deletion_timestamp is None]
        if not pods:
            raise FaultInputError(f"no pod runs {target} in namespace {self.namespace}; "
                                  f"`dfslab status {self.cluster.state.name}` lists the pods")
        # Rook's daemons: grace 0, no chance to shut down cleanly, as with kill -9. A StatefulSet's
        # pod (glusterd) gets 1 s: grace 0 is a force delete, which breaks the StatefulSet's
        # at-most-one guarantee: its new pod can start while the old one's glusterd and bricks
        # still hold their host-network ports.
        grace = 1 if ON_NODE.fullmatch(target) else 0
        for pod in pods:
            core.delete_namespaced_pod(pod.metadata.name, pod.metadata.namespace, grace_period_seconds=grace)
        return {"deleted": [p.metadata.uid for p in pods]}

    def undo(self, target: str, record: dict[str, Any], timeout: float = RESTART_TIMEOUT) -> None:
        core = self.core()
        deleted = set(record.get("deleted", []))
        self.wait(lambda: any(p.metadata.uid not in deleted and running_ready(p) for p in self._pods(core, target)),
                  f"a new pod of {target} running after its pod was deleted", timeout)

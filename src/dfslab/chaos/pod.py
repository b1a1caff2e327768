"""Runtime kubernetes: delete a daemon's pod. Its owner (Rook's Deployment, dfslab's glusterd
StatefulSet) makes a new one, so the undo is only waiting until it runs: the time to detect and
to recover are Kubernetes's and the operator's own, as on any cluster run this way. Which pods
run a daemon, and the grace they get, is the filesystem's to say (Backend.pod_selector)."""

from __future__ import annotations

from typing import Any

from . import FaultInputError
from ..backends import Backend, PodSelector
from .kube import RESTART_TIMEOUT, KubernetesFault, running_ready


def selector(backend: Backend | type[Backend], target: str) -> PodSelector:
    """The pods that run `target`, as the cluster's filesystem names its daemons' pods."""
    found = backend.pod_selector(target)
    if found is None:
        raise FaultInputError(f"fault pod takes one of this cluster's daemons ({backend.pod_daemons or 'none run as pods'}), "
                              f"not {target!r}")
    return found


class DeletePod(KubernetesFault):
    kind = "pod"
    help = ("runtime kubernetes: delete a daemon's pod (osd.0, mon.a, mds.cephfs-a, glusterd.node2); undo: wait for "
            "the new one to run")

    def _pods(self, core, found: PodSelector) -> list:
        fields = f"spec.nodeName={found.node}" if found.node else ""
        return core.list_namespaced_pod(self.namespace, label_selector=found.labels, field_selector=fields).items

    def inject(self, target: str) -> dict[str, Any]:
        core, found = self.core(), selector(self.cluster.backend, target)
        pods = [p for p in self._pods(core, found) if p.metadata.deletion_timestamp is None]
        if not pods:
            raise FaultInputError(f"no pod runs {target} in namespace {self.namespace}; "
                                  f"`dfslab status {self.cluster.state.name}` lists the pods")
        # Each daemon's grace is its filesystem's (Rook's: 0, no chance to shut down cleanly, as kill -9).
        for pod in pods:
            core.delete_namespaced_pod(pod.metadata.name, pod.metadata.namespace, grace_period_seconds=found.grace)
        return {"deleted": [p.metadata.uid for p in pods]}

    def undo(self, target: str, record: dict[str, Any], timeout: float = RESTART_TIMEOUT) -> None:
        core = self.core()
        deleted = set(record.get("deleted", []))
        found = selector(self.cluster.backend, target)
        self.wait(lambda: any(p.metadata.uid not in deleted and running_ready(p) for p in self._pods(core, found)),
                  f"a new pod of {target} running after its pod was deleted", timeout)

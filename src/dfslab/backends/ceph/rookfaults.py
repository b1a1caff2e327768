"""Faults of Ceph deployed by Rook (runtime kubernetes): Kubernetes events only Rook's cluster has.

    operator   scale Rook's operator Deployment to 0: nothing reconciles (no MON failover, no
               new OSD Deployment); undo: its replicas back and its pod ready
"""

from __future__ import annotations

from typing import Any

from ...fault import FaultInputError, KubernetesFault
from ...runtime.kubernetes.objects import running_ready

OPERATOR = "rook-ceph-operator"


class OperatorDown(KubernetesFault):
    kind = "operator"
    help = ("runtime kubernetes: scale Rook's operator to 0 (target: rook) so nothing reconciles; "
            "undo: its replicas back, its pod ready")

    def _apps(self):
        from kubernetes import client
        return client.AppsV1Api(self.api())

    def _operator_pods(self, core) -> list:
        return core.list_namespaced_pod(self.namespace, label_selector=f"app={OPERATOR}").items

    def inject(self, target: str) -> dict[str, Any]:
        if target != "rook":
            raise FaultInputError(f"fault operator takes target rook (Rook's operator), not {target!r}")
        apps = self._apps()
        replicas = apps.read_namespaced_deployment(OPERATOR, self.namespace).spec.replicas or 1
        apps.patch_namespaced_deployment_scale(OPERATOR, self.namespace, {"spec": {"replicas": 0}})
        core = self.core()  # one client for the whole wait, not one per poll
        self.wait(lambda: not self._operator_pods(core), "Rook's operator pod gone after scaling to 0")
        return {"replicas": replicas}

    def undo(self, target: str, record: dict[str, Any]) -> None:
        self._apps().patch_namespaced_deployment_scale(OPERATOR, self.namespace,
                                                       {"spec": {"replicas": record.get("replicas", 1)}})
        core = self.core()
        self.wait(lambda: any(running_ready(p) for p in self._operator_pods(core)), "Rook's operator ready again")

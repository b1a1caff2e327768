"""Runtime kubernetes: delete a daemon's pod, or signal its containers' processes (`kill` and
`stop` there; `node`, every daemon of a node, and `partition` and `degrade` of their networks
where the runtime reaches into pods: a Kubernetes you run, through dfslab's fault agent). Its owner (Rook's Deployment, dfslab's glusterd
StatefulSet) makes a new one, so the undo is only waiting until it runs: the time to detect and
to recover are Kubernetes's and the operator's own, as on any cluster run this way. Which pods
run a daemon, and the grace they get, is the filesystem's to say (Backend.pod_selector)."""

from __future__ import annotations

import signal
from typing import Any

from ..backends import Backend, PodSelector
from ..backends.abilities import PodsOnKubernetes, ability
from ..fault import RESTART_TIMEOUT, FaultError, FaultInputError, KubernetesFault, daemons_of, not_one_of
from ..runtime import RuntimeError_
from ..runtime.kubernetes.objects import daemon_pods, running_ready


def selector(backend: Backend | type[Backend], target: str) -> PodSelector:
    """The pods that run `target`, as the cluster's filesystem names its daemons' pods."""
    pods = ability(backend, PodsOnKubernetes)
    found = pods.pod_selector(target) if pods else None
    if found is None:
        raise FaultInputError(f"fault pod takes one of this cluster's daemons ({pods.pod_daemons if pods else 'none run as pods'}), "
                              f"not {target!r}")
    return found


def pods_of(core, namespace: str, found: PodSelector) -> list:
    fields = f"spec.nodeName={found.node}" if found.node else ""
    return core.list_namespaced_pod(namespace, label_selector=found.labels, field_selector=fields).items


class DeletePod(KubernetesFault):
    kind = "pod"
    aims = "daemon"
    help = ("runtime kubernetes: delete a daemon's pod (osd.0, mon.a, mds.cephfs-a, glusterd.node2); undo: wait for "
            "the new one to run")

    @classmethod
    def target_problem(cls, target: str, spec: Any) -> str | None:
        return not_one_of("daemon", target, daemons_of(spec))

    def _pods(self, core, found: PodSelector) -> list:
        return pods_of(core, self.namespace, found)

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


class SignalDaemonContainers(KubernetesFault):
    """`kill` and `stop` on runtime kubernetes: the signal goes to every process of the daemon's
    containers (found by their cgroups, as `nodeloss` finds a node's: from this machine on the
    local Kubernetes, through dfslab's fault agent on a Kubernetes you run); the pod stays. Its
    kubelet starts the containers again as after any crash (restartPolicy Always: at once the
    first time, then after a back-off that doubles from 10 s), so the undo only waits for that
    restart: the recovery is Kubernetes's, as after `fault pod`."""

    def __init__(self, cluster, kind: str, sig: int):
        super().__init__(cluster)
        self.kind, self.sig = kind, sig

    def _pods(self, core, target: str) -> list:
        return pods_of(core, self.namespace, selector(self.cluster.backend, target))

    def inject(self, target: str) -> dict[str, Any]:
        core = self.core()
        running = running_containers([p for p in self._pods(core, target) if p.metadata.deletion_timestamp is None])
        if not running:
            raise FaultInputError(f"no running container of {target} in namespace {self.namespace}; "
                                  f"`dfslab status {self.cluster.state.name}` lists the pods")
        # From this machine on the local Kubernetes; through dfslab's fault agent on yours.
        signalled = sum(self.cluster.runtime.signal_container(pod, c.container_id, self.sig) for pod, c in running)
        if not signalled:
            raise FaultError(f"{target}: no process found in its containers' cgroups")
        return {"containers": [{"pod": pod.metadata.name, "uid": pod.metadata.uid, "container": c.name,
                                "restarts": c.restart_count} for pod, c in running], "signalled": signalled}

    def undo(self, target: str, record: dict[str, Any], timeout: float = RESTART_TIMEOUT) -> None:
        core = self.core()

        def restarted() -> bool:
            pods = {p.metadata.uid: p for p in self._pods(core, target)}
            for was in record.get("containers", []):  # none recorded (dfslab died mid-inject): nothing to wait for
                pod = pods.get(was["uid"])
                if pod is None:  # made again (its node lost, a drain): its successor running is enough
                    if not any(running_ready(p) for p in pods.values()):
                        return False
                    continue
                now = next((c for c in pod.status.container_statuses or [] if c.name == was["container"]), None)
                if now is None or now.restart_count <= was["restarts"] or not now.state.running:
                    return False
            return True
        self.wait(restarted, f"{target}'s containers started again by their kubelet", timeout)


def running_daemons(cluster) -> list[str]:
    """The daemons of `cluster` (a filesystem in pods), by the names its faults take, from its running pods."""
    from kubernetes import client
    runtime = cluster.runtime
    core = client.CoreV1Api(cluster.backend.api())
    return sorted({name for name, _ in daemon_pods(core, runtime.namespace, runtime.daemon_of_pod)})


def daemon_pods_on(fault: KubernetesFault, core, target: str) -> list:
    """The pods of dfslab's daemons on node `target` (by the filesystem's labels), not going away."""
    runtime = fault.cluster.runtime
    return [p for _, p in daemon_pods(core, fault.namespace, runtime.daemon_of_pod, runtime.kube_node(target))]


def running_containers(pods: list) -> list:
    """(pod, container status) of every container of `pods` running now, with an ID."""
    return [(pod, c) for pod in pods for c in pod.status.container_statuses or [] if c.state.running and c.container_id]


class SignalNodeDaemons(SignalDaemonContainers):
    """`node` where the daemons are pods' containers and the runtime may signal them (a Kubernetes
    you run): every daemon of dfslab's on the node killed at once; their kubelet restarts them."""

    def __init__(self, cluster):
        super().__init__(cluster, "node", signal.SIGKILL)

    def _pods(self, core, target: str) -> list:
        return daemon_pods_on(self, core, target)


class PodNetworkFault(KubernetesFault):
    """`partition` and `degrade` where the runtime cuts or caps pods' networks rather than nodes'
    links (a Kubernetes you run, through dfslab's fault agent): every daemon of dfslab's on the
    node, nothing else of the node's. The undo goes by name, so it needs no record (a pending one
    after a crash of dfslab undoes the same)."""

    def __init__(self, cluster, kind: str):
        super().__init__(cluster)
        self.kind = kind

    def inject(self, target: str, rate_bps: int | None = None) -> dict[str, Any]:
        runtime = self.cluster.runtime
        running = [(pod, c.container_id) for pod, c in running_containers(daemon_pods_on(self, self.core(), target))]
        if not running:
            raise FaultInputError(f"no running daemon of dfslab's on {target}; `dfslab status "
                                  f"{self.cluster.state.name}` lists the pods")
        node = runtime.kube_node(target)
        try:
            done = (runtime.cut_pod_networks(node, running) if self.kind == "partition"
                    else runtime.cap_pod_networks(node, running, rate_bps))
        except RuntimeError_ as exc:
            raise FaultError(str(exc)) from None
        return {**done, "pods": sorted({pod.metadata.name for pod, _ in running})}

    def undo(self, target: str, record: dict[str, Any]) -> None:
        try:
            self.cluster.runtime.heal_pod_networks(self.cluster.runtime.kube_node(target), self.kind)
        except RuntimeError_ as exc:
            raise FaultError(str(exc)) from None

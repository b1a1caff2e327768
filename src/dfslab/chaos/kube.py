"""Faults that are Kubernetes events (runtime kubernetes, the local Kubernetes dfslab starts):
what an operator of a cluster on Kubernetes does, or has happen, to it (a filesystem's engine may
add its own: Rook's operator scaled down is Ceph's, backends/ceph/rookfaults.py).

    drain      cordon a node and evict its pods (as `kubectl drain`, DaemonSets stay): Rook's
               daemons pinned there cannot come back until undo uncordons it and their
               Deployments' new pods run

    nodeloss   a node dies (local Kubernetes): kill -9 its kubelet and containerd and every
               process of its pods (the containers' cgroups), so Kubernetes hears nothing from
               it (NotReady, its pods Unknown, then evicted) and Ceph loses its daemons; undo:
               containerd and kubelet start again as at boot and the node's pods run again

drain goes through the API server only; each undo waits for what Kubernetes makes
again; the fault runner then times HEALTH_OK and checks the checksummed objects as for every
fault.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

from ..backends.abilities import PodsOnKubernetes, ability
from ..fault import FaultError, FaultInputError, KubernetesFault, not_a_machine
from ..runtime.kubernetes.objects import running_ready


def _identity(backend: Any) -> Any:
    """How the cluster's filesystem finds a pod's successor (none of its pods: no successor)."""
    pods = ability(backend, PodsOnKubernetes)
    return pods.pod_identity if pods else (lambda labels: {})


class _NodeFault(KubernetesFault):
    aims = "node"
    @classmethod
    def target_problem(cls, target: str, spec: Any) -> str | None:
        return not_a_machine(target, spec)


class DrainNode(_NodeFault):
    kind = "drain"
    help = ("runtime kubernetes: cordon a node and evict its pods (node1); undo: uncordon, wait for the "
            "evicted daemons' new pods")

    def inject(self, target: str) -> dict[str, Any]:
        from kubernetes import client
        from kubernetes.client.rest import ApiException
        core = self.core()
        try:
            core.read_node(target)
        except ApiException as exc:
            if exc.status == 404:
                nodes = ", ".join(n.metadata.name for n in core.list_node().items)
                raise FaultInputError(f"fault drain: no Kubernetes node {target!r}; nodes: {nodes}") from None
            raise
        core.patch_node(target, {"spec": {"unschedulable": True}})
        evicted = []
        for pod in core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={target}").items:
            owners = {o.kind for o in pod.metadata.owner_references or []}
            if "DaemonSet" in owners or pod.status.phase in ("Succeeded", "Failed"):
                continue  # kubectl drain leaves DaemonSets' pods; finished pods hold nothing
            meta = pod.metadata
            core.create_namespaced_pod_eviction(meta.name, meta.namespace, client.V1Eviction(
                metadata=client.V1ObjectMeta(name=meta.name, namespace=meta.namespace)))
            evicted.append({"namespace": meta.namespace, "uid": meta.uid, "labels": _identity(self.cluster.backend)(meta.labels or {})})
        return {"node": target, "evicted": evicted}

    def undo(self, target: str, record: dict[str, Any]) -> None:
        core = self.core()
        core.patch_node(record.get("node", target), {"spec": {"unschedulable": False}})
        old = {e["uid"] for e in record.get("evicted", [])}

        def replaced() -> bool:
            for e in record.get("evicted", []):
                if not e["labels"]:
                    continue  # a pod no owner makes again (none of Rook's)
                selector = ",".join(f"{k}={v}" for k, v in e["labels"].items())
                if not any(running_ready(p) and p.metadata.uid not in old
                           for p in core.list_namespaced_pod(e["namespace"], label_selector=selector).items):
                    return False
            return True
        self.wait(replaced, f"new pods for what was evicted from {target}")


class NodeLoss(_NodeFault):
    kind = "nodeloss"
    help = ("runtime kubernetes (local): a node dies: kill -9 its kubelet, containerd and pods' processes (node2); "
            "undo: containerd and kubelet start again, the node's pods run again")

    @classmethod
    def runtime_refusal(cls, runtime) -> str | None:
        if not runtime.owns_machines:  # its kubelet and containerd are processes dfslab started
            return f"kills a node's kubelet and containerd, which on {runtime.where} are not dfslab's to kill"
        return super().runtime_refusal(runtime)

    def _node_procs(self, target: str) -> list:
        runtime = self.cluster.runtime
        procs = [runtime.procs.get(f"{daemon}-{target}") for daemon in ("containerd", "kubelet")]
        if not all(procs):
            nodes = sorted(p.name.split("-", 1)[1] for p in runtime.procs.all() if p.name.startswith("kubelet-"))
            raise FaultInputError(f"fault nodeloss: no Kubernetes node {target!r} dfslab runs here; nodes: {', '.join(nodes)}")
        return procs

    def inject(self, target: str) -> dict[str, Any]:
        self.api()  # refuses any runtime but kubernetes (a Kubernetes you run refuses every fault before)
        runtime = self.cluster.runtime
        containerd, kubelet = self._node_procs(target)
        if not kubelet.alive():
            raise FaultInputError(f"node {target}'s kubelet is not running")
        for proc in (kubelet, containerd):  # the kubelet first: it would have containerd restart the pods
            runtime.signal_process(proc, signal.SIGKILL)
        killed = self._kill_pods(target)
        return {"node": target, "daemons": [containerd.restartable(), kubelet.restartable()], "killed": killed,
                "pods": self._pod_identities(target)}

    def _pods_on(self, core, target: str) -> list:
        return [p for p in core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={target}").items
                if p.status.phase not in ("Succeeded", "Failed")]

    def _pod_identities(self, target: str) -> list[dict[str, Any]]:
        """What ran on the node, by the labels that find a successor: a loss longer than the
        pods' toleration (300 s) has them evicted, and their controllers make new pods."""
        identity = _identity(self.cluster.backend)
        return [{"namespace": p.metadata.namespace, "uid": p.metadata.uid, "labels": identity(p.metadata.labels or {})}
                for p in self._pods_on(self.core(), target) if identity(p.metadata.labels or {})]

    def _seen(self, core, target: str) -> str:
        """Kubernetes' view of the lost node just before the undo: once its lease is 50 s old the
        node's Ready is Unknown and its pods not ready; after the pods' 300 s toleration they
        are evicted (being deleted, their successors Pending)."""
        node = core.read_node(target)
        ready = next((c.status for c in node.status.conditions or [] if c.type == "Ready"), "?")
        pods = self._pods_on(core, target)
        # the node controller marks the pods' Ready condition False; their containers' own ready
        # flags are the silent kubelet's last word, still true
        unready = sum(not any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])
                      for p in pods)
        evicted = sum(p.metadata.deletion_timestamp is not None for p in pods)
        taints = sorted(t.key.rsplit("/", 1)[-1] for t in node.spec.taints or [] if t.effect == "NoExecute")
        return (f"node Ready={ready}{' tainted ' + ','.join(taints) if taints else ''}; "
                f"{unready} of {len(pods)} pods not ready, {evicted} evicted")

    def _kill_pods(self, target: str) -> int:
        """Every process of the node's containers, and their shims (containerd's children, marked as
        dfslab's): a node that dies takes its pods with it, where a dead containerd alone would not."""
        from ..runtime.kubernetes import container_pids
        runtime = self.cluster.runtime
        tracked = {p.pid for p in runtime.procs.all()}
        pids = {pid for node, cid in runtime.containers_by_node() if node == target for pid in container_pids(cid) or []}
        pids |= {pid for pid in runtime.marked_on(target) if pid not in tracked}  # never the node's namespace holder
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return len(pids)

    def undo(self, target: str, record: dict[str, Any]) -> str:
        from ..runtime.kubernetes import node as knode
        runtime = self.cluster.runtime
        paths = runtime.node_paths(target)
        containerd, kubelet = record["daemons"]
        core = self.core()
        seen = self._seen(core, target)
        since = time.time() - 1  # API times are in whole seconds
        for d in (containerd, kubelet):
            runtime.procs.exited(d["name"])  # reap our children
        paths.socket.unlink(missing_ok=True)  # the killed containerd's socket (its own state directory)
        # the kubelet only once containerd's CRI answers: a kubelet whose first CRI call fails
        # exits, and this containerd first recovers the state of every container the node lost
        proc = knode.start_containerd(
            lambda: runtime.spawn(containerd["name"], containerd["node"], containerd["cmd"], env=containerd.get("env"),
                                  meta=containerd["meta"]),
            runtime.procs.log_path(containerd["name"]), paths.socket, f"containerd of {target}")
        started = [proc, runtime.spawn(kubelet["name"], kubelet["node"], kubelet["cmd"], env=kubelet.get("env"),
                                       meta=kubelet["meta"])]

        # A short loss leaves the API's view as it was (the node is Unknown only after 50 s of
        # silence): what counts is what the new kubelet reported, since the undo began.
        def fresh(when) -> bool:
            return when is not None and when.timestamp() >= since

        def started_again(pod) -> bool:
            return running_ready(pod) and all(c.state and c.state.running and fresh(c.state.running.started_at)
                                              for c in pod.status.container_statuses or [])

        def selector(old: dict) -> str:
            return ",".join(f"{k}={v}" for k, v in old["labels"].items())

        def missing() -> list[str]:
            """What is not back yet, named, so a wait that times out says what it waited for. A
            restarted containerd or kubelet that exited fails the wait at once, with its last words
            (the node can then never come back; a CI run waited its whole 300 s for one)."""
            for p in started:
                if not p.alive():
                    raise FaultError(f"{p.name} exited after the undo restarted it; its log ({p.log}) ends: "
                                     f"{p.log_tail()}")
            node = core.read_node(target)
            gaps = [] if any(c.type == "Ready" and c.status == "True" and fresh(c.last_heartbeat_time)
                             for c in node.status.conditions or []) else [f"node {target} Ready"]
            pods = self._pods_on(core, target)
            # every container of the node died with it: each must run again, started after the
            # undo, and each daemon that ran there must run again: its own pod restarted, or an
            # evicted one's successor, wherever it was scheduled (Rook lets its MDS and MGR pods
            # tolerate an unreachable node for 5 s only; an OSD's successor waits for its node)
            gaps += [f"pod {p.metadata.namespace}/{p.metadata.name} ({p.status.phase})"
                     for p in pods if not started_again(p)]
            gaps += [f"a successor of {old['namespace']}/{selector(old)}" for old in record.get("pods", [])
                     if not any(running_ready(p) and (p.metadata.uid != old.get("uid") or started_again(p))
                                for p in core.list_namespaced_pod(old["namespace"], label_selector=selector(old)).items)]
            return gaps
        self.wait_for_nothing_missing(missing, f"node {target} Ready and its pods running again")
        return seen

"""Status tables every backend on runtime kubernetes shows: its pods and the nodes."""

from __future__ import annotations

from ..runtime.kubernetes.objects import internal_ip, node_ready
from . import table


def nodes_table(api) -> dict:
    from kubernetes import client
    rows = []
    for n in client.CoreV1Api(api).list_node().items:
        rows.append([n.metadata.name, internal_ip(n), "Ready" if node_ready(n) else "NotReady", n.status.node_info.kubelet_version])
    return table("Kubernetes nodes", ["node", "address", "ready", "kubelet"], rows)


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

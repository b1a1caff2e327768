"""`dfslab render` for a mounted file system on a Kubernetes (Lustre, GPFS, BeeGFS, NFS: their
kernel clients cannot run in this machine's kernel, so dfslab never deploys them): a DaemonSet
of `fio --server` pods, one per labelled node, each mounting the site's file system from its
node by hostPath at the same path. No mount propagation: containerd refuses HostToContainer
where the node's / is not a shared mount (found on the local Kubernetes here), so a pod sees
the file system as mounted when it started; after a remount, delete the pods. `external.clients` then lists those nodes, and fio's client/server mode drives them
all at once, as it drives fio servers started by hand.

The pods use the host network (fio's client connects to each server's port on its node; no
Service in the way) and are not privileged: fio needs only the directory.
"""

from __future__ import annotations

from ...runtime.kubernetes.objects import MANAGED_BY, namespace_object
from .probe import FIO_PORT

NAME = "dfslab-fio-server"
NODE_LABEL = "dfslab.io/fio-client"


def fio_server_daemonset(namespace: str, image: str, path: str, port: int = FIO_PORT) -> dict:
    labels = {"app.kubernetes.io/name": NAME, **MANAGED_BY}
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": NAME, "namespace": namespace, "labels": labels},
        "spec": {
            "selector": {"matchLabels": {"app.kubernetes.io/name": NAME}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "hostNetwork": True, "dnsPolicy": "ClusterFirstWithHostNet",
                    # Only the nodes you label run a server: `kubectl label node N dfslab.io/fio-client=true`.
                    "nodeSelector": {NODE_LABEL: "true"},
                    "containers": [{
                        "name": "fio-server", "image": image, "imagePullPolicy": "IfNotPresent",
                        "command": ["fio", f"--server=,{port}"],
                        "ports": [{"name": "fio", "containerPort": port, "hostPort": port, "protocol": "TCP"}],
                        "readinessProbe": {"tcpSocket": {"port": port}, "periodSeconds": 2},
                        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                        "volumeMounts": [{"name": "site-fs", "mountPath": path}],
                    }],
                    "volumes": [{"name": "site-fs", "hostPath": {"path": path, "type": "Directory"}}],
                },
            },
        },
    }


def manifests(spec, namespace: str, image: str) -> dict[str, list[dict]]:
    return {"00-namespace": [namespace_object(namespace)],
            "10-fio-servers": [fio_server_daemonset(namespace, image, spec.external.posix.path)]}

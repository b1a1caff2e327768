"""The GlusterFS engine's Kubernetes objects (kube.py runs them; yours.py adds what a Kubernetes
you run needs): glusterd as a StatefulSet, one pod per server node, the bootstrap Job that makes
the trusted pool and the volume, and where their state lives on the nodes (`Placement`)."""

from __future__ import annotations

import copy
import shlex
from dataclasses import dataclass
from pathlib import Path

from ...runtime.kubernetes.objects import DAEMON_LABEL
from . import volume
from .glusterd import PRIVATE_PATHS

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


@dataclass(frozen=True)
class Placement:
    """Where the glusterd pods go and what they keep on their nodes: on the local Kubernetes the
    cluster's state dir (each node binds it; dfslab made it), on a Kubernetes you run a directory
    of dfslab's own under kubernetes.data_dir_host_path on each of your nodes (yours.py)."""

    namespace: str
    root: Path  # on the nodes: <root>/<node>/{lib,log,run,bricks}
    root_type: str  # its hostPath type: Directory where dfslab made it, DirectoryOrCreate on your nodes
    nodes: dict  # the pod spec's part that puts a pod on the servers
    pull: str  # imagePullPolicy: Never (imported into the local nodes), IfNotPresent (your registry)
    start: str = ""  # shell run before glusterd, `$0` the root (yours.py: the ownership mark)


def node_mounts(where: Placement) -> tuple[list[dict], list[dict]]:
    """(volumes, volume mounts): the node's private paths from `root`/<node>/, and `root` itself
    at its own path (the bricks' paths are the same in the pod and on the node)."""
    mounts = [{"name": "gluster", "mountPath": target, "subPathExpr": f"$(NODE_NAME)/{sub}"}
              for sub, target in PRIVATE_PATHS.items()]
    mounts.append({"name": "gluster", "mountPath": str(where.root)})
    return [{"name": "gluster", "hostPath": {"path": str(where.root), "type": where.root_type}}], mounts


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
# Its bricks' parent directory is made too (`$0`: the root): `volume create` makes a brick's own
# directory only, and on a node of yours nothing else makes the node's.
FRESH_START = ('mkdir -p "$0/$NODE_NAME/bricks" && find /run/gluster -name \'*.pid\' -type f -delete; '
               "exec glusterd -N --log-level INFO")


def statefulset(where: Placement, image: str, replicas: int) -> dict:
    volumes, mounts = node_mounts(where)
    labels = {"app": APP, DAEMON_LABEL: DAEMON, **LABELS}
    script = f"{where.start}\n{FRESH_START}" if where.start else FRESH_START
    return {
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "glusterd", "namespace": where.namespace, "labels": labels},
        "spec": {
            "serviceName": "glusterd", "replicas": replicas, "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": {"app": APP}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "hostNetwork": True, **NO_DNS,
                    "automountServiceAccountToken": False,  # its /run is the node's glusterd /run
                    "terminationGracePeriodSeconds": 10,
                    **copy.deepcopy(where.nodes),
                    "containers": [{
                        "name": "glusterd", "image": image, "imagePullPolicy": where.pull,
                        "command": ["sh", "-c", script, str(where.root)],
                        # why it exited, kept in its status (its log may be gone with the container)
                        "terminationMessagePolicy": "FallbackToLogsOnError",
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


def one_per_server(nodes: dict) -> dict:
    """`nodes` with the glusterd pods kept apart: one per server node."""
    apart = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": APP}}, "topologyKey": "kubernetes.io/hostname"}]}}
    return {**nodes, "affinity": {**nodes.get("affinity", {}), **apart}}


def bootstrap_script(peers: list[str], create: list[str], options: dict[str, str]) -> str:
    """The pool and the volume, from the first server: what `up` on the local runtime does."""
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


def bootstrap_job(where: Placement, image: str, node: str, script: str) -> dict:
    volumes, mounts = node_mounts(where)
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": BOOTSTRAP, "namespace": where.namespace, "labels": LABELS},
        "spec": {"backoffLimit": 0, "template": {
            "metadata": {"labels": {"app": BOOTSTRAP, **LABELS}},
            "spec": {"restartPolicy": "Never", "hostNetwork": True, **NO_DNS,
                     "automountServiceAccountToken": False,
                     "nodeSelector": {"kubernetes.io/hostname": node},
                     "containers": [{"name": "bootstrap", "image": image, "imagePullPolicy": where.pull,
                                     "command": ["sh", "-c", script], "env": NODE_NAME_ENV, "volumeMounts": mounts}],
                     "volumes": volumes}}},
    }

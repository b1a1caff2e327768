"""GlusterFS on a Kubernetes you run (`kubernetes.kubeconfig`): the same glusterd StatefulSet and
bootstrap Job as on the local Kubernetes (kube.py), placed on your nodes, with what this machine
does for them there done in pods instead:

- Each server keeps its glusterd state, logs, /run and bricks in a directory of dfslab's own on
  its node, `<kubernetes.data_dir_host_path>/dfslab-<namespace>/<node>/`, marked with the cluster
  that made it (`.dfslab-owner`): a glusterd does not start on a directory someone else's files
  are in, and `down` removes only a directory with that mark.
- dfslab's own CLI calls (status, health, brick waits) run in the node's glusterd pod through the
  API's exec; nothing on this machine reaches your nodes.
- A toolbox pod on each client node holds the volume's FUSE mount at the path dfslab's client
  tools name (the checksummed writer and read-back run there); the workloads' Jobs mount it in
  their own pods.
- `down` deletes the StatefulSet, then runs a cleanup Job on every node a glusterd ran on, which
  removes that directory, and says what it could not remove.
"""

from __future__ import annotations

import hashlib
import shlex
from pathlib import Path

from ...polling import poll
from .pods import APP, LABELS, NO_DNS, Placement, one_per_server

OWNER_MARK = ".dfslab-owner"
CLEANUP = "gluster-cleanup"
CLEANUP_WAIT = 180.0  # s for every node's cleanup Job to finish (each removes a directory tree)

# What dfslab injects into GlusterFS on a Kubernetes you run with the owner's consent: through the
# API (pod) or its fault agent (the rest) ...
CONSENTED_FAULTS = ("pod", "kill", "stop", "node", "partition", "degrade")
# ... and why not the rest there.
NOT_ON_YOURS = {"drain": "draining evicts every pod of your node, not only dfslab's",
                "nodeloss": "it kills a node's kubelet and container runtime, which are yours, not dfslab's",
                "brick": ("it kills a brick by its PID from this machine; on a Kubernetes you run kill glusterd.NODE "
                          "(its bricks with it) or delete its pod")}


def root_on_nodes(data_dir_host_path: str, namespace: str) -> Path:
    """The directory of dfslab's own on each of your nodes: named after dfslab's namespace, which
    `up` checks is new."""
    return Path(data_dir_host_path) / f"dfslab-{namespace}"


def owner(cluster: str, namespace: str) -> str:
    return f"dfslab cluster {cluster}, namespace {namespace}"


def claim_script(mark: str) -> str:
    """Before glusterd starts (`$0` the root): the root's mark must be this cluster's; an unmarked
    root is claimed only if it holds nothing but this node's directory (the kubelet makes that one
    for the pod's mounts)."""
    m = shlex.quote(mark)
    return (f'm="$0/{OWNER_MARK}"; if [ -e "$m" ]; then [ "$(cat "$m")" = {m} ] || '
            f'{{ echo "$0 is marked $(cat "$m"), not {mark}: not dfslab\'s to use" >&2; exit 3; }}; '
            f'elif [ -n "$(ls -A "$0" | grep -vx "$NODE_NAME")" ]; then '
            f'echo "$0 holds files dfslab did not make: not dfslab\'s to use; name another kubernetes.namespace" >&2; '
            f'exit 3; else echo {m} > "$m"; fi')


def placement(spec, cluster: str) -> Placement:
    k = spec.kubernetes
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": spec.node_names()}]}]}}}
    return Placement(k.namespace, root_on_nodes(k.data_dir_host_path, k.namespace), "DirectoryOrCreate",
                     one_per_server({"affinity": affinity}), "IfNotPresent",
                     claim_script(owner(cluster, k.namespace)))


def toolbox(namespace: str, name: str, node: str, image: str, fuse: list[str], mount_point: str) -> dict:
    """dfslab's image on a client node (host network: its /proc/net/dev is the node's, for the
    byte ledger) holding the volume's FUSE mount at `mount_point`; ready once mounted."""
    mnt = shlex.quote(mount_point)
    script = f"mkdir -p {mnt} && {' '.join(shlex.quote(a) for a in fuse)} {mnt} && exec sleep infinity"
    labels = {"app": name, **LABELS}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}}, "template": {
                "metadata": {"labels": labels},
                "spec": {"hostNetwork": True, **NO_DNS, "automountServiceAccountToken": False,
                         "terminationGracePeriodSeconds": 5,
                         "nodeSelector": {"kubernetes.io/hostname": node},
                         "containers": [{"name": "toolbox", "image": image, "imagePullPolicy": "IfNotPresent",
                                         "command": ["sh", "-c", script],
                                         "securityContext": {"privileged": True},  # /dev/fuse
                                         "readinessProbe": {"exec": {"command": ["mountpoint", "-q", mount_point]},
                                                            "periodSeconds": 2}}]}}}}


def cleanup_name(node: str) -> str:
    """A Job's name for `node` (63 characters at most: a long node name is hashed)."""
    name = f"{CLEANUP}-{node}"
    return name if len(name) <= 63 else f"{CLEANUP}-{hashlib.sha1(node.encode()).hexdigest()[:12]}"


def cleanup_job(namespace: str, image: str, node: str, data_dir_host_path: str, root: Path, mark: str) -> dict:
    """On `node`: remove dfslab's directory if its mark is this cluster's (nothing there: done)."""
    r, m = shlex.quote(str(root)), shlex.quote(mark)
    script = (f'[ -e {r} ] || {{ echo "{root}: not there"; exit 0; }}; '
              f'[ "$(cat {r}/{OWNER_MARK} 2>/dev/null)" = {m} ] || '
              f'{{ echo "{root} is not marked {mark}: left as it is" >&2; exit 3; }}; '
              f'rm -rf -- {r} && [ ! -e {r} ] && echo "{root}: removed"')
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": cleanup_name(node), "namespace": namespace, "labels": {"app": CLEANUP, **LABELS}},
            "spec": {"backoffLimit": 0, "template": {
                "metadata": {"labels": {"app": CLEANUP, **LABELS}},
                "spec": {"restartPolicy": "Never", "automountServiceAccountToken": False,
                         "nodeSelector": {"kubernetes.io/hostname": node},
                         "containers": [{"name": "cleanup", "image": image, "imagePullPolicy": "IfNotPresent",
                                         "command": ["sh", "-c", script],
                                         "volumeMounts": [{"name": "data", "mountPath": data_dir_host_path}]}],
                         # the parent, not the root: it is there wherever a glusterd pod ran (its
                         # DirectoryOrCreate made it), and the root itself goes
                         "volumes": [{"name": "data", "hostPath": {"path": data_dir_host_path, "type": "Directory"}}]}}}}


def glusterd_nodes(core, namespace: str) -> set[str]:
    """The nodes a glusterd pod of dfslab's is placed on (its directory was made there)."""
    return {p.spec.node_name for p in core.list_namespaced_pod(namespace, label_selector=f"app={APP}").items
            if p.spec.node_name}


def wait_cleanup(core, batch, namespace: str, nodes: set[str], root: Path, timeout: float = CLEANUP_WAIT) -> list[str]:
    """Every node's cleanup Job finished; what it said where it failed or did not end, as problems."""
    names = {cleanup_name(n): n for n in nodes}

    def done() -> bool:
        jobs = {j.metadata.name: j for j in batch.list_namespaced_job(namespace, label_selector=f"app={CLEANUP}").items}
        return all(n in jobs and (jobs[n].status.succeeded or jobs[n].status.failed) for n in names)
    poll(done, "the cleanup Jobs to finish", timeout, 2.0)
    problems = []
    jobs = {j.metadata.name: j for j in batch.list_namespaced_job(namespace, label_selector=f"app={CLEANUP}").items}
    for name, node in sorted(names.items()):
        job = jobs.get(name)
        if job is not None and job.status.succeeded:
            continue
        said = ""
        pods = core.list_namespaced_pod(namespace, label_selector=f"job-name={name}").items
        if pods and pods[0].status.phase in ("Succeeded", "Failed"):
            said = core.read_namespaced_pod_log(pods[0].metadata.name, namespace).strip()[-300:]
        state = "failed" if job is not None and job.status.failed else f"did not finish in {timeout:.0f} s"
        problems.append(f"{root} on node {node}: its cleanup Job {name} {state}{f' ({said})' if said else ''}; "
                        f"remove it by hand on that node")
    return problems

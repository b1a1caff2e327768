"""Run one tool as a Kubernetes Job pinned to a node (Kubestone's pattern), as if it ran here.

    python -m dfslab.runtime.kubernetes.job CLUSTER NODE -- ARGV...

Workloads hand every tool to `Runtime.job_command`; on runtime kubernetes that is this
module, so rados bench and fio run in a pod on the client node, with the cluster's ceph.conf
and keyring mounted at the paths the local tools use (a Secret dfslab made), and CephFS
mounted by ceph-fuse inside the (privileged) pod where an argument points into the cluster's
mount. Its stdout and stderr come back apart (the pod prints them around a marker), its exit
code is the tool's, and an interrupt deletes the Job.
"""

from __future__ import annotations

import re
import secrets
import shlex
import signal
import sys
import time

MARK = "--dfslab-job-stderr-8f3a--"
RC_MARK = "--dfslab-job-rc-8f3a--"
CLIENT_SECRET = "dfslab-ceph-client"


def pod_script(mounts: list[str], conf: str, keyring: str) -> str:
    lines = ["set -u"]
    for mnt in mounts:
        lines += [f"mkdir -p {shlex.quote(mnt)}",
                  f"ceph-fuse -c {shlex.quote(conf)} -n client.admin -k {shlex.quote(keyring)} {shlex.quote(mnt)} "
                  ">/tmp/fuse.log 2>&1 || {{ cat /tmp/fuse.log >&2; exit 97; }}"]
    lines.append('"$@" >/tmp/out 2>/tmp/err; rc=$?')
    lines += [f"umount {shlex.quote(m)} 2>/dev/null" for m in mounts]
    lines.append(f"cat /tmp/out; printf '\\n%s\\n' '{MARK}'; cat /tmp/err; printf '\\n%s %d\\n' '{RC_MARK}' \"$rc\"")
    return "\n".join(lines)


def split_output(log: str) -> tuple[str, str, int | None]:
    """(stdout, stderr, exit code) from the pod's log; None when the pod did not finish its script."""
    out, sep, rest = log.partition(f"\n{MARK}\n")
    if not sep:
        return "", log, None
    err, sep, tail = rest.rpartition(f"\n{RC_MARK} ")
    if not sep:
        return out, rest, None
    return out, err, int(tail.split()[0])


def job_manifest(name: str, namespace: str, node: str, image: str, argv: list[str], mounts: list[str],
                 files: dict[str, str]) -> dict:
    conf, keyring = files["conf"], files["keyring"]
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app.kubernetes.io/managed-by": "dfslab"}},
        "spec": {"backoffLimit": 0, "template": {
            "metadata": {"labels": {"app.kubernetes.io/managed-by": "dfslab", "dfslab.io/job": name}},
            "spec": {
                "restartPolicy": "Never", "hostNetwork": True, "dnsPolicy": "ClusterFirstWithHostNet",
                "nodeSelector": {"kubernetes.io/hostname": node},
                "containers": [{
                    "name": "tool", "image": image, "imagePullPolicy": "Never",
                    "command": ["sh", "-c", pod_script(mounts, conf, keyring), "sh", *argv],
                    "env": [{"name": "CEPH_CONF", "value": conf}],
                    "securityContext": {"privileged": bool(mounts)},  # FUSE needs /dev/fuse and mount
                    "volumeMounts": [{"name": "client", "mountPath": path, "subPath": key, "readOnly": True}
                                     for key, path in files.items()],
                }],
                "volumes": [{"name": "client", "secret": {"secretName": CLIENT_SECRET}}],
            }}},
    }


def job_name(argv: list[str]) -> str:
    tool = re.sub(r"[^a-z0-9-]", "-", argv[0].rsplit("/", 1)[-1].lower())[:20].strip("-") or "tool"
    return f"dfslab-{tool}-{secrets.token_hex(3)}"


def run(cluster: str, node: str, argv: list[str]) -> int:
    from kubernetes import client

    from ...state import ClusterState
    from .. import attach_runtime
    from .control import api_client
    rt = attach_runtime(ClusterState(cluster))
    info = rt.state.read()
    namespace = info["spec"].get("kubernetes", {}).get("namespace", "rook-ceph")
    files = info["k8s_client_files"]
    mounts = sorted({p.meta["mount"] for p in rt.procs.all() if p.meta.get("kind") == "client" and p.meta.get("mount")
                     and any(p.meta["mount"] in arg for arg in argv)})
    api = api_client(rt)
    batch, core = client.BatchV1Api(api), client.CoreV1Api(api)
    name = job_name(argv)
    batch.create_namespaced_job(namespace, job_manifest(name, namespace, node, info["k8s_images"]["rook"], argv, mounts, files))

    def delete(*_):
        batch.delete_namespaced_job(name, namespace, propagation_policy="Foreground")
        sys.exit(130)

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, delete)
    pod = None
    while True:
        pods = core.list_namespaced_pod(namespace, label_selector=f"dfslab.io/job={name}").items
        pod = pods[0] if pods else None
        if pod is not None and pod.status.phase in ("Succeeded", "Failed"):
            break
        time.sleep(0.5)
    log = core.read_namespaced_pod_log(pod.metadata.name, namespace)
    batch.delete_namespaced_job(name, namespace, propagation_policy="Background")
    out, err, rc = split_output(log)
    sys.stdout.write(out)
    sys.stderr.write(err)
    if rc is None:
        sys.stderr.write(f"\njob {name}: pod {pod.metadata.name} ended {pod.status.phase} before the tool finished\n")
        return 1
    return rc


def main() -> None:
    args = sys.argv[1:]
    if len(args) < 4 or args[2] != "--":
        sys.exit("usage: python -m dfslab.runtime.kubernetes.job CLUSTER NODE -- ARGV...")
    sys.exit(run(args[0], args[1], args[3:]))


if __name__ == "__main__":
    main()

"""Run one tool as a Kubernetes Job pinned to a node (Kubestone's pattern), as if it ran here.

    python -m dfslab.runtime.kubernetes.job CLUSTER NODE -- ARGV...

With an experiment's `client: job`, workloads hand every tool to `Runtime.job_command`; on
runtime kubernetes that is this module, so rados bench and fio run in a pod on the client
node, with the cluster's ceph.conf and keyring mounted at the paths the local tools use (a
Secret dfslab made), and CephFS
mounted by ceph-fuse inside the (privileged) pod where an argument points into the cluster's
mount. Its stdout and stderr come back apart (the pod prints them around a marker), its exit
code is the tool's, and an interrupt deletes the Job.

The run directory the tool writes into (bandwidth logs) is the host's own directory on the
local Kubernetes (hostPath); on a Kubernetes you run it is an empty directory in the pod whose
files come back in the pod's log as a tar (`carry_back`), unpacked here only inside it.
"""

from __future__ import annotations

import base64
import os
import re
import secrets
import shlex
import signal
import sys
import time
from pathlib import Path

from . import rest

# dfslab modules that need nothing of dfslab (the standard library and Ceph's python3-rados,
# both in dfslab's image): they run in pods as their own source (`python3 -c`).
SHIPPED_MODULES = {"dfslab.backends.ceph.helper", "dfslab.workloads.metadata_worker"}


def is_admin(argv: list[str], admin_tools: frozenset[str]) -> bool:
    """A filesystem's admin CLI (its Backend.admin_tools): no workload, so it takes the control path
    (this machine, or the toolbox pod) and spares each command a Job's pod start."""
    return bool(argv) and argv[0] in admin_tools


def shipped_module(argv: list[str]) -> str | None:
    """The module of `[sys.executable, -m, MODULE, ...]` if it is one that runs in a pod."""
    return argv[2] if len(argv) >= 3 and argv[0] == sys.executable and argv[1] == "-m" and argv[2] in SHIPPED_MODULES \
        else None


def ship(argv: list[str]) -> list[str]:
    """`[sys.executable, -m, MODULE, ARGS...]` as `[python3, -c, SOURCE, ARGS...]` for the pod's own Python."""
    import importlib.util
    source = Path(importlib.util.find_spec(argv[2]).origin).read_text()
    return ["python3", "-c", source, *argv[3:]]


MARK = "--dfslab-job-stderr-8f3a--"
RC_MARK = "--dfslab-job-rc-8f3a--"
FILES_MARK = "--dfslab-job-files-8f3a--"
# The Secret that holds a cluster's client files (a filesystem's backend makes it, with the files'
# paths, the FUSE client and the environment its Jobs need in the state: k8s_client_files,
# k8s_fuse, k8s_client_env).
CLIENT_SECRET = "dfslab-client-files"
# The state key of the directory under which a cluster's filesystem is mounted only in its Jobs'
# pods (a Kubernetes you run: no client mount on this machine), one mount point per client node.
POD_MOUNTS_KEY = "k8s_pod_mounts_under"


def pod_script(mounts: list[str], fuse: list[str], carry_back: list[str] = (), make: list[str] = ()) -> str:
    """`fuse`: the FUSE client's command (it daemonizes once mounted), the mount point appended;
    `make`: directories on those mounts the tool expects to find (made once mounted)."""
    lines = ["set -u"]
    for mnt in mounts:
        lines += [f"mkdir -p {shlex.quote(mnt)}",
                  f"{' '.join(shlex.quote(a) for a in [*fuse, mnt])} "
                  ">/tmp/fuse.log 2>&1 || { cat /tmp/fuse.log >&2; exit 97; }"]
    if make:
        lines.append(f"mkdir -p {' '.join(shlex.quote(d) for d in make)} || exit 96")
    # The tool runs in the background so that this shell (PID 1, which the kernel spares the
    # signals it does not trap) passes on the SIGTERM of the Job's deletion: a server (mariadbd,
    # iperf3 -s) stops at once and cleanly, and its FUSE mounts are released below.
    lines += ['"$@" >/tmp/out 2>/tmp/err & child=$!',
              "trap 'kill -TERM $child 2>/dev/null' TERM INT",
              "wait $child; rc=$?",
              "while kill -0 $child 2>/dev/null; do wait $child; rc=$?; done"]
    lines += [f"umount {shlex.quote(m)} 2>/dev/null || umount -l {shlex.quote(m)}" for m in mounts]
    if mounts:
        # This shell is the container's PID 1: when it exits, the kernel kills ceph-fuse at once,
        # before it has closed its MDS session; the stale session then holds its caps until the
        # MDS's session_timeout (60 s), and the next Job that opens the same files waits for them.
        process = shlex.quote(fuse[0].rsplit("/", 1)[-1])
        lines.append(f"i=0; while pgrep -x {process} >/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done")
    lines.append(f"cat /tmp/out; printf '\\n%s\\n' '{MARK}'; cat /tmp/err")
    if carry_back:
        lines.append(f"printf '\\n%s\\n' '{FILES_MARK}'; tar -C / -czf - {' '.join(shlex.quote(d.lstrip('/')) for d in carry_back)}"
                     " | base64 -w0")
    lines.append(f"printf '\\n%s %d\\n' '{RC_MARK}' \"$rc\"")
    return "\n".join(lines)


def split_output(log: str) -> tuple[str, str, int | None]:
    """(stdout, stderr, exit code) from the pod's log; None when the pod did not finish its script."""
    out, err, _, rc = split_log(log)
    return out, err, rc


def split_log(log: str) -> tuple[str, str, bytes, int | None]:
    """(stdout, stderr, the carried-back tar, exit code) from the pod's log."""
    out, sep, rest = log.partition(f"\n{MARK}\n")
    if not sep:
        return "", log, b"", None
    err, sep, tail = rest.rpartition(f"\n{RC_MARK} ")
    if not sep:
        return out, rest, b"", None
    err, sep, files = err.partition(f"\n{FILES_MARK}\n")
    return out, err, base64.b64decode(files.strip()) if sep else b"", int(tail.split()[0])


def unpack_into(data: bytes, dirs: list[str]) -> list[str]:
    """Unpack the pod's tar of `dirs` here: regular files and directories only, each inside one
    of `dirs` (never a link, a device or a path that climbs out). Returns the files written."""
    import io
    import tarfile
    roots = [Path(d).resolve() for d in dirs]
    written = []
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            dest = (Path("/") / member.name).resolve()
            if not any(dest == r or dest.is_relative_to(r) for r in roots) or not (member.isfile() or member.isdir()):
                raise ValueError(f"the pod's files hold {member.name!r}, outside {dirs} or not a plain file")
            if member.isdir():
                dest.mkdir(parents=True, exist_ok=True)
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(tar.extractfile(member).read())
            written.append(str(dest))
    return written


def pod_mounts(argv: list[str], root: str | None) -> list[str]:
    """The mount points under `root` (where the filesystem is mounted only in pods, one mount
    point per client directly under it) that the tool's arguments point into."""
    if not root:
        return []
    prefix = root.rstrip("/") + "/"
    found = set()
    for arg in argv:
        _, sep, rest = arg.partition(prefix)
        if sep and rest.split("/", 1)[0]:
            found.add(prefix + rest.split("/", 1)[0])
    return sorted(found)


def dirs_to_make(asked: str, mounts: list[str], argv: list[str]) -> list[str]:
    """The directories of `asked` (os.pathsep-joined, Runner's pod dirs) that lie on `mounts` and
    that the tool's arguments name (an earlier step's directory, which its tool may have removed,
    is not made again)."""
    return [d for d in asked.split(os.pathsep) if d and any(Path(d).is_relative_to(m) for m in mounts)
            and any(d in arg for arg in argv)]


def host_dirs(argv: list[str], cwd: Path, roots: list[Path], fuse_mounts: list[str]) -> list[str]:
    """The host directories a tool's path arguments point into (output files, bandwidth logs,
    a scratch directory), so the pod sees them at the same paths: for each argument (or
    `--opt=value`) with a '/', its nearest existing directory, if inside one of dfslab's own
    `roots`; FUSE mounts are mounted in the pod instead. Nested ones are mounted once."""
    found: set[Path] = set()
    for arg in argv:
        value = arg.split("=", 1)[1] if arg.startswith("-") and "=" in arg else arg
        if "/" not in value or any(value.startswith(m) for m in fuse_mounts):
            continue
        path = (cwd / value).resolve()
        while not path.is_dir() and path != path.parent:
            path = path.parent
        if any(path.is_relative_to(root) for root in roots):
            found.add(path)
    return sorted(str(d) for d in found if not any(d != o and d.is_relative_to(o) for o in found))


def client_files(files: dict[str, str]) -> tuple[list[dict], list[dict]]:
    """(volumes, volume mounts) putting the cluster's conf and keyring (the Secret dfslab made)
    at the paths dfslab's own tools use ({"conf": path, "keyring": path}); none for a filesystem
    without them (GlusterFS)."""
    if not files:
        return [], []
    return ([{"name": "client", "secret": {"secretName": CLIENT_SECRET}}],
            [{"name": "client", "mountPath": path, "subPath": key, "readOnly": True} for key, path in files.items()])


def pod_template(name: str, node: str, image: str, argv: list[str], mounts: list[str], files: dict[str, str],
                 dirs: list[str] = (), cwd: str = "/", carry_back: bool = False, fuse: list[str] | None = None,
                 restart: str = "Never", env: dict[str, str] | None = None, make: list[str] = ()) -> dict:
    """The pod that runs `argv` on `node`. carry_back: `dirs` are empty directories in the pod
    whose files come back in its log (a cluster you run); else the host's own directories
    (hostPath, the local Kubernetes). fuse: the filesystem's FUSE client command that mounts
    `mounts`; env: what its tools need in the environment (e.g. where the conf is)."""
    volumes, volume_mounts = client_files(files)
    for i, d in enumerate(dirs):
        volumes.append({"name": f"host-{i}", **({"emptyDir": {}} if carry_back else {"hostPath": {"path": d, "type": "Directory"}})})
        volume_mounts.append({"name": f"host-{i}", "mountPath": d})
    return {
        "metadata": {"labels": {"app.kubernetes.io/managed-by": "dfslab", "dfslab.io/job": name}},
        "spec": {
            "restartPolicy": restart, "hostNetwork": True, "dnsPolicy": "ClusterFirstWithHostNet",
            "nodeSelector": {"kubernetes.io/hostname": node},
            "containers": [{
                "name": "tool", "image": image, "imagePullPolicy": "IfNotPresent" if carry_back else "Never",
                "command": ["sh", "-c", pod_script(mounts, fuse or [], list(dirs) if carry_back else [], make), "sh", *argv],
                "env": [{"name": k, "value": v} for k, v in (env or {}).items()],
                "workingDir": cwd,  # relative paths of the tool's arguments mean what they mean here
                "securityContext": {"privileged": bool(mounts)},  # FUSE needs /dev/fuse and mount
                "volumeMounts": volume_mounts,
            }],
            "volumes": volumes,
        }}


def job_manifest(name: str, namespace: str, node: str, image: str, argv: list[str], mounts: list[str],
                 files: dict[str, str], dirs: list[str] = (), cwd: str = "/", carry_back: bool = False,
                 fuse: list[str] | None = None, env: dict[str, str] | None = None, make: list[str] = ()) -> dict:
    """A Job: work that ends (a benchmark run), its pod never restarted."""
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app.kubernetes.io/managed-by": "dfslab"}},
        "spec": {"backoffLimit": 0,
                 "template": pod_template(name, node, image, argv, mounts, files, dirs, cwd, carry_back, fuse,
                                          env=env, make=make)},
    }


def deployment_manifest(name: str, namespace: str, node: str, image: str, argv: list[str],
                        pulled: bool = False) -> dict:
    """A Deployment: a server the measured clients talk to (iperf3 -s), kept running by
    Kubernetes until dfslab deletes it; it mounts nothing and writes nothing back. pulled: the
    image comes from a registry (a Kubernetes you run), not imported into the nodes."""
    template = pod_template(name, node, image, argv, [], {}, carry_back=pulled, restart="Always")
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app.kubernetes.io/managed-by": "dfslab"}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"dfslab.io/job": name}},
                 "strategy": {"type": "Recreate"}, "template": template},
    }


def is_server(argv: list[str]) -> bool:
    """A measuring server (`iperf3 -s`): it serves until stopped, so it is a Deployment."""
    return bool(argv) and argv[0].rsplit("/", 1)[-1] == "iperf3" and ("-s" in argv or "--server" in argv)


# Waiting reasons a container does not recover from by itself (the image is never pulled here).
STUCK = {"ErrImageNeverPull", "InvalidImageName", "CreateContainerConfigError", "CreateContainerError",
         "ImagePullBackOff", "ErrImagePull"}
SCHEDULE_TIMEOUT = 120
STOP_TIMEOUT = 45  # the pod's grace period is 30 s; the sql workload waits 60 s


def cannot_start(pod, waited: float) -> str | None:
    """Why the Job's pod will never run its tool, or None while it still may."""
    if pod is None:
        return f"no pod was made in {waited:.0f} s" if waited > SCHEDULE_TIMEOUT else None
    for c in pod.status.container_statuses or []:
        waiting = c.state.waiting if c.state else None
        if waiting is not None and waiting.reason in STUCK:
            return f"container cannot start: {waiting.reason}: {waiting.message or ''}".strip()
    if pod.status.phase == "Pending" and not pod.spec.node_name and waited > SCHEDULE_TIMEOUT:
        cond = next((c for c in pod.status.conditions or [] if c.type == "PodScheduled"), None)
        return f"not scheduled in {waited:.0f} s: {cond.message if cond else 'no scheduler decision'}"
    return None


JOBS_LOG = "jobs.jsonl"


def record_job(path: Path, entry: dict) -> None:
    """One line per Job run (the pods and their logs go with the Job): where each tool ran."""
    import json
    with open(path, "a") as fh:
        fh.write(json.dumps(entry) + "\n")


def tool_name(argv: list[str]) -> str:
    """What a Job runs, as its name says it: the tool's file name, or a shipped module's last part."""
    module = shipped_module(argv)
    return module.rsplit(".", 1)[-1] if module else argv[0].rsplit("/", 1)[-1]


def job_name(argv: list[str]) -> str:
    tool = re.sub(r"[^a-z0-9-]", "-", tool_name(argv).lower())[:20].strip("-") or "tool"
    return f"dfslab-{tool}-{secrets.token_hex(3)}"


def on_stop(api, namespace: str, name: str, delete) -> None:
    """On SIGTERM/SIGINT (a server at the end of its steps, an interrupted run): delete the
    object, so the pod's tool gets SIGTERM, and return once the pod is gone, as a local
    process's stop returns once it exited (its files are then still)."""
    def stop(*_):
        from kubernetes.client.exceptions import ApiException
        try:
            delete()
        except ApiException as exc:
            if exc.status != 404:
                raise
        from ...polling import poll
        poll(lambda: not rest.pods(api, namespace, f"dfslab.io/job={name}"), f"the pods of {name} to go", STOP_TIMEOUT, 0.5)
        sys.exit(130)

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, stop)


def wait_pod(api, namespace: str, name: str, node: str, done, delete):
    """The object's pod once `done(pod)`; None (the object deleted, the reason on stderr) when
    it will never run its tool."""
    started = time.monotonic()
    while True:
        pods = rest.pods(api, namespace, f"dfslab.io/job={name}")
        pod = pods[0] if pods else None
        if pod is not None and done(pod):
            return pod
        why = cannot_start(pod, time.monotonic() - started)
        if why:
            delete()
            sys.stderr.write(f"job {name} on {node}: {why}\n")
            return None
        time.sleep(0.5)


def serve(rt, api, namespace: str, node: str, name: str, image: str, argv: list[str], pulled: bool) -> int:
    """A measuring server as a Deployment: returns 1 if its pod never runs; else it serves until
    dfslab stops it (on_stop deletes the Deployment and waits for the pod to go)."""
    from .objects import running_ready
    deployments = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    rest.create(api, deployments, deployment_manifest(name, namespace, node, image, argv, pulled))
    delete = lambda: rest.delete(api, f"{deployments}/{name}", "Foreground")  # noqa: E731
    on_stop(api, namespace, name, delete)
    pod = wait_pod(api, namespace, name, node, running_ready, delete)
    if pod is None:
        return 1
    record_job(rt.home / JOBS_LOG, {"job": name, "kind": "Deployment", "pod": pod.metadata.name,
                                    "node": pod.spec.node_name, "tool": tool_name(argv), "phase": "Running", "rc": None})
    while True:
        signal.pause()


def run(cluster: str, node: str, argv: list[str]) -> int:
    from ...state import ClusterState
    from .. import POD_DIRS_ENV, RUN_DIR_ENV, attach_runtime
    rt = attach_runtime(ClusterState(cluster))
    carry_back = rt.kind == "kubernetes-existing"  # the nodes are not this machine
    info = rt.state.read()
    namespace = rt.namespace
    files = info.get("k8s_client_files", {})
    mounts = sorted({p.meta["mount"] for p in rt.procs.all() if p.meta.get("kind") == "client" and p.meta.get("mount")
                     and any(p.meta["mount"] in arg for arg in argv)} | {*pod_mounts(argv, info.get(POD_MOUNTS_KEY))})
    make = dirs_to_make(os.environ.get(POD_DIRS_ENV, ""), mounts, argv)
    cwd = Path.cwd()
    run_dir = [Path(os.environ[RUN_DIR_ENV])] if os.environ.get(RUN_DIR_ENV) else []
    # the cluster's files a tool names (its conf) are in the pod already, from the Secret
    dirs = host_dirs(argv, cwd, run_dir if carry_back else [rt.state.dir, *run_dir], mounts)
    if carry_back:
        cwd = cwd if any(cwd.is_relative_to(d) for d in dirs) else Path("/")
        node = rt.kube_node(node)
    api = rt.api()
    name, tool = job_name(argv), tool_name(argv)
    if shipped_module(argv):
        argv = ship(argv)
    image = info["k8s_images"]["rook"]
    if is_server(argv):
        return serve(rt, api, namespace, node, name, image, argv, pulled=carry_back)
    jobs = f"/apis/batch/v1/namespaces/{namespace}/jobs"
    rest.create(api, jobs, job_manifest(name, namespace, node, image, argv, mounts, files, dirs, str(cwd), carry_back,
                                        info.get("k8s_fuse"), info.get("k8s_client_env"), make))
    on_stop(api, namespace, name, lambda: rest.delete(api, f"{jobs}/{name}", "Foreground"))
    pod = wait_pod(api, namespace, name, node, lambda p: p.status.phase in ("Succeeded", "Failed"),
                   lambda: rest.delete(api, f"{jobs}/{name}", "Background"))
    if pod is None:
        return 1
    log = rest.pod_log(api, namespace, pod.metadata.name)
    rest.delete(api, f"{jobs}/{name}", "Background")
    out, err, carried, rc = split_log(log)
    if carried:
        unpack_into(carried, dirs)
    record_job(rt.home / JOBS_LOG, {"job": name, "pod": pod.metadata.name, "node": pod.spec.node_name,
                                    "tool": tool, "phase": pod.status.phase, "rc": rc})
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

"""dfslab's fault agent on a Kubernetes you run, as Chaos Mesh's chaos-daemon does it there: a
privileged DaemonSet of dfslab's, in dfslab's namespace, on the nodes that carry the filesystem's
daemons, sharing their PID namespace (hostPID). dfslab execs into the agent's pod on a daemon's
node and the agent signals the processes of that daemon's containers, found by the container's
ID in their cgroups (as `fault kill` does on the local Kubernetes from this machine).

It exists only where the spec lists one of AGENT_KINDS under `kubernetes.allow_faults` (the
owner's consent, as for pod/out/fill), is recorded like every object dfslab makes and goes with
dfslab's namespace at `down`. What it signals is checked before every action: a container of a
pod in dfslab's namespace whose labels the fault's selector matched. Its undo is the kubelet's:
a container whose processes died is started again (restartPolicy Always), so nothing of the
agent's survives a crash of dfslab to be undone.
"""

from __future__ import annotations

import re
import signal
from typing import Any

from ...polling import wait_until
from ..base import RuntimeError_

AGENT = "dfslab-fault-agent"
AGENT_KINDS = ("kill", "stop")  # the fault kinds it injects (its consent: kubernetes.allow_faults)
LABELS = {"app": AGENT, "app.kubernetes.io/managed-by": "dfslab"}
# Every process whose cgroup names the container: signalled, counted. $1 the signal, $2 the ID.
SIGNAL_SCRIPT = r"""n=0
for f in /proc/[0-9]*/cgroup; do
  if grep -q -- "$2" "$f" 2>/dev/null; then
    p=${f#/proc/}; p=${p%/cgroup}
    kill -s "$1" "$p" 2>/dev/null && n=$((n+1))
  fi
done
echo "$n"
"""
SIGNALS = {signal.SIGKILL: "KILL", signal.SIGTERM: "TERM"}


def wanted(allow_faults: list[str]) -> bool:
    """Whether the owner consented to a kind only the agent can inject."""
    return any(kind in AGENT_KINDS for kind in allow_faults)


def daemonset(namespace: str, image: str, nodes: list[str]) -> dict[str, Any]:
    """The agent: dfslab's image sleeping, privileged, in the nodes' PID namespace, on `nodes` only."""
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": sorted(nodes)}]}]}}}
    container = {"name": "agent", "image": image, "imagePullPolicy": "IfNotPresent", "command": ["sleep", "infinity"],
                 "securityContext": {"privileged": True}}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": AGENT, "namespace": namespace, "labels": dict(LABELS)},
            "spec": {"selector": {"matchLabels": {"app": AGENT}},
                     "template": {"metadata": {"labels": dict(LABELS)},
                                  "spec": {"hostPID": True, "affinity": affinity, "terminationGracePeriodSeconds": 0,
                                           "tolerations": [{"operator": "Exists"}], "containers": [container]}}}}


def agent_pod(core, namespace: str, node: str, timeout: float = 120) -> str:
    """The Running agent pod on `node`."""
    def running() -> str | None:
        pods = core.list_namespaced_pod(namespace, label_selector=f"app={AGENT}", field_selector=f"spec.nodeName={node}").items
        names = [p.metadata.name for p in pods if p.status.phase == "Running" and not p.metadata.deletion_timestamp]
        return names[0] if names else None
    return wait_until(running, f"dfslab's fault agent running on node {node}", timeout, 1.0, lambda message: RuntimeError_(
        f"{message}: `kubectl -n {namespace} describe daemonset {AGENT}` says why (it needs privileged pods with hostPID)"))


def exec_output(core, namespace: str, pod: str, argv: list[str], timeout: float = 60,
                container: str | None = None) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `argv` run in `pod` (its `container`, else its only one)
    through the API's exec."""
    from kubernetes.stream import stream
    named = {"container": container} if container else {}
    ws = stream(core.connect_get_namespaced_pod_exec, pod, namespace, command=argv, stdin=False, stdout=True,
                stderr=True, tty=False, _preload_content=False, **named)
    ws.run_forever(timeout=timeout)
    out, err, rc = ws.read_stdout(), ws.read_stderr(), ws.returncode
    ws.close()
    return (rc if rc is not None else 1), out, err


def signal_container(core, namespace: str, pod: Any, container_id: str, sig: int) -> int:
    """Send `sig` to every process of the container `container_id` (containerd://ID) of `pod`, a
    pod of dfslab's namespace, through the agent on its node; how many processes got it."""
    if pod.metadata.namespace != namespace:  # checked again here: the agent acts in dfslab's namespace only
        raise RuntimeError_(f"pod {pod.metadata.name} is in namespace {pod.metadata.namespace}, not dfslab's {namespace}")
    cid = container_id.split("://", 1)[-1]
    if not re.fullmatch(r"[0-9a-f]{64}", cid):
        raise RuntimeError_(f"container {container_id!r} of pod {pod.metadata.name}: not a container ID dfslab knows")
    agent = agent_pod(core, namespace, pod.spec.node_name)
    rc, out, err = exec_output(core, namespace, agent, ["sh", "-c", SIGNAL_SCRIPT, "agent", SIGNALS[sig], cid])
    if rc != 0 or not out.strip().isdigit():
        raise RuntimeError_(f"dfslab's fault agent on {pod.spec.node_name} could not signal {pod.metadata.name}: "
                            f"exit {rc}, {(err or out).strip()[-300:]}")
    return int(out.strip())

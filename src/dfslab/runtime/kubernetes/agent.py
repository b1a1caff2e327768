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
AGENT_KINDS = ("kill", "stop", "partition")  # the fault kinds it injects (its consent: kubernetes.allow_faults)
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
# `sh -c SCRIPT ARGS...` in the network namespace of the container $1's first process (nsenter -n).
IN_NETWORK = r"""cid=$1; shift
for f in /proc/[0-9]*/cgroup; do
  if grep -q -- "$cid" "$f" 2>/dev/null; then p=${f#/proc/}; pid=${p%/cgroup}; break; fi
done
[ -n "$pid" ] || { echo "no process of container $cid on this node" >&2; exit 3; }
exec nsenter -t "$pid" -n sh -c "$@"
"""
# A pod's network cut, both directions: its interface (the default route's) down. Taking it down
# removes its IPv4 routes, printed first so the undo can put them back.
CUT = r"""dev=$(ip -4 route show default | sed -n 's/.* dev \([^ ]*\).*/\1/p' | head -n 1)
dev=${dev:-eth0}
echo "dev $dev"
ip -4 route show | sed 's/^/route /'
ip link set "$dev" down
"""
# ... and back: the interface up, its routes again (the direct ones first, then those via a gateway).
HEAL = r"""dev=$1; shift
ip link set "$dev" up
for r in "$@"; do ip route replace $r 2>/dev/null || true; done
ip link show "$dev" | grep -q "state UP\|,UP"
"""


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


def exec_output(core, namespace: str, pod: str, argv: list[str], timeout: float = 60) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `argv` run in `pod` through the API's exec."""
    from kubernetes.stream import stream
    ws = stream(core.connect_get_namespaced_pod_exec, pod, namespace, command=argv, stdin=False, stdout=True,
                stderr=True, tty=False, _preload_content=False)
    ws.run_forever(timeout=timeout)
    out, err, rc = ws.read_stdout(), ws.read_stderr(), ws.returncode
    ws.close()
    return (rc if rc is not None else 1), out, err


def _checked(namespace: str, pod: Any, container_id: str) -> str:
    """The bare ID of `container_id` (containerd://ID) of `pod`, once `pod` is seen to be in
    dfslab's namespace: checked again here, the agent acts on dfslab's pods only."""
    if pod.metadata.namespace != namespace:
        raise RuntimeError_(f"pod {pod.metadata.name} is in namespace {pod.metadata.namespace}, not dfslab's {namespace}")
    cid = container_id.split("://", 1)[-1]
    if not re.fullmatch(r"[0-9a-f]{64}", cid):
        raise RuntimeError_(f"container {container_id!r} of pod {pod.metadata.name}: not a container ID dfslab knows")
    return cid


def _run(core, namespace: str, pod: Any, argv: list[str], what: str) -> str:
    """`argv` run by the agent on `pod`'s node; its output (an error naming `what` where it failed)."""
    rc, out, err = exec_output(core, namespace, agent_pod(core, namespace, pod.spec.node_name), argv)
    if rc != 0:
        raise RuntimeError_(f"dfslab's fault agent on {pod.spec.node_name} could not {what} {pod.metadata.name}: "
                            f"exit {rc}, {(err or out).strip()[-300:]}")
    return out


def signal_container(core, namespace: str, pod: Any, container_id: str, sig: int) -> int:
    """Send `sig` to every process of the container `container_id` of `pod`, a pod of dfslab's
    namespace, through the agent on its node; how many processes got it."""
    cid = _checked(namespace, pod, container_id)
    out = _run(core, namespace, pod, ["sh", "-c", SIGNAL_SCRIPT, "agent", SIGNALS[sig], cid], "signal")
    if not out.strip().isdigit():
        raise RuntimeError_(f"dfslab's fault agent on {pod.spec.node_name}: no count of signalled processes ({out[-200:]!r})")
    return int(out.strip())


def cut_network(core, namespace: str, pod: Any, container_id: str) -> dict[str, Any]:
    """`pod`'s network cut inside its network namespace (the node's other pods untouched); what
    `heal_network` needs to undo it: the interface and its routes."""
    cid = _checked(namespace, pod, container_id)
    out = _run(core, namespace, pod, ["sh", "-c", IN_NETWORK, "agent", cid, CUT, "pod"], "cut the network of")
    lines = [line.strip() for line in out.splitlines()]
    device = next((line.split(" ", 1)[1] for line in lines if line.startswith("dev ")), None)
    if device is None:
        raise RuntimeError_(f"dfslab's fault agent on {pod.spec.node_name}: no interface named cutting {pod.metadata.name}")
    routes = [line.split(" ", 1)[1] for line in lines if line.startswith("route ")]
    return {"device": device, "routes": sorted(routes, key=lambda r: " via " in r)}


def heal_network(core, namespace: str, pod: Any, container_id: str, cut: dict[str, Any]) -> None:
    """Undo `cut_network` (its record `cut`) in `pod`'s network namespace."""
    cid = _checked(namespace, pod, container_id)
    _run(core, namespace, pod, ["sh", "-c", IN_NETWORK, "agent", cid, HEAL, "pod", cut["device"], *cut["routes"]],
         "restore the network of")

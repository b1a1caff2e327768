"""dfslab's fault agent on a Kubernetes you run, as Chaos Mesh's chaos-daemon does it there: a
privileged DaemonSet of dfslab's, in dfslab's namespace, on the nodes that carry the filesystem's
daemons, sharing their PID namespace (hostPID). dfslab execs into the agent's pod on a daemon's
node and the agent signals the processes of that daemon's containers, found by the container's
ID in their cgroups (as `fault kill` does on the local Kubernetes from this machine), or cuts or
caps their network: the daemons there are on their node's own network (host networking), so
the agent, on that network too (hostNetwork), adds netfilter rules matching only the sockets of
those containers' cgroups (iptables' cgroup match: a cut drops what they send and what reaches
them, a cap classifies what they send into an HTB class of its own), in chains named after
dfslab's namespace; the node's other pods and processes never match them.

It exists only where the spec lists one of AGENT_KINDS under `kubernetes.allow_faults` (the
owner's consent, as for pod/out/fill), is recorded like every object dfslab makes and goes with
dfslab's namespace at `down`. What it signals is checked before every action: a container of a
pod in dfslab's namespace whose labels the fault's selector matched. Its undo is the kubelet's:
a container whose processes died is started again (restartPolicy Always). A cut or a cap is
undone by name (`heal`: its chain and HTB handle are the namespace's, found without any record),
by the fault's undo, `dfslab fault NAME restore`, and `down` before the agent goes.
"""

from __future__ import annotations

import hashlib
import re
import signal
from typing import Any

from ...polling import wait_until
from ..base import RuntimeError_
from ..local import burst_bytes

AGENT = "dfslab-fault-agent"
AGENT_KINDS = ("kill", "stop", "node", "partition", "degrade")  # what it injects (consent: kubernetes.allow_faults)
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

# The network faults' scripts run in the node's cgroup namespace (IN_NODE_CGROUPS: /proc/PID/cgroup
# then reads from the root, and iptables' --path is resolved from it); the agent is on the node's
# network (hostNetwork), where the daemons are. PATHS prints the cgroup v2 path of each container
# ID given, found by a process of it (the "0::" line: the cgroup its sockets carry).
PATHS = r"""paths() {
  for cid in "$@"; do
    p=""
    for f in /proc/[0-9]*/cgroup; do
      if grep -q -- "$cid" "$f" 2>/dev/null; then p=$(sed -n 's/^0:://p' "$f"); [ -n "$p" ] && break; fi
    done
    [ -n "$p" ] || { echo "no process of container $cid in a cgroup v2 hierarchy on this node" >&2; exit 3; }
    echo "$p"
  done
}
"""
# A cut, both directions: what a daemon's sockets send is dropped, and marks its connection; what
# arrives for its sockets (found at input for established ones) or on a marked connection is
# dropped. $1 chain, $2 the connection mark, then the container IDs; prints the cgroups cut.
CUT = PATHS + r"""set -e
chain=$1; mark=$2; shift 2
cut=$(paths "$@")
iptables -w -N "$chain" 2>/dev/null || iptables -w -F "$chain"
for p in $cut; do
  iptables -w -A "$chain" -m cgroup --path "$p" -j CONNMARK --or-mark "$mark"
  iptables -w -A "$chain" -m cgroup --path "$p" -j DROP
done
iptables -w -A "$chain" -m connmark --mark "$mark/$mark" -j DROP
for hook in INPUT OUTPUT; do
  iptables -w -C "$hook" -j "$chain" 2>/dev/null || iptables -w -I "$hook" 1 -j "$chain"
done
echo "$cut"
"""
# A cap on what the daemons send: an HTB root (handle $2) on the device holding the node's address
# $5, unclassified traffic passing it directly, their packets classified into its one class at
# rate $3 (burst $4 bytes). A device whose root qdisc is not the kernel's default (handle 0:) is
# someone else's shaping: refused, nothing changed. Prints the device, then the cgroups.
SHAPE = PATHS + r"""set -e
chain=$1; handle=$2; rate=$3; burst=$4; address=$5; shift 5
dev=$(ip -o -4 addr show | awk -v a="$address" '{split($4, x, "/"); if (x[1] == a) {print $2; exit}}')
[ -n "$dev" ] || { echo "no device of this node holds its address $address" >&2; exit 3; }
root=$(tc qdisc show dev "$dev" root)
case "$root" in
  *" 0: root"*|"") ;;
  *"htb $handle: "*) ;;
  *) echo "device $dev has a root qdisc of its own ($root); dfslab does not replace it" >&2; exit 4 ;;
esac
shaped=$(paths "$@")
tc qdisc replace dev "$dev" root handle "$handle:" htb
tc class replace dev "$dev" parent "$handle:" classid "$handle:1" htb rate "$rate" ceil "$rate" burst "$burst"
iptables -w -t mangle -N "$chain" 2>/dev/null || iptables -w -t mangle -F "$chain"
for p in $shaped; do
  iptables -w -t mangle -A "$chain" -m cgroup --path "$p" -j CLASSIFY --set-class "$handle:1"
done
iptables -w -t mangle -C POSTROUTING -j "$chain" 2>/dev/null || iptables -w -t mangle -I POSTROUTING 1 -j "$chain"
echo "$dev"
echo "$shaped"
"""
# Undo of either, by name only: the chain unhooked and removed from table $2's hooks (the rest of
# the arguments), and, given a handle $3, every root qdisc of that handle removed. Idempotent.
HEAL = r"""chain=$1; table=$2; handle=$3; shift 3
for hook in "$@"; do
  while iptables -w -t "$table" -D "$hook" -j "$chain" 2>/dev/null; do :; done
done
if iptables -w -t "$table" -n -L "$chain" >/dev/null 2>&1; then
  iptables -w -t "$table" -F "$chain" && iptables -w -t "$table" -X "$chain"
fi
if [ -n "$handle" ]; then
  for dev in $(ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1); do
    if tc qdisc show dev "$dev" root | grep -q "htb $handle: "; then tc qdisc del dev "$dev" root; fi
  done
fi
! iptables -w -t "$table" -n -L "$chain" >/dev/null 2>&1
"""
CONNECTION_MARK = "0x0d500000"  # one bit of the connection mark, dfslab's cut's
NETWORK_FAULTS = {"partition": ("filter", ("INPUT", "OUTPUT")), "degrade": ("mangle", ("POSTROUTING",))}


def wanted(allow_faults: list[str]) -> bool:
    """Whether the owner consented to a kind only the agent can inject."""
    return any(kind in AGENT_KINDS for kind in allow_faults)


def daemonset(namespace: str, image: str, nodes: list[str]) -> dict[str, Any]:
    """The agent: dfslab's image sleeping, privileged, in the nodes' PID namespace, on `nodes` only."""
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": sorted(nodes)}]}]}}}
    # hostNetwork: where the daemons are (their node's network), so its rules apply to theirs
    container = {"name": "agent", "image": image, "imagePullPolicy": "IfNotPresent", "command": ["sleep", "infinity"],
                 "securityContext": {"privileged": True}}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": AGENT, "namespace": namespace, "labels": dict(LABELS)},
            "spec": {"selector": {"matchLabels": {"app": AGENT}},
                     "template": {"metadata": {"labels": dict(LABELS)},
                                  "spec": {"hostPID": True, "hostNetwork": True, "affinity": affinity, "terminationGracePeriodSeconds": 0,
                                           "tolerations": [{"operator": "Exists"}], "containers": [container]}}}}


def agent_pod(core, namespace: str, node: str, timeout: float = 120) -> str:
    """The Running agent pod on `node`."""
    def running() -> str | None:
        pods = core.list_namespaced_pod(namespace, label_selector=f"app={AGENT}", field_selector=f"spec.nodeName={node}").items
        names = [p.metadata.name for p in pods if p.status.phase == "Running" and not p.metadata.deletion_timestamp]
        return names[0] if names else None
    return wait_until(running, f"dfslab's fault agent running on node {node}", timeout, 1.0, lambda message: RuntimeError_(
        f"{message}: `kubectl -n {namespace} describe daemonset {AGENT}` says why (it needs privileged pods with hostPID)"))


def ever_started(pod: Any) -> bool:
    """Whether the agent's container in `pod` ever ran (running now, or restarted since)."""
    return any(c.state.running or c.restart_count or (c.last_state and c.last_state.terminated)
               for c in (pod.status.container_statuses or []))


def exec_output(core, namespace: str, pod: str, argv: list[str], timeout: float = 60,
                container: str | None = None) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `argv` run in `pod` (its `container`, else its only one)
    through the API's exec."""
    from .rest import exec_stream
    ws = exec_stream(core.api_client, namespace, pod, argv, stdin=False, container=container)
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


def _run(core, namespace: str, node: str, argv: list[str], what: str) -> str:
    """`argv` run by the agent on `node`; its output (an error saying it could not `what` where it failed)."""
    rc, out, err = exec_output(core, namespace, agent_pod(core, namespace, node), argv)
    if rc != 0:
        raise RuntimeError_(f"dfslab's fault agent on {node} could not {what}: exit {rc}, {(err or out).strip()[-300:]}")
    return out


def signal_container(core, namespace: str, pod: Any, container_id: str, sig: int) -> int:
    """Send `sig` to every process of the container `container_id` (containerd://ID) of `pod`, a
    pod of dfslab's namespace, through the agent on its node; how many processes got it."""
    cid = _checked(namespace, pod, container_id)
    out = _run(core, namespace, pod.spec.node_name, ["sh", "-c", SIGNAL_SCRIPT, "agent", SIGNALS[sig], cid],
               f"signal {pod.metadata.name}")
    if not out.strip().isdigit():
        raise RuntimeError_(f"dfslab's fault agent on {pod.spec.node_name}: no count of signalled processes ({out[-200:]!r})")
    return int(out.strip())


def chain(namespace: str, kind: str) -> str:
    """The netfilter chain of `kind` (partition, degrade) of dfslab's cluster in `namespace`: named
    after it (28 characters at most), so a heal finds it with no record."""
    return f"DFSLAB-{'CUT' if kind == 'partition' else 'CAP'}-{hashlib.sha1(namespace.encode()).hexdigest()[:10]}"


def htb_handle(namespace: str) -> str:
    """The HTB root's handle of dfslab's cap in `namespace` (hex, never 0: the kernel's default's)."""
    return format(int(hashlib.sha1(namespace.encode()).hexdigest()[:4], 16) | 0x8000, "x")


def _host_networked(namespace: str, node: str, pods: list[tuple[Any, str]]) -> list[str]:
    """The bare container IDs of `pods` ((pod, container ID) on `node`), once each pod is seen to be
    dfslab's, on `node`, and on the node's own network (where the agent's rules apply to it)."""
    ids = []
    for pod, container_id in pods:
        ids.append(_checked(namespace, pod, container_id))
        if pod.spec.node_name != node or not pod.spec.host_network:
            raise RuntimeError_(f"pod {pod.metadata.name} is not on node {node}'s own network: dfslab's agent cuts and "
                                "caps daemons on their node's network only (host networking, as dfslab deploys them)")
    return ids


# `sh -c WRAP SCRIPT agent ARGS...`: SCRIPT in the cgroup namespace of the node's PID 1 where it may be
# entered (a container's own, private on cgroup v2 nodes, would show the paths from itself), else
# in the agent's own (a host that refuses it, as this machine does: the host's namespace already).
IN_NODE_CGROUPS = r"""if nsenter -t 1 -C -- true 2>/dev/null; then exec nsenter -t 1 -C -- sh -c "$0" "$@"; fi
exec sh -c "$0" "$@"
"""


def _in_node_cgroups(script: str, *args: str) -> list[str]:
    return ["sh", "-c", IN_NODE_CGROUPS, script, "agent", *args]


def cut(core, namespace: str, node: str, pods: list[tuple[Any, str]]) -> dict[str, Any]:
    """The network of `pods` ((pod, container ID), dfslab's daemons on `node`) cut both ways on
    their node; the record: the chain and the cgroups cut."""
    ids = _host_networked(namespace, node, pods)
    name = chain(namespace, "partition")
    out = _run(core, namespace, node, _in_node_cgroups(CUT, name, CONNECTION_MARK, *ids),
               f"cut the network of {', '.join(p.metadata.name for p, _ in pods)}")
    return {"chain": name, "cgroups": out.split()}


def cap(core, namespace: str, node: str, pods: list[tuple[Any, str]], rate_bps: int) -> dict[str, Any]:
    """What `pods` ((pod, container ID), dfslab's daemons on `node`) send capped at `rate_bps`; the
    record: the chain, the device and its HTB handle, the cgroups capped."""
    ids = _host_networked(namespace, node, pods)
    name, handle = chain(namespace, "degrade"), htb_handle(namespace)
    shape = [name, handle, f"{rate_bps}bit", str(burst_bytes(rate_bps)), pods[0][0].status.host_ip, *ids]
    out = _run(core, namespace, node, _in_node_cgroups(SHAPE, *shape),
               f"cap the network of {', '.join(p.metadata.name for p, _ in pods)}").split()
    return {"chain": name, "device": out[0], "handle": handle, "cgroups": out[1:]}


def heal(core, namespace: str, node: str, kind: str) -> None:
    """Undo `kind` (partition, degrade) of dfslab's cluster in `namespace` on `node`, from the names
    alone (a crash of dfslab's leaves no other record to trust)."""
    table, hooks = NETWORK_FAULTS[kind]
    handle = htb_handle(namespace) if kind == "degrade" else ""
    _run(core, namespace, node, _in_node_cgroups(HEAL, chain(namespace, kind), table, handle, *hooks),
         f"undo its {kind} of dfslab's daemons")

"""dfslab's fault agent on a Kubernetes you run (runtime/kubernetes/agent.py): its DaemonSet, what
it refuses to act on, and its signalling script run for real against a process in a cgroup named
by a container ID, as a container's processes are on a node."""

import os
import signal
import subprocess
import time
import uuid
from pathlib import Path
from types import SimpleNamespace as NS

import pytest

from dfslab.polling import wait_until
from dfslab.runtime.base import RuntimeError_
from dfslab.runtime.kubernetes import agent


def test_the_daemonset_is_privileged_in_the_nodes_pid_namespace_on_the_spec_nodes_only():
    ds = agent.daemonset("dfslab-yours", "registry.example.org/storage:tag", ["node2", "node1"])
    assert (ds["kind"], ds["metadata"]["name"], ds["metadata"]["namespace"]) == ("DaemonSet", agent.AGENT, "dfslab-yours")
    pod = ds["spec"]["template"]["spec"]
    assert pod["hostPID"] is True and pod["containers"][0]["securityContext"] == {"privileged": True}
    [term] = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term["matchExpressions"] == [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["node1", "node2"]}]
    assert ds["spec"]["selector"]["matchLabels"].items() <= ds["spec"]["template"]["metadata"]["labels"].items()
    assert agent.wanted(["pod", "kill"]) and not agent.wanted(["pod", "out", "fill"])  # made only with the consent


def _pod(namespace="dfslab-yours"):
    return NS(metadata=NS(name="rook-ceph-osd-0-abc", namespace=namespace), spec=NS(node_name="node1"))


def test_it_acts_only_on_pods_of_dfslabs_namespace_and_on_container_ids():
    with pytest.raises(RuntimeError_, match="not dfslab's dfslab-yours"):
        agent.signal_container(None, "dfslab-yours", _pod("kube-system"), "containerd://" + "a" * 64, signal.SIGKILL)
    with pytest.raises(RuntimeError_, match="not a container ID"):
        agent.signal_container(None, "dfslab-yours", _pod(), "containerd://a;rm -rf /", signal.SIGKILL)


@pytest.fixture
def contained():
    """A process in a pids cgroup named like a container's (64 hex digits): what the agent finds."""
    cid = (uuid.uuid4().hex * 2)[:64]
    group = Path("/sys/fs/cgroup/pids") / f"dfslab-test-{cid}"
    if not group.parent.is_dir():
        pytest.skip("no cgroup v1 pids hierarchy here")
    group.mkdir()
    proc = subprocess.Popen(["sleep", "60"])
    bystander = subprocess.Popen(["sleep", "60"])  # not in the cgroup: must survive
    try:
        (group / "cgroup.procs").write_text(str(proc.pid))
        yield cid, proc, bystander
    finally:
        for p in (proc, bystander):
            p.kill()
            p.wait()
        for _ in range(50):
            try:
                group.rmdir()
                break
            except OSError:
                time.sleep(0.1)


def test_the_script_signals_exactly_the_containers_processes(contained):
    cid, proc, bystander = contained
    res = subprocess.run(["sh", "-c", agent.SIGNAL_SCRIPT, "agent", "TERM", cid], capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0 and res.stdout.strip() == "1", (res.stdout, res.stderr)
    assert proc.wait(timeout=10) == -signal.SIGTERM
    assert bystander.poll() is None  # the process outside the cgroup was not touched


def test_the_network_faults_check_their_pods_before_the_agent_is_asked():
    pod = NS(metadata=NS(name="rook-ceph-osd-0-abc", namespace="dfslab-yours"), spec=NS(node_name="node1", host_network=False))
    with pytest.raises(RuntimeError_, match="not on node node1's own network"):
        agent.cut(None, "dfslab-yours", "node1", [(pod, "containerd://" + "a" * 64)])
    other = NS(metadata=NS(name="user-db", namespace="theirs"), spec=NS(node_name="node1", host_network=True))
    with pytest.raises(RuntimeError_, match="not dfslab's dfslab-yours"):
        agent.cap(None, "dfslab-yours", "node1", [(other, "containerd://" + "a" * 64)], 10**8)
    # named after the namespace, within iptables' 28 characters, found again with no record
    assert agent.chain("dfslab-yours", "partition") == agent.chain("dfslab-yours", "partition") != agent.chain("b", "partition")
    assert all(len(agent.chain("x" * 63, kind)) <= 28 for kind in agent.NETWORK_FAULTS)
    assert int(agent.htb_handle("dfslab-yours"), 16) & 0x8000


SERVER = r"""
import socket, sys, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen()
def serve(c):
    while (data := c.recv(65536)):
        c.sendall(data)
while True:
    threading.Thread(target=serve, args=(s.accept()[0],), daemon=True).start()
"""
# Connects to $1:$2 once ("new"), or keeps one connection ("old": made, then a line on stdin per try).
CLIENT = r"""
import socket, sys
def echo(c, n):
    c.sendall(b"x" * n); got = 0
    while got < n:
        part = c.recv(65536)
        if not part: raise OSError("closed")
        got += len(part)
try:
    c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=2); echo(c, int(sys.argv[3])); print("ok")
except OSError as exc:
    print("cut", exc)
"""


@pytest.fixture
def node_with_a_daemon():
    """Two network namespaces on a veth pair, as a node and its peer: on the node a "daemon" (an
    echo server in a cgroup v2 group named like a container's) and a bystander echo server outside
    it, as the other pods on a node; what the agent's scripts act on."""
    unified = next((line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()
                    if line.split()[2] == "cgroup2"), None)
    if unified is None:
        pytest.skip("no cgroup v2 hierarchy mounted here")
    tag = uuid.uuid4().hex[:6]
    node, peer, cid = f"dfslab-agt-{tag}", f"dfslab-agp-{tag}", (uuid.uuid4().hex * 2)[:64]
    group = Path(unified) / f"dfslab-test-{cid}"
    procs = []
    try:
        for ns in (node, peer):
            subprocess.run(["ip", "netns", "add", ns], check=True)
        subprocess.run(["ip", "-n", node, "link", "add", "n0", "type", "veth", "peer", "name", "p0", "netns", peer], check=True)
        for ns, dev, addr in ((node, "n0", "10.251.0.1/24"), (peer, "p0", "10.251.0.2/24")):
            subprocess.run(["ip", "-n", ns, "addr", "add", addr, "dev", dev], check=True)
            subprocess.run(["ip", "-n", ns, "link", "set", dev, "up"], check=True)
            subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True)
        group.mkdir()
        # the daemon joins the group before its socket exists: a socket carries its maker's cgroup
        procs.append(subprocess.Popen(["sh", "-c", f'echo $$ > {group}/cgroup.procs; exec ip netns exec {node} python3 -c "$0" 7001',
                                       SERVER]))
        procs.append(subprocess.Popen(["ip", "netns", "exec", node, "python3", "-c", SERVER, "7002"]))
        wait_until(lambda: all(_echo(peer, port) == "ok" for port in (7001, 7002)), "both echo servers", 20, 0.2)
        yield NS(node=node, peer=peer, cid=cid, group=group)
    finally:
        for p in procs:
            p.kill()
            p.wait()
        for ns in (node, peer):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        for _ in range(50):
            try:
                group.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.1)


def _echo(ns: str, port: int, size: int = 1000) -> str:
    res = subprocess.run(["ip", "netns", "exec", ns, "python3", "-c", CLIENT, "10.251.0.1", str(port), str(size)],
                         capture_output=True, text=True, timeout=30)
    return res.stdout.split(" ")[0].strip()


def _script(ns: str, script: str, *args: str) -> subprocess.CompletedProcess:
    # as the agent runs it: in the node's cgroup namespace, on the node's network
    return subprocess.run(["ip", "netns", "exec", ns, *agent._in_node_cgroups(script, *args)], capture_output=True,
                          text=True, timeout=60)


def test_the_cut_takes_only_the_daemons_network_both_ways_and_the_heal_gives_it_back(node_with_a_daemon):
    n = node_with_a_daemon
    chain = agent.chain(f"dfslab-test-{n.cid[:6]}", "partition")
    cut = _script(n.node, agent.CUT, chain, agent.CONNECTION_MARK, n.cid)
    assert cut.returncode == 0, cut.stderr
    assert cut.stdout.split() == [f"/{n.group.name}"]  # the group's path, from the node's cgroup root
    assert _echo(n.peer, 7001) == "cut"  # nothing reaches the daemon or leaves it
    assert _echo(n.peer, 7002) == "ok"  # the bystander on the same node keeps its network
    heal = _script(n.node, agent.HEAL, chain, *agent.NETWORK_FAULTS["partition"][:1], "", *agent.NETWORK_FAULTS["partition"][1])
    assert heal.returncode == 0, heal.stderr
    assert _echo(n.peer, 7001) == "ok"
    rules = subprocess.run(["ip", "netns", "exec", n.node, "iptables", "-S"], capture_output=True, text=True).stdout
    assert "DFSLAB" not in rules  # nothing of the cut left, and a second heal finds nothing to do
    again = _script(n.node, agent.HEAL, chain, "filter", "", "INPUT", "OUTPUT")
    assert again.returncode == 0, again.stderr


def _class_bytes(ns: str, handle: str) -> int:
    out = subprocess.run(["tc", "-n", ns, "-s", "class", "show", "dev", "n0", "classid", f"{handle}:1"],
                         capture_output=True, text=True).stdout
    return int(out.split("Sent ", 1)[1].split(" ", 1)[0])


def test_the_cap_classifies_only_what_the_daemon_sends_and_the_heal_removes_it(node_with_a_daemon):
    n = node_with_a_daemon
    name, handle = agent.chain(f"dfslab-test-{n.cid[:6]}", "degrade"), agent.htb_handle(f"dfslab-test-{n.cid[:6]}")
    cap = _script(n.node, agent.SHAPE, name, handle, "80mbit", "100000", "10.251.0.1", n.cid)
    assert cap.returncode == 0, cap.stderr
    assert cap.stdout.split() == ["n0", f"/{n.group.name}"]  # the device holding the node's address
    before = _class_bytes(n.node, handle)
    assert _echo(n.peer, 7002, 2_000_000) == "ok"  # the bystander's 2 MB back: not in the class
    assert _class_bytes(n.node, handle) - before < 100_000
    assert _echo(n.peer, 7001, 2_000_000) == "ok"  # the daemon's 2 MB back: all through the class
    assert _class_bytes(n.node, handle) - before >= 2_000_000
    # a device whose root qdisc is someone else's is refused, nothing changed
    heal = _script(n.node, agent.HEAL, name, "mangle", handle, "POSTROUTING")
    assert heal.returncode == 0, heal.stderr
    assert "htb" not in subprocess.run(["tc", "-n", n.node, "qdisc", "show", "dev", "n0"], capture_output=True, text=True).stdout
    subprocess.run(["tc", "-n", n.node, "qdisc", "add", "dev", "n0", "root", "handle", "1:", "htb"], check=True)
    theirs = _script(n.node, agent.SHAPE, name, handle, "80mbit", "100000", "10.251.0.1", n.cid)
    assert theirs.returncode == 4 and "root qdisc of its own" in theirs.stderr
    assert "DFSLAB" not in subprocess.run(["ip", "netns", "exec", n.node, "iptables", "-t", "mangle", "-S"],
                                          capture_output=True, text=True).stdout


def test_fault_list_names_each_kinds_targets_from_the_spec_or_the_running_pods(monkeypatch):
    from dfslab import chaos
    from dfslab.spec import load_spec
    from conftest import REPO
    local = load_spec(f"{REPO}/examples/ceph-small.yaml")
    targets = chaos.targets_of(NS(spec=local, runtime=NS(daemons_in_pods=False)))
    assert targets["kill"] == chaos.daemons_of(local) and "osd.0" in targets["kill"]
    assert targets["partition"] == [*local.node_names(), *local.client_names()]  # a client's link too
    assert targets["node"] == local.node_names()  # a node's daemons: the servers'
    assert "fill" not in targets  # a kind of its own target (an OSD to fill, by Ceph's rule) is left out
    # Rook names its daemons: the running pods of dfslab's namespace say which (stood in for here)
    from dfslab.chaos import pod
    yours = load_spec(f"{REPO}/examples/rook-yours.yaml")
    monkeypatch.setattr(pod, "running_daemons", lambda cluster: ["mgr.a", "mon.a", "osd.0", "osd.1"])
    targets = chaos.targets_of(NS(spec=yours.model_copy(update={"kubernetes": yours.kubernetes.model_copy(
        update={"allow_faults": ["kill", "partition"]})}), runtime=NS(daemons_in_pods=True)))
    # the client node by dfslab's name for it (kubernetes.clients maps it to worker4)
    assert targets == {"kill": ["mgr.a", "mon.a", "osd.0", "osd.1"], "partition": ["worker1", "worker2", "worker3",
                                                                                    "client"]}, targets


def test_down_heals_only_nodes_whose_agent_ever_ran():
    # one whose image was never pulled put nothing on its node: down does not wait on it
    waiting = NS(status=NS(container_statuses=[NS(state=NS(running=None), restart_count=0, last_state=NS(terminated=None))]))
    pending = NS(status=NS(container_statuses=None))
    ran = NS(status=NS(container_statuses=[NS(state=NS(running=None), restart_count=2, last_state=NS(terminated=None))]))
    running = NS(status=NS(container_statuses=[NS(state=NS(running=object()), restart_count=0, last_state=None)]))
    assert [agent.ever_started(p) for p in (waiting, pending, ran, running)] == [False, False, True, True]

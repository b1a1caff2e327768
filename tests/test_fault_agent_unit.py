"""dfslab's fault agent on a Kubernetes you run (runtime/kubernetes/agent.py): its DaemonSet, what
it refuses to act on, and its signalling script run for real against a process in a cgroup named
by a container ID, as a container's processes are on a node."""

import os
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


def _in_cgroup(argv: list[str]):
    """`argv` started in a pids cgroup named like a container's (64 hex digits): what the agent
    finds; (its ID, the process, the cgroup)."""
    cid = (uuid.uuid4().hex * 2)[:64]
    group = Path("/sys/fs/cgroup/pids") / f"dfslab-test-{cid}"
    if not group.parent.is_dir():
        pytest.skip("no cgroup v1 pids hierarchy here")
    group.mkdir()
    proc = subprocess.Popen(argv)
    (group / "cgroup.procs").write_text(str(proc.pid))
    return cid, proc, group


def _remove_cgroup(group: Path) -> None:
    for _ in range(50):
        try:
            group.rmdir()
            return
        except OSError:
            time.sleep(0.1)


@pytest.fixture
def contained():
    cid, proc, group = _in_cgroup(["sleep", "60"])
    bystander = subprocess.Popen(["sleep", "60"])  # not in the cgroup: must survive
    try:
        yield cid, proc, bystander
    finally:
        for p in (proc, bystander):
            p.kill()
            p.wait()
        _remove_cgroup(group)


def test_the_script_signals_exactly_the_containers_processes(contained):
    cid, proc, bystander = contained
    res = subprocess.run(["sh", "-c", agent.SIGNAL_SCRIPT, "agent", "TERM", cid], capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0 and res.stdout.strip() == "1", (res.stdout, res.stderr)
    assert proc.wait(timeout=10) == -signal.SIGTERM
    assert bystander.poll() is None  # the process outside the cgroup was not touched


def _ip(*args: str) -> str:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture
def pod_network():
    """A pod's shape: a process in a cgroup named by a container ID, in a network namespace whose
    interface has an address, a gateway and a default route; the gateway's end in another."""
    pod, gateway = f"dfs-agenttest-{uuid.uuid4().hex[:6]}", f"dfs-agentgw-{uuid.uuid4().hex[:6]}"
    for ns in (pod, gateway):
        _ip("netns", "add", ns)
    try:
        _ip("-n", pod, "link", "add", "eth0", "type", "veth", "peer", "name", "gw0", "netns", gateway)
        _ip("-n", pod, "addr", "add", "10.251.0.2/24", "dev", "eth0")
        _ip("-n", gateway, "addr", "add", "10.251.0.1/24", "dev", "gw0")
        for ns, dev in ((pod, "eth0"), (gateway, "gw0")):
            _ip("-n", ns, "link", "set", dev, "up")
        _ip("-n", pod, "route", "add", "default", "via", "10.251.0.1")
        cid, proc, group = _in_cgroup(["ip", "netns", "exec", pod, "sleep", "60"])
        inside = os.stat(f"/run/netns/{pod}").st_ino
        try:
            wait_until(lambda: os.stat(f"/proc/{proc.pid}/ns/net").st_ino == inside, "the process in the pod's namespace",
                       10, 0.02)
            yield pod, cid
        finally:
            proc.kill()
            proc.wait()
            _remove_cgroup(group)
    finally:
        for ns in (pod, gateway):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def test_a_cut_takes_the_pods_interface_down_and_the_heal_brings_it_and_its_routes_back(pod_network):
    pod, cid = pod_network
    routes = _ip("-n", pod, "-4", "route", "show")
    assert "default via 10.251.0.1" in routes
    res = subprocess.run(["sh", "-c", agent.IN_NETWORK, "agent", cid, agent.CUT, "pod"], capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    lines = [line.strip() for line in res.stdout.splitlines()]
    assert lines[0] == "dev eth0" and "route default via 10.251.0.1 dev eth0" in lines, lines
    assert "state DOWN" in _ip("-n", pod, "link", "show", "eth0") and _ip("-n", pod, "-4", "route", "show") == ""
    cut = [line.split(" ", 1)[1] for line in lines if line.startswith("route ")]
    res = subprocess.run(["sh", "-c", agent.IN_NETWORK, "agent", cid, agent.HEAL, "pod", "eth0",
                          *sorted(cut, key=lambda r: " via " in r)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert _ip("-n", pod, "-4", "route", "show") == routes  # the subnet's and the default route, as before
    assert ",UP" in _ip("-n", pod, "link", "show", "eth0")

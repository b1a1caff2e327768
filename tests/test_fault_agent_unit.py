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

"""GlusterFS on runtime kubernetes (the local Kubernetes): glusterd as a StatefulSet, the volume
made by a bootstrap Job, fio as a Job that mounts the volume in its pod; replica 3 up, faulted (a
glusterd pod deleted; a node lost) during writes, healed, nothing lost; down leaves nothing. The
other layouts (disperse 2+1 among them) are the same `volume create` on every runtime: tested on
the local runtime (test_gluster.py), not again here."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest

from conftest import REPO, dfslab
from test_readme import sh, user_env
from dfslab.procs import marked_pids
from dfslab.state import ClusterState

pytestmark = [pytest.mark.cluster, pytest.mark.kubernetes]  # needs the Kubernetes and Rook build (scripts/build-kubernetes.sh)


def _down(name: str, down=None) -> None:
    state = ClusterState(name)
    down() if down else dfslab("down", name, timeout=600)
    assert not marked_pids(name)
    assert not [ns for ns in os.listdir("/run/netns") if ns.startswith(f"dfs-{name}-")]
    assert str(state.dir) not in Path("/proc/mounts").read_text()
    assert not state.dir.exists()


DOCS_NAME = "gluster-k8s"  # examples/gluster-k8s.yaml, as docs/kubernetes.md brings it up
# docs/kubernetes.md's GlusterFS block, run verbatim here (tests/test_docs_commands.py counts it)
DOCS_BLOCK = ["dfslab up examples/gluster-k8s.yaml", "dfslab run examples/gluster-k8s-faults.yaml --cluster gluster-k8s",
              "dfslab down gluster-k8s"]
READER_HOME = Path("/var/lib/dfslab")  # where a reader's clusters live (no DFSLAB_HOME set)


@contextmanager
def reader_home():
    """This process looks at the reader's clusters (the docs' commands made them there)."""
    saved = os.environ["DFSLAB_HOME"]
    os.environ["DFSLAB_HOME"] = str(READER_HOME)
    try:
        yield
    finally:
        os.environ["DFSLAB_HOME"] = saved


@contextmanager
def docs_cluster(name: str, block: list[str]):
    """A docs page's cluster `name` for a module's tests: `block`'s first line (its `dfslab up`) run
    as the reader runs it, its last (`dfslab down`) after, checked to leave nothing."""
    assert not (READER_HOME / "clusters" / name).exists(), f"a cluster named {name} is up"
    try:
        sh(block[0], timeout=1500)
        yield name
    finally:
        if (READER_HOME / "clusters" / name).exists():  # a failed up removed what it made
            with reader_home():
                _down(name, lambda: sh(block[-1], timeout=900))


@pytest.fixture(scope="module")
def replica():
    """docs/kubernetes.md's GlusterFS block, verbatim from the repository root with the reader's
    environment: `dfslab up examples/gluster-k8s.yaml` (replica 3) here, its faults run and
    `dfslab down gluster-k8s` by the tests below."""
    with docs_cluster(DOCS_NAME, DOCS_BLOCK) as name:
        yield name


def _pods(name: str) -> list:
    from kubernetes import client

    from dfslab.backends.gluster.kube import NAMESPACE
    from dfslab.runtime import attach_runtime
    return client.CoreV1Api(attach_runtime(ClusterState(name)).api()).list_namespaced_pod(NAMESPACE).items


def test_glusterd_runs_as_a_statefulset_one_pod_per_node_and_the_bootstrap_job_made_the_volume(replica):
    status = json.loads(sh(f"dfslab status {replica} --json").stdout)
    assert status["health"] == "HEALTH_OK", status["summary"]
    assert (status["volume"]["type"], status["volume"]["status"], status["volume"]["bricks"]) == ("Replicate", "Started", 3)
    assert all(b["online"] for b in status["bricks"]) and all(p["connected"] for p in status["peers"])
    with reader_home():
        pods = _pods(replica)
    glusterd = {p.metadata.name: p.spec.node_name for p in pods if p.metadata.name.startswith("glusterd-")}
    assert sorted(glusterd) == ["glusterd-0", "glusterd-1", "glusterd-2"]
    assert sorted(glusterd.values()) == ["node1", "node2", "node3"]  # one per server node
    assert [p.status.phase for p in pods if p.metadata.name.startswith("gluster-bootstrap")] == ["Succeeded"]
    # The bricks' PIDs are this machine's: each is a glusterfsd
    for brick in status["bricks"]:
        assert Path(f"/proc/{brick['pid']}/comm").read_text().strip() == "glusterfsd", brick


def _helpers_left(name: str) -> list[int]:
    """glfsheal processes in the cluster's network namespaces: the gluster CLI's crawlers, which
    once outlived every heal query that gave up and piled up until none answered."""
    nets = {os.stat(f"/run/netns/{ns}").st_ino for ns in os.listdir("/run/netns") if ns.startswith(f"dfs-{name}-")}
    out = []
    for proc in psutil.process_iter(["name"]):
        try:
            if proc.info["name"] == "glfsheal" and os.stat(f"/proc/{proc.pid}/ns/net").st_ino in nets:
                out.append(proc.pid)
        except OSError:
            continue
    return out


def test_the_docs_faults_lose_a_pod_and_a_node_during_writes_heal_and_lose_nothing(replica):
    """`dfslab run examples/gluster-k8s-faults.yaml --cluster gluster-k8s` as the page shows it:
    node2's glusterd pod deleted during one fio Job's writes, node3 lost during the next's."""
    with reader_home():
        restarts = lambda: {p.metadata.name: sum(c.restart_count for c in p.status.container_statuses or [])  # noqa: E731
                            for p in _pods(replica) if p.spec.node_name == "node3" and p.metadata.name.startswith("glusterd")}
        before = restarts()
        old = {p.metadata.uid for p in _pods(replica) if p.spec.node_name == "node2" and p.metadata.name.startswith("glusterd")}
    made: list[Path] = []  # the run directory dfslab printed: cluster-b's tests write into ./runs meanwhile
    try:
        sh(DOCS_BLOCK[1], timeout=1800, made=made)
        (run,) = made
        _check_the_docs_faults(replica, run, before, old, restarts)
    finally:
        for path in made:
            shutil.rmtree(path, ignore_errors=True)
    # a fault the pods' runtime cannot do is refused, naming the one that can
    res = subprocess.run(["bash", "-c", f"dfslab fault {replica} brick node2/b0"], cwd=REPO, env=user_env(),
                         capture_output=True, text=True, timeout=120)
    assert res.returncode != 0 and "fault pod" in res.stderr, res.stderr


def check_job_fault_run(name: str, run: Path, faults: list[tuple[str, str]]) -> None:
    """A docs page's fault run of the reader's cluster `name`: two fio write steps as Jobs, a fault
    each (`faults`: kind, target), each injected without error and healed with writes acknowledged
    during it, every checksummed object read back whole, both steps measured, both Jobs succeeded."""
    events = json.loads((run / "faults.json").read_text())
    assert [(e["kind"], e["target"], e["error"]) for e in events] == [(*f, None) for f in faults], events
    assert all(e["recover_s"] is not None and e["acknowledged_writes"] > 0 for e in events), events
    integrity = json.loads((run / "integrity.json").read_text())
    assert integrity["lost"] == 0 and integrity["corrupt"] == 0 and integrity["checked"] > 20, integrity
    with open(run / "results.csv") as fh:
        rows = [r for r in csv.DictReader(fh) if r["workload"] == "fio" and r["metric"] == "bandwidth"]
    assert len({r["step"] for r in rows}) == 2 and all(float(r["value"]) > 0 for r in rows), rows
    with reader_home():
        jobs = [json.loads(line) for line in (ClusterState(name).dir / "kubernetes/jobs.jsonl").read_text().splitlines()]
    assert sum((j["tool"], j["node"], j["phase"], j["rc"]) == ("fio", "client", "Succeeded", 0) for j in jobs) >= 2, jobs


def _check_the_docs_faults(replica: str, run: Path, before: dict, old: set, restarts) -> None:
    with reader_home():
        assert not _helpers_left(replica)  # every heal query's glfsheal went with its CLI
        check_job_fault_run(replica, run, [("pod", "glusterd.node2"), ("nodeloss", "node3")])
        assert len(list((run / "raw").glob("fio-*.txt"))) == 2  # the two identical entries keep their own
        status = json.loads(sh(f"dfslab status {replica} --json").stdout)
        assert status["health"] == "HEALTH_OK" and status["heal_pending"] == 0, status["summary"]
        after = restarts()
        assert list(after) == list(before) and sum(after.values()) > sum(before.values())  # node3's pod, restarted
        new = [p for p in _pods(replica) if p.spec.node_name == "node2" and p.metadata.name.startswith("glusterd")]
        assert len(new) == 1 and new[0].metadata.uid not in old  # the StatefulSet made node2's again

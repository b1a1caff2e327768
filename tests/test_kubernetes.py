"""Runtime kubernetes on a real local Kubernetes (etcd, kube-apiserver, controller manager,
scheduler, a containerd + kubelet per node) with Ceph deployed by Rook (docs/kubernetes.md's
rook-small, brought up and down by the page's own lines): up to HEALTH_OK, each
node sees only its own disk, what dfslab renders is judged by the API server against Rook's
CRD schemas before anything is made, rados bench and fio run as Jobs, down leaves nothing."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from conftest import REPO, metric_rows, platform_cells, dfslab, run_against
from test_kubernetes_gluster import docs_cluster, reader_home
from test_readme import sh
from dfslab.state import ClusterState

pytestmark = [pytest.mark.cluster, pytest.mark.kubernetes]  # needs the Kubernetes and Rook build (scripts/build-kubernetes.sh)
# The module's cluster is docs/kubernetes.md's: its first block, run verbatim from the repository
# root with the reader's environment (tests/test_docs_commands.py counts it), its `dfslab up` the
# fixture, its `dfslab down` the fixture's end, its other lines the first test. One Rook cluster for
# the page and these tests: a cluster of the test's own beside it cost the suite a Kubernetes and a
# Rook brought up and down again (the page's test alone took 10 min of the Kubernetes phase in CI).
NAME = "rook-small"
DOCS_BLOCK = ["dfslab up examples/rook-small.yaml", "dfslab status rook-small", "dfslab exec rook-small -- ceph -s",
              "dfslab run examples/quick-any.yaml --cluster rook-small",
              "dfslab run examples/s3.yaml --cluster rook-small", "dfslab exec rook-small -- s3cmd ls",
              "dfslab down rook-small"]
SPEC = yaml.safe_load((Path(REPO) / "examples/rook-small.yaml").read_text())
EXPERIMENT = {
    "name": "t-k8s-exp", "cluster": SPEC, "repetitions": 1, "client": "job",
    "workloads": [
        {"type": "radosbench", "mode": ["write", "seq"], "seconds": 3, "threads": 8},
        {"type": "fio", "target": ["rbd", "rados", "fs"], "rw": ["write"], "bs": "1MiB", "size": "32MiB", "seconds": 2},
    ],
}


def _faults_under_write_load(k8s: Path, name: str, faults: list[dict], seconds: int = 20) -> tuple[Path, list[dict]]:
    """An experiment run against the module's cluster: `faults` during `seconds` of rados bench write
    (2 threads × 64 KiB: slow enough to write all its seconds under dfslab's object cap, 40 % of the
    pool's free space; at 4 x 1 MiB a 20-s write could stop early, before or during its fault). Every fault injected and undone without error, the cluster healthy
    again, nothing acknowledged lost or corrupt; returns the run directory and fault events."""
    exp = k8s / f"{name}.yaml"
    exp.write_text(yaml.safe_dump({
        "name": name, "cluster": SPEC, "baselines": {"network": False, "disk": False},
        "integrity": {"seed_objects": 10, "recovery_timeout": "240s"},
        "workloads": [{"type": "radosbench", "mode": ["write"], "seconds": seconds, "threads": 2, "object_size": "64KiB"}],
        "faults": faults}))
    run, _ = run_against(exp, NAME)
    events = json.loads((run / "faults.json").read_text())
    assert [(e["kind"], e["target"], e["error"]) for e in events] == [(f["kind"], f["target"], None) for f in faults], events
    assert all(e["recover_s"] is not None for e in events) and events[-1]["acknowledged_writes"] > 0, events
    integrity = json.loads((run / "integrity.json").read_text())
    assert integrity["lost"] == 0 and integrity["corrupt"] == 0 and integrity["checked"] > 10, integrity
    return run, events


def _assert_whole_again() -> None:
    """Every OSD up and in, every PG active+clean, and no health check but the heartbeat averages
    that remember a fault for minutes (seen after a cut link: OSD_SLOW_PING_TIME_BACK/FRONT, osd.2
    to osd.1 1740 ms), which dfslab's own recovery check leaves out too."""
    from dfslab.backends.ceph.backend import CephBackend
    status = json.loads(dfslab("status", NAME, "--json").stdout)
    assert status["osds"] == {"total": 3, "up": 3, "in": 3}, status["osds"]
    assert status["pgs"]["total"] == status["pgs"]["by_state"].get("active+clean"), status["pgs"]
    out = dfslab("exec", NAME, "--", "ceph", "health", "--format", "json").stdout
    checks = set(json.loads(out[out.index("{"):]).get("checks", {}))
    assert checks <= CephBackend.LINGERING_CHECKS, checks


def _runtime_and_api():
    from dfslab.runtime import attach_runtime
    from dfslab.runtime.kubernetes.control import api_client
    rt = attach_runtime(ClusterState(NAME))
    return rt, api_client(rt)


@pytest.fixture(scope="module")
def k8s(tmp_path_factory):
    """`dfslab up examples/rook-small.yaml` as the reader types it (its state in /var/lib/dfslab, which
    this module's own dfslab calls look at too), `dfslab down rook-small` at the end, checked to
    leave no process, namespace, loop device, cgroup, mount or state."""
    tmp = tmp_path_factory.mktemp("k8s")
    with reader_home():
        with docs_cluster(NAME, [DOCS_BLOCK[0], DOCS_BLOCK[-1]]):
            state = ClusterState(NAME)
            loops = [loop["device"] for loop in state.resources("loop")]
            files = [loop["file"] for loop in state.resources("loop")]
            try:
                yield tmp
            finally:
                containers = _runtime_and_api()[0].container_ids()
        assert containers and not [c for c in containers if list(Path("/sys/fs/cgroup").glob(f"*/k8s.io/{c}"))]
        attached = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
        assert not [f for f in files if f in attached], attached
        assert loops  # the fixture did see the cluster's disks


def test_the_kubernetes_pages_rook_commands_run_verbatim_from_the_repository_root(k8s):
    """docs/kubernetes.md's first block as a reader types it, on the cluster its first line made:
    the status, `ceph -s` in the toolbox pod, the any-Ceph experiment and the object experiment of
    the local runtime run against it, s3cmd with the cluster's keys (the runs in ./runs)."""
    said, made = {}, []
    try:
        for line in DOCS_BLOCK[1:-1]:
            said[line] = sh(line, timeout=1500, made=made).stdout
        assert "HEALTH_OK" in said["dfslab status rook-small"] and "HEALTH_OK" in said["dfslab exec rook-small -- ceph -s"]
        quick, objects = made
        rows = metric_rows(quick, "bandwidth")
        assert {r["workload"] for r in rows} == {"radosbench", "fio"} and all(float(r["value"]) > 0 for r in rows), rows
        # examples/s3.yaml unchanged on Rook: PUT and GET at both sizes, the gateway's container
        # killed under the third load and started again, and every checksummed object read back
        modes = {json.loads(r["params"])["mode"] for r in metric_rows(objects, "bandwidth") if r["workload"] == "s3"}
        assert modes == {"write", "read"}, modes
        (event,) = json.loads((objects / "faults.json").read_text())
        assert (event["kind"], event["target"], event["error"]) == ("kill", "rgw.node1", None), event
        assert event["recover_s"] is not None, event
        result = json.loads((objects / "integrity.json").read_text())
        assert result["checked"] >= 16 and result["lost"] == 0 and result["corrupt"] == 0, result
    finally:
        for path in made:
            shutil.rmtree(path)


def test_rook_brings_ceph_to_health_ok_with_every_osd_on_its_own_node(k8s):
    from kubernetes import client
    rt, api = _runtime_and_api()
    custom = client.CustomObjectsApi(api)
    cluster = custom.get_namespaced_custom_object("ceph.rook.io", "v1", "rook-ceph", "cephclusters", "dfslab")
    assert cluster["status"]["phase"] == "Ready"
    assert cluster["status"]["ceph"]["health"] in ("HEALTH_OK", "HEALTH_WARN")
    status = json.loads(dfslab("status", NAME, "--json").stdout)
    assert status["health"] == "HEALTH_OK", status
    assert status["osds"] == {"total": 3, "up": 3, "in": 3}
    # Each node's OSD is on that node's loop device: the per-node /dev kept Rook from claiming
    # another node's disk.
    env = {**os.environ, "CEPH_CONF": str(rt.state.dir / "ceph/conf/ceph.conf")}
    meta = json.loads(subprocess.run(rt.command("client", ["ceph", "osd", "metadata", "-f", "json"]), env=env,
                                     capture_output=True, text=True, check=True).stdout)
    loops = {loop["node"]: Path(loop["device"]).name for loop in rt.state.resources("loop")}
    assert sorted(m["hostname"] for m in meta) == ["node1", "node2", "node3"]
    for m in meta:
        assert m["devices"] == loops[m["hostname"]], (m["hostname"], m["devices"], loops)
    pods = client.CoreV1Api(api).list_namespaced_pod("rook-ceph", label_selector="app=rook-ceph-osd").items
    assert sorted(p.spec.node_name for p in pods) == ["node1", "node2", "node3"]
    # Every pool keeps the PG count it was made with: the autoscaler, on in Rook's pools before,
    # split a pool that took most writes after a recovery (CI: 225 PGs for 224, remapped).
    out = dfslab("exec", NAME, "--", "ceph", "osd", "pool", "ls", "detail", "--format", "json").stdout
    modes = {p["pool_name"]: p["pg_autoscale_mode"] for p in json.loads(out[out.index("["):])}
    assert modes and set(modes.values()) == {"off"}, modes
    # status shows the Rook objects' phases and each daemon pod with its node and memory
    # Rook copies Ceph's health into the CR every 10 s (the status interval dfslab sets): once it
    # has, status shows it, with the time of Rook's check.
    for _ in range(60):
        cr = custom.get_namespaced_custom_object("ceph.rook.io", "v1", "rook-ceph", "cephclusters", "dfslab")
        if cr["status"]["ceph"]["health"] == "HEALTH_OK":
            break
        time.sleep(1)
    status = json.loads(dfslab("status", NAME, "--json").stdout)
    tables = {t["title"]: t for t in status["tables"]}
    rows = {tuple(r[:4]): r[4] for r in tables["Rook objects"]["rows"]}
    checked = rows.get(("CephCluster", "dfslab", "Ready", "HEALTH_OK"))
    assert checked and checked >= cr["status"]["ceph"]["lastChecked"], (rows, cr["status"]["ceph"])  # RFC 3339, UTC
    osd_rows = [r for r in tables["pods"]["rows"] if r[0].startswith("rook-ceph-osd-") and "prepare" not in r[0]]
    assert sorted(r[1] for r in osd_rows) == ["node1", "node2", "node3"]
    assert all(r[2] == "running" and r[4].endswith("MiB") and float(r[4].split()[0]) > 10 for r in osd_rows), osd_rows


def test_exec_runs_in_a_pod_on_the_named_node(k8s):
    out = dfslab("exec", NAME, "--node", "node2", "--", "sh", "-c", "hostname -I; ceph health").stdout.split()
    assert out[-1] == "HEALTH_OK"
    # the pod is on node2's host network: node2's namespace and address
    assert ClusterState(NAME).read()["addresses"]["node2"] in out[:-1], out


def test_the_api_server_judges_rendered_objects_before_anything_is_made(k8s):
    from dfslab.backends.ceph import rook
    from dfslab.runtime.kubernetes.objects import ObjectRefused
    from dfslab.spec import parse_spec
    rt, api = _runtime_and_api()
    spec = parse_spec({**SPEC, "name": "t-k8s-other"})
    objs = rook.cluster_objects(spec, "rook-ceph", "img:1", "/x", {"node1": ["/dev/loop9"]})
    objs = [{**o, "metadata": {**o["metadata"], "name": f"dry-{o['metadata']['name']}"}} for o in objs]
    rook.validate_all(api, objs)  # accepted by Rook's CRD schemas (server-side dry run)
    bad = json.loads(json.dumps(objs))
    bad[0]["spec"]["mon"]["count"] = "three"  # passes no check of dfslab's: the schema says integer
    with pytest.raises(ObjectRefused) as err:
        rook.validate_all(api, bad)
    assert "spec.mon.count" in str(err.value)
    from kubernetes import client
    names = [o["metadata"]["name"] for o in client.CustomObjectsApi(api).list_namespaced_custom_object(
        "ceph.rook.io", "v1", "rook-ceph", "cephclusters")["items"]]
    assert names == ["dfslab"]  # the dry runs made nothing


def test_rados_bench_and_fio_run_as_jobs_on_the_client_node(k8s):
    exp = k8s / "exp.yaml"
    exp.write_text(yaml.safe_dump(EXPERIMENT))
    run, out = run_against(exp, NAME)
    with open(run / "results.csv") as fh:
        rows = list(csv.DictReader(fh))
    metrics = {(r["workload"], r["metric"], json.loads(r["params"]).get("target", json.loads(r["params"]).get("mode")))
               for r in rows}
    assert ("radosbench", "bandwidth", "write") in metrics and ("radosbench", "bandwidth", "seq") in metrics, out
    assert {("fio", "bandwidth", t) for t in ("rbd", "rados", "fs")} <= metrics, sorted(metrics)
    assert all(float(r["value"]) > 0 for r in rows if r["metric"] == "bandwidth")
    # The byte ledger counts the client node the Jobs ran on (its network is theirs): every write
    # left it, to within the API server's own chatter on that link
    shares = {(r["workload"], json.loads(r["params"]).get("target") or json.loads(r["params"]).get("mode")): float(r["value"])
              for r in rows if r["metric"] == "from_storage"}
    assert {("fio", t) for t in ("rbd", "rados", "fs")} | {("radosbench", "write")} <= set(shares), shares
    assert all(0.9 <= shares[("fio", t)] <= 1.3 for t in ("rbd", "rados", "fs")), shares
    # The sampler watched the daemons Rook runs in pods, by their Ceph names
    with open(run / "timeseries.csv") as fh:
        series = {r["series"] for r in csv.DictReader(fh)}
    assert {"cpu.osd.0", "rss.osd.0", "cpu.mon.a", "rss.mgr.a"} <= series, sorted(series)
    # ... and Ceph's own counters through Rook's MGR Service (the API server's service proxy)
    assert {"prom.rook-ceph-mgr.ceph_osd_up", "prom.rook-ceph-mgr.ceph_osd_op_w"} <= series, sorted(series)
    # ... and what Kubernetes itself took beside the workload, drawn in the report
    assert {"cpu.etcd", "cpu.kube-apiserver", "cpu.kubelet-node1", "cpu.containerd-node1"} <= series, sorted(series)
    html = (run / "report.html").read_text()
    assert "CPU Kubernetes itself takes (control plane, kubelets, containerd)" in html
    # ... and beside every step, its share of the machine in the step's transfer seconds, summed
    # from those processes by the sampler (cpu.platform), never more than the machine's CPU
    assert "cpu.platform" in series
    platform_shares = [float(cell.rstrip(" %")) for cell in platform_cells(html)]
    assert platform_shares and all(0 < share <= 100 for share in platform_shares), platform_shares
    # The tools ran as Jobs, in pods on the client node, and ended there
    jobs = [json.loads(line) for line in (ClusterState(NAME).dir / "kubernetes/jobs.jsonl").read_text().splitlines()]
    ran = {(j["tool"], j["node"], j["phase"], j["rc"]) for j in jobs}
    assert ("rados", "client", "Succeeded", 0) in ran and ("fio", "client", "Succeeded", 0) in ran, ran
    # the network baseline's iperf3 servers were Deployments, one on each node, each pod Running
    servers = {(j["node"], j["phase"]) for j in jobs if j["tool"] == "iperf3" and j.get("kind") == "Deployment"}
    assert servers == {(n, "Running") for n in ("node1", "node2", "node3", "client")}, jobs
    assert {r["metric"] for r in rows if r["workload"] == "baseline"} >= {"network_bandwidth"}
    from kubernetes import client
    _, api = _runtime_and_api()
    managed = "app.kubernetes.io/managed-by=dfslab"
    assert not client.BatchV1Api(api).list_namespaced_job("rook-ceph", label_selector=managed).items
    assert not client.AppsV1Api(api).list_namespaced_deployment("rook-ceph", label_selector=managed).items
    # Each Job's ceph-fuse closed its MDS session before the pod ended: a killed client's stale
    # session held its caps for the MDS's 60 s session_timeout and stalled the next Job
    out = dfslab("exec", NAME, "--", "ceph", "tell", "mds.cephfs:0", "session", "ls", "--format=json").stdout  # the active MDS
    sessions = json.loads(out[out.index("["):])
    # (a killed client's session stays listed, open then stale, until the MDS evicts it)
    assert len(sessions) == 1 and sessions[0]["state"] == "open", sessions  # the host's own CephFS mount only


def test_client_host_runs_the_tools_from_the_local_runtimes_client_against_rooks_servers(k8s):
    """client: host, the default: no Job; rados bench and fio run in the client node's namespace
    here, CephFS through the one ceph-fuse mount dfslab keeps (a read through a fresh one), so a
    comparison with runtime local measures the servers under Kubernetes, not another client."""
    jobs_log = ClusterState(NAME).dir / "kubernetes/jobs.jsonl"
    seen = len(jobs_log.read_text().splitlines()) if jobs_log.exists() else 0
    exp = k8s / "host.yaml"
    exp.write_text(yaml.safe_dump({
        "name": "t-k8s-host", "cluster": SPEC, "repetitions": 1, "baselines": {"network": False, "disk": False},
        "workloads": [{"type": "radosbench", "mode": ["write"], "seconds": 2, "threads": 8},
                      {"type": "fio", "target": "fs", "rw": ["write", "randread"], "bs": "1MiB", "size": "32MiB",
                       "seconds": 2}]}))
    run, out = run_against(exp, NAME)
    assert json.loads((run / "provenance.json").read_text())["client"] == "host"
    with open(run / "results.csv") as fh:
        rows = list(csv.DictReader(fh))
    bandwidth = {(r["workload"], json.loads(r["params"]).get("rw") or "write"): float(r["value"])
                 for r in rows if r["metric"] == "bandwidth"}
    assert set(bandwidth) == {("radosbench", "write"), ("fio", "write"), ("fio", "randread")}, out
    assert all(v > 0 for v in bandwidth.values()), bandwidth
    # every byte fio moved crossed the client node's link: the read too (cold, from a fresh client)
    shares = {json.loads(r["params"])["rw"]: float(r["value"]) for r in rows
              if r["workload"] == "fio" and r["metric"] == "from_storage"}
    assert set(shares) == {"write", "randread"} and all(0.9 <= v <= 1.3 for v in shares.values()), shares
    new_jobs = jobs_log.read_text().splitlines()[seen:] if jobs_log.exists() else []
    assert new_jobs == [], new_jobs


def test_every_other_workload_kind_runs_as_jobs_with_the_local_runtimes_metrics(k8s):
    """filegrid, metadata (dfslab's worker shipped as source), sql (MariaDB's server and mysqlslap,
    each a Job, the datadir on CephFS), servers scaling and parallel: the rows the local runtime
    gives; Ceph's admin commands (the servers step's pool and CRUSH rule) are no Job."""
    jobs_log = ClusterState(NAME).dir / "kubernetes/jobs.jsonl"
    seen = len(jobs_log.read_text().splitlines()) if jobs_log.exists() else 0
    exp = k8s / "kinds.yaml"
    exp.write_text(yaml.safe_dump({
        "name": "t-k8s-kinds", "cluster": SPEC, "repetitions": 1, "client": "job",
        "baselines": {"network": False, "disk": False},
        "workloads": [
            {"type": "filegrid", "file_size": "8MiB", "threads": 2},
            {"type": "metadata", "procs": 2, "files_per_proc": 50},
            {"type": "sql", "target": "fs", "concurrency": 4, "iterations": 1, "queries": 128},
            {"type": "servers", "servers": 1, "ops": ["write"], "procs": 4, "iodepth": 1, "bs": "4MiB", "seconds": 2},
            {"type": "parallel", "clients": 1, "procs": 2, "block_size": "32MiB"},
        ]}))
    run, out = run_against(exp, NAME)
    with open(run / "results.csv") as fh:
        rows = list(csv.DictReader(fh))
    metrics = {(r["workload"], r["metric"]) for r in rows}
    expected = {("filegrid", "bandwidth"), ("metadata", "ops"), ("sql", "qps"), ("sql", "time_avg"),
                ("servers", "bandwidth"), ("parallel", "bandwidth")}
    assert expected <= metrics, (sorted(metrics), out)
    assert all(float(r["value"]) > 0 for r in rows if (r["workload"], r["metric"]) in expected)
    assert {json.loads(r["params"])["phase"] for r in rows if r["workload"] == "metadata"} == {"create", "stat", "read", "unlink"}
    jobs = [json.loads(line) for line in jobs_log.read_text().splitlines()[seen:]]
    tools = {j["tool"] for j in jobs if j["rc"] == 0 and j["phase"] == "Succeeded"}
    # (MariaDB's system tables are made by a script: made on the Job's /tmp, copied to CephFS)
    assert {"fio", "metadata_worker", "bash", "mysqlslap", "rados"} <= tools, jobs
    assert not {"ceph", "rbd"} & {j["tool"] for j in jobs}, jobs


def test_a_deleted_osd_pod_comes_back_and_no_acknowledged_write_is_lost(k8s):
    """fault pod during rados bench write: Rook's Deployment makes a new pod, the cluster
    returns to HEALTH_OK, and every checksummed object the writer got acknowledged reads back."""
    run, events = _faults_under_write_load(
        k8s, "t-k8s-fault", [{"kind": "pod", "target": "osd.1", "during": 0, "at": "4s", "duration": "5s"}])
    # a new pod runs osd.1 (Rook's Deployment made it), and the cluster is whole again
    from kubernetes import client
    _, api = _runtime_and_api()
    pods = client.CoreV1Api(api).list_namespaced_pod("rook-ceph", label_selector="ceph_daemon_type=osd,ceph_daemon_id=1").items
    assert [p.status.phase for p in pods] == ["Running"]
    _assert_whole_again()


def test_a_drained_node_under_a_stopped_operator_recovers_and_no_acknowledged_write_is_lost(k8s):
    """Rook's operator scaled to 0 (nothing reconciles) and, meanwhile, node3 cordoned and
    drained during rados bench write: node3's OSD pod is evicted and its new one cannot be placed
    until the undo uncordons node3; then the operator is back, HEALTH_OK, nothing lost."""
    from kubernetes import client
    _, api = _runtime_and_api()
    core = client.CoreV1Api(api)
    on_node3 = [p.metadata.labels["ceph_daemon_id"] for p in
                core.list_namespaced_pod("rook-ceph", label_selector="app=rook-ceph-osd").items if p.spec.node_name == "node3"]
    assert len(on_node3) == 1, on_node3
    run, events = _faults_under_write_load(k8s, "t-k8s-drain", [
        {"kind": "operator", "target": "rook", "during": 0, "at": "2s", "duration": "25s"},
        {"kind": "drain", "target": "node3", "during": 0, "at": "4s", "duration": "10s"}])
    print("faults:", [(e["kind"], e.get("detect_s"), e["recover_s"], e["acknowledged_writes"]) for e in events])
    assert not core.read_node("node3").spec.unschedulable
    osd = core.list_namespaced_pod("rook-ceph", label_selector=f"ceph_daemon_type=osd,ceph_daemon_id={on_node3[0]}").items
    assert [(p.spec.node_name, p.status.phase) for p in osd] == [("node3", "Running")]
    operator = core.list_namespaced_pod("rook-ceph", label_selector="app=rook-ceph-operator").items
    assert [p.status.phase for p in operator] == ["Running"]
    _assert_whole_again()
    # a fault for another runtime's cluster, or a node Kubernetes does not have, is refused before anything changes
    res = dfslab("fault", NAME, "drain", "nodex", check=False)
    assert res.returncode != 0 and "no Kubernetes node 'nodex'; nodes: client, node1, node2, node3" in res.stderr, res.stderr


def test_a_cut_link_partitions_a_node_of_the_local_kubernetes_and_no_acknowledged_write_is_lost(k8s):
    """The local runtime's link faults on a Kubernetes node's namespace: node2's link cut for
    10 s during rados bench write (its OSD and kubelet unreachable alike), then up again: the
    node stays a Ready Kubernetes node, HEALTH_OK, nothing lost."""
    run, events = _faults_under_write_load(
        k8s, "t-k8s-partition", [{"kind": "partition", "target": "node2", "during": 0, "at": "3s", "duration": "10s"}])
    print("partition:", events[0].get("detect_s"), events[0]["recover_s"], events[0]["acknowledged_writes"])
    from kubernetes import client
    from dfslab.runtime.kubernetes.objects import node_ready
    rt, api = _runtime_and_api()
    for ns, dev in rt.link_ends("node2"):  # both ends of the cable are up again
        link = subprocess.run(["ip", "-n", ns, "-o", "link", "show", dev], capture_output=True, text=True)
        assert "state UP" in link.stdout, link
    assert node_ready(client.CoreV1Api(api).read_node("node2"))
    _assert_whole_again()


def test_a_lost_node_comes_back_with_its_pods_and_no_acknowledged_write_is_lost(k8s):
    """nodeloss: a node's kubelet, containerd and pods' processes killed at once during rados
    bench write (Ceph loses its OSD there), for longer than Kubernetes' node grace (50 s past the last 10-s lease renewal), so the
    API marks the node and its pods; the undo starts containerd and kubelet again and the node's
    pods run again (a restart each), then HEALTH_OK and nothing lost."""
    from kubernetes import client
    _, api = _runtime_and_api()
    core = client.CoreV1Api(api)
    pods = core.list_namespaced_pod("rook-ceph").items
    # the node to lose holds an OSD but neither the single MON nor the MGR (health is read through them)
    holds = {p.spec.node_name for p in pods if (p.metadata.labels or {}).get("app") in ("rook-ceph-mon", "rook-ceph-mgr")}
    node = next(n for n in ("node1", "node2", "node3") if n not in holds)
    restarts = lambda: sum(c.restart_count for p in core.list_namespaced_pod("rook-ceph", label_selector="app=rook-ceph-osd").items  # noqa: E731
                           if p.spec.node_name == node for c in p.status.container_statuses or [])
    before = restarts()
    run, events = _faults_under_write_load(
        k8s, "t-k8s-nodeloss", [{"kind": "nodeloss", "target": node, "during": 0, "at": "3s", "duration": "80s"}],
        seconds=60)
    print("nodeloss:", node, events[0].get("detect_s"), events[0]["recover_s"], events[0]["undo_s"],
          events[0]["acknowledged_writes"], events[0].get("seen"))
    # 80 s of silence (Unknown comes 50-65 s after the kill): the node is Unknown, its pods not ready
    seen = events[0]["seen"]
    assert seen.startswith("node Ready=Unknown tainted unreachable;") and " 0 of " not in seen, seen
    assert seen in (run / "report.html").read_text()
    # the undo waits for the node and its pods: recovery counts from the undo's start, and holds that wait
    assert events[0]["recover_s"] >= events[0]["undo_s"] > 1, events
    assert restarts() > before  # the OSD's container died with the node and was started again
    _assert_whole_again()
    res = dfslab("fault", NAME, "node", node, check=False)
    assert res.returncode != 0 and "fault nodeloss" in res.stderr, res.stderr
    res = dfslab("fault", NAME, "nodeloss", "nodex", check=False)
    assert res.returncode != 0 and "no Kubernetes node 'nodex'" in res.stderr, res.stderr

"""Runtime kubernetes on a Kubernetes you run (`kubernetes.kubeconfig`): dfslab installs Rook
into a namespace of its own, Rook puts Ceph on the named nodes' devices, the workloads run as
Jobs whose files come back through their logs, and `down` deletes what dfslab made, nothing else.

The cluster "you run" is a real one: the local Kubernetes dfslab starts with
`kubernetes.local.rook: false` (nodes, their loop disks, an admin kubeconfig), used only
through that kubeconfig, as any other cluster would be."""

from __future__ import annotations

import csv
import json

import pytest
import yaml

from conftest import cluster_up, dfslab, printed_run_dir, steps_table
from dfslab.state import ClusterState

pytestmark = [pytest.mark.cluster, pytest.mark.kubernetes]  # needs the Kubernetes and Rook build (scripts/build-kubernetes.sh)
HOST = "t-k8s-host"
NAME = "t-k8s-yours"
NAMESPACE = "dfslab-yours"

# OSDs of 14 GiB (sparse): quick-any's rados bench (10 s, 16 threads) writes 4.5-6.4 GB here, and
# dfslab stops a write at 40 % of the pool's free space (6 GiB OSDs stopped it at 3.2 GiB).
HOST_SPEC = {"name": HOST, "runtime": "kubernetes", "kubernetes": {"local": {"rook": False}}, "nodes": 3, "clients": 2,
             "network": {"subnet": "10.80.0.0/24"},
             "ceph": {"mons": 1, "osds_per_node": 1, "osd_size": "14GiB", "replica_size": 2, "cephfs": False}}


def _host_api():
    from dfslab.runtime import attach_runtime
    from dfslab.runtime.kubernetes.existing import api_for
    rt = attach_runtime(ClusterState(HOST))
    return rt, api_for(str(rt.admin_kubeconfig), None)


def _spec(**kubernetes) -> dict:
    from dfslab.runtime.kubernetes import rook_host_path
    rt, _ = _host_api()
    devices = {loop["node"]: [loop["device"]] for loop in rt.state.resources("loop")}
    return {"name": NAME, "runtime": "kubernetes", "nodes": 3,
            "kubernetes": {"kubeconfig": str(rt.admin_kubeconfig), "namespace": NAMESPACE,
                           "image": rt.state.read()["k8s_images"]["rook"],
                           # the host cluster's nodes each bind their own directory there
                           "data_dir_host_path": str(rook_host_path()), "devices": devices,
                           "clients": ["client"], **kubernetes},
            "ceph": {"mons": 1, "osds_per_node": 1, "replica_size": 2, "cephfs": False}}


def _cluster_scoped_names(api) -> set[str]:
    from kubernetes import client
    crds = client.ApiextensionsV1Api(api).list_custom_resource_definition().items
    roles = client.RbacAuthorizationV1Api(api).list_cluster_role().items
    return {c.metadata.name for c in crds} | {r.metadata.name for r in roles}


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("k8s-host")
    (tmp / "host.yaml").write_text(yaml.safe_dump(HOST_SPEC))
    cluster_up(tmp / "host.yaml", HOST, "--timeout", "600", timeout=1200)
    try:
        _users_own_pod()
        yield tmp
    finally:
        # with the user's pod still running (its `sleep infinity`, PID 1, ignores SIGTERM): down takes
        # the whole Kubernetes away at once, exit 0, nothing left (dfslab() fails on another exit code)
        dfslab("down", HOST, timeout=600)
        assert not ClusterState(HOST).dir.exists()


USERS = "users-own"  # a namespace of the user's, a Deployment of theirs on node3: never dfslab's


def _users_own_pod() -> None:
    from kubernetes import client
    _, api = _host_api()
    client.CoreV1Api(api).create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": USERS}})
    labels = {"app": "sentinel"}
    client.AppsV1Api(api).create_namespaced_deployment(USERS, {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "sentinel", "namespace": USERS},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": {
            # on node3's own network, as a node agent of the user's: beside dfslab's daemons there,
            # in the network namespace dfslab's fault agent puts its rules in
            "nodeSelector": {"kubernetes.io/hostname": "node3"}, "terminationGracePeriodSeconds": 5, "hostNetwork": True,
            "containers": [{"name": "sleep", "image": _spec()["kubernetes"]["image"], "imagePullPolicy": "IfNotPresent",
                            "command": ["sleep", "infinity"]}]}}}})
    from conftest import wait_for
    wait_for(lambda: any(p.status.phase == "Running" for p in client.CoreV1Api(api).list_namespaced_pod(USERS).items),
             180, "the user's own pod running")


def _users_pod_uids(api) -> list[str]:
    from kubernetes import client
    return [p.metadata.uid for p in client.CoreV1Api(api).list_namespaced_pod(USERS).items]


def test_the_local_kubernetes_alone_hands_over_an_admin_kubeconfig(host):
    status = json.loads(dfslab("status", HOST, "--json").stdout)
    nodes = next(t for t in status["tables"] if t["title"] == "Kubernetes nodes")
    assert sorted((r[0], r[2]) for r in nodes["rows"]) == [(n, "Ready") for n in ("client", "client2", "node1", "node2",
                                                                                 "node3")]
    from kubernetes import client
    _, api = _host_api()
    assert not client.ApiextensionsV1Api(api).list_custom_resource_definition().items  # no Rook in it


def test_a_spec_your_cluster_cannot_hold_is_refused_before_anything_is_made(host):
    bad = host / "bad.yaml"
    bad.write_text(yaml.safe_dump({**_spec(), "nodes": [{"name": "node1"}, {"name": "node2"}, {"name": "nodex"}],
                                   "kubernetes": {**_spec()["kubernetes"], "devices": {
                                       "node1": ["/dev/loop0"], "node2": ["/dev/loop1"], "nodex": ["/dev/loop2"]}}}))
    res = dfslab("up", str(bad), check=False)
    assert res.returncode != 0 and "nodes: ['nodex'] are not nodes of the Kubernetes cluster" in res.stderr, res.stderr
    from kubernetes import client
    _, api = _host_api()
    assert NAMESPACE not in {n.metadata.name for n in client.CoreV1Api(api).list_namespace().items}
    assert not ClusterState(NAME).dir.exists()


def _with_cephfs() -> dict:
    """With CephFS, a RADOS gateway (Rook's CephObjectStore), two client nodes, and the owner's
    consent to delete a daemon's pod."""
    spec = _spec(allow_faults=["pod"], clients=["client", "client2"])
    return {**spec, "clients": 2, "ceph": {**spec["ceph"], "cephfs": True, "rgw": 1}}


def test_rook_on_your_cluster_to_health_ok_jobs_measure_and_down_removes_only_what_it_made(host):
    from kubernetes import client
    _, api = _host_api()
    before, users_before = _cluster_scoped_names(api), _users_pod_uids(api)
    assert users_before  # the user's own pod, there before dfslab's cluster and after it
    spec = host / "yours.yaml"
    spec.write_text(yaml.safe_dump(_with_cephfs()))
    cluster_up(spec, NAME, "--timeout", "900", timeout=1500)
    try:
        status = json.loads(dfslab("status", NAME, "--json").stdout)
        assert status["health"] == "HEALTH_OK" and status["osds"] == {"total": 3, "up": 3, "in": 3}, status
        rook_objects = next(t for t in status["tables"] if t["title"] == "Rook objects")
        # Rook sets the CephCluster's phase to Progressing for each reconcile it starts on its own
        # (seen once in CI run 12, right after up, its health column HEALTH_OK) and back to Ready
        # after; Ceph's own health is asserted above (Rook's copy of it lags)
        kind, name, phase = rook_objects["rows"][0][:3]
        assert (kind, name) == ("CephCluster", "dfslab") and phase in ("Ready", "Progressing"), rook_objects
        pods = client.CoreV1Api(api).list_namespaced_pod(NAMESPACE, label_selector="app=rook-ceph-osd").items
        assert sorted(p.spec.node_name for p in pods) == ["node1", "node2", "node3"]
        # exec: a Job on the named node, with the cluster's conf and keyring
        assert dfslab("exec", NAME, "--node", "node2", "--", "ceph", "health").stdout.split()[-1] == "HEALTH_OK"

        exp = host / "exp.yaml"
        exp.write_text(yaml.safe_dump({
            "name": "t-k8s-yours-exp", "cluster": _with_cephfs(), "repetitions": 1,
            "baselines": {"network": True, "disk": True, "seconds": 2},
            # What only a Kubernetes you run does differently (every tool a Job there or in the toolbox, the
            # ledger through the toolboxes, the disks read in the OSDs' pods); the kinds whose Jobs are
            # the local Kubernetes' own (metadata, parallel, sql, the rados engine) are test_kubernetes's:
            # each cost 20-37 s here, 1.7x that in the suite beside cluster-b
            # (rados bench in the toolbox is the agent test's load below)
            "workloads": [{"type": "fio", "target": "rbd", "rw": ["write"], "bs": "1MiB", "size": "32MiB", "seconds": 2},
                          # CephFS mounted by ceph-fuse in each Job's pod, its directories made there: one
                          # Job on each client node at once; the ledger reads both client nodes' links
                          {"type": "fio", "target": "fs", "rw": "write", "bs": "1MiB", "size": "32MiB",
                           "numjobs": 2, "iodepth": 1, "seconds": 2, "clients": 2},
                          # dfslab's S3 load in the toolbox (dfslab's image), through Rook's gateway
                          {"type": "s3", "object_size": "256KiB", "threads": 2, "seconds": 3},
                          {"type": "s3", "object_size": "64KiB", "threads": 2, "seconds": 10, "ops": ["write"]},
                          # the query in dfslab's object class inside Rook's OSD pods (dfslab's image
                          # holds it), and on the client: the engine in the toolbox
                          {"type": "pushdown", "query": "aggregate", "selectivity": 10, "where": ["storage", "client"],
                           "rows": 200000, "objects": 4}],
            # the gateway's pod deleted during PUTs (an OSD's pod deleted is the local Kubernetes' test:
            # the same call to the API); the checksummed writer and its read-back run in the toolbox pod
            # (dfslab's image holds them), their files on the exec's streams, their objects through the gateway
            "integrity": {"seed_objects": 20, "recovery_timeout": "300s"},
            # (dfslab's fault agent, `kill` here, is left out of this run: with a kill through it during
            # step 1, the byte ledger lost one client-counter read in steps 2-6 in each of 3 runs, cause
            # not found yet; the kill itself worked each time, #68's note)
            "faults": [{"kind": "pod", "target": "rgw.node1", "during": 3, "at": "2s", "duration": "3s"}]}))
        # 10.5 min alone here before its trim, 1.7x that beside cluster-b in the suite: the timeout is for a hang
        res = dfslab("run", str(exp), "--cluster", NAME, timeout=1800)
        run, out, why = printed_run_dir(res.stdout), res.stdout, res.stderr  # why: what the run said on stderr
        with open(run / "results.csv") as fh:
            rows = list(csv.DictReader(fh))
        params = [json.loads(r["params"]) for r in rows]
        metrics = {(r["workload"], r["metric"], p.get("target", p.get("mode"))) for r, p in zip(rows, params)}
        assert ("fio", "bandwidth", "rbd") in metrics, (sorted(metrics), out)
        assert all(float(r["value"]) > 0 for r in rows if r["metric"] == "bandwidth")
        fs = {p["rw"]: float(r["value"]) for r, p in zip(rows, params)
              if r["workload"] == "fio" and p.get("target") == "fs" and r["metric"] == "bandwidth"}
        assert set(fs) == {"write"} and all(v > 0 for v in fs.values()), (fs, out)
        nodes = {(p["rw"], p["client"]): float(r["value"]) for r, p in zip(rows, params)
                 if r["workload"] == "fio" and r["metric"] == "client_bandwidth"}
        assert {c for _, c in nodes} == {"client", "client2"} and all(v > 0 for v in nodes.values()), nodes
        assert all(fs[rw] == pytest.approx(nodes[(rw, "client")] + nodes[(rw, "client2")]) for rw in fs), (fs, nodes)
        # the byte ledger read the client node's link (through the toolbox pod on it): what fio
        # moved on CephFS crossed it
        shares = {(p.get("target"), p.get("rw")): float(r["value"]) for r, p in zip(rows, params)
                  if r["workload"] == "fio" and r["metric"] == "from_storage"}
        assert {("fs", "write"), ("rbd", "write")} <= set(shares), (shares, why[-2000:])
        assert all(0.9 <= shares[k] <= 1.3 for k in (("fs", "write"), ("rbd", "write"))), shares
        # ... and the OSDs' disks, read inside their pods: an RBD write lands on both replicas' disks
        moved = {(p.get("target"), r["metric"]): float(r["value"]) for r, p in zip(rows, params)
                 if r["workload"] == "fio" and p.get("rw") == "write" and r["metric"] in ("bytes", "disk_bytes")}
        assert 1.6 <= moved[("rbd", "disk_bytes")] / moved[("rbd", "bytes")] <= 3.5, moved
        events = json.loads((run / "faults.json").read_text())
        assert [(e["kind"], e["target"], e["error"]) for e in events] == [("pod", "rgw.node1", None)], events
        # no fault agent without the owner's consent to a kind only it injects
        assert not client.CoreV1Api(api).list_namespaced_pod(NAMESPACE, label_selector="app=dfslab-fault-agent").items
        assert all(e["undo"] > e["inject"] and e["recover_s"] is not None for e in events), events
        assert all(e["acknowledged_writes"] > 0 for e in events), events
        integrity = json.loads((run / "integrity.json").read_text())
        assert integrity["lost"] == 0 and integrity["corrupt"] == 0 and integrity["checked"] >= 40, integrity
        manifest = json.loads((run / "integrity" / "manifest.json").read_text())  # came back on the seeder's stdout
        assert {e["store"].split(":", 1)[0] for e in manifest} == {"rados", "s3"}, manifest
        # during the gateway's fault the writer PUT its objects through that gateway, each read back
        acked = [json.loads(line) for path in sorted((run / "integrity").glob("journal-*.jsonl"))
                 for line in path.read_text().splitlines() if '"ack"' in line]
        assert any(a["store"].startswith("s3:") for a in acked), acked
        # the s3 load from the toolbox: PUTs and GETs, counted on the client node's link
        s3 = {(p["mode"], p["object_size"], r["metric"]): float(r["value"]) for r, p in zip(rows, params)
              if r["workload"] == "s3"}
        assert s3[("write", 262144, "bandwidth")] > 0 and s3[("read", 262144, "bandwidth")] > 0, (s3, out)
        # The s3 rows are the client node's link, which carries that node's other traffic too (this
        # local Kubernetes' API server lives there), large beside these 3-s steps' few MB: the PUTs
        # seen at 1.38-1.46 in three of about eight runs, the GETs at 1.68 once (2026-11-29; 1.00-1.03
        # in four repetitions on a cluster without faults the same day), 1.0-1.2 in the rest, an
        # excess not yet explained (not the node's bridge and veths, which the ledger no longer
        # counts). Counting the bytes twice would be 2 or more.
        assert 0.9 <= s3.get(("write", 262144, "from_storage"), 0) < 1.9, (s3, why[-2000:])
        assert 0.9 <= s3.get(("read", 262144, "from_storage"), 0) < 1.9, (s3, why[-2000:])
        # the gateway's pod went (grace 0, as Rook deletes it) and Rook's Deployment made a new one
        # on the same node: the writer's PUTs through it waited, none was lost
        assert events[0]["blocked_s"] > 0.5, events[0]
        pushdown = {(p["where"], r["metric"]): float(r["value"]) for r, p in zip(rows, params) if r["workload"] == "pushdown"}
        assert pushdown[("storage", "rows_selected")] == pushdown[("client", "rows_selected")] > 0, pushdown
        assert pushdown[("storage", "bytes_moved")] < pushdown[("client", "bytes_moved")] / 10, pushdown
        jobs = [json.loads(line) for line in (ClusterState(NAME).dir / "kubernetes/jobs.jsonl").read_text().splitlines()]
        assert {"client", "client2"} <= {j["node"] for j in jobs if j["tool"] == "fio"}, jobs
        # nothing of CephFS was made on this machine: the mount point is only a name here
        assert not (ClusterState(NAME).dir / "mnt").exists()
        # baselines on your nodes: iperf3 between every pair (servers as Deployments), fio on each
        # node's own disk (a Job's emptyDir there), each row naming its node
        base = [(r["metric"], p) for r, p in zip(rows, params) if r["workload"] == "baseline"]
        pairs = {frozenset((p["src"], p["dst"])) for m, p in base if m == "network_bandwidth"}
        assert len(pairs) == 6 and set().union(*pairs) == {"node1", "node2", "node3", "client"}, (base, out)
        assert sorted(p["node"] for m, p in base if m == "disk_write_bandwidth") == ["node1", "node2", "node3"], base
        assert not list(run.glob("raw/baseline-disk-*"))  # fio's files were removed in the pods
        assert any("%" in cells[4] for cells in steps_table((run / "report.html").read_text()))  # those disks weighed
        # fio's bandwidth logs were written in the pods and came back through the Jobs' logs
        assert list(run.glob("raw/**/bw*.log")) or list(run.glob("**/bw*.log")), sorted(str(p) for p in run.rglob("*"))
        jobs = [json.loads(line) for line in (ClusterState(NAME).dir / "kubernetes/jobs.jsonl").read_text().splitlines()]
        assert ("fio", "client", "Succeeded", 0) in {(j["tool"], j["node"], j["phase"], j["rc"]) for j in jobs}
        # the sampler saw your nodes through their kubelets and Ceph through Rook's MGR, not this machine
        from dfslab.report import read_timeseries
        series = read_timeseries(run / "timeseries.csv")
        assert {f"nodecpu.{n}" for n in ("node1", "node2", "node3")} <= set(series), sorted(series)
        assert {"cpu.osd.0", "rss.osd.0", "cpu.mon.a", "cpu.jobs.client"} <= set(series), sorted(series)
        assert all(0 <= v <= 100 for n in ("node1", "node2", "node3") for _, v in series[f"nodecpu.{n}"])
        assert max(v for _, v in series["prom.rook-ceph-mgr.ceph_osd_up"]) == 3, sorted(series)
        assert any(v > 0 for _, v in series["prom.rook-ceph-mgr.ceph_osd_op_w"])  # the writes, as the OSDs counted them
    finally:
        dfslab("down", NAME, timeout=900)
    # dfslab's namespace and the cluster-wide objects it installed (Rook's CRDs, roles) are gone;
    # what the cluster had before is all still there, its nodes Ready
    assert NAMESPACE not in {n.metadata.name for n in client.CoreV1Api(api).list_namespace().items}
    assert _cluster_scoped_names(api) == before
    assert _users_pod_uids(api) == users_before  # the user's pod untouched by the faults and by down
    # Rook's cleanup Jobs ran on every node before the namespace went: the cluster's directory in
    # each node's dataDirHostPath (its config, client.admin.keyring, the OSDs' dirs) and its mon dirs are gone
    rt, _ = _host_api()
    for node in ("node1", "node2", "node3"):
        data = rt.node_paths(node).rook_data
        left = sorted(p.name for p in data.iterdir()) if data.is_dir() else []
        assert NAMESPACE not in left and not [n for n in left if n.startswith("mon-")], (node, left)
    # ... and sanitized the devices given: no BlueStore label left (a second cluster takes them: below)
    for node, devices in _spec()["kubernetes"]["devices"].items():
        for device in devices:
            with open(device, "rb") as fh:
                assert b"bluestore block device" not in fh.read(4096), (node, device)
    assert not ClusterState(NAME).dir.exists()
    from dfslab.runtime.kubernetes.objects import node_ready
    assert all(node_ready(n) for n in client.CoreV1Api(api).list_node().items)


AGENT_FAULTS = ["kill", "stop", "partition", "node", "degrade"]  # partition before node: on the same node


def _exec(core, namespace: str, pod: str, argv: list[str]) -> tuple[int, str]:
    from dfslab.runtime.kubernetes.agent import exec_output
    rc, out, err = exec_output(core, namespace, pod, argv)
    return rc, out + err


def _dfslab_rules(rt) -> dict[str, str]:
    """Every rule of dfslab's (its chains' names) in each node's network namespace, as iptables lists them."""
    import subprocess
    rules = {}
    for node in ("node1", "node2", "node3"):
        for table in ("filter", "mangle"):
            listed = subprocess.run(["ip", "netns", "exec", rt.ns(node), "iptables", "-t", table, "-S"],
                                    capture_output=True, text=True, check=True).stdout
            if "DFSLAB" in listed:
                rules[f"{node}/{table}"] = listed
    return rules


def test_the_fault_agent_breaks_only_dfslabs_daemons_and_a_second_cluster_takes_the_same_devices(host):
    """After the cluster above went (its devices sanitized by Rook's cleanup), a second one on the
    same devices, with the owner's consent to every kind dfslab's fault agent injects: kill, stop,
    node, partition and degrade during checksummed writes, each injected and undone; the user's own
    pod on node3's network keeps its processes and its network through a cut of node3; after
    `down` nothing of the agent's is left, in the cluster or in any node's netfilter tables."""
    from kubernetes import client
    rt, api = _host_api()
    core = client.CoreV1Api(api)
    spec = host / "agent.yaml"
    cluster = _spec(allow_faults=AGENT_FAULTS)
    spec.write_text(yaml.safe_dump(cluster))
    cluster_up(spec, NAME, "--timeout", "900", timeout=1500)  # the devices the first cluster had: HEALTH_OK again
    try:
        [users] = [p for p in core.list_namespaced_pod(USERS).items if p.status.phase == "Running"]
        cut, capped, other = users.spec.node_name, *sorted({"node1", "node2", "node3"} - {users.spec.node_name})
        restarts = users.status.container_statuses[0].restart_count
        # a cut by hand: dfslab's daemons on the node lose their network, the user's pod beside them keeps its own
        dfslab("fault", NAME, "partition", cut)
        try:
            peer = next(a.address for n in core.list_node().items if n.metadata.name == other
                        for a in n.status.addresses if a.type == "InternalIP")
            probe = f"import socket; socket.create_connection(('{peer}', 10250), timeout=3); print('reached')"
            assert _exec(core, USERS, users.metadata.name, ["python3", "-c", probe]) == (0, "reached\n")
            from conftest import wait_for
            agent_pod = next(p.metadata.name for p in core.list_namespaced_pod(
                NAMESPACE, label_selector="app=dfslab-fault-agent").items if p.spec.node_name == cut)
            # the daemons' own traffic (heartbeats, MON sessions) meets the cut's drops
            from dfslab.runtime.kubernetes.agent import chain

            def dropped() -> bool:
                rc, listed = _exec(core, NAMESPACE, agent_pod, ["iptables", "-w", "-n", "-v", "-x", "-L",
                                                                chain(NAMESPACE, "partition")])
                return rc == 0 and any(f[2] == "DROP" and int(f[0]) > 0 for f in map(str.split, listed.splitlines())
                                       if len(f) > 2 and f[0].isdigit())
            wait_for(dropped, 60, f"dfslab's daemons' packets on {cut} dropped")
        finally:
            dfslab("fault", NAME, "restore")
        assert not _dfslab_rules(rt)

        # each container signalled once (a second restart waits out the kubelet's back-off, 10 s and up)
        osds = {p.spec.node_name: f"osd.{p.metadata.labels['ceph_daemon_id']}"
                for p in core.list_namespaced_pod(NAMESPACE, label_selector="app=rook-ceph-osd").items}
        # `fault NAME list` names each kind's targets: the running daemons' names, the nodes
        listed = json.loads(dfslab("fault", NAME, "list", "--json").stdout)["kinds"]
        assert set(osds.values()) <= set(listed["kill"]["targets"]) and cut in listed["partition"]["targets"], listed
        exp = host / "agent-exp.yaml"
        # one step of writes, the faults one after another in it (a step each took 75 s more in the suite)
        steps = [{"type": "radosbench", "mode": "write", "seconds": 28, "threads": 4}]
        targets = {"kill": osds[other], "stop": osds[capped], "node": cut, "partition": cut, "degrade": capped}
        exp.write_text(yaml.safe_dump({
            "name": "t-k8s-yours-agent", "cluster": cluster, "repetitions": 1, "workloads": steps,
            "integrity": {"seed_objects": 10, "recovery_timeout": "300s"},
            "faults": [{"kind": kind, "target": targets[kind], "during": 0, "at": f"{1 + 5 * i}s", "duration": "3s",
                        **({"options": {"bandwidth": "20mbit"}} if kind == "degrade" else {})}
                       for i, kind in enumerate(AGENT_FAULTS)]}))
        res = dfslab("run", str(exp), "--cluster", NAME, timeout=1200)
        run = printed_run_dir(res.stdout)
        events = json.loads((run / "faults.json").read_text())
        assert [(e["kind"], e["target"], e["error"]) for e in events] == [
            (kind, targets[kind], None) for kind in AGENT_FAULTS], (events, res.stderr[-2000:])
        assert all(e["undo"] > e["inject"] and e["recover_s"] is not None and e["acknowledged_writes"] > 0
                   for e in events), events
        done = {e["kind"]: e["done"] for e in events}
        assert done["kill"]["signalled"] >= 1 and done["node"]["containers"], done
        assert done["partition"]["cgroups"] and any("osd" in p for p in done["partition"]["pods"]), done
        assert done["degrade"]["cgroups"] and done["degrade"]["device"], done
        integrity = json.loads((run / "integrity.json").read_text())
        assert integrity["lost"] == 0 and integrity["corrupt"] == 0 and integrity["checked"] >= 10, integrity
        assert not _dfslab_rules(rt)  # every cut and cap undone
        # the user's pod: the same one, its process never restarted
        [after] = [p for p in core.list_namespaced_pod(USERS).items if p.status.phase == "Running"]
        assert after.metadata.uid == users.metadata.uid
        assert after.status.container_statuses[0].restart_count == restarts
    finally:
        dfslab("down", NAME, timeout=900)
    assert NAMESPACE not in {n.metadata.name for n in core.list_namespace().items}  # the agent with it
    assert not _dfslab_rules(rt)
    assert not ClusterState(NAME).dir.exists()


GLUSTER_NAME = "t-k8s-gyours"
GLUSTER_NS = "dfslab-gyours"
# One after another in one step of writes, all on node2: replica 3 takes writes with two bricks of
# three (client quorum), so a fault on another node while node2's brick is still coming back from the
# one before would refuse the writes with ENOTCONN (seen in CI: kill glusterd.node2, then a cut of
# node3 6 s later while node2's restarted pod had not brought its brick back on the loaded machine).
# The kill last: its pod's restart is the slowest to undo, and no fault comes after it.
GLUSTER_FAULTS = ["partition", "stop", "degrade", "kill"]
GLUSTER_TARGETS = {"partition": "node2", "stop": "glusterd.node2", "degrade": "node2", "kill": "glusterd.node2"}


def _gluster_spec() -> dict:
    """GlusterFS (replica 3, one brick a node) on the same nodes, with the owner's consent to the
    agent's kill, stop, partition and degrade."""
    base = _spec(allow_faults=GLUSTER_FAULTS)
    kubernetes = {k: v for k, v in base["kubernetes"].items() if k != "devices"}  # bricks are directories
    return {"name": GLUSTER_NAME, "filesystem": "gluster", "runtime": "kubernetes", "nodes": 3,
            "kubernetes": {**kubernetes, "namespace": GLUSTER_NS}}


def test_glusterfs_on_your_cluster_is_measured_broken_through_the_agent_and_leaves_your_nodes_as_they_were(host):
    """GlusterFS's glusterd StatefulSet on your nodes, its state in a directory of dfslab's under
    data_dir_host_path; fio through the FUSE mount and libgfapi in Jobs; a glusterd killed, a node
    cut, a glusterd stopped and a node's link capped through the fault agent during checksummed
    writes (the toolbox's mount), 0 lost;
    after `down` that directory is gone from every node and the user's pod is the same."""
    from kubernetes import client
    from dfslab.backends.gluster.yours import OWNER_MARK, root_on_nodes
    rt, api = _host_api()
    core = client.CoreV1Api(api)
    users_before = _users_pod_uids(api)
    spec = host / "gluster.yaml"
    cluster = _gluster_spec()
    spec.write_text(yaml.safe_dump(cluster))
    root = root_on_nodes(cluster["kubernetes"]["data_dir_host_path"], GLUSTER_NS)
    # this machine's view of each node's data_dir_host_path (the host's nodes bind their own there)
    on_node = {n: rt.node_paths(n).rook_data / root.name for n in ("node1", "node2", "node3")}
    cluster_up(spec, GLUSTER_NAME, "--timeout", "600", timeout=900)
    try:
        status = json.loads(dfslab("status", GLUSTER_NAME, "--json").stdout)
        assert status["health"] == "HEALTH_OK" and len(status["bricks"]) == 3, status
        assert all(b["brick"].endswith(f"{root}/{n}/bricks/b0") for b, n in zip(status["bricks"], ("node1", "node2", "node3")))
        assert all((on_node[n] / OWNER_MARK).is_file() and (on_node[n] / n / "bricks" / "b0").is_dir() for n in on_node)
        pods = core.list_namespaced_pod(GLUSTER_NS, label_selector="app=dfslab-glusterd").items
        assert sorted(p.spec.node_name for p in pods) == ["node1", "node2", "node3"]
        exp = host / "gluster-exp.yaml"
        exp.write_text(yaml.safe_dump({
            "name": "t-k8s-gyours-exp", "cluster": cluster, "repetitions": 1, "baselines": {"network": False, "disk": False},
            "workloads": [{"type": "fio", "target": ["fs", "gfapi"], "rw": "write", "bs": "1MiB", "size": "32MiB",
                           "seconds": 3},
                          {"type": "fio", "target": "fs", "rw": "write", "bs": "1MiB", "size": "32MiB", "seconds": 24}],
            "integrity": {"seed_objects": 10, "recovery_timeout": "300s"},
            "faults": [{"kind": kind, "target": GLUSTER_TARGETS[kind], "during": 1, "at": f"{2 + 6 * i}s",
                        "duration": "3s", **({"options": {"bandwidth": "20mbit"}} if kind == "degrade" else {})}
                       for i, kind in enumerate(GLUSTER_FAULTS)]}))
        res = dfslab("run", str(exp), "--cluster", GLUSTER_NAME, timeout=1200)
        run, why = printed_run_dir(res.stdout), res.stderr
        with open(run / "results.csv") as fh:
            rows = list(csv.DictReader(fh))
        params = [json.loads(r["params"]) for r in rows]
        first = {(p["target"], r["metric"]): float(r["value"]) for r, p in zip(rows, params)
                 if r["workload"] == "fio" and p.get("seconds") == 3}
        assert first[("fs", "bandwidth")] > 0 and first[("gfapi", "bandwidth")] > 0, (first, res.stdout)
        # replica 3: the client sends each byte to three bricks, which write it to their disks
        assert 2.6 <= first[("fs", "from_storage")] <= 3.6, (first, why[-2000:])
        assert 2.6 <= first[("fs", "disk_bytes")] / first[("fs", "bytes")] <= 4.0, first
        events = json.loads((run / "faults.json").read_text())
        assert [(e["kind"], e["target"], e["error"]) for e in events] == [
            (kind, GLUSTER_TARGETS[kind], None) for kind in GLUSTER_FAULTS], (events, why[-2000:])
        assert all(e["undo"] > e["inject"] and e["recover_s"] is not None and e["acknowledged_writes"] > 0
                   for e in events), events
        # glusterd (its container's first process) and what is left of its brick and self-heal daemon: once
        # glusterd is dead the kernel kills the rest of its PID namespace, so the count may be 1
        done = {e["kind"]: e["done"] for e in events}
        assert done["kill"]["signalled"] >= 1 and done["kill"]["containers"], events
        # node2's glusterd pod alone (the toolbox and the user's pod are not dfslab's daemons)
        assert done["partition"]["cgroups"] and [p.split("-")[0] for p in done["partition"]["pods"]] == ["glusterd"], done
        assert done["stop"]["containers"] and done["degrade"]["device"], done
        integrity = json.loads((run / "integrity.json").read_text())
        assert integrity["lost"] == 0 and integrity["corrupt"] == 0 and integrity["checked"] >= 10, integrity
        assert not _dfslab_rules(rt)
    finally:
        dfslab("down", GLUSTER_NAME, timeout=900)
    assert GLUSTER_NS not in {n.metadata.name for n in core.list_namespace().items}
    assert not [n for n, path in on_node.items() if path.exists()], on_node  # the cleanup Jobs removed it on each node
    assert _users_pod_uids(api) == users_before
    assert not _dfslab_rules(rt)
    assert not ClusterState(GLUSTER_NAME).dir.exists()


def test_a_mounted_path_rendered_as_fio_servers_on_your_cluster_is_measured_through_them(host, tmp_path):
    """Lustre or GPFS cannot run here: a directory of this machine stands for the site's mount
    (each node's mount namespace sees it), the rendered DaemonSet runs `fio --server` on the
    labelled node with it mounted by hostPath, and `dfslab run` (from the client node's network,
    where that node's address is reachable) drives fio there."""
    import os
    import subprocess

    from kubernetes import client

    from conftest import DFSLAB, REPO
    from dfslab.backends.external.daemonset import NAME as DS, NODE_LABEL
    from dfslab.render import load_manifests
    from dfslab.runtime.kubernetes.objects import apply_all, delete_object, internal_ip
    rt, api = _host_api()
    core = client.CoreV1Api(api)
    image, ns = rt.state.read()["k8s_images"]["rook"], "dfslab-site"
    site = tmp_path / "site"
    site.mkdir()
    spec = {"name": "t-k8s-site", "filesystem": "external", "runtime": "host", "kubernetes": {"namespace": ns},
            "external": {"posix": {"path": str(site)}}}
    spec_file = tmp_path / "site.yaml"
    spec_file.write_text(yaml.safe_dump(spec))
    kubeconfig = str(rt.admin_kubeconfig)
    # A value the schema lets through but the API server refuses: its own message, naming the field.
    from dfslab.backends.external.daemonset import fio_server_daemonset
    from dfslab.runtime.kubernetes.objects import namespace_object
    from dfslab.render import RenderError, dry_run
    bad = fio_server_daemonset(ns, image, str(site), port=70000)
    with pytest.raises(RenderError, match=r"DaemonSet dfslab-fio-server.*containerPort.*between 1 and 65535"):
        dry_run([namespace_object(ns), bad], kubeconfig)
    res = dfslab("render", str(spec_file), "-o", str(tmp_path / "out"), "--image", image, "--kubeconfig", kubeconfig)
    out = res.stdout + res.stderr  # the summary is on the console (stderr)
    assert "2 judged by the API server" in out, out
    assert ns not in {n.metadata.name for n in core.list_namespace().items}  # a dry run made nothing

    objs = load_manifests(tmp_path / "out")
    core.patch_node("node1", {"metadata": {"labels": {NODE_LABEL: "true"}}})
    try:
        apply_all(api, objs)
        from conftest import wait_for

        def fio_pods():
            return core.list_namespaced_pod(ns, label_selector=f"app.kubernetes.io/name={DS}").items
        try:
            wait_for(lambda: any(p.status.phase == "Running" and all(c.ready for c in p.status.container_statuses or [])
                                 for p in fio_pods()), 180, "the fio server pod to be ready", interval=1)
        except AssertionError as exc:
            events = [f"{e.involved_object.name}: {e.reason}: {e.message}" for e in core.list_namespaced_event(ns).items]
            raise AssertionError(f"{exc}\npods: {[p.status for p in fio_pods()]}\nevents: {events}") from None
        pods = core.list_namespaced_pod(ns, label_selector=f"app.kubernetes.io/name={DS}").items
        assert [p.spec.node_name for p in pods] == ["node1"]  # only the labelled node runs one
        server = internal_ip(core.read_node("node1"))
        exp = tmp_path / "exp.yaml"
        exp.write_text(yaml.safe_dump({
            "name": "t-k8s-site-exp", "cluster": {**spec, "external": {"posix": {"path": str(site)},
                                                                        "clients": [f"{server},8765"]}},
            "repetitions": 1, "baselines": {"network": False, "disk": False},
            "workloads": [{"type": "fio", "target": "fs", "rw": ["write"], "bs": "1MiB", "size": "16MiB", "seconds": 2}]}))
        res = subprocess.run(["ip", "netns", "exec", rt.ns("client"), *DFSLAB, "run", str(exp)], cwd=REPO,
                             capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
        run = printed_run_dir(res.stdout)
        with open(run / "results.csv") as fh:
            rows = list(csv.DictReader(fh))
        per_client = [r for r in rows if r["metric"] == "client_bandwidth"]
        assert [json.loads(r["params"]).get("client") for r in per_client] == [f"{server},8765"], rows
        assert float(per_client[0]["value"]) > 0
        assert not list(site.iterdir())  # dfslab's directory on the "site's" file system went with the run
    finally:
        for obj in reversed(objs):
            try:
                delete_object(api, obj)
            except Exception:  # noqa: BLE001 (already gone)
                pass
        core.patch_node("node1", {"metadata": {"labels": {NODE_LABEL: None}}})
    wait_for(lambda: ns not in {n.metadata.name for n in core.list_namespace().items}, 120, "namespace dfslab-site to go",
             interval=1)

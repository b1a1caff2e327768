"""A real 3-node Ceph cluster: up → HEALTH_OK → objects round-trip → status → down → nothing left."""

import csv
import json
import shlex
import sys
from pathlib import Path

import psutil
import pytest

from conftest import cluster_up, dfslab, small_spec, status_json, write_spec
from leftovers import root_links
from dfslab import cluster
from dfslab.state import ClusterState

pytestmark = pytest.mark.cluster
NAME = "t-int"


@pytest.fixture(scope="module")
def up_cluster(tmp_path_factory):
    links_before = root_links()
    spec = write_spec(tmp_path_factory.mktemp("spec"), small_spec(NAME, cephfs=True))
    result = cluster_up(spec, NAME)
    yield {"up": result, "links_before": links_before}
    cluster.down(NAME, missing_ok=True)


def test_up_reports_health_ok(up_cluster):
    assert "is up" in up_cluster["up"].stderr
    info = status_json(NAME)
    assert info["health"] == "HEALTH_OK", info.get("checks")
    assert info["osds"] == {"total": 3, "up": 3, "in": 3}
    assert info["pgs"]["total"] == info["pgs"]["expected"] == info["pgs"]["by_state"]["active+clean"]
    assert info["mds_active"] == 1


def test_status_lists_every_daemon(up_cluster):
    info = status_json(NAME)
    daemons = {d["name"]: d for d in info["daemons"]}
    assert set(daemons) == {"mon.a", "mgr.x", "osd.0", "osd.1", "osd.2", "mds.a"}
    for d in daemons.values():
        assert d["alive"] and d["pid"] > 0 and d["rss_bytes"] > 1 << 20, d
    # One OSD per node, each on its node's own address.
    assert {daemons[f"osd.{i}"]["node"] for i in range(3)} == {"node1", "node2", "node3"}
    assert daemons["osd.1"]["address"] == info["addresses"]["node2"] != info["addresses"]["node1"]
    pools = {p["name"]: p for p in info["pools"]}
    assert {"dfslab", "rbd", "cephfs_data", "cephfs_metadata"} <= set(pools)
    assert all(p["size"] == 2 for p in pools.values())


def test_status_human_output(up_cluster):
    out = dfslab("status", NAME).stdout
    assert "HEALTH_OK" in out and "osd.2" in out and "active+clean" in out


def test_objects_round_trip_from_the_client_node(up_cluster):
    script = Path(__file__).parent / "rados_roundtrip.py"
    res = dfslab("exec", NAME, "--", sys.executable, str(script), "25")
    result = json.loads(res.stdout)
    assert result == {"written": 25, "verified": 25, "bytes": result["bytes"]}
    assert result["bytes"] > 10 << 20


def test_cli_reaches_the_cluster_only_from_its_namespaces(up_cluster):
    res = dfslab("exec", NAME, "--", "ceph", "osd", "tree", "-f", "json")
    hosts = {n["name"] for n in json.loads(res.stdout)["nodes"] if n["type"] == "host"}
    assert hosts == {"node1", "node2", "node3"}  # CRUSH failure domains are the spec's nodes
    wrong = dfslab("exec", NAME, "--node", "node9", "--", "true", check=False)
    assert wrong.returncode == 2 and f"cluster {NAME!r} has no node 'node9'; its nodes: node1, node2, node3, client" \
        in wrong.stderr, wrong.stderr


def test_an_experiment_runs_on_the_cluster_it_names_or_on_the_one_up(up_cluster, tmp_path):
    """With --cluster, `cluster:` may be left out; one of another filesystem is refused naming
    both (it used to run silently and store the wrong spec); one of the same filesystem on
    another runtime runs on the cluster given (test_experiment)."""
    import yaml
    repo = Path(__file__).resolve().parent.parent
    bare = tmp_path / "bare.yaml"
    bare.write_text(yaml.safe_dump({"name": "bare", "workloads": [{"type": "radosbench", "seconds": 2}]}))
    res = dfslab("run", str(bare), "--cluster", NAME, "--dry-run")
    assert res.stdout.startswith(f"bare on {NAME} (ceph, runtime local, holds "), res.stdout
    other = tmp_path / "other.yaml"
    other.write_text(yaml.safe_dump({"name": "other", "cluster": str(repo / "examples/gluster-small.yaml"),
                                     "workloads": [{"type": "fio", "seconds": 2}]}))
    res = dfslab("run", str(other), "--cluster", NAME, "--dry-run", check=False)
    assert res.returncode == 2 and "the experiment's cluster is gluster; cluster 't-int' is ceph: drop cluster: " \
        "to run on 't-int'" in res.stderr.replace("\n  ", " "), res.stderr


def test_server_caches_are_dropped_before_each_step_when_asked(up_cluster, tmp_path):
    import yaml
    exp = tmp_path / "drop.yaml"
    exp.write_text(yaml.safe_dump({"name": "drop", "server_cache": "drop", "baselines": {"network": False, "disk": False},
                                   "workloads": [{"type": "radosbench", "seconds": 1, "mode": ["write", "seq"],
                                                  "threads": 4, "object_size": "1MiB"}]}))
    res = dfslab("run", str(exp), "--cluster", NAME, "--json")
    out = json.loads(res.stdout)  # --json: one object on stdout, nothing else
    run = Path(out["runs"][0]["run"])
    assert out["runs"][0]["report"] == str(run / "report.html") and out["runs"][0]["failures"] == []
    seq = next(line for line in out["runs"][0]["results"] if line["parameters"].endswith("mode=seq"))
    rows = [r for r in csv.DictReader(open(run / "results.csv")) if r["metric"] == "bandwidth" and '"seq"' in r["params"]]
    assert seq["bandwidth (MB/s)"] == {"mean": pytest.approx(float(rows[0]["value"])), "ci95": None}
    assert seq["from storage (ratio)"]["mean"] >= 0.9
    intervals = json.loads((run / "intervals.json").read_text())
    assert [iv["server_cache_dropped"] for iv in intervals] == [
        "BlueStore caches (ceph tell osd.* cache drop), page cache"], intervals
    assert shlex.split((run / "raw/server-cache-drop.cmd").read_text()) == ["ceph", "tell", "osd.*", "cache", "drop"]
    assert "Server caches dropped before every step: BlueStore caches" in (run / "report.html").read_text()


def test_list_and_fault_list_take_json(up_cluster):
    listed = {c["name"]: c for c in json.loads(dfslab("list", "--json").stdout)}
    assert listed[NAME]["phase"] == "up" and listed[NAME]["filesystem"] == "ceph"
    faults = json.loads(dfslab("fault", NAME, "list", "--json").stdout)
    from dfslab.chaos import fault_kinds
    assert faults["active"] == [] and set(faults["kinds"]) == set(fault_kinds())
    assert faults["kinds"]["degrade"]["options"]["bandwidth"] == "100mbit"
    # the kinds this cluster takes, and why not the others (a GlusterFS kind, Kubernetes' pods)
    assert faults["kinds"]["kill"]["refused"] is None and faults["kinds"]["fill"]["refused"] is None
    assert "gluster" in faults["kinds"]["brick"]["refused"] and "kubernetes" in faults["kinds"]["pod"]["refused"]
    listed = dfslab("fault", NAME, "list").stdout
    assert "not here: brick" in listed and f"daemons of {NAME} (kill, stop): mon.a" in listed, listed


def test_keys_are_private(up_cluster):
    state_dir = ClusterState(NAME).dir
    assert state_dir.stat().st_mode & 0o777 == 0o700
    keyrings = [p for p in state_dir.rglob("*keyring*") if p.is_file()]
    assert len(keyrings) >= 6  # admin (2), mon., mgr.x, 3 OSDs, mds.a
    assert {oct(p.stat().st_mode & 0o777) for p in keyrings} == {"0o600"}, keyrings


def test_second_up_with_same_name_is_refused(up_cluster, tmp_path):
    spec = write_spec(tmp_path, small_spec(NAME, cephfs=False))
    res = dfslab("up", str(spec), check=False)
    assert res.returncode == 2 and "already exists" in res.stderr
    assert status_json(NAME)["health"] == "HEALTH_OK"  # the running cluster is untouched


def gone(pid: int) -> bool:
    """Not running: no longer in /proc, or a zombie left to a parent that is not us."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


SIBLING = NAME + "-b"  # its namespaces all start with "dfs-t-int-": a prefix match would take them


def test_down_leaves_nothing_and_spares_a_sibling_with_a_longer_name(up_cluster, tmp_path):
    spec = write_spec(tmp_path, SIBLING_SPEC)
    cluster_up(spec, SIBLING)
    try:
        sibling_pids = [d["pid"] for d in status_json(SIBLING)["daemons"]]
        down_leaves_nothing(up_cluster)
        info = status_json(SIBLING)
        assert info["health"] == "HEALTH_OK" and all(d["alive"] for d in info["daemons"])
        assert not any(gone(pid) for pid in sibling_pids)
        script = Path(__file__).parent / "rados_roundtrip.py"
        assert json.loads(dfslab("exec", SIBLING, "--", sys.executable, str(script), "5").stdout)["verified"] == 5
    finally:
        dfslab("down", SIBLING, check=False)
    assert cluster.leftovers(SIBLING) == []


SIBLING_SPEC = f"""
name: {SIBLING}
nodes: 1
ceph: {{mons: 1, osds_per_node: 1, osd_size: 1GiB, replica_size: 1, pg_num: 8, cephfs: false}}
"""


def down_leaves_nothing(up_cluster):
    state_dir = ClusterState(NAME).dir
    pids = [d["pid"] for d in status_json(NAME)["daemons"]]
    namespaces = {f"/run/netns/{ns}" for ns in ClusterState(NAME).resources("netns")}
    assert len(namespaces) == 5  # hub, 3 nodes, client
    res = dfslab("down", NAME)
    assert "stopped 6 process(es)" in res.stderr
    assert all(gone(pid) for pid in pids)  # down returns only when what it killed is gone
    assert cluster.leftovers(NAME) == []
    assert not state_dir.exists()
    mount_points = {line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()}
    assert not [m for m in mount_points if m.startswith(f"{state_dir}/") or m in namespaces]
    assert root_links() == up_cluster["links_before"]  # no veth or bridge leaked into the root namespace
    for command in (["status", NAME], ["down", NAME], ["exec", NAME, "--", "true"], ["fault", NAME, "kill", "osd.0"]):
        res = dfslab(*command, check=False)  # an unknown cluster is exit 1 everywhere (README's exit codes)
        assert res.returncode == 1 and f"no cluster named {NAME!r}" in res.stderr, (command, res.returncode, res.stderr)

"""Faults on a real cluster: each kind breaks something observable and its undo puts it back;
faults timed into a run lose nothing acknowledged; the checker itself can fail."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import DFSLAB, cluster_up, dfslab, small_spec, status_json, wait_for, write_spec
from dfslab import cluster
from dfslab.state import ClusterState

pytestmark = pytest.mark.cluster
NAME = "t-fault"


@pytest.fixture(scope="module")
def up(tmp_path_factory):
    cluster_up(write_spec(tmp_path_factory.mktemp("f"), small_spec(NAME, cephfs=False)), NAME)
    yield NAME
    cluster.down(NAME, missing_ok=True)


def daemon(name: str) -> dict:
    return next(d for d in status_json(NAME)["daemons"] if d["name"] == name)


def ceph_json(*args: str) -> dict:
    return json.loads(dfslab("exec", NAME, "--", "ceph", *args, "--format", "json").stdout)


def healthy() -> bool:
    info = status_json(NAME)
    return info["health"] == "HEALTH_OK" and info["pgs"]["total"] == info["pgs"]["by_state"].get("active+clean")


def test_kill_and_restore_an_osd(up):
    before = daemon("osd.1")["pid"]
    dfslab("fault", NAME, "kill", "osd.1")
    assert not daemon("osd.1")["alive"]
    wait_for(lambda: not next(o for o in ceph_json("osd", "dump")["osds"] if o["osd"] == 1)["up"], 60, "osd.1 marked down")
    assert "kill osd.1" in dfslab("fault", NAME, "list").stdout
    dfslab("fault", NAME, "restore")
    assert daemon("osd.1")["alive"] and daemon("osd.1")["pid"] != before
    wait_for(healthy, 120, "HEALTH_OK after restore", interval=1)
    assert "active:" not in dfslab("fault", NAME, "list").stdout


def test_out_and_in(up):
    dfslab("fault", NAME, "out", "osd.2")
    assert ceph_json("osd", "dump")["osds"][2]["in"] == 0
    dfslab("fault", NAME, "restore")
    assert ceph_json("osd", "dump")["osds"][2]["in"] == 1
    wait_for(healthy, 120, "HEALTH_OK after mark in", interval=1)


def test_fill_trips_full_blocks_writes_and_restore_resumes_them(up):
    dfslab("fault", NAME, "fill", "osd.0", "--set", "headroom=64MiB")
    assert "OSD_FULL" in ceph_json("health", "detail")["checks"]
    # A full OSD makes its pools full: a client write waits instead of failing or landing.
    put = subprocess.Popen([*DFSLAB, "exec", NAME, "--", "sh", "-c",
                            "echo full-test | rados -p dfslab put fill-probe -"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            put.wait(timeout=6)
        dfslab("fault", NAME, "restore")
        assert put.wait(timeout=60) == 0, put.stderr.read()
    finally:
        if put.poll() is None:
            put.kill()
    got = dfslab("exec", NAME, "--", "rados", "-p", "dfslab", "get", "fill-probe", "-").stdout
    assert got == "full-test\n"
    assert "OSD_FULL" not in ceph_json("health", "detail")["checks"]
    pools = [p["pool_name"] for p in ceph_json("osd", "dump")["pools"]]
    assert f"dfslab-fill-{NAME}" not in pools and not [p for p in pools if p.startswith("dfslab-fill")]
    assert ceph_json("osd", "dump")["full_ratio"] == pytest.approx(0.95)
    wait_for(healthy, 120, "HEALTH_OK after the fill is removed", interval=1)


def hub_link_flags(port: str) -> list[str]:
    out = subprocess.run(["ip", "-n", f"dfs-{NAME}-hub", "-o", "link", "show", port], capture_output=True, text=True).stdout
    return out.split("<", 1)[1].split(">", 1)[0].split(",")


def test_partition_cuts_the_link_and_restore_reconnects(up):
    dfslab("fault", NAME, "partition", "node2")
    assert "UP" not in hub_link_flags("v1")  # node2's port on the bridge is down
    res = subprocess.run(["nsenter", f"--net=/run/netns/dfs-{NAME}-client", "ping", "-c", "1", "-W", "1",
                          status_json(NAME)["addresses"]["node2"]], capture_output=True)
    assert res.returncode == 1  # ping ran and got no answer: node2 is unreachable
    dfslab("fault", NAME, "restore")
    res = subprocess.run(["nsenter", f"--net=/run/netns/dfs-{NAME}-client", "ping", "-c", "1", "-W", "2",
                          status_json(NAME)["addresses"]["node2"]], capture_output=True)
    assert res.returncode == 0
    wait_for(healthy, 120, "HEALTH_OK after the link is back", interval=1)


def test_degrade_caps_bandwidth_and_restore_removes_it(up):
    dfslab("fault", NAME, "degrade", "node3", "--set", "bandwidth=50mbit")
    qdisc = subprocess.run(["tc", "-n", f"dfs-{NAME}-node3", "qdisc", "show", "dev", "eth0"], capture_output=True, text=True).stdout
    assert "tbf" in qdisc and "50Mbit" in qdisc
    dfslab("fault", NAME, "restore")
    qdisc = subprocess.run(["tc", "-n", f"dfs-{NAME}-node3", "qdisc", "show", "dev", "eth0"], capture_output=True, text=True).stdout
    assert "tbf" not in qdisc


def test_bad_fault_requests_are_refused(up):
    res = dfslab("fault", NAME, "kill", "osd.9", check=False)
    assert res.returncode == 2 and "no daemon 'osd.9'" in res.stderr
    res = dfslab("fault", NAME, "explode", "osd.1", check=False)
    assert res.returncode == 2 and "unknown fault" in res.stderr
    res = dfslab("fault", NAME, "degrade", "node1", "--set", "latency=5ms", check=False)
    assert res.returncode == 2 and "netem" in res.stderr


def test_faults_during_load_lose_nothing(up, tmp_path):
    exp = {"name": "t-faultrun", "cluster": {"name": NAME, "nodes": 3},
           "baselines": {"network": False, "disk": False},
           "integrity": {"seed_objects": 12, "recovery_timeout": "120s"},
           # Sized to write for all their seconds under dfslab's object cap (40 % of the pool's free
           # space): at 8 threads of 1 MiB the 14-s write stopped after 3.4 s, before its fault at 6 s.
           "workloads": [{"type": "radosbench", "mode": ["write"], "seconds": 14, "threads": 2, "object_size": "64KiB"},
                         {"type": "radosbench", "mode": ["write"], "seconds": 8, "threads": 2, "object_size": "64KiB"}],
           "faults": [{"kind": "kill", "target": "osd.1", "during": 0, "at": "6s", "duration": "6s"},
                      {"kind": "node", "target": "node3", "during": 1, "at": "2s", "duration": "4s"}]}
    path = tmp_path / "faults.yaml"
    path.write_text(yaml.safe_dump(exp))
    res = dfslab("run", str(path), "--cluster", NAME, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    run = Path(res.stdout.strip().split("report: ")[-1]).parent
    integrity = json.loads((run / "integrity.json").read_text())
    assert integrity["lost"] == 0 and integrity["corrupt"] == 0
    assert integrity["checked"] > 12  # the seed and the writer's acknowledged objects
    # then removed from the benchmark pool and the mount: the cluster is left as the run found it
    assert integrity["removed"] >= integrity["checked"] and "left" not in integrity, integrity
    assert "integrity-" not in dfslab("exec", NAME, "--", "rados", "-p", "dfslab", "ls").stdout
    events = json.loads((run / "faults.json").read_text())
    assert [(e["kind"], e["target"]) for e in events] == [("kill", "osd.1"), ("node", "node3")]
    for e in events:
        assert e["error"] is None and e["undo"] > e["inject"]
        assert e["recover_s"] is not None and e["recover_s"] < 120
        assert e["acknowledged_writes"] > 0
        assert e["write_latency"] and all(peak >= mean > 0 and n > 0 for _, mean, peak, n in e["write_latency"])
    # Killing one of three OSDs under a write load leaves the client still moving data.
    assert events[0]["throughput_before"] > 0 and events[0]["throughput_during"] > 0
    assert events[0]["latency_before_ms"] > 0 and events[0]["latency_during_ms"] > 0
    html = (run / "report.html").read_text()
    assert "0 lost" in html and "Faults" in html and "client write latency per second" in html
    assert healthy()


def test_the_checker_fails_when_data_is_gone(tmp_path):
    name = "t-lossy"
    cluster_up(write_spec(tmp_path, f"name: {name}\nnodes: 2\nceph: {{replica_size: 1, osd_size: 2GiB, cephfs: false}}\n"), name)
    try:
        manifest = tmp_path / "manifest.json"
        dfslab("exec", name, "--", sys.executable, "-m", "dfslab.chaos.integrity", "seed", str(manifest), "8", "rados:dfslab")
        assert dfslab("verify", name, str(manifest)).returncode == 0
        # Pool size 1: destroy node2's OSD behind Ceph's back (process killed, block file wiped).
        dfslab("fault", name, "node", "node2")
        block = Path(ClusterState(name).dir / "ceph" / "data" / "osd.1" / "block")
        block.write_bytes(b"")
        res = dfslab("verify", name, str(manifest), "--timeout", "5", check=False)
        assert res.returncode == 1
        result = json.loads(res.stdout)
        assert result["lost"] > 0 and result["checked"] == 8
        assert "lost" in res.stderr
    finally:
        cluster.down(name, missing_ok=True)
    assert cluster.leftovers(name) == []


def test_down_after_kill_9_in_the_middle_of_a_fault_run(tmp_path):
    name = "t-faultkill"
    exp = {"name": name, "cluster": {"name": name, "nodes": 2, "ceph": {"replica_size": 2, "osd_size": "2GiB", "cephfs": False}},
           "baselines": {"network": False, "disk": False}, "integrity": {"seed_objects": 4},
           "workloads": [{"type": "radosbench", "mode": ["write"], "seconds": 30, "threads": 4, "object_size": "1MiB"}],
           "faults": [{"kind": "partition", "target": "node2", "during": 0, "at": "1s", "duration": "60s"}]}
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(exp))
    proc = subprocess.Popen([sys.executable, "-m", "dfslab.cli", "run", str(path)], cwd=Path(__file__).parent.parent,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        state = ClusterState(name)
        wait_for(lambda: any(not f["record"].get("pending") for f in state.resources("faults")) if state.exists() else False,
                 120, "the partition to be injected", interval=0.2)
        proc.kill()
        proc.wait()
        assert cluster.leftovers(name)  # killed mid-fault: the cluster and its cut link are still there
        res = dfslab("down", name)
        assert "left:" not in res.stderr
    finally:
        if proc.poll() is None:
            proc.kill()
        cluster.down(name, missing_ok=True)
    assert cluster.leftovers(name) == []

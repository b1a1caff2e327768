"""filesystem: external. A Ceph cluster dfslab did not make (brought up by hand on loopback,
tests/existing_ceph.py), a CephFS mounted by hand with ceph-fuse, a plain local directory,
fio servers, an iperf3 server and node_exporter in network namespaces this test makes:
dfslab measures them and leaves everything it did not create exactly as it was."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from conftest import DFSLAB, REPO, listening, stop_group, wait_for
from existing_ceph import PROMETHEUS_PORT, ByHandCeph

pytestmark = pytest.mark.cluster

NS = "dfs-t-ext"  # namespaces of this test: dfs-t-ext1, dfs-t-ext2, ...


@pytest.fixture(scope="module")
def byhand():
    cluster = ByHandCeph().start()
    try:
        # Data of the site's own, which must come through untouched.
        for i in range(5):
            subprocess.run(["rados", "-c", str(cluster.conf), "-k", str(cluster.admin), "-p", "site-data", "put",
                            f"keep-{i}", "/etc/os-release"], check=True, timeout=60)
        yield cluster
    finally:
        cluster.stop()


class Hosts:
    """Client hosts: network namespaces joined to this machine by a veth pair each (10.79.N.2,
    this side 10.79.N.1). They share this machine's mounts, as hosts mounting one file system do."""

    def __init__(self):
        self.names: list[str] = []
        self.procs: list[subprocess.Popen] = []

    def add(self, n: int) -> str:
        ns = f"{NS}{n}"
        subprocess.run(["ip", "netns", "add", ns], check=True)
        self.names.append(ns)
        for argv in (["ip", "link", "add", f"{NS}h{n}", "type", "veth", "peer", "name", "eth0", "netns", ns],
                     ["ip", "addr", "add", f"10.79.{n}.1/30", "dev", f"{NS}h{n}"],
                     ["ip", "link", "set", f"{NS}h{n}", "up"],
                     ["ip", "-n", ns, "addr", "add", f"10.79.{n}.2/30", "dev", "eth0"],
                     ["ip", "-n", ns, "link", "set", "eth0", "up"],
                     ["ip", "-n", ns, "link", "set", "lo", "up"]):
            subprocess.run(argv, check=True)
        return f"10.79.{n}.2"

    def start(self, n: int, *argv: str) -> None:
        self.procs.append(subprocess.Popen(["nsenter", f"--net=/run/netns/{NS}{n}", *argv],
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))

    def close(self) -> None:
        for proc in self.procs:
            stop_group(proc)
        for ns in self.names:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


@pytest.fixture(scope="module")
def hosts():
    h = Hosts()
    try:
        for n in (1, 2, 3):
            h.add(n)
        h.start(1, "fio", "--server=ip:10.79.1.2,8765")
        h.start(2, "fio", "--server=ip:10.79.2.2,8765")
        h.start(3, "iperf3", "-s", "-B", "10.79.3.2", "-p", "5201")
        h.start(3, "prometheus-node-exporter", "--web.listen-address=10.79.3.2:9100")
        for n, port in ((1, 8765), (2, 8765), (3, 5201), (3, 9100)):  # each listening, not a guess at when
            wait_for(lambda: listening(port, f"{NS}{n}"), 30, f"a server on port {port} in {NS}{n}", interval=0.1)
        yield h
    finally:
        h.close()


@pytest.fixture(scope="module")
def cephfs_by_hand(byhand, tmp_path_factory):
    """The cluster's CephFS mounted by hand, as a site mounts it, with some of the site's files."""
    mnt = tmp_path_factory.mktemp("cephfs-by-hand")
    proc = subprocess.Popen(["ceph-fuse", "-f", "-c", str(byhand.conf), "-k", str(byhand.admin), str(mnt)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not os.path.ismount(mnt) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert os.path.ismount(mnt)
        (mnt / "site").mkdir()
        (mnt / "site" / "results.txt").write_text("the site's own data\n")
        yield mnt
    finally:
        subprocess.run(["fusermount", "-u", "-z", str(mnt)], capture_output=True)
        stop_group(proc)


def dfslab_run(tmp_path: Path, exp: dict) -> tuple[int, Path | None, str]:
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(exp))
    res = subprocess.run([*DFSLAB, "run", str(path)], capture_output=True, text=True, timeout=900, cwd=REPO)
    runs = [line.removeprefix("report: ") for line in res.stdout.splitlines() if line.startswith("report: ")]
    return res.returncode, Path(runs[0]).parent if runs else None, res.stdout + res.stderr


def rows_of(run: Path) -> list[dict]:
    return [{**r, "params": json.loads(r["params"]), "value": float(r["value"])} for r in csv.DictReader((run / "results.csv").open())]


def tree(path: Path) -> dict[str, int]:
    return {str(p.relative_to(path)): p.stat().st_size if p.is_file() else -1 for p in sorted(path.rglob("*"))}


def test_existing_ceph_is_measured_and_left_as_it_was(byhand, tmp_path):
    before = byhand.inventory()
    exp = {"name": "t-extceph", "cluster": {"name": "t-extceph", "filesystem": "external", "external": {
               "ceph": {"conf": str(byhand.conf), "keyring": str(byhand.bench_keyring), "user": "client.bench",
                        "cephfs": True},
               "prometheus": [f"http://127.0.0.1:{PROMETHEUS_PORT}/metrics"]}},
           "baselines": {"network": False, "disk": False},
           "workloads": [{"type": "radosbench", "mode": ["write", "seq"], "seconds": 2, "threads": 8},
                         {"type": "fio", "target": ["rbd", "rados", "fs"], "rw": "write", "bs": "1MiB", "size": "16MiB",
                          "seconds": 2},
                         {"type": "metadata", "procs": 2, "files_per_proc": 50}]}
    code, run, out = dfslab_run(tmp_path, exp)
    assert code == 0, out[-3000:]
    rows = rows_of(run)
    seen = {(r["workload"], r["params"].get("target")) for r in rows if r["metric"] in ("bandwidth", "ops") and r["value"] > 0}
    assert {("radosbench", None), ("fio", "rbd"), ("fio", "rados"), ("fio", "fs"), ("metadata", "fs")} <= seen, seen
    prov = json.loads((run / "provenance.json").read_text())
    assert "16.2" in prov["filesystem_versions"]["ceph mon"]
    series = {r["series"] for r in csv.DictReader((run / "timeseries.csv").open())}
    assert f"prom.127.0.0.1:{PROMETHEUS_PORT}.ceph_osd_up" in series and "ceph.health" in series
    # Every pool, and every object of every pool but CephFS's own metadata (the MDS journals
    # there by itself), exactly as before: dfslab's pool and image are gone. The MDS purges the
    # objects of unlinked files in the background: wait for it (under a full test suite's load it
    # took over 90 s once in CI).
    deadline = time.monotonic() + 300
    while (after := byhand.inventory())["cephfs_data"] != before["cephfs_data"] and time.monotonic() < deadline:
        time.sleep(2)
    assert sorted(after) == sorted(before)
    assert {p: o for p, o in after.items() if p != "cephfs_metadata"} == \
        {p: o for p, o in before.items() if p != "cephfs_metadata"}
    listed = subprocess.run([*DFSLAB, "list"], capture_output=True, text=True, cwd=REPO).stdout
    assert "t-extceph" not in listed


def test_mounted_paths_with_fio_on_several_client_hosts(byhand, cephfs_by_hand, hosts, tmp_path):
    site_before = tree(cephfs_by_hand)
    exp = {"name": "t-extfs", "cluster": {"name": "t-extfs", "filesystem": "external", "external": {
               "posix": {"path": str(cephfs_by_hand)},
               "clients": ["10.79.1.2", "10.79.2.2,8765"], "iperf": ["10.79.3.2"],
               "prometheus": ["http://10.79.3.2:9100/metrics"]}},
           "baselines": {"network": True, "disk": False, "seconds": 1},
           "workloads": [{"type": "fio", "rw": ["write", "read"], "bs": "1MiB", "size": "16MiB", "seconds": 2},
                         {"type": "filegrid", "file_size": "8MiB", "threads": 1}]}
    code, run, out = dfslab_run(tmp_path, exp)
    assert code == 0, out[-3000:]
    rows = rows_of(run)
    fio = [r for r in rows if r["workload"] == "fio"]
    for op in ("write", "read"):
        per_client = {r["params"]["client"]: r["value"] for r in fio if r["metric"] == "client_bandwidth" and r["params"]["op"] == op}
        assert set(per_client) == {"10.79.1.2,8765", "10.79.2.2,8765"} and all(v > 0 for v in per_client.values())
        [total] = [r for r in fio if r["metric"] == "bandwidth" and r["params"]["op"] == op]
        assert total["params"]["clients"] == 2
        assert total["value"] == pytest.approx(sum(per_client.values()))
    grid = {(r["params"]["op"], r["params"]["client"]) for r in rows if r["workload"] == "filegrid" and r["metric"] == "client_bandwidth"}
    assert grid == {(op, c) for op in ("write", "read") for c in ("10.79.1.2,8765", "10.79.2.2,8765")}
    assert any(r["metric"] == "network_bandwidth" and r["params"]["dst"] == "10.79.3.2" and r["value"] > 0 for r in rows)
    series = {r["series"] for r in csv.DictReader((run / "timeseries.csv").open())}
    assert "prom.10.79.3.2:9100.node_memory_MemAvailable_bytes" in series
    assert "fuse.ceph-fuse" in json.loads((run / "provenance.json").read_text())["filesystem_versions"]["posix mount"]
    assert "mounted file system" in (run / "report.html").read_text()
    assert tree(cephfs_by_hand) == site_before  # the run's directory is gone; the site's files untouched


def test_a_plain_local_directory(tmp_path):
    target = tmp_path / "scratch"
    target.mkdir()
    (target / "mine.txt").write_text("not dfslab's")
    exp = {"name": "t-extdir", "cluster": {"name": "t-extdir", "filesystem": "external",
                                           "external": {"posix": {"path": str(target)}}},
           "baselines": {"network": True, "disk": True, "seconds": 1},
           "workloads": [{"type": "metadata", "procs": 2, "files_per_proc": 50}]}
    code, run, out = dfslab_run(tmp_path, exp)
    assert code == 0, out[-3000:]
    assert {r["params"]["phase"] for r in rows_of(run) if r["workload"] == "metadata"} == {"create", "stat", "read", "unlink"}
    assert tree(target) == {"mine.txt": len("not dfslab's")}
    prov = json.loads((run / "provenance.json").read_text())
    assert any("baseline network" in s for s in prov["skipped"])  # nothing to measure it against: said, not hidden


@pytest.mark.parametrize("external,field", [
    ({"ceph": {"conf": "/nonexistent/ceph.conf", "keyring": "/etc/hostname"}}, "external.ceph.conf"),
    ({"posix": {"path": "/nonexistent/lustre"}}, "external.posix.path"),
    ({"posix": {"path": "relative/dir"}}, "external.posix.path"),
    ({"posix": {"path": "/tmp"}, "clients": ["10.79.3.2"]}, "external.clients[0]"),  # a host with no fio server
    ({"posix": {"path": "/tmp"}, "clients": ["bad host!"]}, "external.clients"),
    ({}, "external"),
])
def test_bad_input_is_refused_before_anything_runs(hosts, tmp_path, external, field):
    exp = {"name": "t-extbad", "cluster": {"name": "t-extbad", "filesystem": "external", "external": external},
           "workloads": [{"type": "radosbench" if "ceph" in external else "metadata"}]}
    code, run, out = dfslab_run(tmp_path, exp)
    assert code == 2, out
    assert field in out, out
    assert run is None
    listed = subprocess.run([*DFSLAB, "list"], capture_output=True, text=True, cwd=REPO).stdout
    assert "t-extbad" not in listed


def test_a_user_without_caps_and_faults_are_refused(byhand, tmp_path):
    nocaps = tmp_path / "nocaps.keyring"
    nocaps.write_text(byhand.ceph("auth", "get-or-create", "client.nocaps"))
    spec = {"name": "t-extcaps", "filesystem": "external",
            "external": {"ceph": {"conf": str(byhand.conf), "keyring": str(nocaps), "user": "client.nocaps"}}}
    code, _, out = dfslab_run(tmp_path, {"name": "t-extcaps", "cluster": spec, "workloads": [{"type": "radosbench"}]})
    assert code == 2 and "external.ceph.keyring" in out, out
    spec["external"]["ceph"].update(keyring=str(byhand.bench_keyring), user="client.bench")
    code, _, out = dfslab_run(tmp_path, {"name": "t-extcaps", "cluster": spec, "workloads": [{"type": "radosbench"}],
                                         "faults": [{"kind": "kill", "target": "osd.0", "at": "1s", "during": 0}]})
    assert code == 2 and "faults[0]" in out and "did not make" in out, out
    assert json.loads(byhand.ceph("osd", "pool", "ls", "--format", "json")).count("dfslab-t-extcaps") == 0


def _allowed_fault_run(byhand, tmp_path, name: str, keyring: Path, user: str, workload: dict, fault: dict) -> Path:
    """An experiment with one fault the owner allows, run to the end: the fault injected and undone
    without error, the cluster healthy again, every seeded and acknowledged object read back."""
    exp = {"name": name, "cluster": {"name": name, "filesystem": "external", "external": {
               "ceph": {"conf": str(byhand.conf), "keyring": str(keyring), "user": user},
               "allow_faults": [fault["kind"]]}},
           "baselines": {"network": False, "disk": False},
           "integrity": {"seed_objects": 20, "recovery_timeout": "120s"},
           "workloads": [workload], "faults": [{"during": 0, "at": "1s", "duration": "3s", **fault}]}
    code, run, out = dfslab_run(tmp_path, exp)
    assert code == 0, out[-3000:]
    [event] = json.loads((run / "faults.json").read_text())
    assert (event["kind"], event["target"], event["error"]) == (fault["kind"], fault["target"], None), event
    assert event["undo"] > event["inject"] and event["recover_s"] is not None
    integrity = json.loads((run / "integrity.json").read_text())
    assert integrity["lost"] == 0 and integrity["corrupt"] == 0 and integrity["checked"] >= 20, integrity
    return run


def test_an_allowed_out_fault_is_undone_through_the_cluster_api_and_loses_nothing(byhand, tmp_path):
    run = _allowed_fault_run(byhand, tmp_path, "t-extout", byhand.bench_keyring, "client.bench",
                             # 256 KiB objects: 6 s of 1 MiB ones at 4 in flight reached the by-hand
                             # cluster's 40 %-of-free cap on a quiet machine (not as asked: exit 1)
                             {"type": "radosbench", "mode": ["write"], "seconds": 6, "threads": 4, "object_size": "256KiB"},
                             {"kind": "out", "target": "osd.1"})
    osds = json.loads(byhand.ceph("osd", "dump", "--format", "json"))["osds"]
    assert all(o["in"] == 1 for o in osds)  # marked in again
    # the MONs listen on this machine's loopback, which the ledger does not read: "not counted",
    # never a share of 0 ("not from the storage") for bytes that crossed no interface it reads
    rows = rows_of(run)
    assert [r for r in rows if r["metric"] == "bytes"] and not [r for r in rows if r["metric"] == "from_storage"]


def test_an_allowed_fill_is_undone_through_the_cluster_api_and_leaves_the_cluster_as_it_was(byhand, tmp_path):
    """The owner consents (`allow_faults: [fill]`, the admin's keyring): osd.1 is filled until
    OSD_FULL under lowered ratios while rados bench writes, then the ratios, its device class and
    the fill's pool are as they were, and every acknowledged object reads back."""
    def crush_and_ratios() -> tuple:
        dump = json.loads(byhand.ceph("osd", "dump", "--format", "json"))
        tree = json.loads(byhand.ceph("osd", "tree", "--format", "json"))["nodes"]
        rules = json.loads(byhand.ceph("osd", "crush", "rule", "ls", "--format", "json"))
        return ({k: dump[f"{k}_ratio"] for k in ("nearfull", "backfillfull", "full")},
                sorted((n["id"], n.get("device_class")) for n in tree if n["type"] == "osd"),
                sorted(p["pool_name"] for p in dump["pools"]), sorted(rules))
    before = crush_and_ratios()
    _allowed_fault_run(byhand, tmp_path, "t-extfill", byhand.admin, "client.admin",
                       # 8 s of 1 MiB objects at 2 in flight reached the cap at 376 MB/s (6.2 s)
                       {"type": "radosbench", "mode": ["write"], "seconds": 8, "threads": 2, "object_size": "256KiB"},
                       {"kind": "fill", "target": "osd.1", "options": {"headroom": "64MiB"}})
    assert crush_and_ratios() == before  # ratios, device classes, pools and rules: the site's, untouched

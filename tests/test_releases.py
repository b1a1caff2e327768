"""Releases other than this machine's own, as docs/releases.md shows them (its lines run verbatim,
as a reader types them: no DFSLAB_* set, state in /var/lib/dfslab, runs in ./runs): Reef up from
its root (built once per machine, shared), every daemon and client tool of Reef while the host keeps
its Pacific, the quick workloads measured from storage, provenance naming what ran, nothing left."""

import csv
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from test_readme import run_dir_of, sh, user_env
from dfslab.registry import release_named
from dfslab.runtime import roots

pytestmark = pytest.mark.cluster
REEF = release_named("ceph", "reef")
TENTACLE = release_named("ceph", "tentacle")
# docs/releases.md's lines, run verbatim here (tests/test_docs_commands.py counts them)
DOCS_BLOCK = ["dfslab up examples/ceph-reef.yaml", "dfslab exec reef -- ceph versions",
              "dfslab run examples/quick-any.yaml --cluster reef", "dfslab down reef"]
STATE = Path("/var/lib/dfslab/clusters/reef")
MOOSEFS_4 = release_named("moosefs", "4")
MOOSEFS_4_LINE = "dfslab run examples/files-moosefs-4.yaml"  # docs/releases.md's MooseFS 4 line
GLUSTER_11 = release_named("gluster", "11")
GLUSTER_11_LINE = "dfslab run examples/files-gluster-11.yaml"  # and its GlusterFS 11 line


def _host_usr() -> tuple[int, str]:
    """This machine's ceph-osd (inode) and the mount of /usr in its own mount namespace."""
    usr = [line for line in Path("/proc/1/mountinfo").read_text().splitlines() if line.split()[4] == "/usr"]
    return os.stat("/usr/bin/ceph-osd").st_ino, "\n".join(usr)


@pytest.fixture(scope="module")
def reef():
    assert not STATE.exists(), "a cluster named reef is up"
    host_before = _host_usr()
    up = sh(DOCS_BLOCK[0], timeout=900)
    yield {"up": up, "host_before": host_before}
    if STATE.exists():
        sh("dfslab down reef")


def test_every_daemon_runs_the_release(reef):
    assert "is up" in reef["up"].stderr
    versions = json.loads(sh(DOCS_BLOCK[1] + " --format json").stdout)
    assert set(versions) >= {"mon", "mgr", "osd", "mds"}
    for kind in ("mon", "mgr", "osd", "mds"):
        assert list(versions[kind]) and all(f"{REEF.version} " in v and "reef" in v for v in versions[kind]), versions
    assert sum(versions["osd"].values()) == 3
    # ... while this machine's own ceph stays Pacific: the root's /usr was bound only in the daemons' namespaces.
    host = subprocess.run(["ceph", "--version"], capture_output=True, text=True, check=True).stdout
    assert "pacific" in host and REEF.version not in host
    assert _host_usr() == reef["host_before"]


def test_client_processes_run_from_the_root(reef):
    info = json.loads(sh("dfslab status reef --json").stdout)
    assert info["health"] == "HEALTH_OK", info.get("checks")
    root = Path(roots.root_home(REEF) / "root")
    osd = next(d for d in info["daemons"] if d["name"] == "osd.0")
    # The OSD's /usr/bin/ceph-osd is the root's file, not this machine's.
    assert os.stat(f"/proc/{osd['pid']}/root/usr/bin/ceph-osd").st_ino == os.stat(root / "usr/bin/ceph-osd").st_ino
    assert os.stat(f"/proc/{osd['pid']}/root/usr/bin/ceph-osd").st_ino != os.stat("/usr/bin/ceph-osd").st_ino


def test_quick_workloads_measure_the_release(reef):
    run_dir = run_dir_of(sh(DOCS_BLOCK[2], timeout=900).stdout)
    provenance = json.loads((run_dir / "provenance.json").read_text())
    assert provenance["filesystem_versions"]["release"] == "release reef"
    assert f"ceph version {REEF.version}" in provenance["filesystem_versions"]["ceph"]
    root_fio = roots.read_manifest(REEF)["versions"]["fio"].split("-")[0]
    assert provenance["fio_version"] == f"fio-{root_fio}", provenance["fio_version"]
    with open(run_dir / "results.csv") as fh:
        rows = [{**r, "params": json.loads(r["params"])} for r in csv.DictReader(fh)]
    measured = [r for r in rows if r["workload"] in ("radosbench", "fio")]
    assert {r["params"].get("target") for r in measured if r["workload"] == "fio"} == {"rbd", "fs"}
    ratios = [(r["workload"], r["params"].get("target"), float(r["value"])) for r in measured if r["metric"] == "from_storage"]
    assert len(ratios) >= 6, ratios  # radosbench write, seq; fio rbd and fs, read and write
    for ratio in ratios:  # the bytes the client's link carried against what the tool says it moved
        assert 0.9 <= ratio[2] <= 1.3, ratio
    # The table's rados bench write is its raw output's "Bandwidth (MB/sec)", which is MiB/s.
    write = next(float(r["value"]) for r in measured if r["workload"] == "radosbench"
                 and r["params"]["mode"] == "write" and r["metric"] == "bandwidth")
    raw = next(p for p in (run_dir / "raw").glob("radosbench-*-write.txt"))
    mib = float(re.search(r"Bandwidth \(MB/sec\):\s+([\d.]+)", raw.read_text()).group(1))
    assert write == pytest.approx(mib * 1.048576, rel=0.01)
    shutil.rmtree(run_dir)


def test_an_upgrade_into_tentacle_restarts_every_server_and_leaves_the_clients(reef):
    """The rolling upgrade by hand on the Reef cluster (its last test before `down`): every daemon
    on Tentacle, the clients still Reef, the recorded spec saying both, the downgrade refused."""
    done = sh("dfslab fault reef upgrade tentacle", timeout=600)
    assert "not undone" in done.stderr, done.stderr  # no `restore` offered: Ceph has no downgrade
    versions = json.loads(sh(DOCS_BLOCK[1] + " --format json").stdout)
    [running] = versions["overall"]  # one version throughout
    assert f"ceph version {TENTACLE.version} " in running and versions["overall"][running] == 6, versions  # MON, MGR, 3 OSDs, MDS
    client = sh("dfslab exec reef -- ceph --version").stdout
    assert f"ceph version {REEF.version} " in client, client  # the client node kept Reef
    spec = json.loads((STATE / "state.json").read_text())["spec"]["ceph"]
    assert (spec["release"], spec["client_release"]) == ("tentacle", "reef")
    assert json.loads(sh("dfslab fault reef list --json").stdout)["active"] == []
    back = subprocess.run(["bash", "-c", "dfslab fault reef upgrade reef"], env=user_env(), capture_output=True, text=True)
    assert back.returncode != 0 and "downgrade" in back.stderr, back.stderr
    # What Tentacle says of keys made before it (AES-128): Ceph's own health checks, muted by the
    # upgrade (sticky) and listed as muted by `ceph health detail`; dfslab's status leaves them out.
    detail = json.loads(sh("dfslab exec reef -- ceph health detail --format json").stdout)
    muted = {code for code, check in detail.get("checks", {}).items() if check.get("muted")}
    assert muted and set(detail["checks"]) == muted and all(c.startswith("AUTH_INSECURE_") for c in muted), detail
    assert not json.loads(sh("dfslab status reef --json").stdout)["checks"]


def test_down_leaves_the_root_and_nothing_else(reef):
    shared = str(STATE / "mnt")
    sh(DOCS_BLOCK[3])
    assert not STATE.exists()
    mounts = Path("/proc/self/mountinfo").read_text()
    assert f" {shared} " not in mounts
    assert roots.problem(REEF, roots.read_manifest(REEF)) is None  # kept for the next cluster of Reef
    assert roots.users(REEF) == []
    listed = sh("dfslab releases").stdout
    assert re.search(r"^ceph\s+reef\s+18\.2\.7\s+trixie\s+rook-v1\.18\.8\s+built ", listed, re.M), listed


def test_moosefs_4_up_measured_and_down_in_one_command():
    """MooseFS 4 from its root, with its own rules: goals became storage classes (dfslab makes one
    of `goal` copies), and mfscli's chunk-server records have a field more. Measured from storage
    through mfsmount of the release; the host keeps its MooseFS 3.0."""
    check_moosefs_4_run(run_dir_of(sh(MOOSEFS_4_LINE, timeout=900).stdout))
    host = subprocess.run(["mfsmaster", "-v"], capture_output=True, text=True).stdout
    assert "3.0." in host and MOOSEFS_4.version not in host


def check_moosefs_4_run(run_dir: Path) -> None:
    """MOOSEFS_4_LINE's run (on runtime local here, docker in test_docker), then its directory removed."""
    provenance = json.loads((run_dir / "provenance.json").read_text())
    assert provenance["filesystem_versions"]["release"] == "release 4"
    assert f"version: {MOOSEFS_4.version}" in provenance["filesystem_versions"]["moosefs"], provenance
    root_fio = roots.read_manifest(MOOSEFS_4)["versions"]["fio"].split("-")[0]
    assert provenance["fio_version"] == f"fio-{root_fio}", provenance["fio_version"]
    status = json.loads((run_dir / "status.json").read_text())
    summary = " ".join(status["summary"])
    # the master's own answer, read through mfscli of the release: its version, both chunk servers
    assert f"({MOOSEFS_4.version})" in summary and "2 of 2 chunk server(s)" in summary, summary
    servers = next(t for t in status["tables"] if t["title"] == "chunk servers")["rows"]
    assert len(servers) == 2 and all(0 < float(r[2]) < float(r[3]) for r in servers), servers
    # every chunk on both servers: 2 copies (moosefs.goal), through the storage class dfslab made
    assert status["chunks"]["stable"] > 0 and all(int(r[1]) == status["chunks"]["stable"] for r in servers), status
    with open(run_dir / "results.csv") as fh:
        rows = [{**r, "params": json.loads(r["params"])} for r in csv.DictReader(fh)]
    ratios = [(r["params"]["rw"], r["params"]["bs"], float(r["value"])) for r in rows
              if r["workload"] == "fio" and r["metric"] == "from_storage"]
    assert len(ratios) == 4, ratios
    for ratio in (r for r in ratios if r[1] == 1048576):  # 1 MiB: what crossed the client's link
        assert 0.9 <= ratio[2] <= 1.3, ratio
    assert {r["params"]["phase"] for r in rows if r["workload"] == "metadata"} == {"create", "stat", "read", "unlink"}
    assert not Path("/var/lib/dfslab/clusters/mfs4").exists()
    shutil.rmtree(run_dir)


def test_gluster_11_up_measured_and_down_in_one_command():
    """GlusterFS 11 from its root: glusterd started through `unshare ... sh -c '... exec glusterd'`
    runs from it (and so the bricks it starts, and the CLI run in its mount namespace); fio through
    the FUSE client and libgfapi (fio of the root, linked against 11's library), from storage:
    a replica-3 write sends each byte to the three bricks."""
    check_gluster_11_run(run_dir_of(sh(GLUSTER_11_LINE, timeout=900).stdout))
    host = subprocess.run(["glusterfs", "--version"], capture_output=True, text=True).stdout
    assert "glusterfs 10." in host


def check_gluster_11_run(run_dir: Path) -> None:
    """GLUSTER_11_LINE's run, then its directory removed."""
    provenance = json.loads((run_dir / "provenance.json").read_text())
    assert provenance["filesystem_versions"] == {"glusterfs": f"glusterfs {GLUSTER_11.version}", "release": "release 11"}
    root_fio = roots.read_manifest(GLUSTER_11)["versions"]["fio"].split("-")[0]
    assert provenance["fio_version"] == f"fio-{root_fio}", provenance["fio_version"]
    status = json.loads((run_dir / "status.json").read_text())
    bricks = next(t for t in status["tables"] if t["title"] == "bricks")["rows"]
    assert len(bricks) == 3 and all(row[3] == "online" for row in bricks), bricks
    with open(run_dir / "results.csv") as fh:
        rows = [{**r, "params": json.loads(r["params"])} for r in csv.DictReader(fh)]
    ratios = {(r["params"]["target"], r["params"]["rw"]): float(r["value"]) for r in rows
              if r["workload"] == "fio" and r["metric"] == "from_storage"}
    assert set(ratios) == {("fs", "write"), ("fs", "randread"), ("gfapi", "write"), ("gfapi", "randread")}, ratios
    for (target, rw), ratio in ratios.items():
        low, high = (2.9, 3.3) if rw == "write" else (0.9, 1.3)  # replica 3: the client writes every copy
        assert low <= ratio <= high, (target, rw, ratio)
    assert {r["params"]["phase"] for r in rows if r["workload"] == "metadata"} == {"create", "stat", "read", "unlink"}
    assert not Path("/var/lib/dfslab/clusters/g11").exists()
    shutil.rmtree(run_dir)


def test_servers_of_one_release_and_clients_of_another(tmp_path):
    """Reef's daemons with this machine's Pacific clients (`client_release: pacific`), as a site that
    upgrades its servers first has them: the run measures through the Pacific tools and mount, and
    its provenance names both releases and both versions."""
    import yaml
    exp = tmp_path / "mixed.yaml"
    exp.write_text(yaml.safe_dump({
        "name": "mixed", "baselines": {"network": False, "disk": False},
        "cluster": {"name": "t-mixed", "nodes": 2, "network": {"subnet": "10.77.6.0/24"},
                    "ceph": {"release": "reef", "client_release": "pacific", "replica_size": 1, "osd_size": "4GiB"}},
        "workloads": [{"type": "radosbench", "mode": ["write"], "seconds": 3, "threads": 4},
                      {"type": "fio", "target": "fs", "rw": "write", "bs": "1MiB", "size": "64MiB", "seconds": 2}]}))
    run_dir = run_dir_of(sh(f"dfslab run {exp}", timeout=900).stdout)
    versions = json.loads((run_dir / "provenance.json").read_text())["filesystem_versions"]
    assert versions["release"] == "release reef" and versions["client release"] == "release pacific", versions
    assert f"ceph version {REEF.version}" in versions["ceph"] and "ceph version 16.2.15" in versions["ceph (clients)"]
    host_fio = subprocess.run(["fio", "--version"], capture_output=True, text=True, check=True).stdout.strip()
    assert json.loads((run_dir / "provenance.json").read_text())["fio_version"] == host_fio  # not the root's fio
    with open(run_dir / "results.csv") as fh:
        rows = [r for r in csv.DictReader(fh)]
    ratios = {r["workload"]: float(r["value"]) for r in rows if r["metric"] == "from_storage"}
    assert set(ratios) == {"radosbench", "fio"} and all(0.9 <= v <= 1.3 for v in ratios.values()), ratios
    assert not Path("/var/lib/dfslab/clusters/t-mixed").exists()
    shutil.rmtree(run_dir)


def test_a_new_tentacle_cluster_keys_and_clients_are_tentacles(tmp_path):
    """A new Tentacle cluster: AES-256 keys and a monmap that allows only them (no AUTH_INSECURE_*
    check), dfslab's own librados client in the release's Python (the admin channel, and the
    checksummed RADOS writer through an OSD's kill: nothing lost), CephFS through Tentacle's
    ceph-fuse (which needs `mount` in the root), every number from storage."""
    import yaml
    exp = tmp_path / "tentacle.yaml"
    exp.write_text(yaml.safe_dump({
        "name": "tentacle", "baselines": {"network": False, "disk": False},
        "integrity": {"seed_objects": 20, "recovery_timeout": "120s"},
        "cluster": {"name": "t-tentacle", "nodes": 2, "network": {"subnet": "10.77.7.0/24"},
                    "ceph": {"release": "tentacle", "replica_size": 2, "osd_size": "4GiB"}},
        "workloads": [{"type": "radosbench", "mode": ["write"], "seconds": 8, "threads": 4, "object_size": "64KiB"},
                      {"type": "fio", "target": "fs", "rw": "write", "bs": "1MiB", "size": "64MiB", "seconds": 3}],
        "faults": [{"kind": "kill", "target": "osd.1", "during": 0, "at": "2s", "duration": "3s"}]}))
    run_dir = run_dir_of(sh(f"dfslab run {exp}", timeout=900).stdout)
    versions = json.loads((run_dir / "provenance.json").read_text())["filesystem_versions"]
    assert f"ceph version {TENTACLE.version}" in versions["ceph"], versions
    integrity = json.loads((run_dir / "integrity.json").read_text())
    assert integrity["checked"] > 20 and integrity["lost"] == integrity["corrupt"] == 0, integrity
    status = json.loads((run_dir / "status.json").read_text())
    assert not [c for c in status.get("checks", {}) if c.startswith("AUTH_INSECURE")], status.get("checks")
    with open(run_dir / "results.csv") as fh:
        rows = [r for r in csv.DictReader(fh)]
    ratios = {r["workload"]: float(r["value"]) for r in rows if r["metric"] == "from_storage"}
    assert set(ratios) == {"radosbench", "fio"} and all(0.9 <= v <= 1.3 for v in ratios.values()), ratios
    assert not Path("/var/lib/dfslab/clusters/t-tentacle").exists()
    shutil.rmtree(run_dir)


UPGRADE_LINE = "dfslab run examples/ceph-upgrade-chain.yaml"  # docs/releases.md's line of two upgrades


def test_pacific_to_reef_to_tentacle_under_load_loses_nothing():
    """Pacific to Reef under rados bench, then Reef to Tentacle under fio through librbd, daemon by
    daemon, the checksummed writer writing throughout, as the docs' line runs it: Ceph's documented
    order each time, Tentacle's checks of the old keys muted and said so, every acknowledged object
    read back, the tables' numbers the tools' own."""
    run_dir = run_dir_of(sh(UPGRADE_LINE, timeout=1500).stdout)
    to_reef, to_tentacle = json.loads((run_dir / "faults.json").read_text())
    for fault, release in ((to_reef, REEF), (to_tentacle, TENTACLE)):
        assert fault["error"] is None and fault["kind"] == "upgrade" and fault["target"] == release.name, fault
        order = [s["what"] for s in fault["steps"]]
        assert order[0].startswith(release.says) and order[1:3] == ["ceph.conf for the new release", "osd set noout"], order
        assert order[order.index("osd unset noout") + 1] == f"osd require-osd-release {release.name}", order
        assert [s["what"] for s in fault["steps"] if s.get("node")] == [
            "mon.a", "mon.b", "mon.c", "mgr.x", "osd.0", "osd.1", "osd.2", "mds.a"], order
        assert all(s["end"] >= s["start"] for s in fault["steps"])
        assert fault["throughput_before"] > 0 and fault["throughput_during"] > 0 and fault["blocked_s"] is not None
        assert fault["recover_s"] is not None and fault["recover_s"] < 120, fault["recover_s"]
    assert not any("health mute" in s["what"] for s in to_reef["steps"])  # Reef keeps AES-128 keys without a word
    assert to_tentacle["steps"][-1]["what"].startswith("health mute --sticky AUTH_INSECURE_"), to_tentacle["steps"]
    integrity = json.loads((run_dir / "integrity.json").read_text())
    assert integrity["checked"] > 40 and integrity["lost"] == integrity["corrupt"] == 0, integrity
    with open(run_dir / "results.csv") as fh:
        rows = list(csv.DictReader(fh))
    rados = [r for r in rows if r["workload"] == "radosbench"]
    ratio = next(float(r["value"]) for r in rados if r["metric"] == "from_storage")
    assert 0.9 <= ratio <= 1.3, ratio
    bandwidth = next(float(r["value"]) for r in rados if r["metric"] == "bandwidth")
    raw = next((run_dir / "raw").glob("radosbench-*-write.txt")).read_text()
    assert bandwidth == pytest.approx(float(re.search(r"Bandwidth \(MB/sec\):\s+([\d.]+)", raw).group(1)) * 1.048576, rel=0.01)
    fio_raw = next((run_dir / "raw").glob("fio-rbd-write-*.txt")).read_text()
    fio = json.loads(fio_raw[fio_raw.index("{"):])["jobs"][0]["write"]
    fio_bandwidth = next(float(r["value"]) for r in rows if r["workload"] == "fio" and r["metric"] == "bandwidth")
    assert fio_bandwidth == pytest.approx(fio["bw_bytes"] / 1e6, rel=0.01)  # MB/s, fio's own
    report = (run_dir / "report.html").read_text()
    assert "upgrade reef, step by step" in report and "upgrade tentacle, step by step" in report
    assert not Path("/var/lib/dfslab/clusters/chain").exists()
    shutil.rmtree(run_dir)


MOOSEFS_UPGRADE_LINE = "dfslab run examples/moosefs-upgrade.yaml"  # docs/releases.md's MooseFS upgrade line


def test_moosefs_3_to_4_module_by_module_under_writes_loses_nothing():
    """MooseFS's documented order (metalogger, master, each chunk server while every chunk is at
    its goal) under fio through mfsmount and the checksummed writer; the clients stay on 3."""
    run_dir = run_dir_of(sh(MOOSEFS_UPGRADE_LINE, timeout=900).stdout)
    [fault] = json.loads((run_dir / "faults.json").read_text())
    assert fault["error"] is None and fault["target"] == "4", fault
    assert [s["what"] for s in fault["steps"] if s.get("node")] == [
        "metalogger.node2", "master.node1", "chunkserver.node2", "chunkserver.node3"], fault["steps"]
    assert fault["steps"][0]["what"].startswith(MOOSEFS_4.says)
    integrity = json.loads((run_dir / "integrity.json").read_text())
    assert integrity["checked"] > 20 and integrity["lost"] == integrity["corrupt"] == 0, integrity
    with open(run_dir / "results.csv") as fh:
        rows = [r for r in csv.DictReader(fh) if r["workload"] == "fio"]
    assert 0.9 <= next(float(r["value"]) for r in rows if r["metric"] == "from_storage") <= 1.3
    raw = (run_dir / "raw" / "fio-fs-write-1048576-qd16-j1-r0.txt").read_text()
    fio = json.loads(raw[raw.index("{"):])["jobs"][0]["write"]
    bandwidth = next(float(r["value"]) for r in rows if r["metric"] == "bandwidth")
    assert bandwidth == pytest.approx(fio["bw_bytes"] / 1e6, rel=0.01)  # the table's MB/s is fio's own
    assert not Path("/var/lib/dfslab/clusters/mfsup").exists()
    shutil.rmtree(run_dir)


GLUSTER_UPGRADE_LINE = "dfslab run examples/gluster-upgrade.yaml"  # docs/releases.md's GlusterFS upgrade line


@pytest.mark.unsettled  # self-heal stalled after the upgrade in 2 of the last 4 runs (docs/testing.md)
def test_glusterfs_10_to_11_one_server_at_a_time_under_writes_loses_nothing():
    """GlusterFS's online upgrade (each server's glusterd, bricks and self-heal daemon together, the
    next once nothing is left to heal, then the op-version) under fio through the FUSE client and
    the checksummed writer: every daemon on 11 after, the pool whole, nothing lost."""
    run_dir = run_dir_of(sh(GLUSTER_UPGRADE_LINE, timeout=900).stdout)
    [fault] = json.loads((run_dir / "faults.json").read_text())
    assert fault["error"] is None and fault["target"] == "11", fault
    assert [s["what"] for s in fault["steps"] if s.get("node")] == ["glusterd.node1", "glusterd.node2", "glusterd.node3"]
    assert fault["steps"][0]["what"].startswith(GLUSTER_11.says)
    whats = [s["what"] for s in fault["steps"]]
    assert any(w.startswith("cluster.op-version ") for w in whats) and whats[-1].startswith("volume heal dfslab: "), whats
    integrity = json.loads((run_dir / "integrity.json").read_text())
    assert integrity["checked"] > 20 and integrity["lost"] == integrity["corrupt"] == 0, integrity
    status = json.loads((run_dir / "status.json").read_text())
    assert status["health"] == "HEALTH_OK" and all(p["connected"] and p["in_cluster"] for p in status["peers"]), status
    with open(run_dir / "results.csv") as fh:
        rows = [r for r in csv.DictReader(fh) if r["workload"] == "fio"]
    raw = next((run_dir / "raw").glob("fio-fs-write-*.txt")).read_text()
    fio = json.loads(raw[raw.index("{"):])["jobs"][0]["write"]
    bandwidth = next(float(r["value"]) for r in rows if r["metric"] == "bandwidth")
    assert bandwidth == pytest.approx(fio["bw_bytes"] / 1e6, rel=0.01)  # the table's MB/s is fio's own
    assert not Path("/var/lib/dfslab/clusters/glup").exists()
    shutil.rmtree(run_dir)

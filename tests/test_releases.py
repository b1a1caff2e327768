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

from test_readme import run_dir_of, sh
from dfslab.registry import release_named
from dfslab.runtime import roots

pytestmark = pytest.mark.cluster
REEF = release_named("ceph", "reef")
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


def test_down_leaves_the_root_and_nothing_else(reef):
    shared = str(STATE / "mnt")
    sh(DOCS_BLOCK[3])
    assert not STATE.exists()
    mounts = Path("/proc/self/mountinfo").read_text()
    assert f" {shared} " not in mounts
    assert roots.problem(REEF, roots.read_manifest(REEF)) is None  # kept for the next cluster of Reef
    assert roots.users(REEF) == []
    listed = sh("dfslab releases").stdout
    assert re.search(r"^ceph\s+reef\s+18\.2\.7\s+trixie\s+built ", listed, re.M), listed


def test_moosefs_4_up_measured_and_down_in_one_command():
    """MooseFS 4 from its root, with its own rules: goals became storage classes (dfslab makes one
    of `goal` copies), and mfscli's chunk-server records have a field more. Measured from storage
    through mfsmount of the release; the host keeps its MooseFS 3.0."""
    out = sh(MOOSEFS_4_LINE, timeout=900).stdout
    run_dir = run_dir_of(out)
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
    host = subprocess.run(["mfsmaster", "-v"], capture_output=True, text=True).stdout
    assert "3.0." in host and MOOSEFS_4.version not in host
    assert not Path("/var/lib/dfslab/clusters/mfs4").exists()
    shutil.rmtree(run_dir)


def test_gluster_11_up_measured_and_down_in_one_command():
    """GlusterFS 11 from its root: glusterd started through `unshare ... sh -c '... exec glusterd'`
    runs from it (and so the bricks it starts, and the CLI run in its mount namespace); fio through
    the FUSE client and libgfapi (fio of the root, linked against 11's library), from storage:
    a replica-3 write sends each byte to the three bricks."""
    out = sh(GLUSTER_11_LINE, timeout=900).stdout
    run_dir = run_dir_of(out)
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
    host = subprocess.run(["glusterfs", "--version"], capture_output=True, text=True).stdout
    assert "glusterfs 10." in host
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

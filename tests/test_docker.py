"""runtime docker against a real Ceph: every daemon in its own container on dfslab's own
dockerd, faults on containers, the same experiment on both runtimes compared, and a `down`
that leaves the host's firewall, routes and links as they were."""

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import REPO, cluster_up, dfslab, run_against, small_spec, wait_for, write_spec
from test_readme import run_dir_of, sh
from test_gluster import check_fault_run, tear_down
from test_releases import GLUSTER_11, MOOSEFS_4_LINE, check_moosefs_4_run
from dfslab import cluster
from dfslab.registry import release_named
from dfslab.runtime import dockerd, images, roots

pytestmark = pytest.mark.cluster
NAME = "t-dock"
REEF, TENTACLE = release_named("ceph", "reef"), release_named("ceph", "tentacle")


def host_network() -> dict:
    """What the host's network looks like from its own namespace (firewall, routes, links)."""
    def out(*argv):
        res = subprocess.run(argv, capture_output=True, text=True)
        return res.stdout if res.returncode == 0 else f"<{argv[0]} unavailable>"
    links = [line.split(":")[1].strip().split("@")[0] for line in out("ip", "-o", "link").splitlines()]
    return {"iptables": out("iptables-save"), "routes": out("ip", "route"), "links": sorted(links),
            "forward": Path("/proc/sys/net/ipv4/ip_forward").read_text()}


def inspect(container: str) -> dict:
    return json.loads(dockerd.docker("inspect", container).stdout)[0]


@pytest.fixture(scope="module")
def host_before():
    return host_network()


@pytest.fixture(scope="module")
def dock(tmp_path_factory, host_before):
    tmp = tmp_path_factory.mktemp("dock")
    # with a RADOS gateway: radosgw in a container of its own too (S3 on node1's address)
    cluster_up(write_spec(tmp, small_spec(NAME, cephfs=True) + "  rgw: 1\n"), NAME, "--runtime", "docker", timeout=900)
    attached = cluster.attach(NAME)
    yield attached
    attached.close()
    cluster.down(NAME, missing_ok=True)


# docs/docker.md's first lines, run verbatim below (tests/test_docs_commands.py counts them)
DOCS_BLOCK = ["dfslab images build", "dfslab up examples/ceph-small.yaml --runtime docker",
              "dfslab run examples/quick-any.yaml --cluster small", "dfslab down small",
              "dfslab run examples/quickstart.yaml --runtime docker"]


def test_the_docker_pages_commands_run_verbatim_from_the_repository_root():
    """As a reader types them (no DFSLAB_* set: state in /var/lib/dfslab, the run in ./runs), before
    this module's own docker cluster is up: a quick check runs against the reader's containers,
    then the quick suite on a docker cluster of the run's own, and the engine stops with each
    cluster's down."""
    assert not Path("/var/lib/dfslab/clusters/small").exists(), "a cluster named small is up"
    made = []
    try:
        for line in DOCS_BLOCK:
            if line == "dfslab down small":
                status = json.loads(sh("dfslab status small --json").stdout)
                assert status["health"] == "HEALTH_OK", status["summary"]
                # every daemon of the reader's cluster is a running container of dfslab's engine
                names = set(dockerd.docker("ps", "--format", "{{.Names}}").stdout.split())
                assert {f"dfs-small-{d}" for d in ("mon.a", "mgr.x", "osd.0", "osd.1", "osd.2", "mds.a")} <= names, names
            out = sh(line, timeout=1800).stdout
            if line.startswith("dfslab run "):
                made.append(run_dir_of(out))
        # against the reader's cluster, then on a cluster of the run's own (up, run, down)
        assert len(made) == 2
        for run in made:
            assert yaml.safe_load((run / "spec.yaml").read_text())["runtime"] == "docker"
            provenance = json.loads((run / "provenance.json").read_text())
            assert provenance["failures"] == [] and provenance["skipped"] == [], provenance
            with open(run / "results.csv") as fh:
                measured = {r["workload"] for r in csv.DictReader(fh) if r["workload"] != "baseline" and float(r["value"]) > 0}
            planned = {w["type"] for w in yaml.safe_load((run / "experiment.yaml").read_text())["workloads"]}
            assert planned <= measured, planned - measured
    finally:
        if Path("/var/lib/dfslab/clusters/small").exists():
            sh("dfslab down small", timeout=600)
        for path in made:
            shutil.rmtree(path)
    assert not Path("/var/lib/dfslab/clusters/small").exists()


def data_dir(dock, daemon: str) -> Path:
    """A daemon's data directory: a gateway's is its RADOS client's (client.rgw.node1)."""
    return dock.backend.ctx.layout.data(f"client.{daemon}" if daemon.startswith("rgw.") else daemon)


def test_every_daemon_runs_in_its_own_unprivileged_container(dock):
    daemons = dock.runtime.procs.all()
    assert {p.name for p in daemons} == {"mon.a", "mgr.x", "osd.0", "osd.1", "osd.2", "mds.a", "rgw.node1"}
    for proc in daemons:
        info = inspect(proc.meta["container"])
        init = info["State"]["Pid"]
        assert info["State"]["Running"] and info["HostConfig"]["Init"] is True
        # the daemon is the only child of the container's init (which reaps orphans)
        assert Path(f"/proc/{init}/task/{init}/children").read_text().split() == [str(proc.pid)]
        kind = proc.name.split('.')[0]
        assert Path(f"/proc/{proc.pid}/cmdline").read_text().startswith("radosgw" if kind == "rgw" else f"ceph-{kind}")
        assert info["HostConfig"]["Privileged"] is False
        node_container = dock.runtime.container(proc.node)
        assert info["HostConfig"]["NetworkMode"] == f"container:{inspect(node_container)['Id']}"
        mounts = {m["Source"] for m in info["Mounts"]}
        # conf, its keyring and data come from the state directory, piece by piece (not all of it)
        assert str(data_dir(dock, proc.name)) in mounts and str(dock.state.dir) not in mounts
    node1 = inspect(dock.runtime.container("node1"))
    assert node1["NetworkSettings"]["Networks"][dock.runtime.network]["IPAddress"] == dock.state.read()["addresses"]["node1"]


def test_the_gateway_in_its_container_serves_s3_to_a_workload_and_to_s3cmd(dock, tmp_path):
    """`ceph: {rgw: 1}` on runtime docker: the s3 workload PUTs and GETs through the containerized
    radosgw (every byte over the client's link), and `dfslab exec NAME -- s3cmd ls` uses the keys."""
    exp = tmp_path / "s3.yaml"
    exp.write_text(yaml.safe_dump({"name": "dock-s3", "repetitions": 1, "baselines": {"network": False, "disk": False},
                                   "workloads": [{"type": "s3", "object_size": "1MiB", "threads": 2, "seconds": 2}]}))
    run, out = run_against(exp, NAME)
    rows = [r for r in csv.DictReader(open(run / "results.csv")) if r["workload"] == "s3"]
    ops = {json.loads(r["params"])["mode"] for r in rows if r["metric"] == "bandwidth"}
    assert {"write", "read"} <= ops, out
    shares = [float(r["value"]) for r in rows if r["metric"] == "from_storage"]
    assert shares and all(0.9 <= s <= 1.3 for s in shares), shares
    listed = dfslab("exec", NAME, "--", "s3cmd", "ls").stdout
    assert "s3://dfslab-" not in listed  # the run removed its bucket; the listing itself worked (exit 0)


def test_engine_and_bridges_live_outside_the_host_namespace(dock, host_before):
    assert host_network() == host_before
    engine_links = subprocess.run(["ip", "-n", dockerd.NETNS, "-o", "link"], capture_output=True, text=True).stdout
    assert dock.runtime.bridge in engine_links


def _rados(dock, *args, timeout=60):
    argv, env = cluster.client_command(NAME, ["rados", *args])
    return subprocess.run(argv, env=env, capture_output=True, timeout=timeout)


def _osd(osd_id: int) -> dict:
    argv, env = cluster.client_command(NAME, ["ceph", "osd", "dump", "-f", "json"])
    dump = json.loads(subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60).stdout)
    return next(o for o in dump["osds"] if o["osd"] == osd_id)


def test_killed_osd_container_comes_back_with_the_same_identity(dock, tmp_path):
    payload = tmp_path / "obj"
    payload.write_bytes(b"dfslab" * 50000)
    assert _rados(dock, "-p", "dfslab", "put", "ident", str(payload)).returncode == 0
    before = dock.runtime.procs.get("osd.1")
    before_id = inspect(before.meta["container"])["Id"]
    uuid = _osd(1)["uuid"]
    dfslab("fault", NAME, "kill", "osd.1")
    state = inspect(before.meta["container"])["State"]
    assert not state["Running"] and state["ExitCode"] == 137  # docker kill: SIGKILL
    dfslab("fault", NAME, "restore")
    after = dock.runtime.procs.get("osd.1")
    assert after.pid != before.pid and inspect(after.meta["container"])["Id"] != before_id  # a new container
    wait_for(lambda: _osd(1)["up"] == 1, 120, "osd.1 up again")
    assert _osd(1)["uuid"] == uuid  # same OSD, same data: bind-mounted from the state directory
    got = tmp_path / "back"
    assert _rados(dock, "-p", "dfslab", "get", "ident", str(got)).returncode == 0
    assert got.read_bytes() == payload.read_bytes()
    wait_for(lambda: cluster.status(NAME)["health"] == "HEALTH_OK", 120, "HEALTH_OK after the OSD container came back")


def _ping(dock, node) -> bool:
    argv, env = cluster.client_command(NAME, ["ping", "-c", "1", "-W", "1", dock.state.read()["addresses"][node]])
    return subprocess.run(argv, env=env, capture_output=True).returncode == 0


def test_partition_cuts_the_container_network_link_and_restore_heals_it(dock):
    assert _ping(dock, "node2")
    dfslab("fault", NAME, "partition", "node2")
    try:
        assert not _ping(dock, "node2")
        assert _ping(dock, "node3")
    finally:
        dfslab("fault", NAME, "restore")
    assert _ping(dock, "node2")


def test_node_loss_stops_every_daemon_container_of_the_node(dock):
    on_node = [p for p in dock.runtime.procs.all() if p.node == "node3"]
    assert on_node
    dfslab("fault", NAME, "node", "node3")
    try:
        for proc in on_node:
            assert not inspect(proc.meta["container"])["State"]["Running"], proc.name
        assert inspect(dock.runtime.container("node3"))["State"]["Running"]  # the node's address stays
    finally:
        dfslab("fault", NAME, "restore")
    for proc in on_node:
        assert dock.runtime.procs.get(proc.name).alive()
    wait_for(lambda: cluster.status(NAME)["health"] == "HEALTH_OK", 120, "HEALTH_OK after the node came back")


def test_same_experiment_on_both_runtimes_is_compared(tmp_path):
    """runtimes: [local, docker] runs it twice on fresh clusters and reports docker against local."""
    exp = {"name": "t-both", "runtimes": ["local", "docker"], "repetitions": 2,
           # its own subnet: docker refuses two networks on one subnet in one engine (t-dock is up)
           # 16 GiB (sparse): rados bench's 2-s writes stay under dfslab's cap of 40 % of the pool's free
           # space at the 1.2 GB/s this machine's disk gave on 2026-11-29 (6 GiB stopped them at 1.5 s)
           "cluster": {"name": "t-both", "nodes": 1, "network": {"subnet": "10.78.0.0/24"}, "ceph": {"replica_size": 1, "cephfs": False, "osd_size": "16GiB"}},
           "baselines": {"network": False, "disk": False},
           "workloads": [{"type": "radosbench", "seconds": 2, "mode": ["write", "seq"]}]}
    path = tmp_path / "both.yaml"
    path.write_text(yaml.safe_dump(exp))
    try:
        res = dfslab("run", str(path), timeout=900)
    finally:
        cluster.down("t-both", missing_ok=True)
    assert cluster.leftovers("t-both") == []
    reports = [Path(line.split("report: ")[1]) for line in res.stdout.splitlines() if line.startswith("report: ")]
    assert len(reports) == 2 and "t-both-local" in reports[0].parent.name and "t-both-docker" in reports[1].parent.name
    assert "headline metrics" in res.stdout and "no difference is claimed" in res.stdout  # one run per side
    comparison = json.loads((reports[1].parent / "comparison.json").read_text())
    assert comparison["baseline_runtime"] == "local" and comparison["runtime"] == "docker"
    bw = [r for r in comparison["rows"] if r["metric"] == "bandwidth"]
    assert len(bw) == 2 and all(r["reps_a"] == r["reps_b"] == 2 and r["over"] == "one run" and r["low"] is not None
                                for r in bw)
    html = reports[1].read_text()
    assert "Runtime docker against runtime local" in html and "no difference is claimed" in html
    status = json.loads((reports[1].parent / "status.json").read_text())
    assert status["runtime"] == "docker"


def test_glusterfs_on_docker_survives_brick_server_and_link_faults(tmp_path_factory, tmp_path):
    """The GlusterFS fault run of test_gluster, with every glusterd (and its bricks) in a container:
    of GlusterFS 11, the image of its root (runtime local runs this machine's 10 in test_gluster)."""
    name = "t-dgl"
    spec = {"name": name, "filesystem": "gluster", "runtime": "docker", "nodes": 3,
            "network": {"subnet": "10.79.0.0/24"}, "gluster": {"volume": "replicate", "replica": 3, "release": "11"}}
    cluster_up(write_spec(tmp_path_factory.mktemp(name), yaml.safe_dump(spec)), name, timeout=900)
    try:
        procs = cluster.attach(name).runtime.procs.all()
        glusterds = [p for p in procs if p.meta.get("kind") == "glusterd"]
        assert len(glusterds) == 3
        image = images.release_image(GLUSTER_11, roots.read_manifest(GLUSTER_11))
        for proc in glusterds:
            container = inspect(proc.meta["container"])
            assert container["HostConfig"]["Privileged"] is False and container["HostConfig"]["CapAdd"] == ["SYS_ADMIN"]
            assert container["Config"]["Image"] == image
        versions = dockerd.docker("exec", glusterds[0].meta["container"], "gluster", "--version").stdout
        assert f"glusterfs {GLUSTER_11.version}" in versions, versions
        check_fault_run(tmp_path, name)
    finally:
        tear_down(name)


def test_second_docker_cluster_on_the_same_subnet_is_refused_naming_the_field(dock, tmp_path):
    res = dfslab("up", str(write_spec(tmp_path, small_spec("t-dsame"))), "--runtime", "docker", check=False)
    assert res.returncode == 2 and "network.subnet" in res.stderr, res.stderr
    assert cluster.leftovers("t-dsame") == []
    assert cluster.status(NAME)["health"] == "HEALTH_OK"  # the cluster that holds the subnet is untouched


def test_daemon_containers_get_only_their_own_key(dock):
    state_dir = str(dock.state.dir)
    admin_keyring = str(dock.backend.ctx.layout.admin_keyring)
    for proc in dock.runtime.procs.all():
        cname = proc.meta["container"]
        sources = {m["Source"] for m in inspect(cname)["Mounts"]}
        assert state_dir not in sources, (cname, sources)
        own = str(data_dir(dock, proc.name) / "keyring")
        exec_test = lambda *a: dockerd.docker("exec", cname, "test", *a, check=False).returncode  # noqa: E731
        assert exec_test("-r", own) == 0, (cname, own)
        assert exec_test("-e", admin_keyring) != 0, (cname, "sees the admin keyring")
        others = [p for p in dock.runtime.procs.all() if p.name != proc.name]
        assert exec_test("-e", str(data_dir(dock, others[0].name) / "keyring")) != 0


SIBLING = NAME + "-b"  # "dfs-t-dock-b-..." starts with "dfs-t-dock-": a prefix match would take it


def test_down_removes_containers_network_engine_and_leaves_the_host_as_it_was(dock, host_before, tmp_path):
    sibling_spec = (f"name: {SIBLING}\nruntime: docker\nnetwork: {{subnet: 10.78.0.0/24}}\nnodes: 1\n"
                    "ceph: {mons: 1, osds_per_node: 1, osd_size: 1GiB, replica_size: 1, pg_num: 8, cephfs: false}\n")
    dfslab("up", str(write_spec(tmp_path, sibling_spec)), timeout=600)
    containers = [p.meta["container"] for p in dock.runtime.procs.all()]
    dock.close()
    try:
        dfslab("down", NAME)
        assert cluster.leftovers(NAME) == []
        sibling = cluster.status(SIBLING)
        assert sibling["health"] == "HEALTH_OK" and all(d["alive"] for d in sibling["daemons"])
        script = Path(__file__).parent / "rados_roundtrip.py"
        assert json.loads(dfslab("exec", SIBLING, "--", sys.executable, str(script), "5").stdout)["verified"] == 5
    finally:
        dfslab("down", SIBLING, check=False)
    assert cluster.leftovers(SIBLING) == []
    assert not dockerd.running() and not Path(f"/run/netns/{dockerd.NETNS}").exists()
    assert host_network() == host_before
    assert containers  # there was something to remove


def test_a_release_runs_from_the_image_of_its_root_and_upgrades_into_the_next(tmp_path):
    """`ceph: {release: reef}` on docker: every daemon's container runs the image of Reef's root (the
    root tests/test_releases.py's clusters share), the host's tools run from the root itself, the
    bytes on the client's link match what the tools moved; `fault upgrade tentacle` then recreates
    each daemon's container from Tentacle's image while the client node keeps Reef."""
    name = "t-drel"
    # two nodes, two copies: the upgrade restarts one host's OSDs at a time, each once the other holds a copy
    spec = {"name": name, "runtime": "docker", "nodes": 2, "network": {"subnet": "10.80.0.0/24"},
            "ceph": {"release": "reef", "replica_size": 2, "osd_size": "6GiB", "cephfs": True}}
    cluster_up(write_spec(tmp_path, yaml.safe_dump(spec)), name, timeout=900)
    try:
        reef_image = images.release_image(REEF, roots.read_manifest(REEF))
        procs = cluster.attach(name).runtime.procs.all()
        daemons = [p for p in procs if p.meta.get("container")]
        assert {p.name for p in daemons} == {"mon.a", "mgr.x", "osd.0", "osd.1", "mds.a"}, [p.name for p in procs]
        assert {inspect(p.meta["container"])["Config"]["Image"] for p in daemons} == {reef_image}
        versions = json.loads(dfslab("exec", name, "--", "ceph", "versions", "--format", "json").stdout)
        assert list(versions["overall"]) == [next(iter(versions["overall"]))] and REEF.version in next(iter(versions["overall"]))
        exp = {"name": "t-drel-exp", "baselines": {"network": False, "disk": False},
               "workloads": [{"type": "radosbench", "seconds": 3, "mode": "write"},
                             {"type": "fio", "target": "fs", "rw": "write", "bs": "1MiB", "size": "64MiB", "seconds": 3}]}
        exp_path = tmp_path / "exp.yaml"
        exp_path.write_text(yaml.safe_dump(exp))
        run_dir, _ = run_against(exp_path, name)
        with open(run_dir / "results.csv") as fh:
            ratios = [float(r["value"]) for r in csv.DictReader(fh) if r["metric"] == "from_storage"]
        assert len(ratios) == 2 and all(0.9 <= r <= 1.3 for r in ratios), ratios
        provenance = json.loads((run_dir / "provenance.json").read_text())
        assert f"ceph version {REEF.version}" in provenance["filesystem_versions"]["ceph"]
        shutil.rmtree(run_dir)
        # ceph-fuse (mounted for the fio step), a host process in the client node's namespace, runs the root's binary
        fuse = next(p for p in cluster.attach(name).runtime.procs.all() if "ceph-fuse" in map(os.path.basename, p.argv))
        root = roots.root_home(REEF) / "root"
        assert os.stat(f"/proc/{fuse.pid}/root/usr/bin/ceph-fuse").st_ino == os.stat(root / "usr/bin/ceph-fuse").st_ino

        dfslab("fault", name, "upgrade", "tentacle", timeout=600)
        tentacle_image = images.release_image(TENTACLE, roots.read_manifest(TENTACLE))
        upgraded = cluster.attach(name).runtime.procs.all()
        assert {inspect(p.meta["container"])["Config"]["Image"] for p in upgraded if p.meta.get("container")} == {tentacle_image}
        versions = json.loads(dfslab("exec", name, "--", "ceph", "versions", "--format", "json").stdout)
        [running] = versions["overall"]
        assert TENTACLE.version in running and versions["overall"][running] == 5, versions
        assert REEF.version in dfslab("exec", name, "--", "ceph", "--version").stdout  # the client node kept Reef
    finally:
        dfslab("down", name, check=False, timeout=600)
    assert cluster.leftovers(name) == []


def test_moosefs_4_runs_from_its_roots_image():
    """docs/releases.md's MooseFS 4 line on docker: the same checks as on runtime local
    (tests/test_releases.py): the release's version, its chunk servers, the bytes. (GlusterFS 11
    on docker: the fault run above.)"""
    check_moosefs_4_run(run_dir_of(sh(f"{MOOSEFS_4_LINE} --runtime docker", timeout=900).stdout))

"""The parts of filesystem: external that need no cluster: its spec, /proc/mounts parsing,
and fio's client/server output (from real fio servers on loopback, started here)."""

from __future__ import annotations

import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from conftest import listening, stop_group, wait_for
from dfslab.backends.external.mounts import mount_of
from dfslab.spec import SpecError, parse_spec
from dfslab.workloads import Runner, WorkloadError
from dfslab.workloads.fioclients import endpoint, parse_clients, run_on_clients

MOUNTS = """/dev/vda / ext4 rw,relatime 0 0
mgs@tcp:/lustre /mnt/lustre lustre rw,flock,lazystatfs 0 0
ceph-fuse /mnt/my\\040cephfs fuse.ceph-fuse rw,nosuid,nodev 0 0
"""


def test_the_mount_of_a_path_is_its_longest_mount_point():
    assert mount_of("/mnt/lustre/scratch/run1", MOUNTS)["type"] == "lustre"
    assert mount_of("/mnt/lustre2", MOUNTS)["mountpoint"] == "/"  # a prefix of the name is not a parent
    found = mount_of("/mnt/my cephfs/x", MOUNTS)
    assert (found["type"], found["mountpoint"], found["source"]) == ("fuse.ceph-fuse", "/mnt/my cephfs", "ceph-fuse")


def test_external_spec_defaults_and_refusals():
    spec = parse_spec({"name": "lus", "filesystem": "external", "external": {"posix": {"path": "/mnt/lustre/"}}})
    assert (spec.runtime, spec.nodes, spec.external.posix.path) == ("host", [], "/mnt/lustre")
    bad = [({"external": {}}, "external"),
           ({"external": {"posix": {"path": "/a/../etc"}}}, "external.posix.path"),
           ({"external": {"ceph": {"conf": "/etc/ceph/ceph.conf", "keyring": "/k", "user": "admin"}}}, "external.ceph.user"),
           ({"external": {"posix": {"path": "/x"}, "prometheus": ["ftp://x"]}}, "external.prometheus"),
           ({"external": {"posix": {"path": "/x"}}, "runtime": "local"}, "runtime"),
           ({"external": {"posix": {"path": "/x"}}, "nodes": 2}, "nodes")]
    for extra, field in bad:
        with pytest.raises(SpecError) as err:
            parse_spec({"name": "lus", "filesystem": "external", **extra})
        assert field in str(err.value), (extra, err.value)
    with pytest.raises(SpecError, match="runtime: host"):
        parse_spec({"name": "c", "nodes": 3, "runtime": "host"})


def test_an_s3_endpoint_is_named_by_its_url_and_the_variables_that_hold_its_keys():
    s3 = {"endpoint": "http://rgw01:7480/", "access_key_env": "S3_ACCESS_KEY", "secret_key_env": "S3_SECRET_KEY"}
    spec = parse_spec({"name": "site-s3", "filesystem": "external", "external": {"s3": s3}})
    assert (spec.external.s3.endpoint, spec.external.s3.region) == ("http://rgw01:7480", "us-east-1")
    from dfslab.backends.external.backend import ExternalBackend
    from dfslab.backends.external.s3 import bucket_name, credentials_ref
    assert ExternalBackend.targets_for(spec) == {"s3"}
    assert credentials_ref(spec.external.s3) == "env:S3_ACCESS_KEY:S3_SECRET_KEY"  # where the keys are, not them
    name = bucket_name(spec.name)
    assert name.startswith("dfslab-site-s3-") and len(name) <= 63 and name == name.lower()
    for field, value, said in (("endpoint", "rgw01:7480", "not an endpoint URL"),
                               ("endpoint", "http://rgw01:7480/bucket", "no path"),
                               ("access_key_env", "AKIAIOSFODNN7EXAMPLE/x", "the variable's name, not the key"),
                               ("secret_key_env", "", "not an environment variable's name")):
        with pytest.raises(SpecError) as err:
            parse_spec({"name": "s", "filesystem": "external", "external": {"s3": {**s3, field: value}}})
        assert f"external.s3.{field}" in str(err.value) and said in str(err.value), err.value


def test_endpoints_take_fio_and_url_forms():
    assert endpoint("node7") == "node7,8765"
    assert endpoint("10.0.0.5:9000") == endpoint("10.0.0.5,9000") == "10.0.0.5,9000"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def fio_servers():
    if shutil.which("fio") is None:
        pytest.skip("fio is not installed (scripts/install-deps.sh)")
    ports = [_free_port(), _free_port()]
    procs = [subprocess.Popen(["fio", f"--server=ip:127.0.0.1,{p}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True) for p in ports]
    try:
        for port in ports:  # listening, not a guess at how long that takes
            wait_for(lambda: listening(port), 30, f"fio --server on port {port}", interval=0.1)
        yield [f"127.0.0.1,{p}" for p in ports]
    finally:
        for proc in procs:
            stop_group(proc)


def _runner(tmp_path: Path) -> Runner:
    return Runner(command=lambda node, argv: argv, env={}, raw_dir=tmp_path / "raw")


def test_fio_on_two_servers_gives_per_client_rows_and_their_sum(fio_servers, tmp_path):
    options = {"rw": "write", "bs": "1M", "size": "8M", "numjobs": 2, "directory": str(tmp_path / "data")}
    rows = run_on_clients(_runner(tmp_path), fio_servers, "unit", options, "fio", {"bs": 2**20}, 0, timeout=120)
    per_client = {r.params["client"]: r.value for r in rows if r.metric == "client_bandwidth"}
    assert set(per_client) == set(fio_servers) and all(v > 0 for v in per_client.values())
    [total] = [r for r in rows if r.metric == "bandwidth"]
    assert total.value == pytest.approx(sum(per_client.values())) and total.params["clients"] == 2
    assert any(r.metric == "latency_avg" and r.value > 0 for r in rows)
    # Each server wrote in a directory of its own (they share the file system, not the files).
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == sorted(s.replace(",", "_") for s in fio_servers)


def test_a_server_that_is_down_is_named(fio_servers, tmp_path):
    down = f"127.0.0.1,{_free_port()}"
    options = {"rw": "write", "bs": "1M", "size": "4M", "directory": str(tmp_path / "data")}
    with pytest.raises(WorkloadError, match=down):
        run_on_clients(_runner(tmp_path), [fio_servers[0], down], "unit-down", options, "fio", {}, 0, timeout=120)


def test_client_output_without_results_is_an_error():
    with pytest.raises(WorkloadError, match="no client results"):
        parse_clients("fio: connect: Connection refused\n", ["h,8765"], "fio", {}, 0)


def test_the_ledger_counts_a_mount_only_where_its_traffic_crosses_a_network():
    """A local disk's path or a server on this machine's loopback moves nothing over the links the
    ledger reads: such a step is "not counted", not 0 % from the storage."""
    from dfslab.backends.external.mounts import loopback, over_network
    assert over_network({"type": "nfs4", "source": "10.0.0.5:/export"})
    assert not over_network({"type": "nfs4", "source": "127.0.0.1:/export"})
    assert over_network({"type": "lustre", "source": "10.0.0.1@tcp:/scratch"})
    assert over_network({"type": "fuse.ceph-fuse", "source": "ceph-fuse"})
    assert not over_network({"type": "ext4", "source": "/dev/sda1"}) and not over_network({"type": "tmpfs"})
    assert loopback("::1") and loopback("[::1]") and loopback("127.0.0.2") and loopback("localhost")
    assert not loopback("10.0.0.5") and not loopback("mon1.example.org") and not loopback(None)

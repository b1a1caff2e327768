"""S3 through Ceph's RADOS gateway, for real: `ceph: {rgw: 1}` runs radosgw on node1; the S3 user's
keys are kept 0600; s3cmd on the client node makes a bucket and round-trips an object with them;
`dfslab down` leaves nothing."""

from __future__ import annotations

import hashlib
import os
import stat

import pytest

from conftest import cluster_up, dfslab, status_json, write_spec
from dfslab import cluster
from dfslab.state import ClusterState

pytestmark = pytest.mark.cluster

NAME = "t-rgw"
SPEC = f"""name: {NAME}
nodes: 2
ceph: {{osd_size: 2GiB, replica_size: 1, cephfs: false, rgw: 1}}
"""


@pytest.fixture(scope="module")
def rgw(tmp_path_factory):
    cluster_up(write_spec(tmp_path_factory.mktemp("spec"), SPEC), NAME)
    yield NAME
    cluster.down(NAME, missing_ok=True)


def test_the_gateway_runs_and_status_says_where_and_where_the_keys_are(rgw):
    info = status_json(rgw)
    assert info["health"] == "HEALTH_OK", info.get("checks")
    daemons = {d["name"]: d for d in info["daemons"]}
    assert daemons["rgw.node1"]["alive"] and daemons["rgw.node1"]["node"] == "node1"
    assert info["gateways"] == [f"http://{info['addresses']['node1']}:7480"]
    assert any(p["name"] == ".rgw.root" for p in info["pools"])  # radosgw made its pools
    summary = " ".join(info["summary"])
    assert "S3 (RGW): rgw.node1" in summary and "(up)" in summary and "s3cmd ls" in summary
    creds = ClusterState(rgw).dir / "ceph" / "conf" / "s3-credentials.json"
    for path in (creds, creds.with_name("s3cfg")):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path
    secret = __import__("json").loads(creds.read_text())["secret_key"]
    assert secret not in dfslab("status", rgw).stdout + dfslab("status", rgw, "--json").stdout  # never printed


def test_s3cmd_on_the_client_node_round_trips_an_object_with_the_clusters_keys(rgw, tmp_path):
    data = os.urandom(3 * 2**20 + 17)  # one PUT (under s3cmd's 15 MiB multipart size), an odd length
    src, back = tmp_path / "object.bin", tmp_path / "back.bin"
    src.write_bytes(data)
    dfslab("exec", rgw, "--", "s3cmd", "mb", "s3://dfslab-t")
    dfslab("exec", rgw, "--", "s3cmd", "put", str(src), "s3://dfslab-t/object.bin")
    listed = dfslab("exec", rgw, "--", "s3cmd", "ls", "s3://dfslab-t").stdout
    assert "s3://dfslab-t/object.bin" in listed and str(len(data)) in listed, listed
    dfslab("exec", rgw, "--", "s3cmd", "get", "s3://dfslab-t/object.bin", str(back))
    assert hashlib.sha256(back.read_bytes()).digest() == hashlib.sha256(data).digest()
    # the bytes are in RADOS, in the gateway's data pool
    pools = dfslab("exec", rgw, "--", "rados", "lspools").stdout.split()
    assert "default.rgw.buckets.data" in pools, pools


def test_the_s3_workload_measures_puts_gets_mixes_lists_and_deletes_through_the_gateway(rgw, tmp_path):
    """Rows check against the worker's own counts: bandwidth = bytes / seconds in decimal MB,
    Little's law holds for the threads in flight, the client's link carried what it moved, a GET's
    first byte comes before its last, and a mixed phase's bytes are its GETs' and PUTs'."""
    import json

    import yaml

    from conftest import run_against
    exp = tmp_path / "s3.yaml"
    exp.write_text(yaml.safe_dump({"name": "s3", "baselines": {"network": False, "disk": False},
                                   "workloads": [{"type": "s3", "object_size": "256KiB", "threads": 2, "seconds": 3,
                                                  "ops": ["write", "read", "mixed", "list", "delete"]}]}))
    run, out = run_against(exp, rgw)
    import csv
    rows = [r for r in csv.DictReader((run / "results.csv").open()) if r["workload"] == "s3" and not r["t"]]
    by = {(json.loads(r["params"])["mode"], r["metric"]): float(r["value"]) for r in rows}
    for mode in ("write", "read"):
        assert by[(mode, "iops")] > 10, by
        assert by[(mode, "bandwidth")] == pytest.approx(by[(mode, "bytes")] / by[(mode, "duration")] / 1e6, rel=1e-6)
        assert by[(mode, "bytes")] == pytest.approx(by[(mode, "iops")] * by[(mode, "duration")] * 256 * 1024, rel=1e-6)
        # 2 threads, each one request at a time: IOPS x mean latency is about 2 in flight
        assert 1.5 <= by[(mode, "iops")] * by[(mode, "latency_avg")] / 1000 <= 2.05, by
        assert 0.9 <= by[(mode, "from_storage")] <= 1.3, by  # the bytes crossed the client's link
    # a GET's first byte (its response's headers) comes before its last; a PUT has no such row
    assert 0 < by[("read", "first_byte_latency_p50")] <= by[("read", "latency_p50")], by
    assert ("write", "first_byte_latency_p50") not in by
    # mixed: 70 % GETs by default, each direction's bytes a row of its own (the ledger's), the
    # bandwidth both together; a GET is a whole object, so the bytes count the requests of each kind
    mixed = {json.loads(r["params"]).get("op"): float(r["value"]) for r in rows
             if json.loads(r["params"])["mode"] == "mixed" and r["metric"] == "bytes"}
    requests = by[("mixed", "iops")] * by[("mixed", "duration")]
    assert (mixed["read"] + mixed["write"]) / (256 * 1024) == pytest.approx(requests, abs=0.5), (mixed, requests)
    assert 0.5 <= mixed["read"] / (mixed["read"] + mixed["write"]) <= 0.9, mixed
    assert by[("mixed", "bandwidth")] == pytest.approx((mixed["read"] + mixed["write"]) / by[("mixed", "duration")] / 1e6)
    # list and delete move no object bytes: requests and latencies only
    for mode in ("list", "delete"):
        assert by[(mode, "iops")] > 1 and (mode, "bandwidth") not in by and (mode, "bytes") not in by, by
    # the deletes are of the objects the write made, one request each, never more
    deleted, written = (by[(m, "iops")] * by[(m, "duration")] for m in ("delete", "write"))
    assert deleted <= written + 0.5
    if by[("delete", "duration")] < 2.9:  # ran out of objects before its seconds: it deleted them all
        assert deleted == pytest.approx(written, abs=0.5)
    listed = dfslab("exec", rgw, "--", "s3cmd", "ls").stdout
    assert "dfslab-s3-" not in listed, listed  # the workload's bucket was removed


def test_a_killed_gateway_is_shown_down_and_serves_again_after_restore(rgw):
    dfslab("fault", rgw, "kill", "rgw.node1")
    assert "(DOWN)" in " ".join(status_json(rgw)["summary"])
    refused = dfslab("exec", rgw, "--", "s3cmd", "ls", check=False)
    assert refused.returncode != 0  # nothing answers S3 on node1 now
    dfslab("fault", rgw, "restore")
    assert "(up)" in " ".join(status_json(rgw)["summary"])
    dfslab("exec", rgw, "--", "s3cmd", "ls")  # answers again with the same keys


def test_a_gateway_killed_during_object_load_is_counted_and_loses_no_seeded_object(rgw, tmp_path):
    """The gateway killed 2 s into the s3 workload's PUTs and restored 3 s later: the step stands,
    with the requests nothing answered counted (tried again, not in its ops), and the checksummed
    objects seeded through the gateway before (a bucket of the run's own) are read back after,
    every byte."""
    import json

    import yaml

    from conftest import run_against
    exp = tmp_path / "rgw-fault.yaml"
    exp.write_text(yaml.safe_dump({
        "name": "rgw-fault", "baselines": {"network": False, "disk": False},
        "integrity": {"seed_objects": 8, "recovery_timeout": "120s"},
        "workloads": [{"type": "s3", "object_size": "64KiB", "threads": 2, "seconds": 8}],
        "faults": [{"kind": "kill", "target": "rgw.node1", "during": 0, "at": "2s", "duration": "3s"}]}))
    run, _ = run_against(exp, rgw)
    import csv
    unanswered = {json.loads(r["params"])["mode"]: float(r["value"]) for r in csv.DictReader((run / "results.csv").open())
                  if r["workload"] == "s3" and r["metric"] == "unanswered"}
    assert unanswered["write"] > 0, unanswered  # the PUTs while the gateway was down
    seeded = json.loads((run / "integrity" / "manifest.json").read_text())
    through_s3 = [e for e in seeded if e["store"].startswith("s3:dfslab-s3-")]
    assert len(through_s3) == 8, {e["store"] for e in seeded}
    keys = json.loads((ClusterState(rgw).dir / "ceph" / "conf" / "s3-credentials.json").read_text())
    named = " ".join(e["store"] for e in through_s3)
    assert keys["secret_key"] not in named and keys["access_key"] not in named  # where the keys are, not the keys
    result = json.loads((run / "integrity.json").read_text())
    assert result["checked"] >= 16 and result["lost"] == 0 and result["corrupt"] == 0, result
    # then removed, bucket and all: the run leaves the gateway as it found it
    assert result["removed"] >= result["checked"] and "left" not in result, result
    bucket = through_s3[0]["store"].split(":", 1)[1].split(",")[0]
    assert bucket not in dfslab("exec", rgw, "--", "s3cmd", "ls").stdout
    (event,) = json.loads((run / "faults.json").read_text())
    assert event["target"] == "rgw.node1" and event["recover_s"] is not None, event

"""dfslab plan: layouts mapped with Ceph's own crushtool, ceph-mon and osdmaptool. The mapping
method is checked against a real dfslab cluster: osdmaptool on that cluster's own OSD map gives
the same up set for every PG as the cluster reports, before and after an OSD is marked out."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from conftest import DFSLAB, REPO, cluster_up, dfslab, write_spec
from dfslab.backends.ceph import plan_maps
from dfslab.plan.analysis import plan
from dfslab.plan.layout import Layout

pytestmark = pytest.mark.cluster

SMALL = {"name": "small", "racks": 2,
         "hosts": [{"count": 4, "osds": 2, "osd_size": "4TiB", "nic": "10gbit", "osd_throughput": "200MB/s"}],
         "pools": [{"name": "rbd", "size": 3, "pg_num": 64, "stored": "2TiB"},
                   {"name": "ec", "k": 2, "m": 1, "pg_num": 32, "stored": "3TiB"}],
         "failures": [{"osd": 3}, {"host": "host1"}, {"rack": "rack0"}],
         "add_hosts": 2}


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    return plan(Layout.model_validate(SMALL), tmp_path_factory.mktemp("plan"))


def test_every_pg_member_and_byte_is_somewhere(small):
    per_osd = small["per_osd"]
    assert len(per_osd) == 8 and small["undersized_pgs"] == {}
    assert sum(u["pgs"] for u in per_osd.values()) == 64 * 3 + 32 * 3
    stored = 3 * 2 * 2**40 + 3 * 2**40 * 3 / 2  # replicas, and k+m chunks of 1/k each
    assert sum(u["bytes"] for u in per_osd.values()) == pytest.approx(stored)
    assert sum(u["bytes"] for u in small["per_osd_balanced"].values()) == pytest.approx(stored)
    # The balancer never makes the spread of PGs per OSD worse.
    assert small["after_balancer"]["pgs_per_osd"]["stddev"] <= small["before_balancer"]["pgs_per_osd"]["stddev"]


def test_a_failure_re_replicates_what_the_lost_osds_held(small):
    one, host, rack = small["failures"]
    lost = small["per_osd"]["3"]
    assert one["osds"] == [3] and one["pgs_degraded"] == lost["pgs"]
    assert one["bytes_moved"] == pytest.approx(lost["bytes"])
    # Several OSDs out: at least what they held moves; CRUSH's retries shift a little more (firstn
    # rules re-pick later replicas of a PG whose earlier one was rejected), as on a real cluster.
    held = small["per_osd"]["2"]["bytes"] + lost["bytes"]
    assert host["osds"] == [2, 3] and held <= host["bytes_moved"] <= 1.25 * held
    assert rack["osds"] == [0, 1, 4, 5]  # hosts go round-robin over the racks: host0 and host2 are rack0
    assert one["recovery_seconds"] > 0 and one["limit"]
    assert small["add_hosts"]["pgs_moving"] > 0 and small["add_hosts"]["pgs_degraded"] == 0


@pytest.mark.parametrize("change,field", [
    ({"pools": [{"name": "rbd", "size": 5, "stored": "1TiB"}]}, "pools[0]"),
    ({"pools": [{"name": "rbd", "size": 3, "pg_num": 100, "stored": "1TiB"}]}, "pools[0].pg_num"),
    ({"pools": [{"name": "rbd", "size": 3, "pg_num": 131072, "stored": "1TiB"}]}, "pools[0].pg_num"),
    ({"hosts": [{"count": 4, "osds": 2, "osd_size": "0B"}]}, "hosts[0].osd_size"),
    ({"pools": [{"name": "rbd", "size": 3, "device_class": "nvme", "stored": "1TiB"}]}, "pools[0].device_class"),
    ({"pools": [{"name": "ec", "k": 4, "m": 2, "failure_domain": "rack", "stored": "1TiB"}]}, "pools[0]"),
    ({"failures": [{"host": "host99"}]}, "host99"),
])
def test_bad_layouts_are_refused_naming_the_field(tmp_path, change, field):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({**SMALL, **change}))
    res = subprocess.run([*DFSLAB, "plan", str(path)], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert res.returncode == 2, res.stdout + res.stderr
    assert field in res.stdout + res.stderr
    assert "crushtool" not in res.stdout and "osdmaptool:" not in res.stdout


def test_cli_writes_plan_and_report_and_compares(tmp_path):
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text(yaml.safe_dump({**SMALL, "failures": [], "add_hosts": 0}))
    b.write_text(yaml.safe_dump({**SMALL, "name": "bigger", "racks": 4, "failures": [], "add_hosts": 0,
                                 "hosts": [{"count": 8, "osds": 2, "osd_size": "4TiB"}]}))
    # As a user runs it: from a directory of their own, DFSLAB_RUNS unset, so the runs go to the
    # relative default ./runs (a relative runs root once made the scratch MON's removal refuse).
    env = {k: v for k, v in os.environ.items() if k != "DFSLAB_RUNS"}
    res = subprocess.run([*DFSLAB, "plan", str(a), "--compare", str(b)], capture_output=True, text=True,
                         cwd=tmp_path, env=env, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    report = Path(res.stdout.split("report: ")[-1].strip())
    assert report.parent.parent == tmp_path / "runs"
    html = report.read_text()
    assert "small" in html and "bigger" in html and "<svg" in html
    assert json.loads((report.parent / "bigger" / "plan.json").read_text())["osds"] == 16
    assert not [p for p in report.parent.rglob("mon-*")]  # the scratch MONs are gone


def test_osdmaptool_maps_pgs_as_the_real_cluster_does(tmp_path):
    """On a real cluster's own OSD map, the planner's mapping equals the PG map the cluster reports."""
    spec = write_spec(tmp_path, "name: t-plan\nnodes: 3\nceph: {replica_size: 2, pg_num: 16, osd_size: 1GiB, cephfs: false}\n")
    cluster_up(spec, "t-plan")
    try:
        planning = plan_maps()
        def real_up() -> dict[str, list[int]]:
            out = dfslab("exec", "t-plan", "--", "ceph", "pg", "dump", "pgs_brief", "--format", "json").stdout
            return {p["pgid"]: p["up"] for p in json.loads(out)["pg_stats"]}

        def osdmap() -> Path:
            path = tmp_path / f"osdmap-{time.monotonic_ns()}"
            raw = subprocess.run([*DFSLAB, "exec", "t-plan", "--", "ceph", "osd", "getmap"], capture_output=True,
                                 cwd=REPO, timeout=120, check=True).stdout
            path.write_bytes(raw)
            return path

        base_map = osdmap()
        assert planning.map_pgs(base_map) == real_up()
        dfslab("exec", "t-plan", "--", "ceph", "osd", "out", "1")
        deadline = time.monotonic() + 60
        while (up := real_up()) and any(1 in u for u in up.values()) and time.monotonic() < deadline:
            time.sleep(1)  # the MGR's PG stats catch up with the new map
        tree = json.loads(dfslab("exec", "t-plan", "--", "ceph", "osd", "crush", "tree", "--format", "json").stdout)
        weight = next(n["crush_weight"] for n in tree["nodes"] if n["name"] == "osd.1")
        out_map = planning.mark_out(planning.prepare(base_map, tmp_path / "up", {1: weight}), tmp_path / "out", {1: weight})
        assert planning.map_pgs(out_map, mark_up_in=False) == up
    finally:
        dfslab("down", "t-plan", check=False)


def test_a_pool_too_large_for_cephs_balancer_is_balanced_by_dfslabs(small, tmp_path, monkeypatch):
    """Every pool taken as too large for osdmaptool's balancer: the same maps, balanced by
    dfslab's own (plan/balancer.py), said so, every byte still somewhere, the spread narrower."""
    from dfslab.plan import analysis
    monkeypatch.setattr(analysis, "CEPH_BALANCER_MAX_WORK", 0)
    ours = plan(Layout.model_validate(SMALL), tmp_path / "ours")
    assert set(small["after_balancer"]["balancer"].values()) == {"ceph (osdmaptool)"}
    assert set(ours["after_balancer"]["balancer"].values()) == {"dfslab"}
    assert ours["before_balancer"] == small["before_balancer"] and ours["failures"] == small["failures"]
    before, after = ours["before_balancer"]["pgs_per_osd"], ours["after_balancer"]["pgs_per_osd"]
    assert after["stddev"] < before["stddev"] and after["max"] - after["min"] <= before["max"] - before["min"]
    assert sum(u["bytes"] for u in ours["per_osd_balanced"].values()) == pytest.approx(
        sum(u["bytes"] for u in ours["per_osd"].values()))

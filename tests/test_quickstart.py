"""The quickstart (`make demo`): a real cluster, rados bench, a run directory and a report."""

import csv
import json
import os
import re
from pathlib import Path

import pytest

from conftest import dfslab, write_spec
from dfslab import cluster

pytestmark = pytest.mark.cluster
NAME = "t-qs"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    spec = write_spec(tmp_path_factory.mktemp("qs"), f"""
name: {NAME}
nodes: 3
ceph: {{mons: 1, osds_per_node: 1, osd_size: 2GiB, replica_size: 2, cephfs: false}}
""")
    try:
        res = dfslab("quickstart", str(spec), "--seconds", "4")
    finally:
        cluster.down(NAME)
    report = Path(res.stdout.strip().split("report: ")[-1])
    yield report.parent


def test_cluster_is_gone_afterwards(run_dir):
    assert cluster.leftovers(NAME) == []


def test_run_directory_has_everything(run_dir):
    for name in ("spec.yaml", "provenance.json", "results.csv", "status.json", "report.html"):
        assert (run_dir / name).is_file(), name
    raw = sorted(p.name for p in (run_dir / "raw").iterdir())
    assert any(n.endswith("-write.txt") for n in raw) and any(n.endswith("-seq.txt") for n in raw)
    prov = json.loads((run_dir / "provenance.json").read_text())
    assert prov["ceph_version"].startswith("ceph version 16.")
    assert prov["end"] > prov["start"]
    assert Path(os.environ["DFSLAB_RUNS"]) in run_dir.parents


def test_results_are_plausible(run_dir):
    with open(run_dir / "results.csv") as fh:
        rows = list(csv.DictReader(fh))
    bandwidth = {json.loads(r["params"])["mode"]: float(r["value"]) for r in rows if r["metric"] == "bandwidth"}
    assert set(bandwidth) == {"write", "seq"}
    # Loopback-speed namespaces on one machine: well above 1 MB/s, well below 20 GB/s.
    assert all(1 < v < 20000 for v in bandwidth.values()), bandwidth
    assert all(r["unit"] == "MB/s" for r in rows if r["metric"].startswith("bandwidth"))
    samples = [r for r in rows if r["metric"] == "bandwidth_sample"]
    assert len(samples) >= 3 and all(r["t"] for r in samples)


def test_report_is_self_contained(run_dir):
    html = (run_dir / "report.html").read_text()
    assert "<svg" in html and "radosbench" in html and "HEALTH_OK" in html
    # Opens offline: nothing is loaded from elsewhere (SVG namespace URIs are names, not fetches).
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//|url\(\s*["']?https?:|@import""", html)
    assert "<script src" not in html

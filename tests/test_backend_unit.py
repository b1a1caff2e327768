"""What backends and workloads parse or render, without a cluster: fio's JSON (from a real
fio run on a temporary file), ceph.conf from a spec, GlusterFS brick layout, and a report
built from a small run directory."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from dfslab.backends.ceph.conf import CephLayout, osd_placement, render_conf
from dfslab.backends.gluster.glusterd import GlusterContext
from dfslab.backends.gluster.volume import brick_list, layout_args, new_bricks
from dfslab.registry import backend_class_of
from dfslab.report import build
from dfslab.results import RunDir
from dfslab.spec import parse_spec
from dfslab.workloads import Measurement, WorkloadError
from dfslab.workloads.fiotool import fio_argv, parse_json


def _fio(directory: Path, **options) -> str:
    if shutil.which("fio") is None:
        pytest.skip("fio is not installed (scripts/install-deps.sh)")
    argv = fio_argv("unit", **{"directory": str(directory), "bs": "4k", "size": "8M", "runtime": 1, "time_based": True,
                               **options})
    return subprocess.run(argv, capture_output=True, text=True, check=True, timeout=60).stdout


@pytest.fixture(scope="module")
def fio_output(tmp_path_factory) -> str:
    """Buffered libaio (the engine dfslab runs on files): the I/O happens at submission, so
    completion latency alone is a small part of an I/O's time (with psync, where the parser's
    choice would not show, fio measures no submission at all)."""
    return _fio(tmp_path_factory.mktemp("fio"), rw="randrw", ioengine="libaio", iodepth=1, direct=0)


def _by(rows):
    return {(r.params["op"], r.metric): r for r in rows}


def test_fio_json_gives_a_row_per_direction_and_metric(fio_output):
    rows = parse_json(fio_output, "fio", {"bs": 4096}, 2)
    by = _by(rows)
    job = json.loads(fio_output)["jobs"][0]
    for op in ("read", "write"):
        assert by[(op, "bandwidth")].value > 0 and by[(op, "bandwidth")].unit == "MB/s"
        assert by[(op, "iops")].value > 0
        assert all(by[(op, m)].unit == "ms" for m in ("latency_avg", "latency_p99", "clat_avg", "slat_avg", "clat_p99"))
        # latency is fio's total (lat_ns), its parts are their own metrics
        assert by[(op, "latency_avg")].value == pytest.approx(job[op]["lat_ns"]["mean"] / 1e6)
        assert by[(op, "latency_p99")].value == pytest.approx(job[op]["lat_ns"]["percentile"]["99.000000"] / 1e6)
        assert by[(op, "slat_avg")].value == pytest.approx(job[op]["slat_ns"]["mean"] / 1e6)
        assert by[(op, "latency_avg")].value == pytest.approx(by[(op, "slat_avg")].value + by[(op, "clat_avg")].value,
                                                              rel=0.05)
    assert all(r.repetition == 2 and r.params["bs"] == 4096 for r in rows)
    # fio's own numbers, converted: bandwidth is bytes/s over 1e6.
    assert by[("read", "bandwidth")].value == pytest.approx(job["read"]["bw_bytes"] / 1e6)


def test_fio_latency_agrees_with_littles_law_at_the_depth_really_run(fio_output, tmp_path):
    """In flight = IOPS x latency: one job at iodepth 1 keeps about one I/O in flight, split
    between its reads and writes; completion latency alone would put it at a few percent."""
    by = _by(parse_json(fio_output, "fio", {}, 0))
    in_flight = sum(by[(op, "iops")].value * by[(op, "latency_avg")].value / 1e3 for op in ("read", "write"))
    # depth is Little's law, or exactly the job count when the jobs spent most of their time in the
    # submit call (effective_depth's serial rule; on a loaded machine that happens at depth 1)
    assert 0.5 <= in_flight <= 2 and by[("read", "depth")].value in (pytest.approx(in_flight), 1.0)
    # O_DIRECT libaio on this machine's disk is truly asynchronous: the depth asked for is the one run.
    deep = _by(parse_json(_fio(tmp_path, rw="randread", ioengine="libaio", iodepth=8, direct=1), "fio", {}, 0))
    assert 4 <= deep[("read", "iops")].value * deep[("read", "latency_avg")].value / 1e3 <= 16
    assert 4 <= deep[("read", "depth")].value <= 16


def test_a_synchronous_engine_at_depth_is_counted_at_depth_1(tmp_path):
    """fio runs psync one I/O at a time whatever the iodepth and says so only in its text."""
    out = _fio(tmp_path, rw="randread", ioengine="psync", iodepth=8, numjobs=2, group_reporting=True)
    assert "capped at 1" in out
    assert _by(parse_json(out, "fio", {}, 0))[("read", "depth")].value == 2


def test_buffered_files_at_depth_are_refused_naming_the_fix():
    from dfslab.workloads.fio import FioParams
    with pytest.raises(ValueError, match="direct: true, or iodepth: 1 with numjobs: 16"):
        FioParams(target="fs", direct=False, iodepth=16)
    assert FioParams(target="fs").direct and FioParams(target="rbd", direct=False, iodepth=16).iodepth == 16


def test_fio_json_after_warnings_and_without_json(fio_output):
    assert parse_json("fio: some warning\n" + fio_output, "fio", {}, 0)
    with pytest.raises(WorkloadError, match="no JSON"):
        parse_json("fio: file:filesetup.c: Permission denied\n", "fio", {}, 0)


def _lat_log(directory: Path, **options) -> tuple[str, list[int]]:
    """A real fio run's JSON+ and every I/O's total latency in ns (its per-I/O latency log)."""
    out = _fio(directory, output_format="json+", write_lat_log=str(directory / "io"), **options)
    return out, [int(line.split(",")[1]) for log in directory.glob("io_lat.*.log")
                 for line in log.read_text().splitlines() if line.strip()]


def test_one_job_on_several_clients_sums_their_io_and_merges_their_latency_histograms(tmp_path):
    """fio on two client nodes at once: what the nodes did differs (4 KiB vs 128 KiB reads: many
    short and fewer long I/Os), so a mean of means, a sum of percentiles or either node's own
    percentile would each be wrong; the merged figures match every I/O both fio runs logged."""
    import numpy as np
    from dfslab.workloads.fiotool import merge_jobs, one_job, parse_on_clients
    (small := tmp_path / "a").mkdir(), (large := tmp_path / "b").mkdir()
    texts, logged = {}, []
    for node, directory, bs in (("client", small, "4k"), ("client2", large, "128k")):
        texts[node], lat = _lat_log(directory, rw="randread", ioengine="psync", bs=bs, size="16M")
        logged.append(np.array(lat))
    by = _by([r for r in parse_on_clients(texts, "fio", {"numjobs": 1}, 0) if "client" not in r.params])
    jobs = {node: one_job(text)[0]["read"] for node, text in texts.items()}
    assert by[("read", "bandwidth")].value == pytest.approx(sum(j["bw_bytes"] for j in jobs.values()) / 1e6)
    assert by[("read", "iops")].value == pytest.approx(sum(j["iops"] for j in jobs.values()))
    assert by[("read", "bytes")].value == sum(j["io_bytes"] for j in jobs.values())
    every = np.concatenate(logged)
    assert len(every) == sum(j["lat_ns"]["N"] for j in jobs.values())  # fio logged each I/O it counted
    assert by[("read", "latency_avg")].value == pytest.approx(every.mean() / 1e6, rel=0.01)
    # fio's histogram buckets are 1/64 of a power of two wide: its percentiles are within 1.6 %
    for pct in (50, 99):
        assert by[("read", f"latency_p{pct}")].value == pytest.approx(np.percentile(every, pct) / 1e6, rel=0.03)
    # the two nodes' own p50 are apart: the merged one is neither's
    own = sorted(j["lat_ns"]["percentile"]["50.000000"] / 1e6 for j in jobs.values())
    assert own[0] < by[("read", "latency_p50")].value < own[1] or own[0] * 1.5 < own[1], own
    # one job merged alone is fio's own figures, percentile for percentile
    single = merge_jobs([one_job(texts["client"])[0]])["read"]["lat_ns"]
    assert single["percentile"] == jobs["client"]["lat_ns"]["percentile"]
    per_node = {r.params["client"]: r.value for r in parse_on_clients(texts, "fio", {}, 0) if r.metric == "client_iops"}
    assert per_node == {node: pytest.approx(j["iops"]) for node, j in jobs.items()}


def test_merging_needs_the_histograms():
    from dfslab.workloads.fiotool import merge_latency
    with pytest.raises(WorkloadError, match="json\\+"):
        merge_latency([{"N": 2, "mean": 1.0, "min": 1, "max": 1, "percentile": {"99.000000": 1}}])


def test_fio_on_several_clients_only_where_each_has_its_own_files():
    from dfslab.workloads.fio import FioParams
    assert FioParams(target="fs", clients=2).clients == 2
    for target in ("rbd", "machine"):
        with pytest.raises(ValueError, match="clients: 2 runs fio on several client nodes .* use target fs"):
            FioParams(target=target, clients=2, rw="write")


def _conf(tmp_path: Path, **ceph) -> dict[str, str]:
    spec = parse_spec({"name": "u", "nodes": 3, "ceph": ceph})
    addresses = {n: f"10.77.0.{i}" for i, n in enumerate(spec.node_names(), 2)}
    text = render_conf(spec, CephLayout(tmp_path), "fsid-1", addresses, "10.77.0.0/24")
    out, section = {}, ""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line.strip("[]")
        elif "=" in line:
            key, _, value = line.partition("=")
            out[f"{section}/{key.strip()}"] = value.strip()
    return out


@pytest.mark.parametrize("size,min_size", [(1, 1), (2, 1), (3, 2)])
def test_replica_size_sets_the_pool_defaults(tmp_path, size, min_size):
    conf = _conf(tmp_path, replica_size=size, pg_num=32)
    assert conf["global/osd pool default size"] == str(size)
    assert conf["global/osd pool default min size"] == str(min_size)
    assert conf["global/osd pool default pg num"] == "32"


def test_osds_are_placed_per_node_with_their_crush_host(tmp_path):
    spec = parse_spec({"name": "u", "nodes": 3, "ceph": {"osds_per_node": 2}})
    assert osd_placement(spec) == {0: "node1", 1: "node1", 2: "node2", 3: "node2", 4: "node3", 5: "node3"}
    conf = _conf(tmp_path, osds_per_node=2, conf={"osd": {"osd_max_backfills": 4}})
    assert conf["osd.3/crush location"] == "root=default host=node2"
    assert conf["osd/osd_max_backfills"] == "4"


def _gluster(tmp_path: Path, nodes: int = 3, **gluster) -> GlusterContext:
    spec = parse_spec({"name": "g", "filesystem": "gluster", "nodes": nodes, "gluster": gluster})
    return GlusterContext(spec, None, tmp_path, {n: f"10.0.0.{i}" for i, n in enumerate(spec.node_names(), 1)})


def test_bricks_are_brick_major_so_each_set_spans_distinct_servers(tmp_path):
    ctx = _gluster(tmp_path, 3, bricks_per_node=2, volume="replicate", replica=3)
    bricks = brick_list(ctx)
    hosts = [b.split(":")[0] for b in bricks]
    assert hosts == ["10.0.0.1", "10.0.0.2", "10.0.0.3"] * 2
    assert [b.rsplit("/", 1)[1] for b in bricks] == ["b0"] * 3 + ["b1"] * 3
    for i in range(0, len(bricks), 3):  # every replica set: three different servers
        assert len(set(hosts[i:i + 3])) == 3
    assert layout_args(ctx) == ["replica", "3"]


def test_layout_arguments_per_volume_type(tmp_path):
    assert layout_args(_gluster(tmp_path, 3, volume="replicate", replica=3, arbiter=True)) == ["replica", "3", "arbiter", "1"]
    assert layout_args(_gluster(tmp_path, 3, volume="disperse")) == ["disperse-data", "2", "redundancy", "1"]
    assert layout_args(_gluster(tmp_path, 2, volume="distribute")) == []


def test_new_bricks_fill_the_emptiest_nodes_with_the_next_free_index(tmp_path):
    ctx = _gluster(tmp_path, 3, volume="replicate", replica=3)
    existing = brick_list(ctx)
    added = new_bricks(ctx, existing, 3)
    assert [b.split(":")[0] for b in added] == ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
    assert all(b.endswith("/b1") for b in added) and not set(added) & set(existing)
    # Uneven: node3 has one brick fewer, so it comes first.
    uneven = new_bricks(ctx, existing + added[:2], 1)
    assert uneven[0].startswith("10.0.0.3:") and uneven[0].endswith("/b1")


def test_report_renders_what_the_backend_declared(tmp_path):
    run = RunDir.create("unit", tmp_path)
    ceph = backend_class_of("ceph")
    run.start("hash", {"ceph": "ceph version 16.2.15"}, [c.as_json() for c in ceph.facts.charts])
    now = time.time()
    run.add([Measurement("fio", "bandwidth", v, "MB/s", {"rw": "write", "bs": bs}, i)
             for bs in (4096, 1 << 20) for i, v in enumerate((100.0, 110.0))])
    (run.path / "timeseries.csv").write_text("t,series,value,unit\n" + "".join(
        f"{now + s:.3f},ceph.pgs.active+clean,{32 - (s == 2) * 8},PGs\n{now + s:.3f},cpu.total,{40 + s},%\n" for s in range(5)))
    run.write_json("intervals.json", [])
    run.write_json("status.json", {
        "name": "u", "filesystem": "ceph", "runtime": "local", "health": "HEALTH_OK", "daemons": [],
        "write_amplification": 3, "summary": ["PGs: 32/32 — 32 active+clean"],
        "tables": [{"title": "pools", "columns": ["pool", "size"], "rows": [["dfslab", "3"]]}]})
    run.finish(failures=[], skipped=[], cluster="u", experiment="unit")
    assert "bs=1048576" in build(run.path).read_text()  # no recorded unit: the number as it is
    run.write_json("units.json", {"fio": {"bs": "B", "size": "B"}})
    html = build(run.path).read_text()
    assert "bs=1MiB" in html and "bs=4KiB" in html  # the unit the run recorded, not the key's name
    assert "ceph version 16.2.15" in html and "PGs: 32/32" in html
    assert "<h3>pools</h3>" in html and "<td class=\"l\">dfslab</td>" in html
    assert ceph.facts.charts[0].title in html  # the backend's own series got their figure
    assert "client throughput as Ceph saw it" not in html  # faults_only: no faults in this run


def test_fio_rados_target_takes_writes_only():
    from pydantic import ValidationError

    from dfslab.workloads.fio import FioParams
    assert FioParams(target="rados", rw="randwrite").target == "rados"
    with pytest.raises(ValidationError, match="radosbench"):
        FioParams(target="rados", rw="read")


def test_a_backend_describes_its_targets_as_data_and_fio_maps_each_kind_to_its_engine(tmp_path):
    """Backends say how a target is reached (registry's descriptions); fio's engine table turns each
    into its options, the asynchronous engine where more than one I/O is to be in flight."""
    from types import SimpleNamespace

    from dfslab.backends.abilities import ToolTargets
    from dfslab.registry import BlockImage, ObjectPool, VolumeLibrary
    from dfslab.workloads.fio import IOENGINES, FIO_ON, ioengine_options, target_options
    assert ioengine_options(ObjectPool("p", "u", "/c.conf")) == {"ioengine": "rados", "clientname": "u", "pool": "p",
                                                               "conf": "/c.conf"}
    assert ioengine_options(BlockImage("rbd", "img", "admin")) == {"ioengine": "rbd", "clientname": "admin",
                                                                 "pool": "rbd", "rbdname": "img"}
    assert ioengine_options(VolumeLibrary("v", "10.0.0.2", "d"))["filename_format"] == "d/$jobname.$jobnum.$filenum"
    assert set(IOENGINES) == {ObjectPool, BlockImage, VolumeLibrary} and set(FIO_ON) == {"fs", "rados", "rbd", "gfapi"}
    asked = []

    class Storage(ToolTargets):
        def reach(self, runner, target, size_bytes, client_cache=None):
            asked.append((target, size_bytes, client_cache))
            return VolumeLibrary("v", "10.0.0.2", "d")
    runner = SimpleNamespace(storage=Storage())
    assert target_options(runner, "gfapi", 2**20, 4, True, iodepth=16)["ioengine"] == "gfapi_async"
    assert target_options(runner, "gfapi", 2**20, 4, True, iodepth=1)["ioengine"] == "gfapi"
    assert asked == [("gfapi", 4 * 2**20, None)] * 2

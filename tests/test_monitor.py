"""The sampler reads real processes; the Prometheus endpoint serves its latest values."""

import time
import urllib.request

import pytest

from dfslab.monitor import PrometheusEndpoint, ResourceSampler, prometheus_text
from dfslab.procs import ProcessTable
from dfslab.state import ClusterState


@pytest.fixture
def procs():
    state = ClusterState("t-mon")
    state.create({"name": "t-mon"})
    table = ProcessTable(state)
    # A busy process with some memory, standing in for a daemon.
    table.spawn("osd.9", "node1", ["python3", "-c", "x = bytearray(64 << 20)\nwhile True: pass"])
    yield table
    table.stop_all(timeout=1)
    state.destroy()


def test_sampler_measures_cpu_and_rss_of_tracked_processes(procs, tmp_path):
    sampler = ResourceSampler(procs, lambda: {"ceph.health": (0, "0=OK")}, interval=0.3).start()
    time.sleep(1.5)
    sampler.stop()
    names = {series for _, series, _, _ in sampler.rows}
    assert {"cpu.total", "cpu.osd.9", "rss.osd.9", "ceph.health"} <= names
    rss = [v for _, s, v, _ in sampler.rows if s == "rss.osd.9"]
    assert max(rss) > 60  # MiB: the bytearray is resident once the process has started
    cpu = [v for _, s, v, _ in sampler.rows if s == "cpu.osd.9"]
    assert max(cpu) > 50  # a spinning loop
    sampler.write_csv(tmp_path / "ts.csv")
    assert (tmp_path / "ts.csv").read_text().startswith("t,series,value,unit")


def test_prometheus_endpoint_serves_latest_sample(procs):
    sampler = ResourceSampler(procs, None, interval=0.2).start()
    endpoint = PrometheusEndpoint(sampler, "t-mon", 0).start()
    try:
        time.sleep(0.8)
        body = urllib.request.urlopen(f"http://127.0.0.1:{endpoint.port}/metrics", timeout=5).read().decode()
    finally:
        endpoint.stop()
        sampler.stop()
    assert 'dfslab_rss_mebibytes{cluster="t-mon",series="osd.9"}' in body
    assert 'dfslab_cpu_percent{cluster="t-mon",series="total"}' in body


def test_prometheus_text_format():
    text = prometheus_text({"net.node1.tx": (12.5, "MB/s")}, "c")
    assert text == 'dfslab_net_mbytes_per_second{cluster="c",series="node1.tx"} 12.5\n'

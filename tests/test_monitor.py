"""The sampler reads real processes; the Prometheus endpoint serves its latest values."""

import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request

import psutil
import pytest
from prometheus_client.parser import text_string_to_metric_families

from dfslab.monitor import PrometheusEndpoint, ResourceSampler
from dfslab.polling import wait_until
from dfslab.procs import ProcessTable
from dfslab.state import ClusterState


@pytest.fixture
def procs():
    state = ClusterState("t-mon")
    state.create({"name": "t-mon"})
    table = ProcessTable(state)
    # A busy process with some memory, standing in for a daemon.
    proc = table.spawn("osd.9", "node1", ["python3", "-c", "x = bytearray(64 << 20)\nwhile True: pass"])
    # its 64 MiB resident before anything samples it: a loaded machine took over 1.5 s to start it
    from dfslab.polling import wait_until
    wait_until(lambda: psutil.Process(proc.pid).memory_info().rss > 64 << 20, "the stand-in daemon's 64 MiB", 60, 0.1)
    yield table
    table.stop_all(timeout=1)
    state.destroy()


def test_sampler_measures_cpu_and_rss_of_tracked_processes(procs, tmp_path):
    spinner = psutil.Process(procs.get("osd.9").pid)
    used_before = sum(spinner.cpu_times()[:2])
    sampler = ResourceSampler(procs.all, lambda: {"ceph.health": (0, "0=OK")}, interval=0.3).start()
    _samples_of(sampler, "cpu.osd.9", 5)
    sampler.stop()
    used = sum(spinner.cpu_times()[:2]) - used_before
    names = {series for _, series, _, _ in sampler.rows}
    assert {"cpu.total", "cpu.osd.9", "rss.osd.9", "ceph.health"} <= names
    rss = [v for _, s, v, _ in sampler.rows if s == "rss.osd.9"]
    assert max(rss) > 60  # MiB: the bytearray is resident once the process has started
    # The sampled percentages, integrated over their intervals, are the CPU seconds the spinning
    # loop got (whatever share of a core a loaded machine left it): the first sample is the
    # baseline, so the integral covers a little less than the window the kernel counted.
    cpu = [(t, v) for t, s, v, _ in sampler.rows if s == "cpu.osd.9"]
    sampled = sum(v / 100 * (t - t_prev) for (t_prev, _), (t, v) in zip(cpu, cpu[1:]))
    assert used > 0.1 and 0.5 * used <= sampled <= 1.1 * used, (sampled, used)
    sampler.write_csv(tmp_path / "ts.csv")
    assert (tmp_path / "ts.csv").read_text().startswith("t,series,value,unit")


def test_prometheus_endpoint_serves_latest_sample(procs):
    sampler = ResourceSampler(procs.all, lambda: {"ceph.health": (1, "0=OK,1=WARN,2=ERR"), "ceph.pgs.active+clean": (32, "PGs"),
                                              "ceph.client_write": (100.0, "MB/s")}, interval=0.2).start()
    endpoint = PrometheusEndpoint(sampler, "t-mon", 0).start()
    try:
        _samples_of(sampler, "ceph.client_write", 5)  # 0.8 s of 100 MB/s integrated at least
        reply = urllib.request.urlopen(f"http://127.0.0.1:{endpoint.port}/metrics", timeout=5)
        body = reply.read().decode()
    finally:
        endpoint.stop()
        sampler.stop()
    assert reply.headers["Content-Type"].startswith("text/plain; version=")  # prometheus_client's own
    families = {f.name: f for f in text_string_to_metric_families(body)}
    rss = families["dfslab_daemon_resident_memory_bytes"]
    assert rss.type == "gauge" and rss.documentation
    [osd] = [x for x in rss.samples if x.labels == {"cluster": "t-mon", "daemon": "osd.9"}]
    assert osd.value > 60 * 2**20  # bytes, not MiB
    assert 0 <= families["dfslab_machine_cpu_ratio"].samples[0].value <= 1
    assert families["dfslab_ceph_health_status"].samples[0].value == 1
    assert families["dfslab_ceph_pgs"].samples[0].labels["state"] == "active+clean"
    written = families["dfslab_ceph_client_bytes"]  # a counter: the parser strips _total from the family
    assert written.type == "counter" and written.samples[0].name == "dfslab_ceph_client_bytes_total"
    assert written.samples[0].value > 50e6  # 100 MB/s for most of a second, integrated
    assert "series=" not in body  # one metric per quantity, no catch-all label


def test_a_real_prometheus_scrapes_the_endpoint_and_answers_queries(procs, tmp_path):
    """Debian's prometheus, started here on loopback, scrapes the live endpoint; its HTTP API gives
    the series back with their labels."""
    if shutil.which("prometheus") is None:
        pytest.skip("prometheus is not installed (scripts/install-deps.sh)")
    sampler = ResourceSampler(procs.all, None, interval=0.2).start()
    endpoint = PrometheusEndpoint(sampler, "t-mon", 0).start()
    port = _free_port()
    (tmp_path / "prometheus.yml").write_text(
        "global: {scrape_interval: 1s}\n"
        f"scrape_configs: [{{job_name: dfslab, static_configs: [{{targets: ['127.0.0.1:{endpoint.port}']}}]}}]\n")
    server = subprocess.Popen(["prometheus", f"--config.file={tmp_path / 'prometheus.yml'}",
                               f"--storage.tsdb.path={tmp_path / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        query = urllib.parse.quote('dfslab_daemon_resident_memory_bytes{daemon="osd.9"}')
        result = []
        deadline = time.monotonic() + 60
        while not result and time.monotonic() < deadline:
            time.sleep(1)
            try:
                answer = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/query?query={query}", timeout=5))
                result = answer["data"]["result"]
            except OSError:
                continue  # still starting
        assert result, "prometheus never had the series"
        assert result[0]["metric"]["cluster"] == "t-mon" and result[0]["metric"]["job"] == "dfslab"
        assert float(result[0]["value"][1]) > 60 * 2**20
    finally:
        server.terminate()
        server.wait(timeout=30)
        endpoint.stop()
        sampler.stop()


def _samples_of(sampler: ResourceSampler, series: str, count: int) -> None:
    """Wait until the sampler's thread has taken `count` samples of `series` (a loaded machine
    takes longer than the intervals add up to)."""
    wait_until(lambda: sum(1 for _, s, _, _ in list(sampler.rows) if s == series) >= count,
               f"{count} samples of {series}", timeout=60, interval=0.1)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_the_platforms_cpu_is_summed_apart_from_the_storage_daemons(procs):
    """On runtime kubernetes the sampler adds up what Kubernetes itself takes (the runtime's
    `platform` names: control plane, kubelets, containerd) as `cpu.platform`, a share of the
    machine's CPUs like cpu.total; a storage daemon's CPU is not part of it."""
    from dfslab.runtime.kubernetes import KubernetesRuntime
    procs.spawn("kubelet-node1", "node1", ["python3", "-c", "while True: pass"])
    sampler = ResourceSampler(procs.all, None, interval=0.3, platform=KubernetesRuntime.platform).start()
    _samples_of(sampler, "cpu.platform", 4)
    sampler.stop()
    by_time: dict[float, dict[str, float]] = {}
    for t, series, value, _ in sampler.rows:
        by_time.setdefault(t, {})[series] = value
    samples = [s for s in by_time.values() if "cpu.platform" in s]
    assert samples and all("cpu.kubelet-node1" in s for s in samples)
    for s in samples:
        assert s["cpu.platform"] == pytest.approx(s["cpu.kubelet-node1"] / psutil.cpu_count())
    assert max(s["cpu.platform"] for s in samples) > 10  # a spinning process: a real share, not the osd's too
    assert all(s["cpu.platform"] <= s["cpu.kubelet-node1"] for s in samples)

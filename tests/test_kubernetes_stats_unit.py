"""The sampler's view of a Kubernetes you run: kubelet Summary API replies turned into the
series the local runtime's sampler writes, node CPU weighed by the bottleneck lines, and the
sampler's parts failing on their own. The API server is a stand-in here (a unit test of the
parsing); tests/test_kubernetes_existing.py reads real kubelets."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from dfslab.analysis import busiest_cpu
from dfslab.monitor import PrometheusScraper
from dfslab.rates import CounterRates
from dfslab.phases import _with_scrapes
from dfslab.backends.ceph.rook import RookCephBackend
from dfslab.runtime.kubernetes.stats import KubeletStats, cpu_cores, pod_series_name, summary_sample


def summary(node_cpu=500_000_000, rx=1_000_000, tx=2_000_000, pods=()):
    """A kubelet's /stats/summary reply, trimmed to the fields Kubernetes documents and dfslab reads."""
    return {
        "node": {"nodeName": "worker-a", "cpu": {"usageNanoCores": node_cpu, "usageCoreNanoSeconds": 9},
                 "memory": {"workingSetBytes": 1 << 30},
                 "network": {"name": "eth0", "rxBytes": rx, "txBytes": tx,
                             "interfaces": [{"name": "eth0", "rxBytes": rx, "txBytes": tx},
                                            {"name": "lo", "rxBytes": 10**12, "txBytes": 10**12}]}},
        "pods": [{"podRef": {"name": name, "namespace": ns, "uid": "u"},
                  "cpu": {"usageNanoCores": cores}, "memory": {"workingSetBytes": mem}}
                 for ns, name, cores, mem in pods],
    }


def test_rook_daemon_pods_and_dfslab_jobs_are_named_as_on_the_local_runtime():
    rook = RookCephBackend.daemon_of_pod  # the filesystem names its daemons' pods by their labels
    assert pod_series_name({"ceph_daemon_type": "osd", "ceph_daemon_id": "0", "app": "rook-ceph-osd"}, "node1", rook) == "osd.0"
    assert pod_series_name({"ceph_daemon_type": "mds", "ceph_daemon_id": "cephfs-a"}, "node2", rook) == "mds.cephfs-a"
    assert pod_series_name({"dfslab.io/job": "dfslab-fio-1"}, "client", rook) == "jobs.client"
    assert pod_series_name({"ceph_daemon_type": "crashcollector", "ceph_daemon_id": "x"}, "node1", rook) is None
    assert pod_series_name({"app": "rook-ceph-operator"}, "node1", rook) is None
    # a runtime not told its filesystem's names sees only dfslab's Jobs
    nothing = lambda labels, node: None  # noqa: E731
    assert pod_series_name({"ceph_daemon_type": "osd", "ceph_daemon_id": "0"}, "node1", nothing) is None


@pytest.mark.parametrize("quantity,cores", [("2", 2.0), ("1500m", 1.5), ("", None), ("lots", None)])
def test_node_capacity_in_cores(quantity, cores):
    assert cpu_cores(quantity) == cores


def test_a_summary_becomes_node_cpu_pod_cpu_and_memory_and_network_rates():
    names = {("rook-ceph", "rook-ceph-osd-0-abc"): "osd.0", ("rook-ceph", "job-a"): "jobs.client",
             ("rook-ceph", "job-b"): "jobs.client"}
    pods = [("rook-ceph", "rook-ceph-osd-0-abc", 250_000_000, 512 * 2**20),
            ("rook-ceph", "job-a", 100_000_000, 10 * 2**20), ("rook-ceph", "job-b", 300_000_000, 20 * 2**20),
            ("kube-system", "someone-elses", 900_000_000, 2**30)]
    rates = CounterRates()
    first = summary_sample(summary(pods=pods), "node1", names, 2.0, rates, now=100.0)
    assert first["nodecpu.node1"] == (25.0, "%")  # 0.5 of 2 CPUs
    assert first["cpu.osd.0"] == (25.0, "%") and first["rss.osd.0"] == (512.0, "MiB")
    assert first["cpu.jobs.client"] == (40.0, "%") and first["rss.jobs.client"] == (30.0, "MiB")  # two Job pods add up
    assert not any("someone" in k for k in first)
    assert "net.node1.rx" not in first  # a counter's first value gives no rate
    second = summary_sample(summary(rx=3_000_000, tx=2_500_000), "node1", names, 2.0, rates, now=102.0)
    assert second["net.node1.rx"] == pytest.approx((1.0, "MB/s"))  # 2 MB in 2 s; lo is not counted
    assert second["net.node1.tx"] == pytest.approx((0.25, "MB/s"))
    restarted = summary_sample(summary(rx=10, tx=10), "node1", names, 2.0, rates, now=104.0)
    assert "net.node1.rx" not in restarted  # a counter that went back (a restarted kubelet): no rate


class FakeCore:
    """The calls KubeletStats makes, answered from dicts; a node in `down` raises as a timed-out
    proxy call would."""

    def __init__(self, summaries, pods, down=(), no_rootfs=()):
        self.summaries, self.pods, self.down, self.listings = summaries, pods, set(down), 0
        self.no_rootfs = set(no_rootfs)  # kubelets whose full Summary fails (the local Kubernetes' nodes)

    def list_namespaced_pod(self, namespace, **_):
        self.listings += 1
        return SimpleNamespace(items=[SimpleNamespace(metadata=SimpleNamespace(name=name, labels=labels),
                                                      spec=SimpleNamespace(node_name=node))
                                      for name, node, labels in self.pods])

    def read_node(self, name, **_):
        return SimpleNamespace(status=SimpleNamespace(capacity={"cpu": "4"}))

    def fetch_summary(self, name, cpu_and_memory_only):
        """What KubeletStats.fetch_summary gets through the API server's node proxy."""
        from kubernetes.client.exceptions import ApiException
        if name in self.down:
            raise OSError(f"proxy to {name}: timed out")
        if name in self.no_rootfs and not cpu_and_memory_only:
            raise ApiException(status=500, reason="failed to get rootFs stats")
        full = self.summaries[name]
        return {**full, "node": {k: v for k, v in full["node"].items() if k != "network"}} if cpu_and_memory_only else full


def test_kubelet_stats_names_spec_nodes_samples_each_kube_node_once_and_survives_a_lost_node():
    pods = [("rook-ceph-osd-0-x", "worker-a", {"ceph_daemon_type": "osd", "ceph_daemon_id": "0"}),
            ("rook-ceph-mon-a-y", "worker-b", {"ceph_daemon_type": "mon", "ceph_daemon_id": "a"})]
    core = FakeCore({"worker-a": summary(node_cpu=1e9, pods=[("ns", "rook-ceph-osd-0-x", 1e8, 2**20)]),
                     "worker-b": summary(node_cpu=2e9, pods=[("ns", "rook-ceph-mon-a-y", 2e8, 2**21)])}, pods,
                    no_rootfs=["worker-b"])
    stats = KubeletStats(lambda: None, [("node1", "worker-a"), ("node2", "worker-b"), ("client", "worker-a")], "ns",
                         RookCephBackend.daemon_of_pod)
    stats._core, stats.fetch_summary = core, core.fetch_summary
    out = stats.sample()
    assert out["nodecpu.node1"] == (25.0, "%") and out["nodecpu.node2"] == (50.0, "%")
    assert out["cpu.osd.0"] == (10.0, "%") and out["cpu.mon.a"] == (20.0, "%")
    assert not any(k.endswith(".client") for k in out)  # worker-a is node1 (servers come first)
    # worker-b's full Summary fails: CPU and memory only from then on, so no network series for it
    assert stats.cpu_memory_only == {"worker-b"} and "net.node2.rx" not in out
    stats.sample()
    assert "net.node1.rx" in stats.sample() and "net.node2.rx" not in stats.sample()
    core.down.add("worker-b")
    out = stats.sample()
    assert "nodecpu.node1" in out and "nodecpu.node2" not in out
    assert "timed out" in stats.failures["node2"]
    assert core.listings == 1  # no pod the last listing lacked: not listed again
    # a new Job's pod appears on worker-a: listed again (at most every POD_RELIST s), and named
    core.pods.append(("dfslab-fio-1-abc", "worker-a", {"dfslab.io/job": "dfslab-fio-1"}))
    core.summaries["worker-a"]["pods"].append({"podRef": {"namespace": "ns", "name": "dfslab-fio-1-abc"},
                                                "cpu": {"usageNanoCores": 5e8}, "memory": {"workingSetBytes": 0}})
    stats._listed_at -= KubeletStats.POD_RELIST
    out = stats.sample()
    assert core.listings == 2 and out["cpu.jobs.node1"] == (50.0, "%")


def test_the_bottleneck_cpu_is_the_busiest_node_when_the_kubelets_measured_them():
    series = {"cpu.total": [(1.0, 5.0), (2.0, 5.0)],
              "nodecpu.node1": [(1.0, 30.0), (2.0, 90.0)], "nodecpu.node2": [(1.0, 70.0), (2.0, 10.0)]}
    assert busiest_cpu(series) == [(1.0, 70.0), (2.0, 90.0)]
    assert busiest_cpu({"cpu.total": [(1.0, 5.0)]}) == [(1.0, 5.0)]


def test_a_prometheus_source_that_fails_loses_only_its_own_series():
    text = "# TYPE ceph_osd_up gauge\nceph_osd_up{ceph_daemon=\"osd.0\"} 1\nceph_osd_up{ceph_daemon=\"osd.1\"} 1\n"

    def down():
        raise OSError("connection refused")
    scraper = PrometheusScraper([], sources={"rook-ceph-mgr": lambda: text, "other": down})
    out = scraper.sample()
    assert out == {"prom.rook-ceph-mgr.ceph_osd_up": (2.0, "OSDs")}
    assert scraper.failures == {"other": "connection refused"}


def test_the_runs_sampler_keeps_the_other_parts_when_one_fails():
    def broken():
        raise RuntimeError("toolbox restarting")
    backend = SimpleNamespace(sample=broken, scrape_urls=lambda: [], scrape_sources=lambda: {})
    runtime = SimpleNamespace(resource_sampler=lambda: (lambda: {"nodecpu.node1": (12.0, "%")}))
    assert _with_scrapes(backend, runtime)() == {"nodecpu.node1": (12.0, "%")}
    alone = SimpleNamespace(resource_sampler=lambda: None)
    assert _with_scrapes(backend, alone) is broken  # nothing to combine: the backend's own, errors and all


def test_a_pods_io_counters_are_summed_over_its_processes():
    """`cat /proc/[0-9]*/io` in a daemon's pod: the daemon's counters and the reading shell's;
    rchar/wchar (every read and write, page cache too) are not the disk's and stay out."""
    from dfslab.runtime.kubernetes.stats import io_totals
    osd = ("rchar: 900000000\nwchar: 800000000\nsyscr: 5\nsyscw: 6\nread_bytes: 4096\nwrite_bytes: 33554432\n"
           "cancelled_write_bytes: 0\n")
    shell = "rchar: 2048\nwchar: 0\nsyscr: 3\nsyscw: 0\nread_bytes: 0\nwrite_bytes: 0\ncancelled_write_bytes: 0\n"
    assert io_totals(osd + shell) == (4096, 33554432)
    assert io_totals("") is None  # an unprivileged pod whose daemon's counters the shell may not read

"""The resource sampler that runs beside every workload: per-node network, per-node and
machine disk throughput, CPU, per-daemon CPU and RSS, and the backend's own health (Ceph:
health, PG states, OSDs up/in, client I/O). One sample per interval, kept as a long time
series (t, series, value, unit); the latest values are also served in Prometheus text format
on 127.0.0.1 while a run is live."""

from __future__ import annotations

import csv
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable

import psutil

from .registry import exposed_series, scraped_metrics
from .procs import TrackedProcess, proc_io
from .rates import CounterRates

Sample = dict[str, tuple[float, str]]  # series -> (value, unit)


def _net_dev(pid: int, dev: str = "eth0") -> tuple[int, int] | None:
    """(rx, tx) bytes of `dev` in the network namespace of process `pid`."""
    try:
        for line in Path(f"/proc/{pid}/net/dev").read_text().splitlines():
            name, _, rest = line.partition(":")
            if name.strip() == dev:
                fields = rest.split()
                return int(fields[0]), int(fields[8])
    except OSError:
        return None
    return None


class ResourceSampler:
    def __init__(self, processes: Callable[[], list[TrackedProcess]], backend_sample: Callable[[], Sample] | None,
                 interval: float = 1.0, extra_pids: Callable[[], dict[str, int]] | None = None,
                 platform: str | None = None):
        """processes: what to sample each time (a runtime's `sampled_processes`: dfslab's own,
        and on kubernetes the daemons in pods). platform: the runtime's `platform` pattern; the
        CPU of the processes it names is summed as `cpu.platform`, in % of the machine's CPUs
        (the scale of `cpu.total`)."""
        self.processes = processes
        self.platform = re.compile(platform) if platform else None
        self.cpus = psutil.cpu_count() or 1
        self.backend_sample = backend_sample
        self.interval = interval
        self.extra_pids = extra_pids or (lambda: {})
        self.rows: list[tuple[float, str, float, str]] = []
        self.latest: Sample = {}
        # Rate series (MB/s, op/s) integrated over time: what the live endpoint exposes as counters.
        self.totals: dict[str, float] = {}
        self._last_sample_at: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._handles: dict[int, psutil.Process] = {}
        self._counters = CounterRates()
        self.errors = 0

    def _rate(self, key: str, now: float, value: float) -> float | None:
        return self._counters.rate(key, value, now)

    def _cpu(self, pid: int) -> float | None:
        handle = self._handles.get(pid)
        try:
            if handle is None:
                handle = self._handles[pid] = psutil.Process(pid)
                handle.cpu_percent(None)  # first call only primes the counter
                return None
            return handle.cpu_percent(None)
        except psutil.Error:
            return None

    def sample_once(self) -> Sample:
        now = time.time()
        out: Sample = {"cpu.total": (psutil.cpu_percent(None), "%")}
        disk = psutil.disk_io_counters()
        if disk:
            for op, value in (("read", disk.read_bytes), ("write", disk.write_bytes)):
                rate = self._rate(f"disk.{op}", now, value)
                if rate is not None:
                    out[f"disk.{op}"] = (rate / 1e6, "MB/s")
        node_pid: dict[str, int] = {}
        node_io: dict[str, list[float]] = {}
        platform: list[float] = []
        for proc in self.processes():
            if not proc.alive():
                continue
            node_pid.setdefault(proc.node, proc.pid)
            cpu = self._cpu(proc.pid)
            if cpu is not None:
                out[f"cpu.{proc.name}"] = (cpu, "%")
                if self.platform is not None and self.platform.fullmatch(proc.name):
                    platform.append(cpu)
            rss = proc.rss_bytes()
            if rss:
                out[f"rss.{proc.name}"] = (rss / 2**20, "MiB")
            io = proc_io(proc.pid)
            if io:
                acc = node_io.setdefault(proc.node, [0.0, 0.0])
                acc[0] += io[0]
                acc[1] += io[1]
        if platform:
            out["cpu.platform"] = (sum(platform) / self.cpus, "%")
        for node, pid in self.extra_pids().items():
            node_pid.setdefault(node, pid)
        for node, (read, write) in node_io.items():
            for op, value in (("read", read), ("write", write)):
                rate = self._rate(f"disk.{node}.{op}", now, value)
                if rate is not None:
                    out[f"disk.{node}.{op}"] = (rate / 1e6, "MB/s")
        for node, pid in node_pid.items():
            counters = _net_dev(pid)
            if counters:
                for direction, value in zip(("rx", "tx"), counters):
                    rate = self._rate(f"net.{node}.{direction}", now, value)
                    if rate is not None:
                        out[f"net.{node}.{direction}"] = (rate / 1e6, "MB/s")
        if self.backend_sample is not None:
            try:
                out.update(self.backend_sample())
            except Exception:  # a slow or restarting cluster must not stop the sampler
                self.errors += 1
        return out

    # -- thread ----------------------------------------------------------------
    def _loop(self) -> None:
        psutil.cpu_percent(None)
        while not self._stop.is_set():
            started = time.time()
            sample = self.sample_once()
            self._integrate(sample, started)
            self.latest = sample
            self.rows.extend((started, series, value, unit) for series, (value, unit) in sample.items())
            self._stop.wait(max(0.0, self.interval - (time.time() - started)))

    def _integrate(self, sample: Sample, now: float) -> None:
        dt = now - self._last_sample_at if self._last_sample_at is not None else 0.0
        self._last_sample_at = now
        for series, (value, unit) in sample.items():
            scale = RATE_UNITS.get(unit)
            if scale is not None:
                self.totals[series] = self.totals.get(series, 0.0) + value * scale * dt

    def start(self) -> "ResourceSampler":
        self._thread = threading.Thread(target=self._loop, name="dfslab-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=30)

    def write_csv(self, path: Path, append: bool = False) -> None:
        """The time series; `append` adds to an earlier attempt's file (a resumed run)."""
        header = not (append and path.exists())
        with open(path, "a" if append else "w", newline="") as fh:
            writer = csv.writer(fh)
            if header:
                writer.writerow(["t", "series", "value", "unit"])
            writer.writerows((f"{t:.3f}", s, f"{v:.6g}", u) for t, s, v, u in self.rows)


# A rate unit -> the factor to its base unit per second (bytes, operations).
RATE_UNITS = {"MB/s": 1e6, "op/s": 1.0}

# sampler series -> (metric, kind, labels from the regex groups, factor to base units, help): the
# machine's, the daemons' and every filesystem's degraded flag ...
# Base units (bytes, ratios 0-1), counters as _total, one metric per quantity with labels.
EXPOSED = [
    (r"cpu\.total", "dfslab_machine_cpu_ratio", "gauge", (), 0.01, "CPU busy on the whole machine, 0-1"),
    (r"nodecpu\.(.+)", "dfslab_node_cpu_ratio", "gauge", ("node",), 0.01,
     "CPU busy on one Kubernetes node (its kubelet's measure), 0-1 of its CPUs"),
    (r"cpu\.(.+)", "dfslab_daemon_cpu_ratio", "gauge", ("daemon",), 0.01, "CPU of one daemon, in CPUs (1 = one CPU busy)"),
    (r"rss\.(.+)", "dfslab_daemon_resident_memory_bytes", "gauge", ("daemon",), 2**20, "resident memory of one daemon"),
    (r"net\.(.+)\.(rx|tx)", "dfslab_node_network_bytes_total", "counter", ("node", "direction"), None,
     "bytes through a node's link (rx: received, tx: sent)"),
    (r"disk\.(read|write)", "dfslab_machine_disk_bytes_total", "counter", ("direction",), None, "bytes the machine's disks moved"),
    (r"disk\.(.+)\.(read|write)", "dfslab_node_disk_bytes_total", "counter", ("node", "direction"), None,
     "bytes a node's daemons read from or wrote to disk"),
    (r"(\w+)\.degraded", "dfslab_degraded", "gauge", ("filesystem",), 1, "1 while the filesystem reports itself degraded"),
]
# ... then each filesystem's own series (its package's EXPOSED, same form; a name with "{0}" makes
# one metric per series of its own), after the rules above so `<fs>.degraded` stays one metric.
EXPOSED += exposed_series()


def metric_families(sampler: "ResourceSampler", cluster: str) -> list:
    """The sampler's latest values as Prometheus metric families (prometheus_client's own types)."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
    families: dict[str, Any] = {}
    for series, (value, unit) in sorted(sampler.latest.items()):
        for pattern, name, kind, label_names, factor, doc in EXPOSED:
            m = re.fullmatch(pattern, series)
            if not m:
                continue
            groups = m.groups()
            if "{0}" in name:  # one metric per series of its own (gluster.bricks_online ...)
                name, doc, label_names, groups = name.format(groups[0]), doc.format(groups[0]), (), ()
            if name not in families:
                cls = CounterMetricFamily if kind == "counter" else GaugeMetricFamily
                families[name] = cls(name.removesuffix("_total") if kind == "counter" else name, doc,
                                     labels=["cluster", *label_names])
            sample_value = sampler.totals.get(series, 0.0) if kind == "counter" else value * factor
            families[name].add_metric([cluster, *groups], sample_value)
            break
    return list(families.values())


def prometheus_text(sampler: "ResourceSampler", cluster: str) -> bytes:
    """The exposition text (HELP, TYPE, samples) that prometheus_client generates."""
    from prometheus_client import CollectorRegistry, generate_latest

    class Latest:
        def collect(self):
            return metric_families(sampler, cluster)

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Latest())
    return generate_latest(registry)


class PrometheusEndpoint:
    """GET /metrics on 127.0.0.1:port with the sampler's latest values."""

    def __init__(self, sampler: ResourceSampler, cluster: str, port: int):
        sampler_ref, name = sampler, cluster

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                from prometheus_client import CONTENT_TYPE_LATEST
                body = prometheus_text(sampler_ref, name)
                self.send_response(200 if self.path.startswith("/metrics") else 404)
                self.send_header("Content-Type", CONTENT_TYPE_LATEST)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> "PrometheusEndpoint":
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


# Series worth a place beside dfslab's own samples, from node_exporter and the filesystems' exporters:
# metric (without a counter's _total) -> (unit, scale). Counters become rates per second.
SCRAPED = {
    "node_cpu_seconds": ("busy CPUs", 1.0),  # non-idle modes only, summed over CPUs
    "node_network_receive_bytes": ("MB/s", 1e-6),
    "node_network_transmit_bytes": ("MB/s", 1e-6),
    "node_disk_read_bytes": ("MB/s", 1e-6),
    "node_disk_written_bytes": ("MB/s", 1e-6),
    "node_memory_MemAvailable_bytes": ("MB", 1e-6),
} | scraped_metrics()  # and each filesystem's exporters' (its package's SCRAPED)


def _keep(name: str, labels: dict[str, str]) -> bool:
    if name == "node_cpu_seconds":
        return labels.get("mode") not in ("idle", "iowait")
    if name.startswith("node_network_"):
        return labels.get("device") != "lo"
    return True


def url_fetcher(url: str, timeout: float) -> Callable[[], str]:
    """A plain HTTP scrape of `url` (an endpoint the spec lists)."""
    def fetch() -> str:
        import urllib.request
        with urllib.request.urlopen(url, timeout=timeout) as reply:  # noqa: S310 (a URL the user gave)
            return reply.read().decode(errors="replace")
    return fetch


class PrometheusScraper:
    """Scrapes Prometheus endpoints of servers dfslab did not start (URLs an external spec lists,
    Rook's MGR through the Kubernetes API), each metric summed over its labels per endpoint,
    counters as rates: `prom.<endpoint>.<metric>`."""

    def __init__(self, urls: list[str], timeout: float = 2.0, sources: dict[str, Callable[[], str]] | None = None):
        from urllib.parse import urlsplit
        # endpoint name -> how to fetch its text (raises OSError or any client error when it cannot)
        self.sources = {urlsplit(url).netloc: url_fetcher(url, timeout) for url in urls} | dict(sources or {})
        self._counters = CounterRates()
        self.failures: dict[str, str] = {}

    def _text(self, where: str) -> str | None:
        try:
            text = self.sources[where]()
        except Exception as exc:  # an endpoint that is down or restarting: no sample from it this time
            self.failures[where] = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            return None
        self.failures.pop(where, None)
        return text

    def sample(self) -> Sample:
        from prometheus_client.parser import text_string_to_metric_families
        now, out = time.time(), {}
        for where in self.sources:
            text = self._text(where)
            if text is None:
                continue
            sums: dict[str, float] = {}
            counters = set()
            for family in text_string_to_metric_families(text):
                if family.name not in SCRAPED:
                    continue
                if family.type == "counter":
                    counters.add(family.name)
                for s in family.samples:
                    if s.name.removesuffix("_total") == family.name and _keep(family.name, s.labels):
                        sums[family.name] = sums.get(family.name, 0.0) + s.value
            for name, value in sums.items():
                unit, scale = SCRAPED[name]
                key = f"prom.{where}.{name}"
                if name in counters:
                    value = self._counters.rate(key, value, now)
                    if value is None:
                        continue
                out[key] = (value * scale, unit)
        return out

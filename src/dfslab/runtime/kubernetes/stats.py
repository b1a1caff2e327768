"""The sampler's view of a Kubernetes whose processes this machine cannot see (a cluster you
run): what each node's kubelet measures, read from its Summary API (`/stats/summary`) through
the API server's node proxy, so no port of the nodes has to be reachable from here.

Per pod, CPU (`usageNanoCores`, averaged by the kubelet over its own window) and working-set
memory, named as on the local runtime (`osd.0`, `mon.a`: the filesystem names its daemons' pods
by their labels, Backend.daemon_of_pod; `jobs.<node>` for dfslab's Jobs summed per node). Per node, CPU as a
share of its capacity (`nodecpu.<node>`, what the report's bottleneck lines use when present)
and the traffic of its network interfaces (`net.<node>.rx|tx`; host-network daemons' traffic
is the node's). Every name is the spec's node name, not the Kubernetes one.
"""

from __future__ import annotations

import json
import time
from typing import Any, Callable

from ...rates import CounterRates

Sample = dict[str, tuple[float, str]]

JOB_LABEL = "dfslab.io/job"
DaemonOfPod = Callable[[dict[str, str], str], "str | None"]  # (labels, Kubernetes node)


def pod_series_name(labels: dict[str, str], spec_node: str, daemon_of_pod: DaemonOfPod, kube_node: str = "") -> str | None:
    """The filesystem's name for its daemon's pod ('osd.0' for a Rook OSD pod), 'jobs.client' for
    a dfslab Job's pod on the client node; None for anything else (the operator, the toolbox,
    pods that are neither dfslab's nor the filesystem's daemons)."""
    if name := daemon_of_pod(labels, kube_node or spec_node):
        return name
    if JOB_LABEL in labels:
        return f"jobs.{spec_node}"
    return None


def cpu_cores(quantity: str) -> float | None:
    """A node's CPU capacity as Kubernetes writes it ('2', '1500m') in cores."""
    try:
        return float(quantity[:-1]) / 1000 if quantity.endswith("m") else float(quantity)
    except (TypeError, ValueError):
        return None


def summary_sample(summary: dict[str, Any], spec_node: str, names: dict[tuple[str, str], str],
                   capacity: float | None, rates: CounterRates, now: float) -> Sample:
    """One node's Summary (the kubelet's JSON) as sampler series. `names`: (namespace, pod) ->
    series name, for the pods worth a series; `capacity`: the node's CPUs."""
    out: Sample = {}
    node = summary.get("node") or {}
    used = (node.get("cpu") or {}).get("usageNanoCores")
    if used is not None and capacity:
        out[f"nodecpu.{spec_node}"] = (used / 1e9 / capacity * 100, "%")
    rx = tx = 0
    for iface in (node.get("network") or {}).get("interfaces") or []:
        if iface.get("name") != "lo":
            rx += iface.get("rxBytes") or 0
            tx += iface.get("txBytes") or 0
    for direction, value in (("rx", rx), ("tx", tx)):
        rate = rates.rate(f"net.{spec_node}.{direction}", value, now) if value else None
        if rate is not None:
            out[f"net.{spec_node}.{direction}"] = (rate / 1e6, "MB/s")
    for pod in summary.get("pods") or []:
        ref = pod.get("podRef") or {}
        name = names.get((ref.get("namespace", ""), ref.get("name", "")))
        if name is None:
            continue
        cpu = (pod.get("cpu") or {}).get("usageNanoCores")
        memory = (pod.get("memory") or {}).get("workingSetBytes")
        if cpu is not None:  # several Job pods on one node add up
            out[f"cpu.{name}"] = (out.get(f"cpu.{name}", (0.0, "%"))[0] + cpu / 1e7, "%")
        if memory is not None:
            out[f"rss.{name}"] = (out.get(f"rss.{name}", (0.0, "MiB"))[0] + memory / 2**20, "MiB")
    return out


# What the byte ledger runs in a daemon's pod on a Kubernetes you run: every process's I/O counters
# there (its container's PID namespace: the daemon, and this shell and cat, which read no disk).
READ_IO = ["sh", "-c", "cat /proc/[0-9]*/io 2>/dev/null; true"]


def io_totals(text: str) -> tuple[int, int] | None:
    """(read_bytes, write_bytes) summed over the /proc/PID/io files `text` holds; None if it holds none."""
    totals, seen = [0, 0], False
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in ("read_bytes", "write_bytes") and value.strip().isdigit():
            totals[key == "write_bytes"] += int(value)
            seen = True
    return (totals[0], totals[1]) if seen else None


class KubeletStats:
    """Samples every node of a spec through the API server. `api` makes a client (called once,
    from the sampler's thread); `nodes`: (spec node, Kubernetes node) pairs, servers first (a
    Kubernetes node that is a server and the client too is sampled once, as the server)."""

    POD_RELIST = 2.0  # s: the least time between two listings of the namespace's pods

    def __init__(self, api: Callable[[], Any], nodes: list[tuple[str, str]], namespace: str,
                 daemon_of_pod: DaemonOfPod, timeout: float = 5.0):
        self._make_api, self.namespace, self.timeout = api, namespace, timeout
        self.daemon_of_pod = daemon_of_pod
        self.spec_name: dict[str, str] = {}  # Kubernetes node -> the spec's name for it
        for spec_node, kube_node in nodes:
            self.spec_name.setdefault(kube_node, spec_node)
        self._core = None
        self._capacity: dict[str, float | None] = {}
        self._names: dict[tuple[str, str], str] = {}
        self._known: set[tuple[str, str]] = set()  # every pod of the last listing, named or not
        self._listed_at = float("-inf")
        self.rates = CounterRates()
        self.failures: dict[str, str] = {}
        self.cpu_memory_only: set[str] = set()  # nodes whose full Summary fails (see summary())

    @property
    def core(self):
        if self._core is None:
            from kubernetes import client
            self._core = client.CoreV1Api(self._make_api())
        return self._core

    def _pod_names(self, pods_seen: set[tuple[str, str]], now: float) -> dict[tuple[str, str], str]:
        """(namespace, pod) -> series name; listed again when a kubelet reports a pod of the
        namespace the last listing did not have (a new Job, a daemon's replacement)."""
        new = {key for key in pods_seen if key[0] == self.namespace} - self._known
        if new and now - self._listed_at >= self.POD_RELIST:
            names, known = {}, set()
            for pod in self.core.list_namespaced_pod(self.namespace, _request_timeout=self.timeout).items:
                key = (self.namespace, pod.metadata.name)
                known.add(key)
                where = self.spec_name.get(pod.spec.node_name or "")
                name = (pod_series_name(pod.metadata.labels or {}, where, self.daemon_of_pod, pod.spec.node_name or "")
                        if where else None)
                if name:
                    names[key] = name
            self._names, self._known, self._listed_at = names, known, now
        return self._names

    def _node_capacity(self, kube_node: str) -> float | None:
        if kube_node not in self._capacity:
            try:
                capacity = self.core.read_node(kube_node, _request_timeout=self.timeout).status.capacity or {}
            except Exception:  # asked again at the next sample
                return None
            self._capacity[kube_node] = cpu_cores(capacity.get("cpu", ""))
        return self._capacity[kube_node]

    def summary(self, kube_node: str) -> dict[str, Any]:
        """The node's Summary. A kubelet whose cAdvisor cannot stat its root filesystem answers
        500 (the local Kubernetes' nodes, whose /dev holds only their own loop devices): that
        node is asked for CPU and memory only from then on (no network series for it)."""
        from kubernetes.client.exceptions import ApiException
        if kube_node not in self.cpu_memory_only:
            try:
                return self.fetch_summary(kube_node, False)
            except ApiException as exc:
                if exc.status != 500:
                    raise
                self.cpu_memory_only.add(kube_node)
        return self.fetch_summary(kube_node, True)

    def fetch_summary(self, kube_node: str, cpu_and_memory_only: bool) -> dict[str, Any]:
        from .rest import raw_call
        query = [("only_cpu_and_memory", "true")] if cpu_and_memory_only else []
        return json.loads(raw_call(self.core.api_client, "GET", f"/api/v1/nodes/{kube_node}/proxy/stats/summary",
                                   query=query, timeout=self.timeout)[1])

    def sample(self) -> Sample:
        now = time.time()
        summaries: dict[str, dict[str, Any]] = {}
        for kube_node, spec_node in self.spec_name.items():
            try:
                summaries[kube_node] = self.summary(kube_node)
                self.failures.pop(spec_node, None)
            except Exception as exc:  # a node that is down or a kubelet that restarts: no sample from it
                self.failures[spec_node] = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        seen = {((p.get("podRef") or {}).get("namespace", ""), (p.get("podRef") or {}).get("name", ""))
                for s in summaries.values() for p in s.get("pods") or []}
        names = self._pod_names(seen, now)
        out: Sample = {}
        for kube_node, summary in summaries.items():
            out.update(summary_sample(summary, self.spec_name[kube_node], names, self._node_capacity(kube_node),
                                      self.rates, now))
        return out


def service_fetcher(api: Callable[[], Any], namespace: str, service: str, path: str,
                    timeout: float = 5.0) -> Callable[[], str]:
    """GET `path` of a Service through the API server's service proxy (`service` as the proxy
    names it, 'name:port-name'), the client made on first use (in the caller's thread)."""
    made: list[Any] = []

    def fetch() -> str:
        from kubernetes import client
        if not made:
            made.append(client.CoreV1Api(api()))
        reply = made[0].connect_get_namespaced_service_proxy_with_path(service, namespace, path, _preload_content=False,
                                                                      _request_timeout=timeout)
        return reply.data.decode(errors="replace")
    return fetch

"""Numbers about numbers: means with 95 % intervals (ratios between runs are dfslab.ratios'), and the
bottleneck line that puts a measured figure next to the machine's measured limits."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Sequence

from scipy import stats


def mean_ci95(values: Sequence[float]) -> tuple[float, float | None]:
    """Mean and the half-width of its 95 % t-interval (None for a single value)."""
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, None
    return mean, float(stats.t.ppf(0.975, len(values) - 1)) * statistics.stdev(values) / math.sqrt(len(values))


@dataclass
class Limits:
    """What the machine measured before the workloads."""

    client_link: float | None  # MB/s, client <-> nodes
    disk_read: float | None  # MB/s
    disk_write: float | None  # MB/s
    replicas: float = 1  # bytes stored per byte written (replica size; (k+m)/k for erasure coding)

    @classmethod
    def from_rows(cls, rows: list[dict[str, Any]], replicas: float) -> "Limits":
        base = [r for r in rows if r["workload"] == "baseline"]
        client = [r["value"] for r in base if r["metric"] == "network_bandwidth" and "client" in (r["params"].get("src"), r["params"].get("dst"))]
        return cls(max(client) if client else None, _disk(base, "disk_read_bandwidth"),
                   _disk(base, "disk_write_bandwidth"), replicas)


def _disk(base: list[dict[str, Any]], metric: str) -> float | None:
    """The cluster's disk bandwidth: this machine's one disk, or where each node has its own
    (rows labelled with a node) their sum, as the replicas of a write land on different nodes."""
    per_node: dict[str, float] = {}
    for r in base:
        if r["metric"] == metric:
            per_node.setdefault(r["params"].get("node", ""), r["value"])
    return sum(per_node.values()) if per_node else None


def busiest_cpu(series: dict[str, list[tuple[float, float]]]) -> list[tuple[float, float]]:
    """The CPU % a bottleneck line weighs: the busiest node's at each sample where the kubelets
    measured the nodes (`nodecpu.<node>`: a Kubernetes you run, whose CPUs are not this
    machine's), else this machine's (`cpu.total`)."""
    nodes = [pts for name, pts in series.items() if name.startswith("nodecpu.")]
    if not nodes:
        return series.get("cpu.total", [])
    busiest: dict[float, float] = {}
    for pts in nodes:
        for t, v in pts:
            busiest[t] = max(v, busiest.get(t, v))
    return sorted(busiest.items())


# A second moves data when the links carried at least this share of the step's busiest second.
TRANSFER_SHARE = 0.25


def transfer_seconds(series: dict[str, list[tuple[float, float]]], start: float, end: float) -> set[float] | None:
    """The sample times between start and end when the nodes' links moved data (their rx + tx at
    least TRANSFER_SHARE of the step's busiest second): a step's CPU is its transfer's, not that
    of making and removing a pool around it. None when the links carried nothing to tell by."""
    moved: dict[float, float] = defaultdict(float)
    for name, pts in series.items():
        if name.startswith("net.") and name.endswith((".rx", ".tx")):
            for t, v in pts:
                if start <= t <= end:
                    moved[t] += v
    peak = max(moved.values(), default=0.0)
    if peak <= 0:
        return None
    return {t for t, v in moved.items() if v >= TRANSFER_SHARE * peak}


def cpu_during(samples: list[tuple[float, float]], start: float, end: float,
               only: set[float] | None = None) -> float | None:
    """Mean machine CPU % between start and end from (t, value) samples, at the times in `only`
    when given (transfer_seconds). A step shorter than the sampling interval gets the first
    sample after it started (its CPU % covers the step)."""
    inside = [v for t, v in samples if start <= t <= end and (only is None or t in only)]
    if inside:
        return statistics.fmean(inside)
    after = [(t, v) for t, v in samples if t > start]
    return min(after)[1] if after and min(after)[0] - end < 2.0 else None


def bottleneck(value: float, unit: str, op: str, cpu_percent: float | None, limits: Limits,
               measured: dict[str, float] | None = None) -> dict[str, Any]:
    """Fractions of CPU, link and disk a result used, and which (if any) it is bound by.
    `measured` (dfslab.ledger.shares): of the result's bytes, the share the client's link and the
    servers' disks really moved; without it, the link is assumed to carry every byte and the
    disks every replica."""
    fractions: dict[str, float] = {}
    measured = measured or {}
    if cpu_percent is not None:
        fractions["CPU"] = cpu_percent / 100
    if unit == "MB/s":
        if limits.client_link:
            fractions["link"] = value * measured.get("link", 1) / limits.client_link
        disk_limit = limits.disk_write if op == "write" else limits.disk_read
        if disk_limit:
            # Every replica of a write lands on a disk the baseline measured (this machine's one
            # disk, or the nodes' disks summed), unless the disks' own counters say what they did.
            assumed = limits.replicas if op == "write" else 1
            fractions["disk"] = value * measured.get("disk", assumed) / disk_limit
    # Beating a measured limit means the data did not go through that resource (it came from a
    # cache); such a resource cannot be what holds the result back.
    exceeded = [k for k, f in fractions.items() if k != "CPU" and f > 1.05]
    candidates = {k: f for k, f in fractions.items() if k not in exceeded}
    bound = max(candidates, key=candidates.get) if candidates else None
    if bound is not None and candidates[bound] >= 0.75:
        verdict = {"CPU": "CPU-bound", "link": "network-bound", "disk": "disk-bound"}[bound]
    else:
        bound = None
        verdict = "no resource saturated (latency- or concurrency-bound)"
    if exceeded:
        verdict += f"; above the {' and '.join(exceeded)} baseline, so served from cache"
    assumed = [k for k in fractions if k != "CPU" and k not in measured]
    return {"fractions": fractions, "verdict": verdict, "bound": bound, "exceeded": exceeded, "assumed": assumed}


def share_cells(result: dict[str, Any]) -> dict[str, str]:
    """A bottleneck's shares as a table shows them: `80 %`, or `48 % (assumed)` where the byte
    ledger counted nothing and every byte is taken to have crossed the link (every replica the disks)."""
    return {k: f"{f * 100:.0f} %" + (" (assumed)" if k in result.get("assumed", ()) else "")
            for k, f in result["fractions"].items()}

"""Numbers about numbers: means with 95 % intervals, ratios between runs, and the
bottleneck line that puts a measured figure next to the machine's measured limits."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any, Sequence

# Two-sided 95 % Student t critical values by degrees of freedom (scipy would be a 40 MB
# dependency for one table).
_T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
        2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def mean_ci95(values: Sequence[float]) -> tuple[float, float | None]:
    """Mean and the half-width of its 95 % t-interval (None for a single value)."""
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, None
    t = _T95[min(len(values) - 2, len(_T95) - 1)] if len(values) - 1 <= len(_T95) else 1.96
    return mean, t * statistics.stdev(values) / math.sqrt(len(values))


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularized incomplete beta function (modified Lentz)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1, a - 1
    c, d = 1.0, 1 - qab * x / qap
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1 + aa * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1) < 1e-12:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1 - front * _betacf(b, a, 1 - x) / b


def t_cdf(t: float, df: float) -> float:
    """Student's t distribution function, any real df > 0."""
    tail = 0.5 * _betainc(df / 2, 0.5, df / (df + t * t))
    return 1 - tail if t > 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The t value below which a share p of Student's t(df) lies (bisection on t_cdf)."""
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_cdf(mid, df) < p else (lo, mid)
    return (lo + hi) / 2


def ratio_ci95(a: Sequence[float], b: Sequence[float]) -> tuple[float, tuple[float, float] | None]:
    """mean(b)/mean(a) and a 95 % interval for the ratio of the two runs' central values.

    Welch's t on log values: throughputs and latencies vary by a factor, not by a fixed amount,
    and Welch's degrees of freedom are honest about 2-5 repetitions per side (the percentile
    bootstrap used before flagged 34 % of null comparisons at n = 2; tests/test_compare_unit.py
    simulates this one at n = 2, 3, 5, 10). The interval is for the ratio of geometric means;
    no interval (None) with fewer than 2 values on a side or any value <= 0."""
    ma, mb = statistics.fmean(a), statistics.fmean(b)
    ratio = mb / ma if ma else math.inf
    if len(a) < 2 or len(b) < 2 or min(*a, *b) <= 0:
        return ratio, None
    la, lb = [math.log(v) for v in a], [math.log(v) for v in b]
    diff = statistics.fmean(lb) - statistics.fmean(la)
    va, vb = statistics.variance(la) / len(la), statistics.variance(lb) / len(lb)
    se = math.sqrt(va + vb)
    if se == 0:  # identical repetitions on both sides: the difference is what it is
        return ratio, (math.exp(diff), math.exp(diff))
    df = (va + vb) ** 2 / (va ** 2 / (len(la) - 1) + vb ** 2 / (len(lb) - 1))
    half = t_quantile(0.975, df) * se
    return ratio, (math.exp(diff - half), math.exp(diff + half))


def run_means(runs: Sequence[Sequence[float]]) -> list[float]:
    """Each run as one value, the geometric mean of its repetitions: the unit a comparison of
    several runs per side counts. Repetitions of one run share its cluster (PG placement, the
    state of its disk images) and its hour on a shared machine: two runs of one spec 30 min apart
    differed here by up to a third (rados bench seq 0.67, 0.62-0.73 over repetitions) where
    repetitions of one run differed by a few percent. Pooling repetitions over runs counts them
    as independent and makes intervals that miss; tests/test_compare_unit.py simulates both."""
    return [math.exp(statistics.fmean(math.log(v) for v in run)) if min(run) > 0 else statistics.fmean(run)
            for run in runs]


def excludes_one(interval: tuple[float, float] | None) -> bool:
    """Whether a ratio's interval says the two sides differ (no interval: it cannot say)."""
    return bool(interval and (interval[0] > 1 or interval[1] < 1))


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


def cpu_during(samples: list[tuple[float, float]], start: float, end: float) -> float | None:
    """Mean machine CPU % between start and end from (t, value) samples. A step shorter than
    the sampling interval gets the first sample after it started (its CPU % covers the step)."""
    inside = [v for t, v in samples if start <= t <= end]
    if inside:
        return statistics.fmean(inside)
    after = [(t, v) for t, v in samples if t > start]
    return min(after)[1] if after and min(after)[0] - end < 2.0 else None


def bottleneck(value: float, unit: str, op: str, cpu_percent: float | None, limits: Limits) -> dict[str, Any]:
    """Fractions of CPU, link and disk a result used, and which (if any) it is bound by."""
    fractions: dict[str, float] = {}
    if cpu_percent is not None:
        fractions["CPU"] = cpu_percent / 100
    if unit == "MB/s":
        if limits.client_link:
            fractions["link"] = value / limits.client_link
        disk_limit = limits.disk_write if op == "write" else limits.disk_read
        if disk_limit:
            # Every replica of a write lands on a disk the baseline measured (this machine's one
            # disk, or the nodes' disks summed).
            fractions["disk"] = value * (limits.replicas if op == "write" else 1) / disk_limit
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
    return {"fractions": fractions, "verdict": verdict, "bound": bound, "exceeded": exceeded}


def bottleneck_line(label: str, value: float, unit: str, result: dict[str, Any]) -> str:
    parts = ", ".join(f"{f * 100:.0f} % of {k}" for k, f in result["fractions"].items())
    return f"{label} {value:.4g} {unit} — {parts}: {result['verdict']}"

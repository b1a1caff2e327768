"""fio's command line and its output, for every workload that runs fio (fio, filegrid, parallel,
servers, the baselines, and fio's client/server mode on several hosts): the argv, the JSON of a
group-reported job as rows, the bandwidth log per second, and how many I/Os were really in flight."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from . import Measurement, WorkloadError

PERCENTILES = ("50.000000", "90.000000", "99.000000", "99.900000")


def parse_json(text: str, workload: str, labels: dict[str, Any], repetition: int,
               jobs: int | None = None) -> list[Measurement]:
    """fio --output-format=json (group_reporting: one job entry) → rows per direction.

    `latency_*` is fio's total latency (`lat_ns`: submission + completion), the time one I/O
    took as users mean it; `clat_*` and `slat_*` are its parts. Completion latency alone
    understates an I/O by up to 300x where the engine does the work at submission (buffered
    libaio: a 1 MiB write's `clat` 0.0046 ms, its `slat` 1.365 ms). `depth` is the I/Os in
    flight the storage really saw for the whole job (see `effective_depth`); `jobs` is how many fio jobs the entry
    sums (default: its numjobs)."""
    job, capped = one_job(text)
    return job_rows(job, workload, labels, repetition, job_depth(job, capped, labels, jobs))


def fio_jobs(text: str) -> list[dict[str, Any]]:
    """The jobs (one per reporting group) of fio's JSON output, after whatever fio printed before it."""
    start = text.find("{")
    if start < 0:
        raise WorkloadError("fio printed no JSON")
    return json.loads(text[start:])["jobs"]


def one_job(text: str) -> tuple[dict[str, Any], bool]:
    """The group-reported job of fio's JSON output, and whether fio capped its queue depth at 1
    (a synchronous engine: fio says so only in the text before the JSON)."""
    return fio_jobs(text)[0], "queue depth will be capped at 1" in text[:text.find("{")]


def job_depth(job: dict[str, Any], capped: bool, labels: dict[str, Any], jobs: int | None = None) -> float:
    jobs = jobs or int(job.get("job options", {}).get("numjobs") or labels.get("numjobs") or 1)
    return float(jobs) if capped else effective_depth(job, jobs)


def job_rows(job: dict[str, Any], workload: str, labels: dict[str, Any], repetition: int,
             depth: float) -> list[Measurement]:
    rows = []
    for op in ("read", "write"):
        stats = job.get(op, {})
        if not stats.get("io_bytes"):
            continue
        p = {**labels, "op": op}
        rows.append(Measurement(workload, "bandwidth", stats["bw_bytes"] / 1e6, "MB/s", p, repetition))
        rows.append(Measurement(workload, "iops", stats["iops"], "op/s", p, repetition))
        rows.append(Measurement(workload, "bytes", float(stats["io_bytes"]), "B", p, repetition))  # for the byte ledger
        if stats.get("runtime"):  # ms: how long the phase was timed (MIN_PHASE_SECONDS)
            rows.append(Measurement(workload, "duration", stats["runtime"] / 1000, "s", p, repetition))
        for prefix, key in (("latency", "lat_ns"), ("clat", "clat_ns"), ("slat", "slat_ns")):
            part = stats.get(key) or {}
            if not part.get("N"):  # sync engines measure no submission latency
                continue
            rows.append(Measurement(workload, f"{prefix}_avg", part["mean"] / 1e6, "ms", p, repetition))
            for pct, ns in (part.get("percentile") or {}).items():
                if pct in PERCENTILES:
                    rows.append(Measurement(workload, f"{prefix}_p{float(pct):g}", ns / 1e6, "ms", p, repetition))
        rows.append(Measurement(workload, "depth", depth, "I/Os", p, repetition))
    return rows


def parse_on_clients(texts: dict[str, str], workload: str, labels: dict[str, Any],
                     repetition: int) -> list[Measurement]:
    """fio's JSON+ of one job run on several client nodes at once (node -> its output) → rows for
    them all: bandwidth, IOPS and bytes summed (each node's over its own runtime, as fio's
    client/server mode sums), the longest runtime, latency over every node's I/Os (`merge_jobs`),
    the I/Os in flight summed; and `client_bandwidth` / `client_iops` rows per node."""
    parsed = {node: one_job(text) for node, text in texts.items()}
    rows = []
    for node, (job, _) in parsed.items():
        for op in ("read", "write"):
            stats = job.get(op, {})
            if stats.get("io_bytes"):
                p = {**labels, "op": op, "client": node}
                rows.append(Measurement(workload, "client_bandwidth", stats["bw_bytes"] / 1e6, "MB/s", p, repetition))
                rows.append(Measurement(workload, "client_iops", stats["iops"], "op/s", p, repetition))
    depth = sum(job_depth(job, capped, labels) for job, capped in parsed.values())
    return rows + job_rows(merge_jobs([job for job, _ in parsed.values()]), workload, labels, repetition, depth)


LATENCIES = ("lat_ns", "clat_ns", "slat_ns")


def merge_jobs(jobs: list[dict[str, Any]]) -> dict[str, Any]:
    """Several fio jobs' entries as one (what fio's "All clients" entry is): counts summed,
    runtime the longest, each latency's mean weighted by its I/Os and its percentiles taken
    from the jobs' histograms added together (fio's JSON+ `bins`, the buckets fio computes its
    own percentiles from, so a single job's come out as fio printed them)."""
    merged: dict[str, Any] = {"job options": jobs[0].get("job options", {})}
    for op in ("read", "write"):
        parts = [job.get(op, {}) for job in jobs]
        stats = {key: sum(p.get(key, 0) for p in parts) for key in ("io_bytes", "bw_bytes", "iops", "total_ios")}
        stats["runtime"] = max(p.get("runtime", 0) for p in parts)
        for key in LATENCIES:
            stats[key] = merge_latency([p[key] for p in parts if (p.get(key) or {}).get("N")])
        merged[op] = stats
    return merged


def merge_latency(parts: list[dict[str, Any]]) -> dict[str, Any]:
    count = sum(p["N"] for p in parts)
    if not count:
        return {"N": 0}
    merged: dict[str, Any] = {"N": count, "mean": sum(p["mean"] * p["N"] for p in parts) / count,
                              "min": min(p["min"] for p in parts), "max": max(p["max"] for p in parts)}
    if any("percentile" in p for p in parts):
        if not all("bins" in p for p in parts):
            raise WorkloadError("fio's output has latency percentiles but no histogram to merge them from "
                                "(run with --output-format=json+)")
        bins: dict[int, int] = defaultdict(int)
        for p in parts:
            for value, n in p["bins"].items():
                bins[int(value)] += n
        merged["bins"] = dict(bins)
        merged["percentile"] = {pct: percentile_of(bins, float(pct)) for pct in parts[0]["percentile"]}
    return merged


def percentile_of(bins: dict[int, int], pct: float) -> int:
    """fio's percentile of a latency histogram (stat.c, calc_clat_percentiles): the first bucket
    at which the I/Os counted so far reach pct % of all of them."""
    total, seen = sum(bins.values()), 0
    for value in sorted(bins):
        seen += bins[value]
        if seen >= pct / 100 * total:
            return value
    return max(bins)


# Share of a job's time spent inside the submit call above which its I/Os ran one after another.
SERIAL_SUBMIT = 0.9


def effective_depth(job: dict[str, Any], jobs: int) -> float:
    """I/Os in flight at the storage over both directions of a job (a randrw job at iodepth 8
    keeps 8, shared by its reads and writes), by Little's law (IOPS x total latency), unless
    the jobs spent most of their time inside the submit call: then every I/O completed there,
    one at a time per job, and fio's own depth counts I/Os only waiting to be reaped. Measured
    on ceph-fuse at iodepth 16 (4 KiB): IOPS x submission latency 0.97-1.00 per job with libaio,
    buffered or O_DIRECT, and with io_uring O_DIRECT (io_uring's buffered writes, into the page
    cache through its workers, 0.05); on the GlusterFS FUSE client with O_DIRECT: reads 0.07, writes
    0.80; fio's gfapi_async engine 0.54 at 2.2x the IOPS of depth 1 (truly asynchronous, all three)."""
    directions = [job[op] for op in ("read", "write") if job.get(op, {}).get("io_bytes")]
    submitting = sum(d["iops"] * (d.get("slat_ns") or {}).get("mean", 0) / 1e9 for d in directions)
    if submitting / jobs >= SERIAL_SUBMIT:
        return float(jobs)
    return sum(d["iops"] * (d.get("lat_ns") or {}).get("mean", 0) / 1e9 for d in directions)


def parse_bw_log(path: Path, workload: str, labels: dict[str, Any], repetition: int) -> list[Measurement]:
    """fio's bandwidth log (msec, KiB/s, direction, ...), summed over jobs per second."""
    buckets: dict[tuple[int, str], float] = defaultdict(float)
    for log in sorted(path.parent.glob(path.name + "*")):
        for line in log.read_text().splitlines():
            fields = [f.strip() for f in line.split(",")]
            if len(fields) >= 3:
                sec = max(1, round(int(fields[0]) / 1000))
                buckets[(sec, "write" if fields[2] == "1" else "read")] += int(fields[1]) * 1024 / 1e6
    return [Measurement(workload, "bandwidth_sample", v, "MB/s", {**labels, "op": op}, repetition, t=sec)
            for (sec, op), v in sorted(buckets.items())]


def fio_argv(name: str, output_format: str = "json", **options: Any) -> list[str]:
    """`output_format` json+: with each latency's histogram (`bins`), to merge several runs' (merge_jobs)."""
    # lat_percentiles: percentiles of the total latency (fio gives completion latency's only by default)
    argv = ["fio", f"--name={name}", f"--output-format={output_format}", "--group_reporting", "--lat_percentiles=1"]
    for key, value in options.items():
        if value is True:
            argv.append(f"--{key}")
        elif value is not None and value is not False:
            argv.append(f"--{key}={value}")
    return argv

"""fio on several client hosts at once through fio's own client/server mode (the IOR-style
parallel figure of the Azure and SLAC seeds): every host runs `fio --server` (started by the
user), dfslab sends each a job file with its own directory and collects one JSON. Per-client
figures are `client_bandwidth` / `client_iops` rows labelled with the host; the aggregate
`bandwidth` / `iops` rows are their sum (each client's bytes over its own runtime), with
latency percentiles from fio's "All clients" entry."""

from __future__ import annotations

import json
import re
from typing import Any

from . import Measurement, Runner, WorkloadError
from .fiotool import parse_json

DEFAULT_PORT = 8765


def endpoint(spec: str) -> str:
    """A spec's host, host,port or host:port as fio's host,port."""
    host, _, port = spec.replace(",", ":").rpartition(":") if ("," in spec or ":" in spec) else (spec, "", "")
    return f"{host},{port or DEFAULT_PORT}"


def job_file(name: str, options: dict[str, Any]) -> str:
    lines = [f"[{name}]"]
    for key, value in options.items():
        if value is True:
            lines.append(key)
        elif value is not None and value is not False:
            lines.append(f"{key}={value}")
    return "\n".join(lines) + "\n"


def _safe(host: str) -> str:
    return re.sub(r"[^A-Za-z0-9.-]", "_", host)


def run_on_clients(runner: Runner, servers: list[str], tag: str, options: dict[str, Any], workload: str,
                   labels: dict[str, Any], repetition: int, timeout: float, job: str | None = None) -> list[Measurement]:
    """One fio job (named `job`, default `tag`: a read job of the same name reads what a write
    job wrote) on every server at once; a directory of its own each under options' directory."""
    hosts = [endpoint(s) for s in servers]
    argv = ["fio", "--output-format=json"]
    jobs = runner.raw_dir / f"{tag}-jobs"
    jobs.mkdir(parents=True, exist_ok=True)
    for host in hosts:
        opts = {**options, "group_reporting": True, "lat_percentiles": 1}
        if "directory" in opts:
            # The servers mount the same file system at the same path: one subdirectory per host.
            sub = f"{opts['directory']}/{_safe(host)}"
            runner.workdir_at(sub)
            opts["directory"] = sub
        path = jobs / f"{_safe(host)}.fio"
        path.write_text(job_file(job or tag, opts))
        argv += [f"--client={host}", str(path)]
    out = runner.run(argv, tag, timeout=timeout)
    return parse_clients(out, hosts, workload, labels, repetition, runner.raw_dir / f"{tag}.stderr")


def parse_clients(text: str, hosts: list[str], workload: str, labels: dict[str, Any], repetition: int,
                  stderr_path: Any = None) -> list[Measurement]:
    start = text.find("\n{") + 1 if not text.startswith("{") else 0
    try:
        stats = json.loads(text[start:])["client_stats"]
    except (ValueError, KeyError):
        raise WorkloadError(f"fio printed no client results; see {stderr_path}") from None
    per_client = {f"{s['hostname']},{s['port']}": s for s in stats if s.get("jobname") != "All clients"}
    missing = [h for h in hosts if h not in per_client]
    if missing:
        raise WorkloadError(f"fio server(s) {', '.join(missing)} did not run the job (down or unreachable); "
                            f"see {stderr_path}")
    rows: list[Measurement] = []
    totals: dict[tuple[str, str], float] = {}
    for host, s in per_client.items():
        for op in ("read", "write"):
            d = s.get(op, {})
            if not d.get("io_bytes"):
                continue
            p = {**labels, "op": op, "client": host}
            rows.append(Measurement(workload, "client_bandwidth", d["bw_bytes"] / 1e6, "MB/s", p, repetition))
            rows.append(Measurement(workload, "client_iops", d["iops"], "op/s", p, repetition))
            totals[(op, "bandwidth")] = totals.get((op, "bandwidth"), 0.0) + d["bw_bytes"] / 1e6
            totals[(op, "iops")] = totals.get((op, "iops"), 0.0) + d["iops"]
    everyone = next((s for s in stats if s.get("jobname") == "All clients"), None) or next(iter(per_client.values()))
    aggregate = {**labels, "clients": len(hosts)}
    for (op, metric), value in sorted(totals.items()):
        rows.append(Measurement(workload, metric, value, "MB/s" if metric == "bandwidth" else "op/s",
                                {**aggregate, "op": op}, repetition))
    jobs = int(labels.get("numjobs") or labels.get("threads") or 1) * len(hosts)  # per host, summed
    latency = parse_json(json.dumps({"jobs": [everyone]}), workload, aggregate, repetition, jobs=jobs)
    rows += [r for r in latency if r.metric.startswith(("latency", "clat", "slat", "depth"))]
    return rows

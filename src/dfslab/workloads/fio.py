"""fio on a CephFS mount (ceph-fuse on the client node), on RBD (fio's rbd engine), or on
the machine's own disk: rw × bs × iodepth × numjobs sweeps, fio's JSON kept untouched."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from ..fields import Bytes
from . import Measurement, Runner, Workload, WorkloadError, WorkloadParams

PERCENTILES = ("50.000000", "90.000000", "99.000000", "99.900000")


class FioParams(WorkloadParams):
    target: Literal["fs", "cephfs", "rbd", "rados", "gfapi", "local"] = Field(
        "fs", description="fs: the cluster's POSIX mount; rbd: a Ceph RBD image; rados: objects in dfslab's pool "
                          "(fio's rados engine; writes only); gfapi: the GlusterFS volume through libgfapi; local")
    rw: Literal["read", "write", "randread", "randwrite", "readwrite", "randrw"] = "randread"
    bs: Bytes = "4KiB"
    iodepth: int = Field(16, ge=1, le=1024)
    numjobs: int = Field(1, ge=1, le=64)
    size: Bytes = Field("256MiB", description="file (or RBD range) per job")
    seconds: int = Field(10, ge=1, le=3600, description="time-based runtime")
    direct: bool = Field(False, description="O_DIRECT (local disk; FUSE may refuse it)")

    @model_validator(mode="after")
    def _rados_writes_only(self) -> "FioParams":
        # fio's rados engine creates its objects empty ("touch"): a read would measure nothing.
        if self.target == "rados" and self.rw not in ("write", "randwrite"):
            raise ValueError(f"target rados measures writes (write, randwrite), not {self.rw}: fio's rados engine "
                             f"reads objects it created empty; for reads use the radosbench workload (seq, rand)")
        return self


def parse_json(text: str, workload: str, labels: dict[str, Any], repetition: int) -> list[Measurement]:
    """fio --output-format=json (group_reporting: one job entry) → rows per direction."""
    start = text.find("{")
    if start < 0:
        raise WorkloadError("fio printed no JSON")
    job = json.loads(text[start:])["jobs"][0]
    rows = []
    for op in ("read", "write"):
        stats = job.get(op, {})
        if not stats.get("io_bytes"):
            continue
        p = {**labels, "op": op}
        rows.append(Measurement(workload, "bandwidth", stats["bw_bytes"] / 1e6, "MB/s", p, repetition))
        rows.append(Measurement(workload, "iops", stats["iops"], "op/s", p, repetition))
        clat = stats.get("clat_ns", {})
        rows.append(Measurement(workload, "latency_avg", clat.get("mean", 0) / 1e6, "ms", p, repetition))
        for pct, ns in (clat.get("percentile") or {}).items():
            if pct in PERCENTILES:
                rows.append(Measurement(workload, f"latency_p{float(pct):g}", ns / 1e6, "ms", p, repetition))
    return rows


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


def fio_argv(name: str, **options: Any) -> list[str]:
    argv = ["fio", f"--name={name}", "--output-format=json", "--group_reporting"]
    for key, value in options.items():
        if value is True:
            argv.append(f"--{key}")
        elif value is not None and value is not False:
            argv.append(f"--{key}={value}")
    return argv


def target_options(runner: Runner, target: str, size: int, numjobs: int, direct: bool) -> dict[str, Any]:
    """fio options that aim a job at `target`: a directory for fs/local, else the backend's engine."""
    if target in ("fs", "cephfs", "local"):
        directory = runner.workdir(target, "dfslab-fio")
        return {"ioengine": "libaio", "directory": str(directory), "direct": int(direct)}
    if runner.storage is None:
        raise WorkloadError(f"fio target {target!r} needs a cluster")
    return runner.storage.fio_target(runner, target, size * numjobs)


class Fio(Workload):
    name = "fio"
    Params = FioParams

    def estimate(self, params: FioParams) -> float:
        # Laying out files before a read runs at roughly 200 MB/s here.
        return params.seconds + params.size * params.numjobs / 200e6 + 3

    def run(self, runner: Runner, params: FioParams, repetition: int) -> list[Measurement]:
        labels = params.model_dump(mode="python")
        tag = f"fio-{params.target}-{params.rw}-{params.bs}-qd{params.iodepth}-j{params.numjobs}-r{repetition}"
        timeout = params.seconds * 3 + params.size * params.numjobs / 20e6 + 120
        servers = runner.fio_servers() if params.target != "local" else []
        if servers:
            from .fioclients import run_on_clients
            options = dict(rw=params.rw, bs=params.bs, iodepth=params.iodepth, numjobs=params.numjobs,
                           size=params.size, runtime=params.seconds, time_based=True,
                           **target_options(runner, params.target, params.size, params.numjobs, params.direct))
            return run_on_clients(runner, servers, tag, options, self.name, labels, repetition, timeout)
        logs = runner.raw_dir / f"{tag}-bwlog"
        logs.mkdir(parents=True, exist_ok=True)
        argv = fio_argv(tag, rw=params.rw, bs=params.bs, iodepth=params.iodepth, numjobs=params.numjobs,
                        size=params.size, runtime=params.seconds, time_based=True,
                        write_bw_log=str(logs / "bw"), log_avg_msec=1000,
                        **target_options(runner, params.target, params.size, params.numjobs, params.direct))
        out = runner.run(argv, tag, timeout=timeout)
        rows = parse_json(out, self.name, labels, repetition)
        rows += parse_bw_log(logs / "bw_bw", self.name, labels, repetition)
        if not rows:
            raise WorkloadError(f"fio reported no I/O; see {runner.raw_dir / tag}.txt")
        return rows

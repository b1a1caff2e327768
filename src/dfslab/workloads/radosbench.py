"""`rados bench`: write, then seq / rand reads of what was written (DockerCEPH's scbench)."""

from __future__ import annotations

import re
from typing import Any, Callable, Literal

from pydantic import Field

from ..backends import require
from ..backends.abilities import ObjectPools
from ..fields import Bytes
from . import SHORTFALL, Measurement, Runner, Workload, WorkloadError, WorkloadParams

# rados bench labels its bandwidth "MB/sec" but counts MiB (objects x size / time / 2^20: 647 writes
# of 4 MiB in 5.028 s print 514.7, i.e. 539.7 MB/s). dfslab's MB/s is 10^6 bytes, as fio's rows
# (bw_bytes / 1e6): its values are converted, or the two tools' rows differ by 4.9 % for nothing.
MIB_IN_MB = 2**20 / 1e6
MS_IN_S = 1000  # latencies are ms in every workload's rows (rados bench prints seconds)
SUMMARY = {  # rados bench's label -> (metric, unit, factor from its unit)
    "Bandwidth (MB/sec)": ("bandwidth", "MB/s", MIB_IN_MB),
    "Stddev Bandwidth": ("bandwidth_stddev", "MB/s", MIB_IN_MB),
    "Average IOPS": ("iops", "op/s", 1),
    "Stddev IOPS": ("iops_stddev", "op/s", 1),
    "Average Latency(s)": ("latency_avg", "ms", MS_IN_S),
    "Stddev Latency(s)": ("latency_stddev", "ms", MS_IN_S),
    "Max latency(s)": ("latency_max", "ms", MS_IN_S),
    "Min latency(s)": ("latency_min", "ms", MS_IN_S),
    "Total time run": ("duration", "s", 1),
}
# "  sec Cur ops   started  finished  avg MB/s  cur MB/s last lat(s)  avg lat(s)"
SAMPLE = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.e-]+|-)\s+([\d.e-]+)\s*$")


class RadosBenchParams(WorkloadParams):
    mode: list[Literal["write", "seq", "rand"]] = Field(["write", "seq"], description="run in this order, write first; "
                                                         "seq/rand read what it wrote (each row's `mode`)")
    seconds: int = Field(10, ge=1, le=600)
    threads: int = Field(16, ge=1, le=256, description="concurrent operations (-t)")
    object_size: Bytes = Field("4MiB", description="-b")
    pool: str | None = Field(None, description="default: the cluster's benchmark pool (Ceph: dfslab; external: the pool dfslab made)")
    max_objects: int | None = Field(None, ge=1, description="cap on objects written (default: 40 % of the pool's free space)")


# What rados bench moved: operations made x the size of each ("Write size" / "Read size").
MOVED = {"Total writes made": "Write size", "Total reads made": "Read size"}


def parse(output: str, params: dict[str, Any], repetition: int) -> list[Measurement]:
    rows = []
    summary = {}
    for line in output.splitlines():
        key, sep, value = line.partition(":")
        if sep and (key.strip() in MOVED or key.strip() in MOVED.values()):
            summary[key.strip()] = value.strip()
        if sep and key.strip() in SUMMARY:
            metric, unit, factor = SUMMARY[key.strip()]
            try:
                number = float(value) * factor
            except ValueError:
                continue
            rows.append(Measurement("radosbench", metric, number, unit, params, repetition))
        elif m := SAMPLE.match(line):
            sec = int(m.group(1))
            if sec > 0:  # second 0 is the header row of zeros
                rows.append(Measurement("radosbench", "bandwidth_sample", float(m.group(6)) * MIB_IN_MB, "MB/s", params,
                                        repetition, t=sec))
                if m.group(7) != "-":  # "last lat": the one operation that completed last in that second
                    rows.append(Measurement("radosbench", "latency_last", float(m.group(7)) * MS_IN_S, "ms", params,
                                            repetition, t=sec))
    for count, size in MOVED.items():
        if summary.get(count, "").isdigit() and summary.get(size, "").isdigit():
            rows.append(Measurement("radosbench", "bytes", float(int(summary[count]) * int(summary[size])), "B", params,
                                    repetition))
    return rows


def cap_rows(rows: list[Measurement], max_objects: int, object_size: int) -> list[Measurement]:
    """A `cap_reached` row (objects) beside a write that stopped at dfslab's object cap, before its
    seconds: the write was bounded on purpose (a full cluster blocks its clients), not cut short by
    an error; the report says so and the step stands (Workload.shortfall)."""
    return [Measurement(r.workload, "cap_reached", float(max_objects), "objects", r.params, r.repetition)
            for r in rows if r.metric == "bytes" and r.params.get("mode", r.params.get("rw")) == "write"
            and r.value >= max_objects * object_size]


def max_objects_for(runner: Runner, pool: str, object_size: int, fraction: float = 0.4) -> int:
    if runner.storage is None:
        raise WorkloadError("rados bench needs a cluster")
    return max(16, int(require(runner.storage, ObjectPools).pool_free_bytes(runner, pool) * fraction // object_size))


# rados bench's modes for the ops a pool can run (it has no random write).
POOL_MODE = {"write": "write", "read": "seq", "randread": "rand"}


def bench_pool(runner: Runner, pool: str, ops: list[str], seconds: int, in_flight: int, object_size: int, tag: str,
               labels: Callable[[str], dict[str, Any]], repetition: int) -> list[Measurement]:
    """`ops` in order on a pool another workload made (servers' confined pool): write, then
    reads of what it wrote; its objects removed at the end."""
    if ops[0] != "write" or "randwrite" in ops:
        raise WorkloadError("on a pool, servers.ops must start with write and have no randwrite "
                            "(rados bench reads what its write left and has no random write)")
    max_objects = max_objects_for(runner, pool, object_size)
    rows: list[Measurement] = []
    try:
        for op in ops:
            argv = ["rados", "-p", pool, "bench", str(seconds), POOL_MODE[op], "-t", str(in_flight), "--run-name", tag]
            if op == "write":
                argv += ["-b", str(object_size), "--no-cleanup", "--max-objects", str(max_objects)]
            out = runner.run(argv, f"{tag}-{op}", timeout=seconds * 4 + 60)
            rows += parse(out, labels(op), repetition)
    finally:
        runner.run(["rados", "-p", pool, "cleanup", "--run-name", tag], f"{tag}-cleanup", timeout=300, check=False)
    return rows + cap_rows(rows, max_objects, object_size)


class RadosBench(Workload):
    name = "radosbench"
    Params = RadosBenchParams
    requires = "rados"
    renamed = {"modes": "mode"}

    def streams(self, params: RadosBenchParams) -> bool:
        return True

    def not_as_asked(self, params: RadosBenchParams, rows: list[Measurement]) -> str | None:
        capped = next((r for r in rows if r.metric == "cap_reached"), None)
        ran = [r.value for r in rows if r.metric == "duration" and r.t is None and r.params.get("mode") == "write"]
        if capped is None or not ran or min(ran) >= SHORTFALL * params.seconds:
            return None
        return (f"stopped at dfslab's cap of {capped.value:.0f} objects (40 % of the pool's free space, so the write "
                f"cannot fill the cluster) after {min(ran):.1f} of {params.seconds} s: give the OSDs more room "
                "(ceph.osd_size), or ask for fewer seconds")

    def estimate(self, params: RadosBenchParams) -> float:
        # seq reads what write left and ends when it has (half the write's time, in the quickstart)
        per_mode = {"write": params.seconds + 1, "seq": params.seconds / 2 + 0.5, "rand": params.seconds + 0.5}
        return sum(per_mode[m] for m in params.mode) + 1

    def run(self, runner: Runner, params: RadosBenchParams, repetition: int) -> list[Measurement]:
        if params.mode[0] != "write":
            raise WorkloadError("radosbench.mode must start with write (seq and rand read what write left)")
        rows: list[Measurement] = []
        tag = runner.raw_name(f"radosbench-{params.object_size}-{params.threads}t-r{repetition}")
        if runner.storage is None:
            raise WorkloadError("rados bench needs a cluster")
        pool = require(runner.storage, ObjectPools).bench_pool(params.pool)
        # A timed write on a small cluster runs it full, and a full cluster hangs clients and
        # crashes OSDs: bound what the write may leave behind.
        max_objects = params.max_objects or max_objects_for(runner, pool, params.object_size)
        try:
            for mode in params.mode:
                argv = ["rados", "-p", pool, "bench", str(params.seconds), mode, "-t", str(params.threads),
                        "--run-name", tag]
                if mode == "write":
                    argv += ["-b", str(params.object_size), "--no-cleanup", "--max-objects", str(max_objects)]
                out = runner.run(argv, f"{tag}-{mode}", timeout=params.seconds * 4 + 60)
                labels = {"mode": mode, "object_size": params.object_size, "threads": params.threads, "seconds": params.seconds}
                rows += parse(out, labels, repetition)
            rows += cap_rows(rows, max_objects, params.object_size)
        finally:
            runner.run(["rados", "-p", pool, "cleanup", "--run-name", tag], f"{tag}-cleanup", timeout=300)
        if not any(r.metric == "bandwidth" for r in rows):
            raise WorkloadError(f"rados bench printed no bandwidth summary; see {runner.raw_dir}")
        return rows


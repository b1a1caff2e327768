"""`rados bench`: write, then seq / rand reads of what was written (DockerCEPH's scbench)."""

from __future__ import annotations

import re
from typing import Any

from ..units import parse_size
from . import Measurement, Runner, Workload, WorkloadError

SUMMARY = {
    "Bandwidth (MB/sec)": ("bandwidth", "MB/s"),
    "Stddev Bandwidth": ("bandwidth_stddev", "MB/s"),
    "Average IOPS": ("iops", "op/s"),
    "Stddev IOPS": ("iops_stddev", "op/s"),
    "Average Latency(s)": ("latency_avg", "s"),
    "Stddev Latency(s)": ("latency_stddev", "s"),
    "Max latency(s)": ("latency_max", "s"),
    "Min latency(s)": ("latency_min", "s"),
    "Total time run": ("duration", "s"),
}
# "  sec Cur ops   started  finished  avg MB/s  cur MB/s last lat(s)  avg lat(s)"
SAMPLE = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.e-]+|-)\s+([\d.e-]+)\s*$")


def parse(output: str, params: dict[str, Any], repetition: int) -> list[Measurement]:
    rows = []
    for line in output.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() in SUMMARY:
            metric, unit = SUMMARY[key.strip()]
            try:
                rows.append(Measurement("radosbench", metric, float(value), unit, params, repetition))
            except ValueError:
                continue
        elif m := SAMPLE.match(line):
            sec = int(m.group(1))
            if sec > 0:  # second 0 is the header row of zeros
                rows.append(Measurement("radosbench", "bandwidth_sample", float(m.group(6)), "MB/s", params, repetition, t=sec))
                if m.group(7) != "-":
                    rows.append(Measurement("radosbench", "latency_sample", float(m.group(7)), "s", params, repetition, t=sec))
    return rows


class RadosBench(Workload):
    name = "radosbench"

    def run(self, runner: Runner, params: dict[str, Any], repetition: int) -> list[Measurement]:
        pool = params.get("pool", "dfslab")
        seconds = int(params.get("seconds", 10))
        threads = int(params.get("threads", 16))
        size = parse_size(params.get("object_size", "4MiB"))
        modes = params.get("modes", ["write", "seq"])
        if modes[0] != "write":
            raise WorkloadError("radosbench.modes must start with write (seq and rand read what write left)")
        rows: list[Measurement] = []
        tag = f"radosbench-{size}-{threads}t-r{repetition}"
        try:
            for mode in modes:
                argv = ["rados", "-p", pool, "bench", str(seconds), mode, "-t", str(threads), "--run-name", tag]
                if mode == "write":
                    argv += ["-b", str(size), "--no-cleanup"]
                out = runner.run(argv, f"{tag}-{mode}", timeout=seconds * 4 + 60)
                rows += parse(out, {"mode": mode, "object_size": size, "threads": threads, "seconds": seconds}, repetition)
        finally:
            runner.run(["rados", "-p", pool, "cleanup", "--run-name", tag], f"{tag}-cleanup", timeout=300)
        if not any(r.metric == "bandwidth" for r in rows):
            raise WorkloadError(f"rados bench printed no bandwidth summary; see {runner.raw_dir}")
        return rows

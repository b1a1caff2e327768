"""s3: objects over S3 through the cluster's gateway (Ceph's RADOS gateway, `ceph: {rgw: N}`),
warp-style: PUT objects of one size from N threads for a number of seconds, then GET random ones
of them for as long (`s3_worker`, dfslab's own load: no S3 benchmark is packaged in Debian 12).
Each phase's rows say `mode=write` or `mode=read`; bytes are counted for the byte ledger."""

from __future__ import annotations

import json
import sys

from pydantic import Field

from ..fields import Bytes
from . import Measurement, Runner, Workload, WorkloadParams

MB = 1e6


class S3Params(WorkloadParams):
    object_size: Bytes = Field("1MiB", description="bytes per object (one PUT or GET each)")
    threads: int = Field(4, ge=1, le=64, description="requests in flight (one S3 client each)")
    seconds: int = Field(5, ge=1, le=600, description="seconds of PUTs, then as many of GETs")
    gateway: int = Field(0, ge=0, description="which gateway the clients use (0: the first)")


class S3(Workload):
    name = "s3"
    Params = S3Params
    requires = "s3"

    def streams(self, params: S3Params) -> bool:
        return True

    def estimate(self, params: S3Params) -> float:
        return 2 * params.seconds + 3

    def writes(self, params: S3Params) -> int | None:
        return None  # bounded by time and the gateway's speed; removed at the end of the run

    def run(self, runner: Runner, params: S3Params, repetition: int) -> list[Measurement]:
        endpoints, creds, region = runner.storage.s3_access()
        endpoint = endpoints[min(params.gateway, len(endpoints) - 1)]
        bucket = runner.storage.s3_bucket()
        tag = f"s3-{params.object_size}-t{params.threads}-r{repetition}"
        argv = [sys.executable, "-m", "dfslab.workloads.s3_worker", endpoint, creds, bucket,
                str(params.object_size), str(params.threads), str(params.seconds), region]
        result = json.loads(runner.run(argv, tag, timeout=4 * params.seconds + 120))
        labels = params.model_dump(mode="python")
        rows = []
        for mode in ("write", "read"):
            r = result[mode]
            p = {**labels, "mode": mode}
            rows += [Measurement(self.name, metric, value, unit, p, repetition) for metric, value, unit in (
                ("bandwidth", r["bytes"] / r["seconds"] / MB, "MB/s"), ("iops", r["ops"] / r["seconds"], "op/s"),
                ("latency_avg", r["latency_avg"], "ms"), ("latency_p50", r["latency_p50"], "ms"),
                ("latency_p99", r["latency_p99"], "ms"), ("latency_max", r["latency_max"], "ms"),
                ("bytes", float(r["bytes"]), "B"), ("duration", r["seconds"], "s"))]
        return rows

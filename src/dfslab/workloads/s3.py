"""s3: objects over S3 through the cluster's gateway (Ceph's RADOS gateway, `ceph: {rgw: N}`) or a
site's endpoint (`external.s3`), warp-style: PUT objects of one size from N threads for a number of
seconds, then, each for as long, the other phases asked: GET random ones of them (with the time
to first byte), a mix of GETs and new PUTs, LIST pages of 1000 keys, DELETE them one by one
(`s3_worker`, dfslab's own load: no S3 benchmark is packaged in Debian 12). Each phase's rows say
its `mode`; bytes are counted for the byte ledger (a mixed phase's per direction)."""

from __future__ import annotations

import json
import sys

from typing import Literal

from pydantic import Field, field_validator

from ..backends import require
from ..backends.abilities import ToolTargets
from ..fields import Bytes
from . import Measurement, Runner, Workload, WorkloadParams

MB = 1e6
PHASES = ("write", "read", "mixed", "list", "delete")


WORKER = "dfslab.s3_worker"  # run on the clients as `python -m WORKER`

class S3Params(WorkloadParams):
    object_size: Bytes = Field("1MiB", description="bytes per object (one PUT or GET each)")
    threads: int = Field(4, ge=1, le=64, description="requests in flight (one S3 client each)")
    seconds: int = Field(5, ge=1, le=600, description="seconds of PUTs, then as many of GETs")
    gateway: int = Field(0, ge=0, description="which gateway the clients use (0: the first)")
    ops: list[Literal["write", "read", "mixed", "list", "delete"]] = Field(
        ["write", "read"], description="phases, each `seconds` long, in this order whatever the list's: write (PUT), "
                                       "read (GET), mixed (GET or PUT), list (1000-key pages), delete (one object a request)")
    read_percent: int = Field(70, ge=0, le=100, description="mixed: the share of GETs, in percent")

    @field_validator("ops")
    @classmethod
    def _in_order(cls, value: list[str]) -> list[str]:
        # every phase works on the objects the write made; the deletes end them
        return [op for op in PHASES if op in {"write", *value}]


class S3(Workload):
    name = "s3"
    workers = (WORKER,)
    Params = S3Params
    requires = "s3"

    def streams(self, params: S3Params) -> bool:
        return True

    def estimate(self, params: S3Params) -> float:
        return len(params.ops) * params.seconds + 3

    def writes(self, params: S3Params) -> int | None:
        return None  # bounded by time and the gateway's speed; removed at the end of the run

    def run(self, runner: Runner, params: S3Params, repetition: int) -> list[Measurement]:
        s3 = require(runner.storage, ToolTargets).reach(runner, "s3", 0)
        endpoint = s3.endpoints[min(params.gateway, len(s3.endpoints) - 1)]
        tag = runner.raw_name(f"s3-{params.object_size}-t{params.threads}-r{repetition}")
        argv = [sys.executable, "-m", WORKER, endpoint, s3.keys, s3.bucket, str(params.object_size),
                str(params.threads), str(params.seconds), s3.region, ",".join(params.ops), str(params.read_percent)]
        result = json.loads(runner.run(argv, tag, timeout=len(params.ops) * (2 * params.seconds + 60) + 60))
        labels = params.model_dump(mode="python", exclude={"ops"})
        rows = []
        # a phase is missing when a fault left the PUTs all unanswered: nothing was there to work on
        for mode in (op for op in params.ops if op in result):
            rows += _phase_rows(self.name, result[mode], {**labels, "mode": mode}, repetition)
        return rows


def _phase_rows(workload: str, r: dict, p: dict, repetition: int) -> list[Measurement]:
    """One phase's rows: requests a second and their latencies; for the phases that move objects,
    MB/s and the bytes each way (the byte ledger's), and for GETs the time to first byte."""
    rows = [Measurement(workload, "iops", r["ops"] / r["seconds"], "op/s", p, repetition),
            Measurement(workload, "duration", r["seconds"], "s", p, repetition),
            # requests the gateway did not answer (a fault killed it): tried again, not in the ops
            Measurement(workload, "unanswered", float(r.get("errors", 0)), "requests", p, repetition)]
    rows += [Measurement(workload, f"{name}_{q}", r[f"{name}_{q}"], "ms", p, repetition)
             for name in ("latency", "first_byte_latency") for q in ("avg", "p50", "p99", "max") if f"{name}_{q}" in r]
    if p["mode"] in ("write", "read", "mixed"):
        rows.append(Measurement(workload, "bandwidth", r["bytes"] / r["seconds"] / MB, "MB/s", p, repetition))
        if "by_op" not in r:
            rows.append(Measurement(workload, "bytes", float(r["bytes"]), "B", p, repetition))
        else:  # a mixed phase's GETs and PUTs go opposite ways on the wire: one row each for the ledger
            rows += [Measurement(workload, "bytes", float(moved), "B", {**p, "op": op}, repetition)
                     for op, moved in r["by_op"].items() if moved]
    return rows

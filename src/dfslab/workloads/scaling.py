"""OSD-count scaling (Skyhook fig. 3, and Azure's throughput vs number of servers): the same
rados bench on a pool the backend confines to the first `servers` nodes (Ceph: a CRUSH root of
their hosts), removed afterwards."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..fields import Bytes
from . import Measurement, Runner, Workload, WorkloadError, WorkloadParams
from .radosbench import RadosBench, RadosBenchParams


class ScalingParams(WorkloadParams):
    servers: int = Field(1, ge=1, le=16, description="nodes whose OSDs the pool may use (sweep 1..N)")
    modes: list[Literal["write", "seq", "rand"]] = ["write", "seq"]
    seconds: int = Field(10, ge=1, le=600)
    threads: int = Field(16, ge=1, le=256)
    object_size: Bytes = "4MiB"
    pg_per_server: int = Field(16, ge=1, le=256)


class OsdScaling(Workload):
    name = "scaling"
    Params = ScalingParams
    requires = "rados"

    def estimate(self, params: ScalingParams) -> float:
        return RadosBench().estimate(params) + 7  # + making and removing the confined pool

    def run(self, runner: Runner, params: ScalingParams, repetition: int) -> list[Measurement]:
        if params.servers > len(runner.nodes):
            raise WorkloadError(f"scaling.servers={params.servers} but the cluster has {len(runner.nodes)} node(s)")
        if runner.storage is None or runner.storage.confined_pool is None:
            raise WorkloadError("workload scaling needs RADOS pools confined to some servers (filesystem: ceph)")
        bench = RadosBench()
        with runner.storage.confined_pool(runner, runner.nodes[:params.servers], params.pg_per_server * params.servers) as (pool, osds):
            # Already validated here; construct, since validation wants sizes with units.
            inner = RadosBenchParams.model_construct(modes=params.modes, seconds=params.seconds, threads=params.threads,
                                                     object_size=params.object_size, pool=pool, max_objects=None)
            rows = bench.run(runner, inner, repetition)
        labels = {"servers": params.servers, "osds": osds}
        return [Measurement(self.name, r.metric, r.value, r.unit, {**r.params, **labels}, repetition, r.t) for r in rows]

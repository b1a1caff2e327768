"""OSD-count scaling (Skyhook fig. 3, and Azure's throughput vs number of servers): the same
rados bench on a pool that CRUSH confines to the first `servers` nodes. The nodes' host
buckets are linked (not moved) under a root of their own, so the cluster's other pools are
untouched; the pool, rule and root are removed afterwards."""

from __future__ import annotations

import json
import time
from typing import Literal

from pydantic import Field

from ..spec import Bytes
from . import Measurement, Runner, Workload, WorkloadError, WorkloadParams
from .radosbench import RadosBench, RadosBenchParams


class ScalingParams(WorkloadParams):
    servers: int = Field(1, ge=1, le=16, description="nodes whose OSDs the pool may use (sweep 1..N)")
    modes: list[Literal["write", "seq", "rand"]] = ["write", "seq"]
    seconds: int = Field(10, ge=1, le=600)
    threads: int = Field(16, ge=1, le=256)
    object_size: Bytes = "4MiB"
    pg_per_server: int = Field(16, ge=1, le=256)


class Confined:
    """A size-1 pool on the OSDs of `nodes` only, for the length of a `with` block."""

    def __init__(self, runner: Runner, nodes: list[str], pgs: int):
        self.runner, self.nodes, self.pgs = runner, nodes, pgs
        self.name = f"dfslab-scale-{len(nodes)}"

    def ceph(self, *args: str, check: bool = True) -> str:
        return self.runner.run(["ceph", *args], f"{self.name}-{args[0]}-{args[1] if len(args) > 1 else ''}",
                               timeout=120, check=check)

    def __enter__(self) -> str:
        self.ceph("osd", "crush", "add-bucket", self.name, "root")
        for node in self.nodes:
            self.ceph("osd", "crush", "link", node, f"root={self.name}")
        self.ceph("osd", "crush", "rule", "create-replicated", self.name, self.name, "host")
        self.ceph("osd", "pool", "create", self.name, str(self.pgs), str(self.pgs), "replicated", self.name)
        self.ceph("osd", "pool", "set", self.name, "size", "1", "--yes-i-really-mean-it")
        self.ceph("osd", "pool", "application", "enable", self.name, "rados")
        self.wait_clean()
        return self.name

    def wait_clean(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            out = self.ceph("pg", "ls-by-pool", self.name, "--format", "json", check=False)
            stats = json.loads(out).get("pg_stats", []) if out.strip() else []
            if len(stats) == self.pgs and all(s["state"] == "active+clean" for s in stats):
                return
            time.sleep(0.5)
        raise WorkloadError(f"pool {self.name} did not become active+clean within {timeout:.0f} s")

    def __exit__(self, *exc) -> None:
        self.ceph("osd", "pool", "rm", self.name, self.name, "--yes-i-really-really-mean-it", check=False)
        self.ceph("osd", "crush", "rule", "rm", self.name, check=False)
        for node in self.nodes:
            self.ceph("osd", "crush", "unlink", node, self.name, check=False)
        self.ceph("osd", "crush", "remove", self.name, check=False)


class OsdScaling(Workload):
    name = "scaling"
    Params = ScalingParams
    requires = "rados"

    def estimate(self, params: ScalingParams) -> float:
        return RadosBench().estimate(params) + 7  # + making and removing the confined pool

    def run(self, runner: Runner, params: ScalingParams, repetition: int) -> list[Measurement]:
        if params.servers > len(runner.nodes):
            raise WorkloadError(f"scaling.servers={params.servers} but the cluster has {len(runner.nodes)} node(s)")
        bench = RadosBench()
        with Confined(runner, runner.nodes[:params.servers], params.pg_per_server * params.servers) as pool:
            osds = len(json.loads(runner.run(["ceph", "osd", "ls-tree", pool, "--format", "json"], f"{pool}-ls-tree",
                                             timeout=60)))
            # Already validated here; construct, since validation wants sizes with units.
            inner = RadosBenchParams.model_construct(modes=params.modes, seconds=params.seconds, threads=params.threads,
                                                     object_size=params.object_size, pool=pool, max_objects=None)
            rows = bench.run(runner, inner, repetition)
        labels = {"servers": params.servers, "osds": osds}
        return [Measurement(self.name, r.metric, r.value, r.unit, {**r.params, **labels}, repetition, r.t) for r in rows]

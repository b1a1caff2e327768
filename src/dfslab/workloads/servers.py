"""Throughput and IOPS vs number of servers (the Azure GlusterFS guide's curve, Skyhook fig. 3):
for N servers the backend builds storage on the first N nodes only (`Backend.confine`; Ceph: a
size-1 pool CRUSH confines to their OSDs, GlusterFS: a distribute volume of one brick per
server, mounted on the client), the same load runs on it, and it is removed. On a pool the load
is `rados bench`, on a file system fio (file-per-process large transfers and 4 KiB random I/O).
Sweep `servers: [1, 2, 3, 4]` for the curve. `scaling` is this workload's former name (for
Ceph), still accepted: `modes`, `threads`, `object_size` become `ops`, `procs`, `bs`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ..backends.abilities import ConfinedStorage, ability
from ..fields import Bytes
from . import Measurement, Runner, Workload, WorkloadError, WorkloadParams
from .fiotool import fio_argv, parse_json
from .radosbench import bench_pool

RANDOM_BS = 4096
# The former `scaling` workload's names.
SCALING_RENAMES = {"modes": "ops", "threads": "procs", "object_size": "bs"}
SCALING_OPS = {"write": "write", "seq": "read", "rand": "randread"}


def _scaling_ops(modes: Any) -> Any:
    """scaling's rados bench modes as ops, through lists of them (a sweep of mode lists)."""
    if isinstance(modes, list):
        return [_scaling_ops(m) for m in modes]
    return SCALING_OPS.get(modes, modes) if isinstance(modes, str) else modes


class ServersParams(WorkloadParams):
    servers: int = Field(1, ge=1, le=16, description="servers the storage is built on (the first N nodes)")
    ops: list[Literal["write", "read", "randwrite", "randread"]] = Field(
        ["write", "read", "randread"], description="run in this order on one pool or file system; reads read what write wrote")
    procs: int = Field(4, ge=1, le=256, description="fio processes, a file each; on a pool, rados bench runs "
                                                     "procs x iodepth operations at once")
    iodepth: int = Field(4, ge=1, le=256)
    bs: Bytes = Field("1MiB", description="transfer size of sequential ops (the object size on a pool); "
                                          "random ops on files use 4 KiB")
    seconds: int = Field(5, ge=1, le=600, description="time-based runtime per op")
    files_per_proc: int = Field(8, ge=1, le=1024, description="files: files each process writes round-robin (DHT "
                                                               "places whole files: a few files spread unevenly)")
    size: Bytes = Field("64MiB", description="files: bytes per process, split over its files")
    pg_per_server: int = Field(16, ge=1, le=256, description="pool: placement groups per server")


class ServerScaling(Workload):
    name = "servers"
    Params = ServersParams
    requires = "confine"

    @classmethod
    def from_former(cls, former: str, params: dict[str, Any]) -> dict[str, Any]:
        if former != "scaling":
            return params
        out = {SCALING_RENAMES.get(k, k): v for k, v in params.items()}
        if "modes" in params:
            out["ops"] = _scaling_ops(params["modes"])
        if "threads" in params:
            out.setdefault("iodepth", 1)
        return out

    def estimate(self, params: ServersParams) -> float:
        # + building and removing the pool or file system, + laying out the files once.
        return len(params.ops) * (params.seconds + 1) + params.procs * params.size / 400e6 + 3

    def run(self, runner: Runner, params: ServersParams, repetition: int) -> list[Measurement]:
        confined = ability(runner.storage, ConfinedStorage)
        if confined is None:
            raise WorkloadError("workload servers needs a backend that can build storage on some servers only "
                                "(target confine)")
        if params.servers > len(runner.nodes):
            raise WorkloadError(f"servers.servers={params.servers} but the cluster has {len(runner.nodes)} node(s)")
        pgs = params.pg_per_server * params.servers
        with confined.confine(runner, runner.nodes[:params.servers], pgs) as where:
            if where.pool is not None:
                rows = self._on_pool(runner, where.pool, params, repetition)
            else:
                rows = self._on_files(runner, str(where.path), params, repetition)
        labels = where.spans or {}
        rows = [Measurement(self.name, r.metric, r.value, r.unit, {**r.params, **labels}, repetition, r.t) for r in rows]
        if not any(r.metric == "bandwidth" for r in rows):
            raise WorkloadError(f"no bandwidth measured on {params.servers} server(s); see {runner.raw_dir}")
        return rows

    def _labels(self, params: ServersParams, op: str, bs: int) -> dict[str, Any]:
        return {**params.model_dump(mode="python", exclude={"ops", "bs"}), "rw": op, "bs": bs}

    def _on_pool(self, runner: Runner, pool: str, params: ServersParams, repetition: int) -> list[Measurement]:
        tag = runner.raw_name(f"servers-{params.servers}-r{repetition}")
        return bench_pool(runner, pool, params.ops, params.seconds, params.procs * params.iodepth, params.bs, tag,
                          lambda op: self._labels(params, op, params.bs), repetition)

    def _on_files(self, runner: Runner, path: str, params: ServersParams, repetition: int) -> list[Measurement]:
        rows: list[Measurement] = []
        for op in params.ops:
            bs = RANDOM_BS if op.startswith("rand") else params.bs
            tag = runner.raw_name(f"servers-{params.servers}-{op}-p{params.procs}-r{repetition}")
            argv = fio_argv(tag, directory=path, filename_format="f.$jobnum.$filenum", nrfiles=params.files_per_proc,
                            file_service_type="roundrobin", rw=op, bs=bs,
                            iodepth=params.iodepth, ioengine="libaio", numjobs=params.procs, size=params.size,
                            runtime=params.seconds, time_based=True, end_fsync=int("write" in op))
            out = runner.run(argv, tag, timeout=params.seconds * 3 + params.procs * params.size / 20e6 + 120)
            rows += parse_json(out, self.name, self._labels(params, op, bs), repetition)
        return rows

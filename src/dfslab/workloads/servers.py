"""Throughput and IOPS vs number of servers on a POSIX file system (the Azure GlusterFS
guide's experiment): for N servers the backend builds a distributed file system on the
first N nodes only (GlusterFS: a distribute volume of one brick per server), mounts it on
the client, and fio runs file-per-process large transfers (bandwidth) and 4 KiB random
I/O (IOPS) on it; then it is removed. Sweep `servers: [1, 2, 3, 4]` for the curve."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..fields import Bytes
from . import Measurement, Runner, Workload, WorkloadError, WorkloadParams
from .fio import fio_argv, parse_json

RANDOM_BS = 4096


class ServersParams(WorkloadParams):
    servers: int = Field(1, ge=1, le=16, description="servers the file system is built on (the first N nodes)")
    ops: list[Literal["write", "read", "randwrite", "randread"]] = Field(
        ["write", "read", "randread"], description="run in this order on one file system; reads read what write wrote")
    procs: int = Field(4, ge=1, le=64, description="fio processes, a file each")
    files_per_proc: int = Field(8, ge=1, le=1024, description="files each process writes round-robin (DHT places "
                                                               "whole files: a few files spread unevenly over bricks)")
    size: Bytes = Field("64MiB", description="bytes per process, split over its files")
    bs: Bytes = Field("1MiB", description="transfer size of sequential ops; random ops use 4 KiB")
    iodepth: int = Field(4, ge=1, le=256)
    seconds: int = Field(5, ge=1, le=600, description="time-based runtime per op")


class ServerScaling(Workload):
    name = "servers"
    Params = ServersParams
    requires = "confine"

    def estimate(self, params: ServersParams) -> float:
        # + building and removing the file system, + laying out the files once.
        return len(params.ops) * (params.seconds + 1) + params.procs * params.size / 150e6 + 6

    def run(self, runner: Runner, params: ServersParams, repetition: int) -> list[Measurement]:
        if runner.storage is None or runner.storage.confined is None:
            raise WorkloadError("workload servers needs a backend that can build a file system on some servers only "
                                "(filesystem: gluster); on Ceph use workload scaling")
        if params.servers > len(runner.nodes):
            raise WorkloadError(f"servers.servers={params.servers} but the cluster has {len(runner.nodes)} node(s)")
        rows: list[Measurement] = []
        with runner.storage.confined(runner.nodes[:params.servers]) as mnt:
            for op in params.ops:
                bs = RANDOM_BS if op.startswith("rand") else params.bs
                tag = f"servers-{params.servers}-{op}-p{params.procs}-r{repetition}"
                argv = fio_argv(tag, directory=str(mnt), filename_format="f.$jobnum.$filenum", nrfiles=params.files_per_proc,
                                file_service_type="roundrobin", rw=op, bs=bs,
                                iodepth=params.iodepth, ioengine="libaio", numjobs=params.procs, size=params.size,
                                runtime=params.seconds, time_based=True, end_fsync=int("write" in op))
                out = runner.run(argv, tag, timeout=params.seconds * 3 + params.procs * params.size / 20e6 + 120)
                labels = {**params.model_dump(mode="python", exclude={"ops"}), "rw": op, "bs": bs}
                rows += parse_json(out, self.name, labels, repetition)
        if not rows:
            raise WorkloadError(f"fio reported no I/O on {params.servers} server(s); see {runner.raw_dir}")
        return rows

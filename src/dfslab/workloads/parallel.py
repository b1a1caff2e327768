"""Parallel I/O, IOR-style (Azure's GlusterFS guide, SLAC): N client namespaces × M processes
each, file per process, large transfers; every client has its own mount and all write (then
read) at once. Aggregate bandwidth = all bytes moved / the slowest client's time.

Each client reads its files through a new client of the filesystem on its node: the mount that
wrote them keeps their data in its own process (ceph-fuse's object cacher; drop_caches does not
empty it), and reads through it measured that cache (1,491-1,637 MB/s with 0.1 % of the bytes on
the client's link, `examples/quickstart.yaml`'s parallel step, byte ledger)."""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path

from pydantic import Field, model_validator

from ..fields import Bytes
from . import FS_TARGET, MACHINE, FileTarget, Measurement, Runner, Workload, WorkloadError, WorkloadParams
from .fiotool import fio_argv
from .filegrid import drop_caches, fresh_directory


class ParallelParams(WorkloadParams):
    target: FileTarget = FS_TARGET
    clients: int = Field(1, ge=1, le=8, description="client namespaces (the spec's `clients` must be at least this)")
    procs: int = Field(2, ge=1, le=64, description="processes per client, a file each")
    transfer_size: Bytes = "32MiB"
    block_size: Bytes = Field("128MiB", description="bytes per process")

    @model_validator(mode="after")
    def _one_transfer_at_least(self) -> "ParallelParams":
        if self.block_size < self.transfer_size:  # fio refuses a file smaller than its block size
            raise ValueError(f"block_size ({self.block_size} B) is smaller than transfer_size ({self.transfer_size} B): "
                             "each process writes at least one transfer; raise block_size or lower transfer_size")
        return self


class ParallelIO(Workload):
    name = "parallel"
    Params = ParallelParams

    def streams(self, params: ParallelParams) -> bool:
        return params.target != MACHINE

    def estimate(self, params: ParallelParams) -> float:
        return 2 * params.clients * params.procs * params.block_size / 300e6 + 0.9  # + fresh mounts to read

    def writes(self, params: ParallelParams) -> int | None:
        return 0 if params.target == MACHINE else params.clients * params.procs * params.block_size

    def asked_bytes(self, params: ParallelParams) -> int:
        return params.clients * params.procs * (params.block_size // params.transfer_size * params.transfer_size)

    def directory(self, runner: Runner, client: str, target: str) -> Path:
        return runner.workdir(target, f"dfslab-ior/{client}", node=client)

    def run(self, runner: Runner, params: ParallelParams, repetition: int) -> list[Measurement]:
        clients = runner.client_nodes(self.name, params.clients)
        dirs = {c: self.directory(runner, c, params.target) for c in clients}
        labels = params.model_dump(mode="python")
        rows = []
        for op in ("write", "read"):
            with ExitStack() as fresh:
                if op == "read":
                    drop_caches()
                    dirs = {c: fresh.enter_context(fresh_directory(runner, d, c)) for c, d in dirs.items()}
                rows += self._phase(runner, params, repetition, labels, op, dirs)
        return rows

    def _phase(self, runner: Runner, params: ParallelParams, repetition: int, labels: dict, op: str,
               dirs: dict[str, Path]) -> list[Measurement]:
        """Every client at once, `op` on its directory: the aggregate bandwidth and bytes moved."""
        tools = {c: (fio_argv(f"ior-{c}", rw=op, bs=params.transfer_size, size=params.block_size, numjobs=params.procs,
                              ioengine="psync", directory=str(directory), end_fsync=int(op == "write")),
                     runner.raw_name(f"parallel-{params.target}-c{params.clients}-p{params.procs}-{op}-{c}-r{repetition}"))
                 for c, directory in dirs.items()}
        moved, slowest = 0, 0.0
        for c, out in runner.run_at_once(tools, timeout=3600).items():
            job = json.loads(out[out.index("{"):])["jobs"][0][op]
            moved += job["io_bytes"]
            slowest = max(slowest, job["runtime"] / 1000)
        if slowest <= 0:
            raise WorkloadError("fio reported no runtime")
        p = {**labels, "op": op}
        return [Measurement(self.name, "bandwidth", moved / slowest / 1e6, "MB/s", p, repetition),
                Measurement(self.name, "bytes", float(moved), "B", p, repetition),
                Measurement(self.name, "duration", slowest, "s", p, repetition)]

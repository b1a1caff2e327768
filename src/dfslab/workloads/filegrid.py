"""filegrid: the iozone-style file size x threads grid of INFN's study, run with fio (iozone is
not in Debian main). For each file size x thread count, a sequential write then a sequential
read of the same files, each cell one measurement. `iozone` is its former name, still accepted."""

from __future__ import annotations


from pydantic import Field

from ..fields import Bytes
from . import FS_TARGET, FileTarget, Measurement, Runner, Workload, WorkloadParams
from .fio import fio_argv, parse_json, target_options


class FileGridParams(WorkloadParams):
    target: FileTarget = FS_TARGET
    file_size: Bytes = Field("64MiB", description="per thread; sweep it for the grid's rows")
    threads: int = Field(1, ge=1, le=64, description="sweep it for the grid's columns")
    record_size: Bytes = "1MiB"


def drop_caches() -> None:
    """So the read measures the filesystem, not the page cache left by the write."""
    try:
        with open("/proc/sys/vm/drop_caches", "w") as fh:
            fh.write("3\n")
    except OSError:
        pass


class FileGrid(Workload):
    name = "filegrid"
    Params = FileGridParams

    def estimate(self, params: FileGridParams) -> float:
        return 2 * params.file_size * params.threads / 150e6 + 4

    def run(self, runner: Runner, params: FileGridParams, repetition: int) -> list[Measurement]:
        labels = params.model_dump(mode="python")
        rows: list[Measurement] = []
        target = target_options(runner, params.target, params.file_size, params.threads, False)
        for op in ("write", "read"):
            tag = f"filegrid-{params.target}-{params.file_size}-t{params.threads}-{op}-r{repetition}"
            if op == "read":
                drop_caches()
            job = f"filegrid-{params.file_size}-t{params.threads}"
            options = dict(rw=op, bs=params.record_size, numjobs=params.threads, size=params.file_size,
                           end_fsync=int(op == "write"), **target)
            if servers := runner.fio_servers() if params.target != "local" else []:
                from .fioclients import run_on_clients  # every listed host at once (external clusters)
                found = run_on_clients(runner, servers, tag, options, self.name, labels, repetition, 600, job=job)
            else:
                found = parse_json(runner.run(fio_argv(job, **options), tag, timeout=600), self.name, labels, repetition)
            rows += [r for r in found if r.params["op"] == op]
        return rows

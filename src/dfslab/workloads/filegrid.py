"""filegrid: the iozone-style file size x threads grid of INFN's study, run with fio (iozone is
not in Debian main). For each file size x thread count, a sequential write then a sequential
read of the same files, each cell one measurement. `iozone` is its former name, still accepted.

The read goes through a new, second client of the filesystem (Backend.fresh_client): the one
that wrote keeps the files' data in its own process (ceph-fuse's object cacher), which
drop_caches does not empty, and its reads were cache reads (measured: 663-1098 MB/s against
175-246 MB/s from a client that had not written them)."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from pydantic import Field

from ..backends import drop_page_cache
from ..fields import Bytes
from . import FS_TARGET, MACHINE, FileTarget, Measurement, Runner, Workload, WorkloadParams
from .fio import target_options
from .fiotool import fio_argv, parse_json


class FileGridParams(WorkloadParams):
    target: FileTarget = FS_TARGET
    file_size: Bytes = Field("64MiB", description="per thread; sweep it for the grid's rows")
    threads: int = Field(1, ge=1, le=64, description="sweep it for the grid's columns")
    record_size: Bytes = "1MiB"


def drop_caches() -> None:
    """So the read measures the filesystem, not the page cache left by the write."""
    drop_page_cache()


class FileGrid(Workload):
    name = "filegrid"
    Params = FileGridParams

    def streams(self, params: FileGridParams) -> bool:
        return params.target != MACHINE

    def estimate(self, params: FileGridParams) -> float:
        return 2 * params.file_size * params.threads / 300e6 + 0.9  # + a fresh client's mount for the read

    def writes(self, params: FileGridParams) -> int | None:
        return 0 if params.target == MACHINE else params.file_size * params.threads

    def asked_bytes(self, params: FileGridParams) -> int:
        return params.threads * (params.file_size // params.record_size * params.record_size)  # fio rounds down to whole records

    def run(self, runner: Runner, params: FileGridParams, repetition: int) -> list[Measurement]:
        labels = params.model_dump(mode="python")
        rows: list[Measurement] = []
        target = target_options(runner, params.target, params.file_size, params.threads, False)
        for op in ("write", "read"):
            tag = runner.raw_name(f"filegrid-{params.target}-{params.file_size}-t{params.threads}-{op}-r{repetition}")
            job = f"filegrid-{params.file_size}-t{params.threads}"
            with _reading(runner, params.target, target) if op == "read" else _as_is(target) as where:
                options = dict(rw=op, bs=params.record_size, numjobs=params.threads, size=params.file_size,
                               end_fsync=int(op == "write"), **where)
                if servers := runner.tool_servers("fio") if params.target != MACHINE else []:
                    from .fioclients import run_on_clients  # every listed host at once (external clusters)
                    found = run_on_clients(runner, servers, tag, options, self.name, labels, repetition, 600, job=job)
                else:
                    found = parse_json(runner.run(fio_argv(job, **options), tag, timeout=600), self.name, labels,
                                       repetition)
            rows += [r for r in found if r.params["op"] == op]
        return rows


@contextmanager
def _as_is(target: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield target


@contextmanager
def _reading(runner: Runner, kind: str, target: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """fio's target options for the read: the kernel's caches dropped, and on the cluster's
    mount the same directory through a new client, where the runtime keeps one (on runtime
    kubernetes every step's Job mounts anew)."""
    drop_caches()
    if kind == MACHINE or "directory" not in target:
        yield target
        return
    with fresh_directory(runner, Path(target["directory"])) as directory:
        yield {**target, "directory": str(directory)}


@contextmanager
def fresh_directory(runner: Runner, directory: Path, node: str = "client") -> Iterator[Path]:
    """`directory`, written through `node`'s mount, as a new client of the filesystem on that
    node sees it (the same files, none of their data in its cache), for a `with` block; as it is
    where there is no mount or the runtime gives none (on kubernetes every step's Job mounts anew)."""
    if runner.fresh_client is None or runner.mount is None:
        yield directory
        return
    written = directory.relative_to(runner.mount(node))
    with runner.fresh_client(node) as mnt:
        yield directory if mnt is None else mnt / written

"""metadata: an mdtest-style metadata load by dfslab's own worker (`metadata_worker`; mdtest
itself is not in Debian). `mdtest` is its former name, still accepted. Each process creates, stats, reads and unlinks
many small files in its own directory; ops/s per phase (phases are separated by a barrier).

The stat and read phases run through a new client of the filesystem (as IO500's mdtest
reads another rank's files, `-N 1`, to miss the client cache): the client that created the files
holds their caps and data, and its stats answered from them (ceph-fuse: 1.4-2.6 k stat/s, no
MDS request)."""

from __future__ import annotations

import json
import sys
from contextlib import nullcontext

from pydantic import Field

from ..fields import Bytes
from . import FS_TARGET, MACHINE, FileTarget, Measurement, Runner, Workload, WorkloadParams
from .filegrid import fresh_directory

PHASES = ("create", "stat", "read", "unlink")


WORKER = "dfslab.workloads.metadata_worker"  # run on the clients as `python -m WORKER`

class MetadataParams(WorkloadParams):
    target: FileTarget = FS_TARGET
    procs: int = Field(2, ge=1, le=64)
    files_per_proc: int = Field(500, ge=1, le=100000)
    file_size: Bytes = "4KiB"


class Metadata(Workload):
    name = "metadata"
    workers = (WORKER,)
    Params = MetadataParams

    def estimate(self, params: MetadataParams) -> float:
        return params.procs * params.files_per_proc * len(PHASES) / 1000 + 1.4  # + a new client's mount

    def run(self, runner: Runner, params: MetadataParams, repetition: int) -> list[Measurement]:
        base = runner.workdir(params.target, "dfslab-metadata")
        tag = runner.raw_name(f"metadata-{params.target}-p{params.procs}-n{params.files_per_proc}-r{repetition}")
        runner.workdir_at(str(base / tag))
        with fresh_directory(runner, base / tag) if params.target != MACHINE else nullcontext(base / tag) as later:
            argv = [sys.executable, "-m", WORKER, str(base / tag), str(params.procs),
                    str(params.files_per_proc), str(params.file_size), str(later)]
            result = json.loads(runner.run(argv, tag, timeout=3600))
        labels = params.model_dump(mode="python")
        return [Measurement(self.name, metric, value, unit, {**labels, "phase": phase}, repetition)
                for phase in PHASES
                for metric, value, unit in (("ops", result[phase]["ops"] / result[phase]["seconds"], "op/s"),
                                            ("duration", result[phase]["seconds"], "s"))]

    def headlines(self, rows: list[Measurement]) -> list[Measurement]:
        return [r for r in rows if r.metric == "ops"]

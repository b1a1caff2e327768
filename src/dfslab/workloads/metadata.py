"""metadata: an mdtest-style metadata load by dfslab's own worker (`metadata_worker`; mdtest
itself is not in Debian). `mdtest` is its former name, still accepted. Each process creates, stats, reads and unlinks
many small files in its own directory; ops/s per phase (phases are separated by a barrier)."""

from __future__ import annotations

import json
import sys

from pydantic import Field

from ..fields import Bytes
from . import FS_TARGET, FileTarget, Measurement, Runner, Workload, WorkloadParams

PHASES = ("create", "stat", "read", "unlink")


class MetadataParams(WorkloadParams):
    target: FileTarget = FS_TARGET
    procs: int = Field(2, ge=1, le=64)
    files_per_proc: int = Field(500, ge=1, le=100000)
    file_size: Bytes = "4KiB"


class Metadata(Workload):
    name = "metadata"
    Params = MetadataParams

    def estimate(self, params: MetadataParams) -> float:
        return params.procs * params.files_per_proc * len(PHASES) / 2000 + 0.5

    def run(self, runner: Runner, params: MetadataParams, repetition: int) -> list[Measurement]:
        base = runner.workdir(params.target, "dfslab-metadata")
        tag = f"metadata-{params.target}-p{params.procs}-n{params.files_per_proc}-r{repetition}"
        argv = [sys.executable, "-m", "dfslab.workloads.metadata_worker", str(base / tag), str(params.procs),
                str(params.files_per_proc), str(params.file_size)]
        result = json.loads(runner.run(argv, tag, timeout=3600))
        labels = params.model_dump(mode="python")
        return [Measurement(self.name, metric, value, unit, {**labels, "phase": phase}, repetition)
                for phase in PHASES
                for metric, value, unit in (("ops", result[phase]["ops"] / result[phase]["seconds"], "op/s"),
                                            ("duration", result[phase]["seconds"], "s"))]

    def headlines(self, rows: list[Measurement]) -> list[Measurement]:
        return [r for r in rows if r.metric == "ops"]

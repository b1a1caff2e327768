"""A stand-in tool registered from the tests alone: dd writes a file on the target's mount (real
I/O, fsync'd before dd reports), its bytes and seconds read from dd's own summary line."""

from __future__ import annotations

import re

from pydantic import Field

from dfslab.workloads import Measurement, Workload, WorkloadError, WorkloadParams


class DdParams(WorkloadParams):
    mib: int = Field(8, ge=1, le=1024, description="MiB dd writes, 1 MiB a write")


class DdWrite(Workload):
    name = "ddwrite"
    Params = DdParams
    requires = "fs"

    def estimate(self, params: DdParams) -> float:
        return 2.0

    def run(self, runner, params: DdParams, repetition: int) -> list[Measurement]:
        directory = runner.workdir("fs", "dfslab-dd")
        argv = ["sh", "-c", f"dd if=/dev/zero of={directory}/f bs=1M count={params.mib} conv=fsync 2>&1"]
        out = runner.run(argv, runner.raw_name(f"dd-{params.mib}-r{repetition}"), timeout=120)
        match = re.search(r"^(\d+) bytes .* copied, ([\d.]+) s", out, re.M)
        if not match:
            raise WorkloadError(f"dd said: {out.strip()[-200:]}")
        moved, seconds = int(match[1]), float(match[2])
        labels = params.model_dump(mode="python")
        return [Measurement(self.name, "bandwidth", moved / seconds / 1e6, "MB/s", labels, repetition),
                Measurement(self.name, "bytes", float(moved), "B", {**labels, "rw": "write"}, repetition),
                Measurement(self.name, "duration", seconds, "s", labels, repetition)]

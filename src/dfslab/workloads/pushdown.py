"""Query pushdown vs client-side processing (SkyhookDM's figure 4): the same query at a
selectivity, run inside the OSDs by cls_dfslab (`where: storage`) or on the client after
reading whole objects (`where: client`); time, bytes over the client's link, rows.

The dataset (synthetic, seeded; `c` uniform in [0, 1), so `c < s` selects s of the rows) is
loaded once per (rows, objects) and kept for the rest of the run."""

from __future__ import annotations

import subprocess
from typing import Literal

from pydantic import Field

from .. import native
from ..backends import require
from ..backends.abilities import ObjectPools
from ..pushdown import WORKER, QueryWorker, QueryError
from . import Measurement, Runner, Workload, WorkloadError, WorkloadParams

QUERIES = {
    "select": "SELECT id, a, b, c, qty, cat FROM {ds} WHERE c < {s}",
    "aggregate": "SELECT cat, count(*), sum(a), min(b), max(b), avg(qty) FROM {ds} WHERE c < {s} GROUP BY cat",
}


class PushdownParams(WorkloadParams):
    selectivity: float = Field(10, gt=0, le=100, description="percent of rows the predicate selects (sweep 1, 10, 100)")
    where: Literal["storage", "client"] = Field("storage", description="storage: inside the OSDs; client: read and compute")
    query: Literal["select", "aggregate"] = Field("select", description="select: every column of matching rows; "
                                                                         "aggregate: count/sum/min/max/avg grouped by cat")
    rows: int = Field(1_000_000, ge=1000, le=200_000_000)
    objects: int = Field(16, ge=1, le=4096, description="one row group per RADOS object")


class Pushdown(Workload):
    name = "pushdown"
    Params = PushdownParams
    requires = "rados"
    workers = (WORKER[2],)  # dfslab's query worker, on the client node

    @classmethod
    def cluster_targets(cls) -> dict[str, str]:
        return {"where=storage": "objclass", "where=client": "rados"}

    def needs(self, params: PushdownParams) -> str | None:
        # In the OSDs the query runs in dfslab's object class, which must be in their class directory.
        return "objclass" if params.where == "storage" else "rados"

    def __init__(self):
        self.worker: QueryWorker | None = None
        self.loaded: set[tuple[int, int]] = set()


    def estimate(self, params: PushdownParams) -> float:
        load = 0 if (params.rows, params.objects) in self.loaded else params.rows * 48 / 100e6
        return load + params.rows * 48 / (100e6 if params.where == "client" else 400e6) + 1

    def run(self, runner: Runner, params: PushdownParams, repetition: int) -> list[Measurement]:
        worker = self.start(runner)
        dataset = f"pd{params.rows}x{params.objects}"
        try:
            if (params.rows, params.objects) not in self.loaded:
                worker.call(op="load", dataset=dataset, rows=params.rows, objects=params.objects, seed=1)
                # One unmeasured scan in the OSDs: otherwise the first query after a load is the only
                # one whose OSDs read the dataset from their disks, and where their caches hold it
                # (examples/pushdown.yaml) every measured query sees the same cache.
                worker.call(op="query", sql=f"SELECT count(*) FROM {dataset}", where="storage")
                self.loaded.add((params.rows, params.objects))
            sql = QUERIES[params.query].format(ds=dataset, s=params.selectivity / 100)
            osd_cpu_before, disk_before = runner.daemon_cpu("osd."), runner.daemon_disk_read("osd.")
            # limit 0: the answer is complete on the client (columnar), but not sent back as JSON rows.
            answer = worker.call(op="query", sql=sql, where=params.where, limit=0 if params.query == "select" else None)
            osd_cpu_after, disk_after = runner.daemon_cpu("osd."), runner.daemon_disk_read("osd.")
        except QueryError as exc:
            raise WorkloadError(f"pushdown {params.where}: {exc}") from None
        osd_cpu = None if osd_cpu_before is None or osd_cpu_after is None else osd_cpu_after - osd_cpu_before
        disk_read = None if disk_before is None or disk_after is None else disk_after - disk_before
        runner.keep(runner.raw_name(f"pushdown-{params.query}-{params.selectivity:g}-{params.where}-r{repetition}"), [sql],
                    f"{answer['seconds']:.6f} s, {answer['bytes_moved']} bytes, {len(answer['rows'])} rows, "
                    f"client CPU {answer['client_cpu_seconds']:.3f} s, OSDs' CPU "
                    f"{'not counted' if osd_cpu is None else f'{osd_cpu:.2f} s'}, OSDs' disk reads "
                    f"{'not counted' if disk_read is None else f'{disk_read} bytes'}\n", "")
        labels = params.model_dump(mode="python")
        rows = sum(r[1] for r in answer["rows"]) if params.query == "aggregate" else answer["nrows"]
        out = [Measurement(self.name, "time", answer["seconds"], "s", labels, repetition),
                Measurement(self.name, "bytes_moved", answer["bytes_moved"] / 1e6, "MB", labels, repetition),
                Measurement(self.name, "rows_selected", rows, "rows", labels, repetition),
                Measurement(self.name, "scan_rate", answer["dataset_bytes"] / 1e6 / answer["seconds"], "MB/s",
                            labels, repetition),
                # What SkyhookDM's argument rests on: the client's CPU per query (the worker
                # process, every thread), and the OSDs' (their processes, read before and after).
                Measurement(self.name, "client_cpu", answer["client_cpu_seconds"], "s", labels, repetition)]
        if osd_cpu is not None:
            out.append(Measurement(self.name, "osd_cpu", osd_cpu, "s", labels, repetition))
        if disk_read is not None:  # what the OSDs read from their disks for this query: 0 when their caches held it
            out.append(Measurement(self.name, "osd_disk_read", disk_read / 1e6, "MB", labels, repetition))
        return out

    def start(self, runner: Runner) -> QueryWorker:
        if self.worker is None:
            try:
                native.build_class()
            except native.BuildError as exc:
                raise WorkloadError(str(exc)) from None
            pool = require(runner.storage, ObjectPools).bench_pool(None)  # "dfslab", or dfslab's own pool on a cluster it did not make
            self.worker = QueryWorker(runner.popen([*WORKER, pool], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                              stderr=subprocess.PIPE, text=True))
        return self.worker

    def headlines(self, rows: list[Measurement]) -> list[Measurement]:
        return []  # time per query, not a throughput: no bottleneck line

    def finish(self, runner: Runner) -> None:
        if self.worker is not None:
            self.worker.close()
            self.worker = None
        # The datasets are in this run's cluster; the next run of a sweep (a fresh cluster) loads its own.
        self.loaded.clear()

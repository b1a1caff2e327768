"""fio on a CephFS mount (ceph-fuse on the client node), on RBD (fio's rbd engine), or on
the machine's own disk: rw × bs × iodepth × numjobs sweeps, fio's JSON kept untouched."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal, get_args

from pydantic import Field, model_validator

from ..backends import require
from ..backends.abilities import ToolTargets
from ..blockdev import direct_io_problem
from ..fields import Bytes
from ..state import clusters_root
from ..registry import TARGETS, BlockImage, ObjectPool, Reach, VolumeLibrary
from . import MACHINE, FileTarget, Measurement, Runner, Workload, WorkloadError, WorkloadParams, cluster_target
from .fioclients import run_on_clients
from .fiotool import fio_argv, parse_bw_log, parse_json, parse_on_clients


@dataclass(frozen=True)
class FioOn:
    """What fio runs on a target: `says` for the help; `writes_only`: why only writes, where so."""
    says: str
    writes_only: str | None = None


# fio's own engines for the targets storage offers (its engines/ directory; IOR's aiori table):
# what each kind of target (registry.TARGETS) is to fio, and how a backend's description of it
# (`Backend.reach`) becomes fio's options.
FIO_ON = {
    "fs": FioOn("files on the cluster's POSIX mount"),
    "rados": FioOn("objects in the cluster's benchmark pool (fio's rados engine)",
                   "fio's rados engine reads objects it created empty; for reads use the radosbench workload (seq, rand)"),
    "rbd": FioOn("an RBD image (fio's rbd engine)"),
    "gfapi": FioOn("the GlusterFS volume through libgfapi (fio's gfapi engine)"),
}
IOENGINES: dict[type, Callable[[Any], dict[str, Any]]] = {
    ObjectPool: lambda t: {"ioengine": "rados", "clientname": t.user, "pool": t.pool, "conf": t.conf},
    BlockImage: lambda t: {"ioengine": "rbd", "clientname": t.user, "pool": t.pool, "rbdname": t.image},
    # fio names gfapi files relative to the volume root (and checks `directory=` on the local
    # disk), so the directory goes into the file name
    VolumeLibrary: lambda t: {"ioengine": "gfapi", "volume": t.volume, "brick": t.server,
                              "filename_format": f"{t.directory}/$jobname.$jobnum.$filenum"},
}


def ioengine_options(reach: Reach) -> dict[str, Any]:
    """fio's engine and its options for a target as the backend described it."""
    return IOENGINES[type(reach)](reach)


FILE_TARGETS = get_args(FileTarget)
# Every target fio runs on: the file targets and each target it has an engine for.
FIO_TARGETS = (*FILE_TARGETS, *(t for t in FIO_ON if t in TARGETS and t not in FILE_TARGETS))


class FioParams(WorkloadParams):
    target: Literal[FIO_TARGETS] = Field(  # type: ignore[valid-type]
        "fs", description="; ".join(f"{t}: {e.says}" + ("; writes only" if e.writes_only else "")
                                    for t, e in FIO_ON.items()) + "; machine: this machine's own disk, outside any cluster")
    rw: Literal["read", "write", "randread", "randwrite", "readwrite", "randrw"] = "randread"
    bs: Bytes = "4KiB"
    iodepth: int = Field(16, ge=1, le=1024)
    numjobs: int = Field(1, ge=1, le=64)
    size: Bytes = Field("256MiB", description="file (or image range) per job")
    seconds: int = Field(10, ge=1, le=3600, description="time-based runtime")
    clients: int = Field(1, ge=1, le=8, description="client nodes running the job at once, each in a directory of its "
                         "own (target fs; the cluster's `clients` must be at least this): bandwidth, IOPS and bytes "
                         "are their sum, latency percentiles over every node's I/Os (fio's histograms added), and "
                         "client_bandwidth / client_iops rows per node")
    direct: bool = Field(True, description="O_DIRECT on file targets (fs, machine): reads from the storage, not the "
                                           "client's cache, and the only way libaio keeps more than one I/O in flight")
    client_cache: bool | None = Field(None, description="the client library's write-back cache, on targets that have "
                                      "one (" + ", ".join(f"{t}: {e.client_cache}" for t, e in TARGETS.items()
                                                          if e.client_cache) + "): unset, off (a write is timed until "
                                      "the cluster acknowledges it) unless the cluster's client settings turn it on, "
                                      "which then decide (a sweep of them there works); true / false force it")

    @model_validator(mode="after")
    def _depth_is_real(self) -> "FioParams":
        # Buffered libaio submits synchronously: measured on ceph-fuse and the GlusterFS FUSE
        # client at iodepth 16, each job's IOPS x submission latency was 0.97-0.99 (one I/O at a
        # time) while fio's depth histogram still said 16.
        if self.target in FILE_TARGETS and not self.direct and self.iodepth > 1:
            raise ValueError(f"iodepth {self.iodepth} with direct: false on target {self.target} would run at depth 1 "
                             f"(buffered libaio completes each I/O inside its submit call): set direct: true, or "
                             f"iodepth: 1 with numjobs: {self.iodepth} for {self.iodepth} I/Os in flight")
        return self

    @model_validator(mode="after")
    def _direct_io_is_aligned(self) -> "FioParams":
        # O_DIRECT needs every transfer aligned to the device's logical block (512 B at least):
        # fio would fail each I/O with EINVAL, or a FUSE client pass it on as buffered I/O.
        if self.target in FILE_TARGETS and self.direct and self.bs % 512:
            raise ValueError(f"bs {self.bs} B with direct: true: O_DIRECT needs a multiple of 512 B (the smallest "
                             f"logical block); write e.g. bs: {max(1, round(self.bs / 4096)) * 4}KiB, or set direct: false")
        return self

    @model_validator(mode="after")
    def _client_cache_is_the_targets(self) -> "FioParams":
        entry = TARGETS.get(self.target)
        if self.client_cache is not None and not (entry and entry.client_cache):
            having = ", ".join(f"{e.client_cache} (target {t})" for t, e in TARGETS.items() if e.client_cache)
            raise ValueError(f"client_cache is {having}, not target {self.target}'s: on a file "
                             f"target, direct: false reads and writes through the client's cache")
        return self

    @model_validator(mode="after")
    def _many_clients_on_shared_files(self) -> "FioParams":
        # Each node needs its own files: on a shared mount, a directory each; an RBD image or the
        # pool's fio objects would be one for every node (their writes to the same blocks).
        if self.clients > 1 and cluster_target(self.target) != "fs":
            raise ValueError(f"clients: {self.clients} runs fio on several client nodes over the cluster's POSIX "
                             f"mount (target fs), each in its own directory; target {self.target} would have them "
                             f"all on the same {'disk' if self.target == MACHINE else 'image or objects'}: use "
                             f"target fs, or numjobs for more jobs on one node")
        return self

    @model_validator(mode="after")
    def _writes_only_where_fio_cannot_read(self) -> "FioParams":
        # e.g. fio's rados engine creates its objects empty ("touch"): a read would measure nothing.
        entry = FIO_ON.get(self.target)
        if entry and entry.writes_only and self.rw not in ("write", "randwrite"):
            raise ValueError(f"target {self.target} measures writes (write, randwrite), not {self.rw}: "
                             f"{entry.writes_only}")
        return self


# Engines that run one I/O at a time whatever the iodepth (fio says only "queue depth will be
# capped at 1" in its text output), and their asynchronous twins. fio's gfapi at iodepth 16
# on a replica-3 volume: 9.4 k IOPS at depth 1; gfapi_async: 20.9 k with 16 in flight.
ASYNC_IOENGINES = {"gfapi": "gfapi_async"}


FILES = "dfslab-fio"


def files_on(node: str, clients: int) -> str:
    """The directory a file target's fio job uses on `node`: one per node when several run at once."""
    return FILES if clients == 1 else f"{FILES}/{node}"


def target_options(runner: Runner, target: str, size: int, numjobs: int, direct: bool,
                   iodepth: int = 1, client_cache: bool | None = None, node: str = "client",
                   files: str = FILES) -> dict[str, Any]:
    """fio options that aim a job at `target`: a directory (`files`, on `node`'s mount) for
    fs/local, else the backend's engine (its asynchronous form when more than one I/O is to be
    in flight)."""
    if target in FILE_TARGETS:
        directory = runner.workdir(target, files, node=node)
        return {"ioengine": "libaio", "directory": str(directory), "direct": int(direct)}
    if runner.storage is None:
        raise WorkloadError(f"fio target {target!r} needs a cluster")
    options = ioengine_options(require(runner.storage, ToolTargets).reach(runner, target, size * numjobs, client_cache))
    if iodepth > 1:
        options["ioengine"] = ASYNC_IOENGINES.get(options["ioengine"], options["ioengine"])
    return options


WRITE_ONLY = ("write", "randwrite", "trimwrite")
# The files a read step reads, one per job, shared by every fio step of the run on the same
# directory (a later read of the same size finds them laid out).
LAID_OUT = "dfslab-fio.$jobnum.0"


def lay_out_files(runner: Runner, params: FioParams, node: str = "client") -> None:
    """Write the files a read step reads before it starts (outside its timing and byte ledger),
    in 1 MiB writes. fio's own layout writes them at the job's block size through the page
    cache: on ceph-fuse a 4 KiB randread step spent 9 of its 13 s writing 128 MiB in 4 KiB
    FUSE requests before its 4 s of reads (quickstart)."""
    where = target_options(runner, params.target, params.size, params.numjobs, False, node=node,
                           files=files_on(node, params.clients))
    argv = fio_argv("layout", rw="write", bs=min(params.size, 2**20), numjobs=params.numjobs, size=params.size,
                    filename_format=LAID_OUT, ioengine="psync", directory=where["directory"], end_fsync=1)
    runner.run(argv, f"fio-{params.target}-layout-{params.size}-j{params.numjobs}" + ("" if params.clients == 1 else f"-{node}"),
               node=node, timeout=params.size * params.numjobs / 10e6 + 120)


class Fio(Workload):
    name = "fio"
    Params = FioParams

    def __init__(self) -> None:
        self.laid_out: set[tuple[str, int, int]] = set()

    def streams(self, params: FioParams) -> bool:
        return params.target != MACHINE

    def host_problems(self, params: FioParams) -> list[tuple[str, str]]:
        # target machine runs in the cluster's scratch directory, on this machine's own disk: its
        # logical block (4096 B on 4Kn disks) may ask more than the 512 B every device allows.
        if params.target == MACHINE and params.direct and (problem := direct_io_problem(params.bs, clusters_root())):
            return [("bs", problem)]
        return []

    def estimate(self, params: FioParams) -> float:
        # Laying out files before a read: about 400 MB/s on ceph-small (quickstart steps: 4.3-5.2 s for 4 s)
        return params.seconds + params.size * params.numjobs * params.clients / 400e6 + 0.5

    def writes(self, params: FioParams) -> int | None:
        return 0 if params.target == MACHINE else params.size * params.numjobs * params.clients  # written, or laid out to read

    def prepare(self, runner: Runner, params: FioParams) -> None:
        if params.target not in FILE_TARGETS:
            if runner.storage is not None:
                require(runner.storage, ToolTargets).reach(runner, params.target, params.size * params.numjobs, params.client_cache)
        elif params.rw not in WRITE_ONLY and not (params.target != MACHINE and runner.tool_servers("fio")):
            for node in runner.client_nodes(self.name, params.clients):
                files = (params.target, params.size, params.numjobs, files_on(node, params.clients))
                if files not in self.laid_out:  # once a run: later steps find them (writes keep their size)
                    lay_out_files(runner, params, node)
                    self.laid_out.add(files)

    def finish(self, runner: Runner) -> None:
        # This object outlives a run: the next run of a `runtimes:`, `runs:` or settings sweep has
        # a fresh cluster whose files its write steps left sparse (reads of their holes moved no
        # bytes: 0.61-0.83 from the storage on Kubernetes while this memo outlived its run).
        self.laid_out.clear()

    def run(self, runner: Runner, params: FioParams, repetition: int) -> list[Measurement]:
        labels = params.model_dump(mode="python")
        tag = runner.raw_name(f"fio-{params.target}-{params.rw}-{params.bs}-qd{params.iodepth}-j{params.numjobs}-r{repetition}"
                              + ("" if params.direct or params.target not in FILE_TARGETS else "-buffered")
                              + ("-cached" if params.client_cache else "")
                              + ("" if params.clients == 1 else f"-c{params.clients}"))
        timeout = params.seconds * 3 + params.size * params.numjobs / 20e6 + 120
        servers = runner.tool_servers("fio") if params.target != MACHINE else []
        if servers:
            if params.clients > 1:
                raise WorkloadError(f"fio clients: {params.clients} with fio servers: the servers are the clients "
                                    f"(one job each); leave clients at 1")
            options = dict(rw=params.rw, bs=params.bs, iodepth=params.iodepth, numjobs=params.numjobs,
                           size=params.size, runtime=params.seconds, time_based=True,
                           **target_options(runner, params.target, params.size, params.numjobs, params.direct,
                                           params.iodepth, params.client_cache))
            return run_on_clients(runner, servers, tag, options, self.name, labels, repetition, timeout)
        logs = runner.raw_dir / f"{tag}-bwlog"
        logs.mkdir(parents=True, exist_ok=True)
        if params.clients > 1:
            tools = {node: (self.argv(runner, params, tag, logs / f"bw-{node}", node), f"{tag}-{node}")
                     for node in runner.client_nodes(self.name, params.clients)}
            rows = parse_on_clients(runner.run_at_once(tools, timeout), self.name, labels, repetition)
            rows += parse_bw_log(logs / "bw-", self.name, labels, repetition)  # every node's, per second
        else:
            out = runner.run(self.argv(runner, params, tag, logs / "bw"), tag, timeout=timeout)
            rows = parse_json(out, self.name, labels, repetition) + parse_bw_log(logs / "bw_bw", self.name, labels,
                                                                                  repetition)
        if not rows:
            raise WorkloadError(f"fio reported no I/O; see {runner.raw_dir / tag}.txt")
        return rows

    @staticmethod
    def argv(runner: Runner, params: FioParams, tag: str, bw_log: Path, node: str = "client") -> list[str]:
        """fio's command line for the step on `node` (its JSON+ with the latency histograms when
        several nodes' are merged)."""
        # end_fsync: a file target's writes are timed until they are on the storage, not in the
        # client's cache (a buffered 1 MiB write on ceph-fuse left 7 % of its bytes to cross the
        # wire during the next step without it, byte ledger).
        fsync = {"end_fsync": 1} if params.target in FILE_TARGETS and params.rw not in ("read", "randread") else {}
        return fio_argv(tag, output_format="json" if params.clients == 1 else "json+", rw=params.rw, bs=params.bs,
                        iodepth=params.iodepth, numjobs=params.numjobs, size=params.size, runtime=params.seconds,
                        time_based=True, write_bw_log=str(bw_log), log_avg_msec=1000, **fsync,
                        **({"filename_format": LAID_OUT} if params.target in FILE_TARGETS else {}),
                        **target_options(runner, params.target, params.size, params.numjobs, params.direct,
                                         params.iodepth, params.client_cache, node, files_on(node, params.clients)))

"""Workloads: real tools doing real I/O against a cluster, each one module behind `Workload`.

A workload gets a `Runner` (runs commands on the cluster's client node with the backend's
client config, keeps raw output) and returns `Measurement`s, which become rows of the run's
one normalized result table. To add a workload: a module with a `Workload` subclass,
registered in `WORKLOADS`.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import time
import typing
from abc import ABC, abstractmethod
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..backends.abilities import ClusterElsewhere, ability
from ..registry import load_class

# Where file workloads write: fs is the cluster's POSIX mount (CephFS via ceph-fuse, or the
# GlusterFS volume via its FUSE client; "cephfs" is its older name), machine this machine's own
# disk, outside any cluster (the disk baseline's).
MACHINE = "machine"
FileTarget = Literal["fs", "cephfs", "machine"]
FS_TARGET = Field("fs", description="fs: the cluster's POSIX mount (CephFS or the GlusterFS volume); "
                                    "machine: this machine's own disk, outside any cluster")
# Former names of targets, still accepted in experiment files and read in old runs' rows:
# "local" said where the runtime `local` runs, not this machine's disk.
FORMER_TARGETS = {"local": MACHINE}


def cluster_target(target: str) -> str | None:
    """What a workload target needs of the cluster (a backend's `targets`), None for this machine's disk."""
    return None if target == MACHINE else {"cephfs": "fs"}.get(target, target)


def current_params(params: dict[str, Any]) -> dict[str, Any]:
    """A row's parameters with today's names (a run made before a rename compares with today's)."""
    target = params.get("target")
    return {**params, "target": FORMER_TARGETS[target]} if isinstance(target, str) and target in FORMER_TARGETS else params


# One unit per metric name, whatever the workload (docs/experiments.md, "Numbers you can check"): a `groupby("metric")` over
# results.parquet never mixes seconds and milliseconds. Checked when a row is made.
METRIC_UNITS = [
    (r"(^|_)(latency|clat|slat)_", "ms"),
    (r"(^|_)bandwidth($|_)|^scan_rate$", "MB/s"),
    (r"(^|_)iops($|_)|^ops$|^qps$", "op/s"),
    (r"^time($|_)|(^|_)duration$", "s"),
    (r"(^|_)depth$", "I/Os"),
    (r"(^|_)bytes$", "B"),  # what a tool moved, and the byte ledger's wire and disk counts (dfslab.ledger)
    (r"^from_storage$", "ratio"),
]


def metric_unit(metric: str) -> str | None:
    """The one unit rows of `metric` are in (None: a metric of its own kind, any unit)."""
    return next((unit for pattern, unit in METRIC_UNITS if re.search(pattern, metric)), None)


# A timed phase shorter than this is a burst (a few I/Os, p99 = the maximum, shorter than the
# sampler's second): its rows are marked "too short to time" in results and the report.
MIN_PHASE_SECONDS = 2.0
# A timed write that ran under this share of the seconds it asked for ended early (dfslab.watch).
SHORTFALL = 0.8


@dataclass
class Measurement:
    workload: str
    metric: str
    value: float
    unit: str
    params: dict[str, Any] = field(default_factory=dict)
    repetition: int = 0
    t: float | None = None  # seconds into the run, for per-second samples

    def __post_init__(self) -> None:
        expected = metric_unit(self.metric)
        if expected is not None and self.unit != expected:
            raise ValueError(f"{self.workload} row {self.metric} in {self.unit!r}: every {self.metric} is in {expected}")

    def row(self) -> dict[str, Any]:
        row = asdict(self)
        row["params"] = json.dumps(self.params, sort_keys=True)
        return row


class WorkloadError(RuntimeError):
    """A tool failed; the message names it and where its raw output is."""


# What a tool past its deadline gets after SIGTERM: a Job's wrapper (runtime.kubernetes.job) then
# deletes its Job and waits up to 45 s for the pod to go; SIGKILL at once left the Job running.
END_GRACE = 50.0


def end_process(proc: subprocess.Popen) -> tuple[str, str]:
    """SIGTERM, SIGKILL after END_GRACE; what it printed."""
    proc.terminate()
    try:
        return proc.communicate(timeout=END_GRACE)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate()


@dataclass
class Runner:
    """What a workload may use of a cluster: run a tool on a node, a POSIX mount, a local scratch dir."""

    command: Callable[[str, list[str]], list[str]]  # (node, argv) -> argv wrapped to run there
    env: dict[str, str]
    raw_dir: Path
    mount: Callable[[str], Path] | None = None  # node -> mount point of the filesystem on that node
    scratch: Path | None = None  # a directory on the machine's own disk (baselines, local comparisons)
    addresses: dict[str, str] = field(default_factory=dict)
    nodes: list[str] = field(default_factory=list)
    clients: list[str] = field(default_factory=lambda: ["client"])
    disk_per_node: bool = False  # the nodes' disks are their own (Runtime.disk_per_node)
    # node -> a new second client's mount for a `with` block (Backend.fresh_client); None where
    # every step's Job mounts anew (runtime kubernetes)
    fresh_client: Callable[[str], AbstractContextManager[Path | None]] | None = None
    # The cluster's backend: what only the filesystem knows (Backend.reach, confine,
    # pool_free_bytes). None for work on this machine alone (baselines).
    storage: Any = None
    # prefix -> CPU seconds the cluster's daemons of that name (osd., mds.) have used so far, as
    # this machine sees their processes; None where it cannot (a cluster it did not make).
    daemon_cpu: Callable[[str], float | None] = lambda prefix: None
    # prefix -> bytes those daemons have read from their disks so far (a read served from their
    # cache is not counted); None where this machine cannot see their processes.
    daemon_disk_read: Callable[[str], int | None] = lambda prefix: None
    # The tools of the step now running (`run`, `popen(watched=True)`): what `stop_tools` stops
    # when the cluster can no longer serve the step (dfslab.watch).
    live: set = field(default_factory=set)
    # The experiment's workload entry now running (run.py sets it), and which entry first named
    # each raw file: two entries with the same parameters made the same name, and the second
    # overwrote the first's raw output.
    entry: int = 0
    raw_owners: dict = field(default_factory=dict)
    # Where the filesystem is mounted only in the tools' pods (a Kubernetes you run), the
    # environment variable through which the directories asked for are made there, after the
    # pod's mount and before its tool; None: they are made here, on this machine's mount.
    pod_dirs_env: str | None = None

    @property
    def mount_is_here(self) -> bool:
        """The cluster's POSIX mount is on this machine, where dfslab's own tools (the integrity
        checker) run; not where only the tools' pods mount it."""
        return self.pod_dirs_env is None

    def workdir(self, target: str, subdir: str, node: str = "client") -> Path:
        """A directory a file workload writes in: on the cluster's POSIX mount on `node`
        (target fs) or on this machine's disk (target machine)."""
        if cluster_target(target) == "fs":
            if self.mount is None:
                raise WorkloadError("this cluster offers no POSIX mount (target fs; `dfslab run --dry-run` says what "
                                    "its filesystem needs for one)")
            path = self.mount(node) / subdir
            if self.pod_dirs_env:
                return self._in_pods(path)
        else:
            path = (self.scratch or Path("/tmp")) / subdir
        path.mkdir(parents=True, exist_ok=True)
        return path

    def workdir_at(self, path: str) -> Path:
        """A directory by its path (inside a workdir already made), made if missing."""
        made = Path(path)
        if self.pod_dirs_env and self.mount is not None and any(
                made.is_relative_to(self.mount(c)) for c in self.clients):
            return self._in_pods(made)
        made.mkdir(parents=True, exist_ok=True)
        return made

    def _in_pods(self, path: Path) -> Path:
        """`path` on a mount that only the tools' pods have: each pod makes it (mkdir -p) before
        its tool starts; nothing is made on this machine, where the path is only a name."""
        asked = [d for d in self.env.get(self.pod_dirs_env, "").split(os.pathsep) if d]
        if str(path) not in asked:
            self.env[self.pod_dirs_env] = os.pathsep.join([*asked, str(path)])
        return path

    def tool_servers(self, tool: str) -> list[str]:
        """Hosts running `tool`'s server (e.g. `fio --server`) that its workloads fan out to (external clusters)."""
        elsewhere = ability(self.storage, ClusterElsewhere)
        return elsewhere.tool_servers(tool) if elsewhere else []

    def popen(self, argv: list[str], node: str = "client", watched: bool = False, **kw) -> subprocess.Popen:
        """A process on `node`; `watched`: one of the step's tools (stopped with them; the caller
        takes it out of `live` when it ended), not a server kept across steps."""
        proc = subprocess.Popen(self.command(node, argv), env=self.env, **kw)
        if watched:
            self.live.add(proc)
        return proc

    def run(self, argv: list[str], name: str, node: str = "client", timeout: float = 600, check: bool = True,
            stdin: str | None = None) -> str:
        """Run a tool, keep its output untouched in raw/<name>.txt, return it (check: raise on failure).
        A tool still running at `timeout` is stopped and named: a step never waits on it forever.
        `stdin`: what the tool reads on its standard input."""
        proc = self.popen(argv, node, watched=True, stdin=subprocess.PIPE if stdin is not None else None,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            stdout, stderr = proc.communicate(input=stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            stdout, stderr = end_process(proc)
            path = self.keep(name, argv, stdout, stderr)
            raise WorkloadError(f"`{argv[0]}` was still running at its deadline ({timeout:.0f} s) and was stopped; "
                                f"output so far in {path}") from None
        finally:
            self.live.discard(proc)
        path = self.keep(name, argv, stdout, stderr)
        if proc.returncode != 0 and check:
            raise WorkloadError(f"`{' '.join(argv)}` exited {proc.returncode}; output in {path}: {stderr.strip()[-300:]}")
        return stdout if proc.returncode == 0 else ""

    def client_nodes(self, workload: str, count: int) -> list[str]:
        """The first `count` client nodes, for a step of `workload` on several at once."""
        if count > len(self.clients):
            raise WorkloadError(f"{workload}.clients={count} but the cluster has {len(self.clients)} client node(s); "
                                f"set `clients: {count}` in the cluster spec")
        return self.clients[:count]

    def run_at_once(self, tools: dict[str, tuple[list[str], str]], timeout: float = 600) -> dict[str, str]:
        """One tool on each of several nodes at once (node -> (argv, raw name)), each kept as `run`
        keeps it: their outputs by node. Started together and waited for together; a tool still
        running at `timeout` is stopped with the others; any failure is raised once all ended."""
        procs = {node: self.popen(argv, node, watched=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for node, (argv, _) in tools.items()}
        deadline, outputs, failed = time.monotonic() + timeout, {}, []
        try:
            for node, proc in procs.items():
                argv, name = tools[node]
                try:
                    stdout, stderr = proc.communicate(timeout=max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    stdout, stderr = end_process(proc)
                    failed.append(f"`{argv[0]}` on {node} was still running at its deadline ({timeout:.0f} s) "
                                  f"and was stopped; output so far in {self.keep(name, argv, stdout, stderr)}")
                    continue
                path = self.keep(name, argv, stdout, stderr)
                if proc.returncode != 0:
                    failed.append(f"`{argv[0]}` on {node} exited {proc.returncode}; output in {path}: "
                                  f"{stderr.strip()[-300:]}")
                outputs[node] = stdout
        finally:
            for proc in procs.values():
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
                self.live.discard(proc)
        if failed:
            raise WorkloadError("; ".join(failed))
        return outputs

    def stop_tools(self, grace: float | None = None) -> None:
        """Stop the step's tools: SIGTERM (a Job's wrapper deletes its Job and waits for its pod to
        go, up to 45 s: SIGKILL after 5 s left the Job running until `down`), SIGKILL to what is
        left `grace` s after (END_GRACE), for all of them together."""
        tools = list(self.live)
        for proc in tools:
            if proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + (END_GRACE if grace is None else grace)
        for proc in tools:
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()

    def raw_name(self, name: str) -> str:
        """`name` for the raw files of the entry now running: as given for the first entry to use
        it, with `-e<entry>` for a later entry that makes the same name (a retry within one entry
        keeps the name: its last try stays)."""
        owner = self.raw_owners.setdefault(name, self.entry)
        return name if owner == self.entry else f"{name}-e{self.entry}"

    def keep(self, name: str, argv: list[str], stdout: str, stderr: str) -> Path:
        """raw/<name>.txt is the tool's output untouched; the command and stderr go beside it."""
        self.raw_dir.mkdir(parents=True, exist_ok=True)
        path = self.raw_dir / f"{name}.txt"  # a tool tried again under one name: its last try stays
        path.write_text(stdout)
        (self.raw_dir / f"{name}.cmd").write_text(shlex.join(argv) + "\n")
        if stderr:
            (self.raw_dir / f"{name}.stderr").write_text(stderr)
        return path


class Workload(ABC):
    """One kind of measurement. `Params` validates one combination of an experiment's sweep;
    a list given for a scalar field of `Params` is a sweep axis (every combination runs)."""

    name: str = "?"
    Params: type[BaseModel]
    # What every run needs of the cluster when it has no `target` parameter (e.g. "rados").
    requires: str | None = None
    # Parameters renamed so files, results and reports say one name: former name -> name, both
    # accepted in experiment files (with a one-line notice).
    renamed: dict[str, str] = {}

    @abstractmethod
    def run(self, runner: Runner, params: Any, repetition: int) -> list[Measurement]:
        """Run once with validated `params`; return what was measured."""

    @classmethod
    def from_former(cls, former: str, params: dict[str, Any]) -> dict[str, Any]:
        """An entry's parameters written for this workload's former name `former`, as they are
        called today (most workloads only changed their name)."""
        return params

    # dfslab's own modules its tools run on the clients (`python -m MODULE`): where a runtime's
    # clients cannot run them (Runtime.runs_module), the workload is refused before a run starts.
    workers: tuple[str, ...] = ()

    @classmethod
    def cluster_targets(cls) -> dict[str, str]:
        """Every target of a cluster this workload can run against, by the parameter that picks it
        ("target=rbd"; "" where none does): its `target` parameter's choices (this machine's disk
        left out), else what it `requires`."""
        field = cls.Params.model_fields.get("target")
        if field is None:
            return {"": cls.requires} if cls.requires else {}
        choices = dict.fromkeys(t for t in map(cluster_target, typing.get_args(field.annotation)) if t)
        return {f"target={t}": t for t in choices}

    def needs(self, params: Any) -> str | None:
        """What this run needs of the cluster (see Backend.targets_for): its target's, else `requires`."""
        target = getattr(params, "target", None)
        return cluster_target(target) if target else self.requires

    def estimate(self, params: Any) -> float:
        """Seconds one run is expected to take (for ETA and the time budget)."""
        return float(getattr(params, "seconds", 10)) + 5

    def streams(self, params: Any) -> bool:
        """Whether the run's tools move data over the client's links all the time they run (so a
        minute with next to nothing moved means they are stuck: dfslab.watch). Metadata and SQL
        load move little; a target on this machine's own disk moves nothing on the wire."""
        return False

    def asked_bytes(self, params: Any) -> int | None:
        """Bytes each direction of a sized run must move (a file size x its writers), or None where
        the run is timed or bounds itself."""
        return None

    def shortfall(self, params: Any, rows: list[Measurement]) -> str | None:
        """Why the step ran short of what it asked, or None: a timed write that ended early (the
        pool filled, the tool's own error) or a sized run that moved fewer bytes than asked is a
        failure, not a number. Timed reads may end early (rados bench's seq reads what write left)."""
        sized = self.asked_bytes(params)
        if sized:
            for way in ("write", "read"):
                moved = [r.value for r in rows if r.metric == "bytes" and r.t is None and direction(r.params) == way]
                if moved and sum(moved) < sized:
                    return (f"asked to {way} {sized:,} bytes, the tool reported {sum(moved):,.0f}: it ended early "
                            f"(its output in raw/ says why; a full pool or device is the usual cause)")
        asked = getattr(params, "seconds", None)
        if not asked or any(r.metric == "cap_reached" for r in rows):  # bounded on purpose: marked, not failed
            return None
        ran = [r.value for r in rows if r.metric == "duration" and r.t is None and direction(r.params) == "write"]
        if ran and min(ran) < SHORTFALL * asked:
            return (f"asked for {asked:g} s of writes, the tool ran {min(ran):.2f} s: it ended early (its output "
                    f"in raw/ says why; a full pool or device is the usual cause)")
        return None

    def not_as_asked(self, params: Any, rows: list[Measurement]) -> str | None:
        """Why a step that ran and was measured did not run as asked (None: it did): bounded on
        purpose by dfslab (a write stopped at its object cap), its numbers kept but not the ones
        the user asked for. The step is marked, listed first in the report, and the run exits 1."""
        return None

    def headlines(self, rows: list[Measurement]) -> list[Measurement]:
        """The figures a bottleneck line is about: throughput, one per direction/phase."""
        return [r for r in rows if r.metric == "bandwidth" and r.t is None]

    def writes(self, params: Any) -> int | None:
        """Bytes one run leaves on the cluster at most while it runs (for `--dry-run`); None: not
        known ahead (the workload bounds itself)."""
        return None

    def host_problems(self, params: Any) -> list[tuple[str, str]]:
        """(field, why) for what this machine's own devices refuse of `params` (e.g. O_DIRECT
        sizes its disk's logical block does not divide), found before anything starts."""
        return []

    def prepare(self, runner: Runner, params: Any) -> None:
        """Set-up a run needs that is not part of what it measures (an RBD image written end to
        end once): done before the step's byte ledger starts counting. Default: none."""

    def finish(self, runner: Runner) -> None:
        """Called once after each run's last step: stop what the workload kept running and forget
        what it made in the run's cluster (the object serves the next run of a sweep too)."""


def direction(params: dict[str, Any]) -> str:
    """Whether a measurement moved data to storage ("write") or from it ("read")."""
    op = str(params.get("op") or params.get("mode") or params.get("rw") or "")
    return "write" if "write" in op else "read"


class WorkloadParams(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True)

    @field_validator("target", mode="before", check_fields=False)
    @classmethod
    def _current_target(cls, value: Any) -> Any:
        return FORMER_TARGETS.get(value, value) if isinstance(value, str) else value


WORKLOADS = {
    "radosbench": "dfslab.workloads.radosbench:RadosBench",
    "fio": "dfslab.workloads.fio:Fio",
    "filegrid": "dfslab.workloads.filegrid:FileGrid",
    "metadata": "dfslab.workloads.metadata:Metadata",
    "sql": "dfslab.workloads.sql:Sql",
    "parallel": "dfslab.workloads.parallel:ParallelIO",
    "servers": "dfslab.workloads.servers:ServerScaling",
    "pushdown": "dfslab.workloads.pushdown:Pushdown",
    "s3": "dfslab.workloads.s3:S3",
}


# Former names, still accepted in experiment files (with a one-line notice) and in old runs.
FORMER_NAMES = {"iozone": "filegrid", "mdtest": "metadata", "scaling": "servers"}


def current_name(name: str) -> str:
    """A workload's name today, given it or its former name."""
    return FORMER_NAMES.get(name, name)


def workload(name: str) -> Workload:
    name = current_name(name)
    if name not in WORKLOADS:
        raise KeyError(f"unknown workload {name!r}; known: {', '.join(sorted(WORKLOADS))}")
    return load_class(WORKLOADS[name])()

"""What every runtime is: the `Runtime` interface and its error, the client node's name and the
run directory's variable. Runtimes import this, not the package, whose registry picks among them."""

from __future__ import annotations

import os
import signal
import subprocess
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Callable

from ..procs import ProcessTable, TrackedProcess, proc_io, terminate
from ..spec import ClusterSpec
from ..state import ClusterState
from .roots import SoftwareRoot

# (node, argv, timeout) -> (exit code, stdout, stderr) of argv run on node; TimeoutError past timeout.
Reader = Callable[[str, list[str], float], tuple[int, str, str]]


def command_reader(command: Callable[[str, list[str]], list[str]]) -> Reader:
    """A Reader that runs `command(node, argv)` (argv wrapped to run on node) as a process here."""
    def read(node: str, argv: list[str], timeout: float) -> tuple[int, str, str]:
        try:
            res = subprocess.run(command(node, argv), capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"no answer in {timeout:.0f} s") from None
        return res.returncode, res.stdout, res.stderr
    return read

CLIENT = "client"
_UNREAD = object()  # Runtime.software_root not read from the state yet
# Set for a workload's tools: the run directory they write their output into. A runtime whose
# tools run elsewhere (kubernetes: in a pod) makes it visible there at the same path.
RUN_DIR_ENV = "DFSLAB_RUN_DIR"
# Directories a workload asked for on a mount that is not on this machine (`mounts_here` False):
# the client Jobs make them in their pods once the filesystem is mounted there (os.pathsep-joined).
POD_DIRS_ENV = "DFSLAB_POD_DIRS"


class RuntimeError_(RuntimeError):
    """A runtime cannot do what the spec asks; the message says why and what to change."""


class Runtime(ABC):
    kind: str = "?"
    network_per_node: bool = False  # each node its own network stack (ports do not clash across nodes)
    # Each node writes to a disk of its own (a Kubernetes you run); else every node's data is on
    # this machine's one disk, and the disk baseline measures that disk once.
    disk_per_node: bool = False
    # The client nodes' links carry only the clients' traffic, counted by reading /proc/net/dev
    # through `command` (dfslab.ledger): not where every daemon shares one `lo` (loopback), nor
    # where the client node also carries Kubernetes' control plane.
    client_wire_counted: bool = False
    # The filesystem's client mounts are on this machine (a workload's directories are made here);
    # False: only in the client Jobs' pods on nodes this machine does not reach (POD_DIRS_ENV).
    mounts_here: bool = True
    # Report figures of this runtime's own processes' sampler series, as a backend's charts
    # ({match, unit, title, faults_only}): what the runtime itself costs beside the workload.
    charts: tuple[dict[str, Any], ...] = ()
    # Names of the processes that are the platform itself, not the storage or the workload (a
    # regular expression over sampled process names): the sampler sums their CPU as `cpu.platform`
    # and the report puts it beside every step. None: nothing of the kind runs here.
    platform: str | None = None

    # -- what this runtime can do ------------------------------------------------
    # Declared here, read by the spec's checks, preflight refusals, the dry run, the fault kinds
    # and `dfslab capabilities` alike: no module outside runtime/ asks for a runtime's name.
    where: str = "?"  # how messages name a cluster on it: "runtime local", "a Kubernetes you run"
    starts_nodes: bool = True  # False: nothing is started (a cluster you run, reached from here)
    # A filesystem deploys here only through an engine of its own (its package's ENGINES, under
    # this runtime's spec name: Rook on Kubernetes), not through dfslab's own daemons' modules.
    engine_deploys: bool = False
    # Where the workloads' tools run (an experiment's `client:`), the default first: host, in the
    # client node on this machine; job, a Kubernetes Job each.
    client_kinds: tuple[str, ...] = ("host",)
    # The storage daemons are pods' containers: a signal reaches them through their pod, and
    # their kubelet, not dfslab, starts them again.
    daemons_in_pods: bool = False
    # dfslab runs the machines the nodes are (their kubelets, links, processes): node, link and
    # node-loss faults can be injected and undone from here.
    owns_machines: bool = True
    # Each node's address lies in the spec's network.subnet (a filesystem may bind its public
    # network to it); elsewhere the runtime hands out addresses of its own.
    nodes_on_subnet: bool = False
    # Each node has a link of its own (a veth pair dfslab made: `link_ends`), to shape and to cut.
    links: bool = False
    # Without links of its own, the network of dfslab's daemon pods on a node is cut or capped where
    # they are (`cut_pod_networks`: a Kubernetes you run, through dfslab's fault agent).
    pod_networks: bool = False
    # Starts a release's daemons and clients from the release's root (dfslab.runtime.roots):
    # a filesystem release other than this machine's own runs only where this is True.
    software_roots: bool = False
    # Runs a release's daemons from an image made of its root (its clients too, where they run in
    # pods), though not the clients of another release or an upgrade in place (software_roots).
    release_images: bool = False
    one_host: bool = True  # every node's CPUs, disk and memory are this machine's
    deploy_seconds: float = 30.0  # a small cluster's deploy, as measured here (the dry run's estimate)
    debian_groups: tuple[str, ...] = ()  # groups of debian-packages.txt it needs on first use
    builds: tuple[str, ...] = ()  # one-time builds before first use (deps.BUILDS)
    # The kind of cluster `dfslab capabilities` names for this runtime, and the spec fields of the
    # sample it is judged on (a filesystem's SAMPLES add their sections); None: not a kind of its own.
    capability_kind: str | None = None
    sample: dict[str, Any] = {}
    # Why the ledger cannot count the client's bytes where `client_wire_counted` is False.
    uncounted_why: str = "every node shares one interface"

    @classmethod
    def for_spec(cls, spec: ClusterSpec) -> type["Runtime"]:
        """The runtime class a cluster of `spec` gets (kubernetes: the local one or yours)."""
        return cls

    @classmethod
    def check_spec(cls, spec: ClusterSpec) -> None:
        """What a spec on this runtime must hold beyond its fields (ValueError naming the field)."""

    @classmethod
    def runs_module(cls, module: str) -> bool:
        """Whether dfslab's own module `module` (a worker: the s3 load, the integrity writer and
        read-back) can run where this runtime's clients are: here, wherever dfslab is."""
        return True

    @classmethod
    def client_refusal(cls, asked: str) -> str:
        """Why a workload's tools cannot run as `asked` (a `client:` not in client_kinds)."""
        return "Jobs are Kubernetes': the tools run in the client node's namespace here"

    def __init__(self, state: ClusterState):
        self.state = state
        self.procs = ProcessTable(state)
        self._software_root: Any = _UNREAD  # software_root(), read from the state once
        self._client_root: Any = _UNREAD  # the client nodes and their root, where they run another release
        # How the filesystem's daemons in pods are named (its Backend.daemon_of_process and
        # daemon_of_pod, given by cluster.attach): a runtime runs pods, the filesystem knows
        # which of their processes are its daemons. Until then, none is.
        self.daemon_of_process: Callable[[list[str], str], str | None] = lambda argv, node: None
        self.daemon_of_pod: Callable[[dict[str, str], str], str | None] = lambda labels, node: None
        # The filesystem's admin CLIs (Backend.admin_tools), which a runtime of Jobs runs on its
        # control path rather than as Jobs.
        self.admin_tools: frozenset[str] = frozenset()

    def sampled_processes(self) -> list[TrackedProcess]:
        """What the resource sampler watches: the processes dfslab started."""
        return self.procs.all()

    def disk_counters(self, clients: list[str]) -> Callable[[], dict[str, tuple[int, int]]]:
        """What the byte ledger reads of the servers' disks: {daemon: (read, written)} bytes at
        the block layer so far, of every process dfslab sees on a node that is not a client
        (/proc/PID/io: O_DIRECT BlueStore, bricks)."""
        def read() -> dict[str, tuple[int, int]]:
            return {f"{p.name}@{p.pid}": io for p in self.sampled_processes()
                    if p.node not in clients and p.alive() and (io := proc_io(p.pid)) is not None}
        return read

    def resource_sampler(self) -> Callable[[], dict[str, tuple[float, str]]] | None:
        """Where this machine cannot see the daemons' processes: a function that samples them
        another way (series as the sampler names them), made once per run; None here."""
        return None

    # -- lifecycle --------------------------------------------------------------
    @abstractmethod
    def preflight(self, spec: ClusterSpec) -> None:
        """Refuse what this runtime cannot do, before anything is created."""

    @abstractmethod
    def create(self, spec: ClusterSpec) -> dict[str, str]:
        """Make the nodes and the client; return {node: address} (the client included)."""

    @abstractmethod
    def destroy(self) -> list[str]:
        """Remove everything `create` made, from the state directory alone. Idempotent."""

    @abstractmethod
    def leftovers(self) -> list[str]:
        """What of this runtime's resources still exists (for tests and `down` checks)."""

    # -- running things ---------------------------------------------------------
    @classmethod
    def counts_wire(cls, clients: list[str], often: bool = False) -> bool:
        """Whether the byte ledger can read the links of `clients`; `often`: for the step watch's
        looks every 2 s, where only a cheap read will do."""
        return cls.client_wire_counted

    def wire_reader(self, clients: list[str], often: bool = False) -> Reader | None:
        """How the byte ledger runs its read of the link counters on each of `clients` (None: not
        counted here): by default `command` wrapped, in a process of its own."""
        return command_reader(self.command) if self.counts_wire(clients, often) else None

    @abstractmethod
    def command(self, node: str, argv: list[str]) -> list[str]:
        """`argv` wrapped so that it runs on `node`."""

    def job_command(self, node: str, argv: list[str]) -> list[str]:
        """`argv` wrapped so that a workload's tool runs on `node` the way this runtime runs work
        (runtime kubernetes: as a Job); control commands use `command`."""
        return self.command(node, argv)

    def run(self, node: str, argv: list[str], timeout: float = 120, check: bool = True, **kw) -> subprocess.CompletedProcess:
        return subprocess.run(self.command(node, argv), capture_output=True, text=True, timeout=timeout, check=check, **kw)

    def spawn(self, name: str, node: str, argv: list[str], env: dict[str, str] | None = None, meta: dict | None = None) -> TrackedProcess:
        """Start a daemon on `node`, tracked as `name`; meta keeps the unwrapped argv to start it again."""
        return self.procs.spawn(name, node, self.command(node, argv), env, self.spawn_meta(node, argv, meta))

    def spawn_meta(self, node: str, argv: list[str], meta: dict | None) -> dict:
        """What is recorded with a daemon: its node's address and its unwrapped argv (to start it again)."""
        return {**(meta or {}), "address": self.address(node), "cmd": list(argv)}

    def in_daemon(self, proc: TrackedProcess, argv: list[str]) -> list[str]:
        """argv run in the filesystem view of a daemon (its mount namespace: its private /run, ...)."""
        return ["nsenter", f"--mount=/proc/{proc.pid}/ns/mnt", *argv]

    def marked_on(self, node: str) -> list[int]:
        """PIDs carrying this cluster's mark that run on `node` (none where nodes share the host's network)."""
        return []

    def host_pid(self, node: str, pid: int) -> int | None:
        """The host's PID of a process a daemon on `node` reports by its own PID (the same here)."""
        return pid

    def signal_process(self, proc: TrackedProcess, sig: int, grace: float = 30) -> None:
        """kill -9 (SIGKILL) or stop gracefully (anything else: the signal, then SIGKILL after grace)."""
        if sig == signal.SIGKILL:
            if proc.alive():
                os.kill(proc.pid, signal.SIGKILL)
        else:
            terminate([proc.pid], {proc.pid: proc.start_time}, grace)

    def counter_window(self, node: str) -> str | None:
        """Where a node's link counters are read through a process inside it and the node may have
        none (a client between mounts): start an idle one and return its tracked name (stop it with
        `procs.stop`; `down` stops it too). None where the runtime samples nodes another way."""
        return None

    def prepare(self, spec: ClusterSpec, progress) -> None:
        """Long one-time work before `create` (building images), with progress. Default: none."""

    def reshape(self, spec: ClusterSpec) -> list[str] | None:
        """Re-cap every link to `spec`'s shaping while the cluster runs: what changed (read back),
        or None when this runtime cannot (then a changed shaping needs a fresh cluster)."""
        return None

    def link_ends(self, node: str) -> list[tuple[str, str]]:
        """(named network namespace, device) at each end of `node`'s link, the switch side first:
        where tc caps it and where a cut pulls the cable."""
        links = self.state.read().get("links", {})
        if node not in links:
            if not links:
                raise RuntimeError_(f"runtime {self.kind} has no links of its own to shape or cut")
            raise RuntimeError_(f"no node {node!r}; nodes: {', '.join(links)}")
        return [tuple(end) for end in links[node]]

    @property
    def client_mounts(self) -> Path:
        """Where the filesystem's clients mount it on this machine (under the cluster's state)."""
        return self.state.dir / "mnt"

    def install_release(self, release: Any, clients: list[str], progress) -> None:
        """`release`'s software on the server nodes, as a package upgrade on each server would put
        it: a daemon started from now on runs it, a running one keeps what it runs until its
        restart; the client nodes `clients` keep the software they run (a rolling upgrade)."""
        raise RuntimeError_(f"{self.where} runs this machine's own software only: a release cannot be "
                            "installed into its nodes (runtimes local and docker can)")

    def signal_container(self, pod: Any, container_id: str, sig: int) -> int:
        """Send `sig` to every process of a daemon's container (`container_id`, as the pod's
        status names it) of `pod`, a pod of dfslab's; how many processes got it. Only where the
        daemons are pods' containers (daemons_in_pods)."""
        raise RuntimeError_(f"{self.where} runs no daemon in a pod's container")

    def cut_pod_networks(self, node: str, pods: list[tuple[Any, str]]) -> dict[str, Any]:
        """Cut the network of `pods` ((pod, container ID): dfslab's daemons on Kubernetes node
        `node`) both ways, nothing else of the node's; what was done. Only where `pod_networks`."""
        raise RuntimeError_(f"{self.where} cuts its nodes' links, not its pods' networks")

    def cap_pod_networks(self, node: str, pods: list[tuple[Any, str]], rate_bps: int) -> dict[str, Any]:
        """Cap what `pods` send at `rate_bps`; what was done. Only where `pod_networks`."""
        raise RuntimeError_(f"{self.where} shapes its nodes' links, not its pods' networks")

    def heal_pod_networks(self, node: str, kind: str) -> None:
        """Undo the `kind` (partition, degrade) of dfslab's on `node`, whatever was recorded of it."""
        raise RuntimeError_(f"{self.where} cuts and shapes its nodes' links, not its pods' networks")

    def software_root(self) -> SoftwareRoot | None:
        """The release root this cluster's programs run from (None: this machine's own software).
        Read from the cluster's state once, not at every command: `prepare` records it (and sets
        it here) before the first daemon starts; only `install_release` changes it later."""
        if self._software_root is _UNREAD:
            self._software_root = SoftwareRoot.from_json(self.state.read().get("software_root"))
        return self._software_root

    def software_root_for(self, node: str) -> SoftwareRoot | None:
        """The root `node`'s programs run from: on a client node of a cluster whose clients run
        another release than its servers (`client_release:`), that release's (None: this machine's
        own software); on every other node the cluster's (`software_root`)."""
        if self._client_root is _UNREAD:
            recorded = self.state.read().get("client_root")
            self._client_root = (None if recorded is None else
                                 (frozenset(recorded["nodes"]), SoftwareRoot.from_json(recorded["root"])))
        if self._client_root is not None and node in self._client_root[0]:
            return self._client_root[1]
        return self.software_root()

    def address(self, node: str) -> str:
        return self.state.read().get("addresses", {}).get(node, "")

"""What runs: a filesystem backend deploys its daemons through a `Runtime`, waits for
health, and answers for its cluster. To add a filesystem: a package under `backends/` (see
`dfslab/registry.py`) and its line in `registry.FILESYSTEMS`; nothing else changes.

This module stays light (no runtime or spec import at load): the spec imports the
filesystems' sections from their packages, which pass through here.
"""

from __future__ import annotations

import shutil
from abc import ABC, abstractmethod
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping

from ..registry import TARGETS, Reach, backend_class_of  # noqa: F401 (TARGETS: re-exported)

if TYPE_CHECKING:
    from ..runtime import Runtime
    from ..spec import ClusterSpec

# progress(step, detail): backends report what they are doing; the CLI decides how to show it.
Progress = Callable[[str, str], None]



def drop_page_cache() -> bool:
    """The kernel's page cache, dentries and inodes (this machine's: every local node shares its
    kernel); False where this process may not."""
    try:
        with open("/proc/sys/vm/drop_caches", "w") as fh:
            fh.write("3\n")
    except OSError:
        return False
    return True

class BackendError(RuntimeError):
    """A backend step failed; the message names the daemon and its log."""


class PreflightError(BackendError):
    """The machine cannot hold this cluster; nothing was made. The message says what to change."""


FRESH = "fresh"  # the instance name of a second, new client of a filesystem (Backend.fresh_client)


@dataclass(frozen=True)
class Confinement:
    """Storage a backend built on some servers only, for the `servers` workload: an object
    pool (`pool`) or a mounted file system (`path`), and what it spans (e.g. {"osds": 2})."""

    pool: str | None = None
    path: Path | None = None
    spans: dict[str, int] | None = None


@dataclass(frozen=True)
class PodSelector:
    """The pods that run one of a filesystem's daemons on runtime kubernetes (`fault pod`)."""

    labels: str  # a label selector
    node: str | None = None  # where the labels name only the kind of daemon: the node it runs on
    grace: int = 0  # seconds a deleted pod gets to stop; 0 is as kill -9


@dataclass(frozen=True)
class Chart:
    """A report figure of the backend's own sampler series (names matching `match`)."""

    match: str  # a regular expression on whole series names
    unit: str
    title: str
    faults_only: bool = False  # only worth a figure in a run with faults

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Facts:
    """What a filesystem is, as data (as fio keeps an engine's flags apart from its ops): what the
    layers above read of every filesystem alike, before or without a cluster. A fact only one
    filesystem has, or only one layer needs, belongs in that filesystem's package instead."""

    # Every target `targets_for` may offer (a key of TARGETS), with what the spec needs for it.
    offers: Mapping[str, str] = field(default_factory=dict)
    # Figures of this backend's sampler series in every run's report.
    charts: tuple[Chart, ...] = ()
    # What a user runs to look at the cluster (`dfslab exec NAME -- ...`).
    peek: str = "df -h"
    # Programs deploy needs on this machine (checked before anything is made).
    required_programs: tuple[str, ...] = ()
    # Directories below the cluster's state dir (globs) worth keeping when a bring-up fails.
    log_dirs: tuple[str, ...] = ("logs",)
    # Seconds from a fault's undo until such a cluster is healthy again, as measured here: the
    # dry run's estimate of a fault's recovery wait (the wait itself is bounded by
    # integrity.recovery_timeout).
    typical_recovery_seconds: float = 10.0
    # The recovery wait when the experiment sets none (integrity.recovery_timeout): past it a
    # fault is reported "not recovered" and the run fails.
    recovery_timeout_seconds: float = 180.0
    # Where a file system's metadata work goes (creates, stats, unlinks): the daemons that serve it
    # (a regular expression over daemon names) and how the report says it; None: no such server.
    metadata_servers: str | None = None
    metadata_path: str = ""
    # Where its client acknowledges a write before the servers hold it, even under O_DIRECT (the
    # report says it beside the write rows: their latency is the client's); "" where it does not.
    client_write_ack: str = ""
    # Fault kinds of another filesystem that work here too (through the same client tools).
    borrowed_faults: tuple[str, ...] = ()
    # Its admin CLIs: on a runtime of Jobs they take the control path (this machine, or a toolbox
    # pod) rather than a Job each.
    admin_tools: frozenset[str] = frozenset()


def release_versions(spec: ClusterSpec | None, key: str, argv: list[str]) -> dict[str, str]:
    """{key: what `argv` prints of its version} as a cluster of `spec` runs it (its release's root,
    if it has one), and which release that is; this machine's own without a spec."""
    from ..procs import tool_version
    from ..registry import release_of
    from ..runtime.roots import release_argv
    if spec is None:
        return {key: tool_version(argv)}
    release = release_of(spec)
    return {key: tool_version(release_argv(spec, argv)), **({"release": f"release {release.name}"} if release else {})}


def table(title: str, columns: list[str], rows: list[list[Any]]) -> dict[str, Any]:
    """One table of a status, rendered alike by `dfslab status` and the report."""
    return {"title": title, "columns": columns, "rows": [["-" if c is None else str(c) for c in r] for r in rows]}


class Backend(ABC):
    """One filesystem. Its `status()` is one JSON-able dict that the CLI (`status`, `status
    --json`) and the report all render; besides the filesystem's own keys it has `health`
    (HEALTH_OK / HEALTH_WARN / ...), `summary` (lines), `tables` (see `table`) and
    `write_amplification` (bytes stored per byte written). `sample()` includes
    `<name>.degraded` (0 or 1): how fault runs tell that the backend noticed a fault."""

    name: str = "?"
    facts: Facts = Facts()

    @classmethod
    def targets_for(cls, spec: ClusterSpec) -> frozenset[str]:
        """What workloads can run against on such a cluster: fs (a POSIX mount), rados
        (pools), rbd (images), gfapi (libgfapi), confine (storage on some servers only)."""
        return frozenset()

    @classmethod
    def refusal(cls, spec: ClusterSpec) -> str | None:
        """Why a cluster of `spec` cannot be had at all, from the spec alone (None: it can):
        what this filesystem does not do on that kind of cluster, whatever the machine."""
        return None

    @classmethod
    def target_refusal(cls, spec: ClusterSpec, target: str) -> str:
        """Why a cluster of `spec` does not offer `target` (one `targets_for` leaves out)."""
        from ..registry import runtime_of
        says = TARGETS[target].says if target in TARGETS else target
        offers = cls.facts.offers
        if target not in offers:
            return f"{cls.name} does not offer {says}"
        if offers[target]:
            return f"{says}: needs {offers[target]}"
        return f"{says}: not on {runtime_of(spec).where}"

    @classmethod
    def refuse_if_refused(cls, spec: ClusterSpec) -> None:
        """PreflightError with `refusal`'s reason, if it has one."""
        refused = cls.refusal(spec)
        if refused:
            raise PreflightError(refused)

    @classmethod
    def preflight(cls, spec: ClusterSpec) -> None:
        """Refuse, before anything is made, a cluster this machine cannot hold."""
        cls.refuse_if_refused(spec)
        missing = [t for t in cls.facts.required_programs if shutil.which(t) is None]
        if missing:
            raise PreflightError(f"missing tools {missing}; run `make install-deps` (scripts/install-deps.sh) as root")

    @classmethod
    def usable_bytes(cls, spec: ClusterSpec) -> int | None:
        """What such a cluster can hold of user data (after replication), from its spec alone, for
        `dfslab run --dry-run`; None where the spec does not say (a cluster you run)."""
        return None

    @classmethod
    def versions(cls, spec: ClusterSpec | None = None) -> dict[str, str]:
        """Versions of the filesystem's software (on this machine, or the cluster's), for provenance."""
        return {}

    # What `fault pod` takes on this filesystem (examples for its errors), where its daemons are pods.
    pod_daemons: str = ""

    @classmethod
    def pod_selector(cls, target: str) -> PodSelector | None:
        """The pods that run daemon `target` on runtime kubernetes; None if it names none of ours."""
        return None

    @classmethod
    def daemon_of_process(cls, argv: list[str], node: str) -> str | None:
        """The name one of this filesystem's daemons goes by (as on the local runtime: osd.0,
        glusterd.node1), from the command line of a process a pod runs on `node`; None if not ours."""
        return None

    @classmethod
    def daemon_of_pod(cls, labels: dict[str, str]) -> str | None:
        """The same from a pod's labels, where only the API server sees the pods (a Kubernetes you run)."""
        return None

    @classmethod
    def pod_identity(cls, labels: dict[str, str]) -> dict[str, str]:
        """The labels that find the pod that replaces one with `labels` (after a drain or a node's
        loss): its app label by default; {} for a pod nothing makes again."""
        return {"app": labels["app"]} if "app" in labels else {}

    @classmethod
    def daemon_names(cls, spec: ClusterSpec) -> list[str] | None:
        """The daemons a cluster of `spec` will have, by the names faults take (osd.0, mon.a,
        glusterd.node1), so a fault's target is checked before a run starts; None where the spec
        does not tell (a cluster you run, an engine that names its own)."""
        return None

    @classmethod
    def refuses_faults(cls, spec: ClusterSpec, kind: str) -> str | None:
        """Why fault `kind` may not be injected into such a cluster (None: it may)."""
        return None

    @classmethod
    def manifests(cls, spec: ClusterSpec, image: str | None,
                  progress: Progress = lambda *_: None) -> dict[str, list[dict]]:
        """`dfslab render`: the Kubernetes objects this filesystem needs on a cluster you run,
        as {file stem: objects}, in the order they are applied. `image`: dfslab's image as your
        nodes pull it (None: the spec's kubernetes.image)."""
        raise BackendError(f"filesystem {spec.filesystem} (runtime {spec.runtime}) has no Kubernetes manifests: render "
                           "writes them for filesystem ceph with runtime kubernetes and kubernetes.kubeconfig "
                           "(Rook's objects), and for filesystem external with external.posix (a fio server "
                           "DaemonSet mounting your Lustre, GPFS, BeeGFS or NFS path)")

    def __init__(self, runtime: Runtime, spec: ClusterSpec):
        self.runtime = runtime
        self.spec = spec
        self.state = runtime.state

    @abstractmethod
    def deploy(self, progress: Progress, timeout: float) -> None:
        """Create and start every daemon, then wait until the cluster is healthy."""

    @abstractmethod
    def status(self) -> dict[str, Any]:
        """health, summary, tables, write_amplification, plus the filesystem's own keys."""

    @classmethod
    def watches(cls, spec: ClusterSpec) -> bool:
        """Whether this backend reads a cluster of `spec`'s health into `alarms` (so a step's watch can stop it)."""
        return cls.alarms is not Backend.alarms

    def alarms(self) -> list[str]:
        """What would make a client's I/O wait forever, as this backend's latest `sample` saw it
        (a full OSD, monitors that stopped answering), one line each; [] when nothing (dfslab.watch)."""
        return []

    def warnings(self) -> list[str]:
        """What a step should say it ran under but that blocks no client yet (a nearfull OSD), as
        the latest `sample` saw it; [] when nothing."""
        return []

    def space_detail(self, runner: Any) -> str | None:
        """What fills the storage, for a step stopped by a full device (data vs metadata)."""
        return None

    @abstractmethod
    def healthy(self) -> bool:
        """Fully recovered: healthy and every placement of data complete (faults wait on it)."""

    def mount(self, node: str) -> Path:
        """A POSIX mount of the filesystem on `node` (made on first use, undone by `down`)."""
        raise BackendError(f"{self.name} has no POSIX mount")

    @contextmanager
    def fresh_client(self, node: str) -> Iterator[Path | None]:
        """A second client of the filesystem on `node`, new for the `with` block, for a read that
        must reach the servers: a FUSE client keeps file data in its own process (ceph-fuse's
        object cacher, glusterfs' io-cache), which drop_caches does not empty. None: this
        filesystem's mount caches only in the kernel (drop_caches is enough)."""
        mnt = self.mount_instance(node, FRESH)
        try:
            yield mnt
        finally:
            if mnt is not None:
                self.unmount_instance(node, FRESH)

    def mount_instance(self, node: str, instance: str) -> Path | None:
        """Another client of the filesystem on `node`, named `instance`, beside `mount`'s (None:
        this filesystem has no client of dfslab's own)."""
        return None

    def unmount_instance(self, node: str, instance: str) -> None:
        """Undo `mount_instance`."""

    def client_wire_visible(self) -> bool:
        """Whether the clients' traffic to this storage crosses the links the byte ledger reads
        (False: a step's wire is "not counted" rather than a share of 0)."""
        return True

    def client_env(self) -> dict[str, str]:
        """Environment for the backend's tools run on the client node."""
        return {}

    @abstractmethod
    def sample(self) -> dict[str, tuple[float, str]]:
        """The backend's own health as time-series values {series: (value, unit)}, for the
        sampler; `<name>.degraded` among them."""

    def enable_metrics(self) -> str | None:
        """Turn on the filesystem's own metrics exporter, if it has one; say where it is."""
        return None

    # Optional (target "confine"): `confine(runner, nodes, pgs)`, a context manager giving a
    # `Confinement` on `nodes` only, removed afterwards (throughput vs number of servers).
    confine: Callable[..., AbstractContextManager[Confinement]] | None = None

    def apply_live(self, new: ClusterSpec) -> list[str] | None:
        """Change the running cluster to spec `new` in place, if the filesystem can: the changes
        made (each read back), or None when `new` needs a fresh cluster (the default)."""
        return None

    def release(self) -> list[str]:
        """Before teardown: remove what dfslab made on storage it does not own (the cluster's own
        daemons and data go with the runtime). Returns what could not be removed, and why."""
        return []

    def bench_pool(self, requested: str | None) -> str:
        """The object pool a benchmark writes to when it names `requested` (None: the default)."""
        raise BackendError(f"{self.name} has no object pools")

    # Endpoints a spec lists on machines dfslab does not run (external clusters): a tool's servers
    # there (fio's, which fio workloads fan out to; iperf3's, which the network baseline
    # measures), Prometheus URLs.
    def tool_servers(self, tool: str) -> list[str]:
        """HOST[:PORT] of each server of `tool` (its program's name) the spec lists; none here."""
        return []

    def scrape_urls(self) -> list[str]:
        return []

    def scrape_sources(self) -> dict[str, Callable[[], str]]:
        """Prometheus endpoints reached another way than a URL from here: name -> fetch its text."""
        return {}

    def disk_baseline_dir(self) -> Path | None:
        """Where the disk baseline runs fio (None: this machine's scratch disk)."""
        return None

    def drop_server_caches(self, runner: Any) -> str:
        """Empty the storage servers' caches before a step (experiment `server_cache: drop`), as
        cbt drops caches on servers before reads: the kernel's page cache where the servers share
        this machine's kernel (bricks, file-backed stores). Returns what was dropped."""
        drop_page_cache()
        return "page cache"

    def pool_free_bytes(self, runner: Any, pool: str) -> int:
        """Bytes an object pool may still take (backends with object pools)."""
        raise BackendError(f"{self.name} has no object pools")

    def new_bucket(self) -> str:
        """A new bucket's name for one use of target s3 (its user makes it and removes it at the end)."""
        import secrets
        return f"dfslab-s3-{secrets.token_hex(4)}"

    def integrity_store(self, target: str) -> str | None:
        """Where the fault runs' checksummed data goes on `target`, as a STORE of
        dfslab.chaos.integrity (`TARGET:WHERE`): a directory on the client's POSIX mount, a new
        bucket through the S3 gateway, else (an object target) the benchmark pool."""
        if target == "fs":
            return f"fs:{self.mount('client') / 'dfslab-integrity'}"
        if target == "s3":
            s3 = self.reach(None, "s3", 0)
            return f"s3:{s3.bucket},{s3.endpoints[0]},{s3.keys},{s3.region}"
        return f"{target}:{self.bench_pool(None)}"

    def reach(self, runner: Any, target: str, size_bytes: int, client_cache: bool | None = None) -> Reach:
        """How a tool reaches one of this backend's own targets (not fs), as data (registry's
        descriptions; each tool maps them to its engine), made ready for `size_bytes` of I/O, with
        the client library's write-back cache on or off where it has one (librbd's)."""
        raise BackendError(f"{self.name} offers no target {target!r} here")

    def grow(self, count: int, progress: Progress, timeout: float = 1800) -> dict[str, Any]:
        """Grow the file system by `count` storage units and rebalance onto them."""
        raise BackendError(f"{self.name} cannot be grown by dfslab yet (dfslab scale is for GlusterFS)")

    def on_node(self, node: str, argv: list[str]) -> list[str]:
        """argv as a user's command on `node` should run (e.g. inside a daemon's mount namespace)."""
        return argv

    def client_pid(self) -> int | None:
        """A process of ours on the client node (its network counters are the client's)."""
        return None

    def close(self) -> None:
        """Release client-side handles (not the cluster)."""


def backend_class(spec: ClusterSpec) -> type[Backend]:
    return backend_class_of(spec.filesystem, spec.runtime)


def backend_for(spec: ClusterSpec, runtime: Runtime) -> Backend:
    return backend_class(spec)(runtime, spec)


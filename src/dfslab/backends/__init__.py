"""What runs: a filesystem backend deploys its daemons through a `Runtime`, waits for
health, and answers for its cluster. To add a filesystem: a package under `backends/` (see
`dfslab/registry.py`) and its line in `registry.FILESYSTEMS`; nothing else changes.

This module stays light (no runtime or spec import at load): the spec imports the
filesystems' sections from their packages, which pass through here.
"""

from __future__ import annotations

import shutil
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from ..registry import TARGETS, Reach, backend_class_of  # noqa: F401 (TARGETS: re-exported)
from .abilities import FRESH, Confinement, PodSelector, Progress, ability  # noqa: F401 (re-exported)
from .abilities import A, OpenHandles

if TYPE_CHECKING:
    from ..runtime import Runtime
    from ..spec import ClusterSpec


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
    from ..registry import client_release_of, mixed_releases, release_of
    from ..runtime.roots import release_argv
    if spec is None:
        return {key: tool_version(argv)}
    release, client = release_of(spec), client_release_of(spec)
    found = {key: tool_version(release_argv(spec, argv)), **({"release": f"release {release.name}"} if release else {})}
    if mixed_releases(spec):  # the clients' own, as the client nodes run them
        found.update({f"{key} (clients)": tool_version(release_argv(spec, argv, client)),
                      "client release": f"release {client.name}"})
    return found


def table(title: str, columns: list[str], rows: list[list[Any]]) -> dict[str, Any]:
    """One table of a status, rendered alike by `dfslab status` and the report."""
    return {"title": title, "columns": columns, "rows": [["-" if c is None else str(c) for c in r] for r in rows]}


class Backend(ABC):
    """One filesystem's lifecycle: what every filesystem does (deploy, status, healthy, sample,
    mount, reach, release, close), what a spec of it would be (targets_for, daemon_names, versions,
    refusals), and its `facts` (a frozen record). What only some filesystems can do is an ability
    they choose (dfslab.backends.abilities), asked for by ability.

    Its `status()` is one JSON-able dict that the CLI (`status`, `status --json`) and the report
    all render; besides the filesystem's own keys it has `health` (HEALTH_OK / HEALTH_WARN / ...),
    `summary` (lines), `tables` (see `table`) and `write_amplification` (bytes stored per byte
    written). `sample()` includes `<name>.degraded` (0 or 1): how fault runs tell that the
    backend noticed a fault."""

    name: str = "?"
    facts: Facts = Facts()

    # What a cluster of a spec would be, before anything is made.

    @classmethod
    def targets_for(cls, spec: ClusterSpec) -> frozenset[str]:
        """What workloads can run against on such a cluster: fs (a POSIX mount), rados
        (pools), rbd (images), gfapi (libgfapi), confine (storage on some servers only)."""
        return frozenset()

    @classmethod
    def daemon_names(cls, spec: ClusterSpec) -> list[str] | None:
        """The daemons a cluster of `spec` will have, by the names faults take (osd.0, mon.a,
        glusterd.node1), so a fault's target is checked before a run starts; None where the spec
        does not tell (a cluster you run, an engine that names its own)."""
        return None

    @classmethod
    def versions(cls, spec: ClusterSpec | None = None) -> dict[str, str]:
        """Versions of the filesystem's software (on this machine, or the cluster's), for provenance."""
        return {}

    @classmethod
    def refusal(cls, spec: ClusterSpec, target: str | None = None, fault: str | None = None) -> str | None:
        """Why a cluster of `spec` cannot be had at all (None: it can), from the spec alone: what
        this filesystem does not do on that kind of cluster, whatever the machine. With `target`
        (one `targets_for` leaves out): why it does not offer that. With `fault`: why that fault
        kind may not be injected into it (None: it may)."""
        if target is not None:
            return target_refusal(cls, spec, target)
        return None

    @classmethod
    def preflight(cls, spec: ClusterSpec) -> None:
        """Refuse, before anything is made, a cluster this machine cannot hold (PreflightError)."""
        refused = cls.refusal(spec)
        if refused:
            raise PreflightError(refused)
        missing = [t for t in cls.facts.required_programs if shutil.which(t) is None]
        if missing:
            raise PreflightError(f"missing tools {missing}; run `make install-deps` (scripts/install-deps.sh) as root")

    # The cluster's life.

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

    @abstractmethod
    def healthy(self) -> bool:
        """Fully recovered: healthy and every placement of data complete (faults wait on it)."""

    @abstractmethod
    def sample(self) -> dict[str, tuple[float, str]]:
        """The backend's own health as time-series values {series: (value, unit)}, for the
        sampler; `<name>.degraded` among them."""

    def mount(self, node: str) -> Path:
        """A POSIX mount of the filesystem on `node` (made on first use, undone by `down`)."""
        raise BackendError(f"{self.name} has no POSIX mount")

    def release(self) -> list[str]:
        """Before teardown: remove what dfslab made on storage it does not own (the cluster's own
        daemons and data go with the runtime). Returns what could not be removed, and why."""
        return []



def target_refusal(backend: type[Backend], spec: ClusterSpec, target: str) -> str:
    """Why a cluster of `spec` does not offer `target`, from what its filesystem's facts say it
    offers and needs: the default of `Backend.refusal(spec, target=...)`."""
    from ..registry import runtime_of
    says = TARGETS[target].says if target in TARGETS else target
    offers = backend.facts.offers
    if target not in offers:
        return f"{backend.name} does not offer {says}"
    if offers[target]:
        return f"{says}: needs {offers[target]}"
    return f"{says}: not on {runtime_of(spec).where}"


def close_handles(backend: Any) -> None:
    """Let go of what `backend` holds open in this process (not the cluster), where it holds anything."""
    if held := ability(backend, OpenHandles):
        held.close()


def require(backend: Any, kind: type[A]) -> A:
    """`backend` as one with ability `kind`, or a BackendError naming what it lacks."""
    found = ability(backend, kind)
    if found is None:
        raise BackendError(f"{getattr(backend, 'name', backend)} has no {getattr(kind, 'says', kind.__name__)}")
    return found


def new_bucket() -> str:
    """A new bucket's name for one use of target s3 (its user makes it and removes it at the end)."""
    import secrets
    return f"dfslab-s3-{secrets.token_hex(4)}"


def backend_class(spec: ClusterSpec) -> type[Backend]:
    return backend_class_of(spec.filesystem, spec.runtime)


def backend_for(spec: ClusterSpec, runtime: Runtime) -> Backend:
    return backend_class(spec)(runtime, spec)


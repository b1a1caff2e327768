"""What a filesystem may choose to be able to do, beyond its lifecycle (`Backend`): one small
interface per ability, as IOR keeps one table of operations per API. A backend has an ability by
deriving from it; the layers above ask for the ability, never for a filesystem
(`ability(backend, ObjectPools)`), and say what they do without it.

To give a filesystem an ability: derive its Backend from the class below and implement its
abstract methods. A new kind of ability is a class here, asked for where it is used.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, TypeVar

if TYPE_CHECKING:
    from ..spec import ClusterSpec

A = TypeVar("A")

# progress(step, detail): backends report what they are doing; the CLI decides how to show it.
Progress = Callable[[str, str], None]

FRESH = "fresh"  # the instance name of a second, new client of a filesystem (SecondClients.fresh_client)


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


def ability(backend: Any, kind: type[A]) -> A | None:
    """`backend` (a Backend or its class) as one that has ability `kind`; None if it chose not to
    (or there is no backend)."""
    if backend is None:
        return None
    cls = backend if isinstance(backend, type) else type(backend)
    return backend if issubclass(cls, kind) else None  # type: ignore[return-value]


class ToolTargets(ABC):
    """Targets beyond a POSIX mount (objects, images, a client library, S3), which tools reach
    from a description as data (registry's: ObjectPool, BlockImage, VolumeLibrary, S3Endpoint),
    each tool mapping them to its own engine."""

    says = "targets beyond a POSIX mount"

    @abstractmethod
    def reach(self, runner: Any, target: str, size_bytes: int, client_cache: bool | None = None) -> Any:
        """How a tool reaches `target`, made ready for `size_bytes` of I/O, with the client
        library's write-back cache on or off where it has one (librbd's)."""


class OpenHandles(ABC):
    """Connections of its own this process holds to the cluster (an admin session), let go of when
    a command is done with the cluster (backends.close_handles)."""

    says = "connections held open"

    @abstractmethod
    def close(self) -> None:
        """Release client-side handles (not the cluster)."""


class ObjectPools(ABC):
    """Pools of objects a benchmark writes to (target rados: rados bench, fio's engine, pushdown)."""

    says = "object pools"

    @abstractmethod
    def bench_pool(self, requested: str | None) -> str:
        """The object pool a benchmark writes to when it names `requested` (None: the default)."""

    @abstractmethod
    def pool_free_bytes(self, runner: Any, pool: str) -> int:
        """Bytes an object pool may still take."""


class Grows(ABC):
    """More storage units while it runs, rebalanced onto (`dfslab scale`)."""

    says = "growth by dfslab (dfslab scale)"

    @abstractmethod
    def grow(self, count: int, progress: Progress, timeout: float = 1800) -> dict[str, Any]:
        """Grow the file system by `count` storage units and rebalance onto them."""


class LiveSettings(ABC):
    """Settings changed in the running cluster (a sweep that needs no fresh cluster)."""

    says = "settings changed in place"

    @abstractmethod
    def apply_live(self, new: ClusterSpec) -> list[str] | None:
        """Change the running cluster to spec `new` in place: the changes made (each read back), or
        None when `new` needs a fresh cluster."""


class ConfinedStorage(ABC):
    """Storage built on some servers only (target confine: the `servers` workload's throughput
    against the number of servers)."""

    says = "storage built on some servers only"

    @abstractmethod
    def confine(self, runner: Any, nodes: list[str], pgs: int) -> AbstractContextManager[Confinement]:
        """A `Confinement` on `nodes` only for the `with` block, removed afterwards."""


class SecondClients(ABC):
    """Clients of the filesystem of dfslab's own beside the mount (FUSE clients), for a read that
    must reach the servers: a FUSE client keeps file data in its own process (ceph-fuse's object
    cacher, glusterfs' io-cache), which drop_caches does not empty."""

    says = "clients of dfslab's own beside the mount"

    @abstractmethod
    def mount_instance(self, node: str, instance: str) -> Path:
        """Another client of the filesystem on `node`, named `instance`, beside `mount`'s."""

    @abstractmethod
    def unmount_instance(self, node: str, instance: str) -> None:
        """Undo `mount_instance`."""

    @contextmanager
    def fresh_client(self, node: str) -> Iterator[Path]:
        """A second client on `node`, new for the `with` block."""
        mnt = self.mount_instance(node, FRESH)
        try:
            yield mnt
        finally:
            self.unmount_instance(node, FRESH)


class HealthAlarms(ABC):
    """Health read into alarms a step's watch stops a tool on (dfslab.watch)."""

    says = "health alarms"

    @abstractmethod
    def alarms(self) -> list[str]:
        """What would make a client's I/O wait forever, as the latest `sample` saw it (a full OSD,
        monitors that stopped answering), one line each; [] when nothing."""

    def warnings(self) -> list[str]:
        """What a step should say it ran under but that blocks no client yet (a nearfull OSD)."""
        return []

    def space_detail(self, runner: Any) -> str | None:
        """What fills the storage, for a step stopped by a full device (data vs metadata)."""
        return None

    @classmethod
    def watches(cls, spec: ClusterSpec) -> bool:
        """Whether a cluster of `spec` has its health read into `alarms` (one you run may not)."""
        return True


class ClientSetup(ABC):
    """What the filesystem's own tools on the client need: environment, a process to count the
    client's network by, a wrapper for a user's command on a node."""

    says = "client setup"

    def client_env(self) -> dict[str, str]:
        """Environment for the backend's tools run on the client node."""
        return {}

    def client_pid(self) -> int | None:
        """A process of ours on the client node (its network counters are the client's)."""
        return None

    def on_node(self, node: str, argv: list[str]) -> list[str]:
        """argv as a user's command on `node` should run (e.g. inside a daemon's mount namespace)."""
        return argv

    def checker_sees_mount(self) -> bool:
        """Where the POSIX mount is only in the tools' pods (a Kubernetes you run): whether the pod
        dfslab's own tools run in (the integrity checker's toolbox) holds it too, at `mount`'s path."""
        return False


class RollingUpgrade(ABC):
    """A running cluster moved to a newer release of its filesystem daemon by daemon, in the order
    its project documents (chaos/upgrade.py does the moving: the release installed on the server
    nodes, each group stopped, started again from it, waited for; the clients keep theirs)."""

    says = "a rolling upgrade"

    @classmethod
    def upgrade_problem(cls, spec: ClusterSpec, current: str, target: str) -> str | None:
        """Why a cluster of `spec`, on release `current`, cannot be upgraded to `target` in place
        (None: it can); the generic checks (a known, newer release) come first."""
        return None

    def before_upgrade(self, upgraded: "ClusterSpec") -> list[str]:
        """What to do once the new release is on the servers, before the first restart (`upgraded`:
        the cluster's spec as it will be); what was done, one line each."""
        return []

    @abstractmethod
    def upgrade_groups(self) -> list[list[str]]:
        """The daemons' tracked names in the documented order, each group restarted together."""

    def may_stop(self, names: list[str]) -> bool:
        """Whether stopping `names` now keeps the data available (asked until True)."""
        return True

    def stop_started(self, names: list[str]) -> None:
        """Once `names` are stopped, stop what they started themselves (dfslab tracks only `names`),
        so that it too comes back on the new release: a glusterd's bricks outlive it."""

    def started_again(self, names: list[str]) -> list[str]:
        """Once `names` run again on the new release, what they need before they are waited for (a
        glusterd that its peers reject must rejoin them); what was done, one line each."""
        return []

    @abstractmethod
    def upgraded(self, names: list[str], version: str) -> bool:
        """Whether `names` are back, serving, on `version`."""

    def after_upgrade(self, release: str, completed: bool) -> list[str]:
        """What to do after the last group (`completed`) or a failed one: undo before_upgrade's
        flags, and where every daemon runs `release`, what the project says comes last."""
        return []


class ServerCaches(ABC):
    """Caches of its own on the storage servers, emptied before a step (experiment `server_cache:
    drop`) beyond the kernel's page cache, which every cluster on this machine's kernel drops."""

    says = "server caches of its own"

    @abstractmethod
    def drop_server_caches(self, runner: Any) -> str:
        """Empty them; return what was dropped."""


class CapacityPlan(ABC):
    """What a cluster can hold, known from its spec (the dry run's `usable`)."""

    says = "a capacity known from its spec"

    @classmethod
    @abstractmethod
    def usable_bytes(cls, spec: ClusterSpec) -> int | None:
        """What such a cluster can hold of user data (after replication)."""


class Metrics(ABC):
    """Metrics of the filesystem's own, sampled beside dfslab's: an exporter it turns on,
    Prometheus URLs, or endpoints reached another way than a URL from here."""

    says = "metrics of its own"

    def enable_metrics(self) -> str | None:
        """Turn on the filesystem's own metrics exporter; say where it is."""
        return None

    def scrape_urls(self) -> list[str]:
        return []

    def scrape_sources(self) -> dict[str, Callable[[], str]]:
        """name -> fetch a Prometheus text exposition."""
        return {}


class ClusterElsewhere(ABC):
    """Storage on machines dfslab does not run (a cluster you run): its tools' servers there, where
    the disk baseline runs, whether this machine's links carry the clients' traffic."""

    says = "storage on machines dfslab does not run"

    @abstractmethod
    def tool_servers(self, tool: str) -> list[str]:
        """HOST[:PORT] of each server of `tool` (its program's name) the spec lists: fio's, which fio
        workloads fan out to; iperf3's, which the network baseline measures."""

    @abstractmethod
    def disk_baseline_dir(self) -> Path | None:
        """Where the disk baseline runs fio (None: this machine's scratch disk)."""

    @abstractmethod
    def client_wire_visible(self) -> bool:
        """Whether the clients' traffic crosses the links the byte ledger reads (False: a step's
        wire is "not counted" rather than a share of 0)."""


class PodsOnKubernetes(ABC):
    """Daemons that run as pods (its engine on runtime kubernetes): which pods `fault pod` deletes,
    how the sampler names a pod's processes and pods, which pod replaces a drained one."""

    says = "daemons in pods"

    # What `fault pod` takes on this filesystem (examples for its errors).
    pod_daemons: str = ""

    @classmethod
    @abstractmethod
    def pod_selector(cls, target: str) -> PodSelector | None:
        """The pods that run daemon `target`; None if it names none of ours."""

    @classmethod
    @abstractmethod
    def daemon_of_process(cls, argv: list[str], node: str) -> str | None:
        """The name one of its daemons goes by (as on the local runtime: osd.0, glusterd.node1),
        from the command line of a process a pod runs on `node`; None if not ours."""

    @classmethod
    def daemon_of_pod(cls, labels: dict[str, str], node: str = "") -> str | None:
        """The same from a pod's labels and its Kubernetes node, where only the API server sees the
        pods (a Kubernetes you run)."""
        return None

    @classmethod
    def pod_identity(cls, labels: dict[str, str]) -> dict[str, str]:
        """The labels that find the pod that replaces one with `labels` (after a drain or a node's
        loss): its app label by default; {} for a pod nothing makes again."""
        return {"app": labels["app"]} if "app" in labels else {}


class KubernetesManifests(ABC):
    """`dfslab render`: the Kubernetes objects it needs on a cluster you run."""

    says = "Kubernetes manifests for a cluster you run"

    @classmethod
    @abstractmethod
    def manifests(cls, spec: ClusterSpec, image: str | None,
                  progress: Progress = lambda *_: None) -> dict[str, list[dict]]:
        """{file stem: objects}, in the order they are applied. `image`: dfslab's image as your
        nodes pull it (None: the spec's kubernetes.image)."""


def client_setup(backend: Any) -> ClientSetup:
    """Its ClientSetup, or the defaults (no environment, no process of its own, argv as given)."""
    return ability(backend, ClientSetup) or ClientSetup()


def metrics_of(backend: Any) -> Metrics:
    """Its Metrics, or none (no exporter, nothing to scrape)."""
    return ability(backend, Metrics) or Metrics()

"""What runs: a filesystem backend deploys its daemons through a `Runtime`, waits for
health, and reports status. To add a filesystem (gluster, external): implement `Backend`
in a new module or package and register it in `BACKENDS`; nothing else changes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from importlib import import_module
from pathlib import Path
from typing import Any, Callable

from ..runtime import Runtime
from ..spec import ClusterSpec

# progress(step, detail): backends report what they are doing; the CLI decides how to show it.
Progress = Callable[[str, str], None]


class BackendError(RuntimeError):
    """A backend step failed; the message names the daemon and its log."""


class Backend(ABC):
    name: str = "?"
    @classmethod
    def targets_for(cls, spec: ClusterSpec) -> frozenset[str]:
        """What workloads can run against on such a cluster: fs (a POSIX mount), rados
        (pools), rbd (images), gfapi (libgfapi)."""
        return frozenset()

    def __init__(self, runtime: Runtime, spec: ClusterSpec):
        self.runtime = runtime
        self.spec = spec
        self.state = runtime.state

    @abstractmethod
    def deploy(self, progress: Progress, timeout: float) -> None:
        """Create and start every daemon, then wait until the cluster is healthy."""

    @abstractmethod
    def status(self) -> dict[str, Any]:
        """Health, daemons, pools, PG states: a JSON-able dict."""

    def mount(self, node: str) -> Path:
        """A POSIX mount of the filesystem on `node` (made on first use, undone by `down`)."""
        raise BackendError(f"{self.name} has no POSIX mount")

    def client_env(self) -> dict[str, str]:
        """Environment for the backend's tools run on the client node."""
        return {}

    def sample(self) -> dict[str, tuple[float, str]]:
        """The backend's own health as time-series values {series: (value, unit)}, for the sampler."""
        return {}

    def healthy(self) -> bool:
        """Fully recovered: healthy and every placement of data complete."""
        return True

    def enable_metrics(self) -> str | None:
        """Turn on the filesystem's own metrics exporter, if it has one; say where it is."""
        return None

    # Optional: `confined(nodes)`, a context manager giving a POSIX mount of a file system
    # built on `nodes` only (scaling with the number of servers). None: not offered.
    confined: Callable[[list[str]], Any] | None = None

    def add_bricks(self, count: int, progress: Progress, timeout: float = 1800) -> dict[str, Any]:
        """Grow the file system by `count` storage units and rebalance onto them."""
        raise BackendError(f"{self.name} cannot be grown by dfslab yet (dfslab scale is for GlusterFS)")

    def on_node(self, node: str, argv: list[str]) -> list[str]:
        """argv as a user's command on `node` should run (e.g. inside a daemon's mount namespace)."""
        return argv

    def client_info(self) -> dict[str, Any]:
        """What a workload needs to name the cluster to its tools (e.g. a GlusterFS volume)."""
        return {}

    def client_pid(self) -> int | None:
        """A process of ours on the client node (its network counters are the client's)."""
        return None

    def close(self) -> None:
        """Release client-side handles (not the cluster)."""


BACKENDS = {
    "ceph": "dfslab.backends.ceph:CephBackend",
    "gluster": "dfslab.backends.gluster:GlusterBackend",
}


def backend_class(spec: ClusterSpec) -> type[Backend]:
    module, _, cls = BACKENDS[spec.filesystem].partition(":")
    return getattr(import_module(module), cls)


def backend_for(spec: ClusterSpec, runtime: Runtime) -> Backend:
    return backend_class(spec)(runtime, spec)

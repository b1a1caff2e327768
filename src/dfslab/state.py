"""One state directory per cluster: the only source of truth for teardown.

Everything dfslab creates (namespaces, processes, mounts) is written here *before* it is
created, so `dfslab down` can undo a cluster even after dfslab itself was killed -9.
Layout: ``$DFSLAB_HOME/clusters/<name>/`` with ``state.json``, ``pids/``, ``logs/``,
``conf/``, ``run/`` (admin sockets) and ``data/`` (OSD block files, MON stores).
"""

from __future__ import annotations

import fcntl
import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from .safety import check_name, remove_owned_tree


def dfslab_home() -> Path:
    return Path(os.environ.get("DFSLAB_HOME", "/var/lib/dfslab"))


def clusters_root() -> Path:
    return dfslab_home() / "clusters"


class ClusterState:
    def __init__(self, name: str):
        # The name becomes a path below: it is checked before anything is joined onto it.
        self.name = check_name(name, "cluster")
        self.dir = clusters_root() / name

    # -- layout -----------------------------------------------------------------
    @property
    def file(self) -> Path:
        return self.dir / "state.json"

    def sub(self, *parts: str) -> Path:
        path = self.dir.joinpath(*parts)
        path.mkdir(parents=True, exist_ok=True)
        return path

    @property
    def pids_dir(self) -> Path:
        return self.sub("pids")

    @property
    def logs_dir(self) -> Path:
        return self.sub("logs")

    def exists(self) -> bool:
        # A directory planted as a symlink is never a cluster's, whatever it holds.
        return not self.dir.is_symlink() and self.file.is_file()

    # -- state.json ---------------------------------------------------------------
    def create(self, initial: dict[str, Any]) -> None:
        # 0700: the directory holds cephx keyrings; state.json follows at once, so the
        # directory is never there without the record that makes it dfslab's.
        clusters_root().mkdir(parents=True, exist_ok=True, mode=0o700)
        self.dir.mkdir(exist_ok=False, mode=0o700)
        self._write(initial)

    def read(self) -> dict[str, Any]:
        try:
            return json.loads(self.file.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return {}

    def _write(self, data: dict[str, Any]) -> None:
        tmp = self.file.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True))
        os.replace(tmp, self.file)

    @contextmanager
    def locked(self) -> Iterator[None]:
        lock = self.dir / ".lock"
        with open(lock, "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def update(self, **changes: Any) -> dict[str, Any]:
        with self.locked():
            data = self.read()
            data.update(changes)
            self._write(data)
            return data

    def add_resource(self, kind: str, value: Any) -> None:
        """Record a resource (netns, mount, ...) before it is created."""
        with self.locked():
            data = self.read()
            items = data.setdefault("resources", {}).setdefault(kind, [])
            if value not in items:
                items.append(value)
            self._write(data)

    def resources(self, kind: str) -> list[Any]:
        return list(self.read().get("resources", {}).get(kind, []))

    def remove_resource(self, kind: str, value: Any) -> None:
        if not self.exists():  # `down` of a cluster whose state is already gone
            return
        with self.locked():
            data = self.read()
            items = data.get("resources", {}).get(kind, [])
            if value in items:
                items.remove(value)
                self._write(data)

    def destroy(self) -> bool:
        """Remove the state directory: only a real directory inside the clusters root that holds
        this cluster's state.json (anything else raises safety.UnsafeRemoval, touching nothing)."""
        if not self.dir.exists() and not self.dir.is_symlink():
            return False
        recorded = self.read().get("name") == self.name if self.file.is_file() and not self.file.is_symlink() else False
        return remove_owned_tree(self.dir, [clusters_root()], f"state.json of cluster {self.name}" if recorded else "")


def list_clusters() -> list[str]:
    root = clusters_root()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir()
                  if valid_name(p.name) and not p.is_symlink() and (p / "state.json").is_file())


def cluster_holding(path: str | os.PathLike) -> str | None:
    """The dfslab cluster whose state directory `path` lies in (a kubeconfig of the local
    Kubernetes dfslab started), or None for a path of the user's own."""
    try:
        rel = Path(os.path.abspath(path)).relative_to(clusters_root())
    except ValueError:
        return None
    return rel.parts[0] if len(rel.parts) > 1 and valid_name(rel.parts[0]) else None


def teardown_order(names: list[str]) -> list[str]:
    """Clusters that run on another cluster's Kubernetes go before it: once that Kubernetes is
    down, what they made there is gone with it and cannot be checked any more."""
    def host(name: str) -> str | None:
        try:
            kubeconfig = ClusterState(name).read().get("spec", {}).get("kubernetes", {}).get("kubeconfig")
        except (OSError, ValueError, AttributeError):
            return None
        return cluster_holding(kubeconfig) if kubeconfig else None
    return sorted(names, key=lambda n: host(n) is None)


def valid_name(name: str) -> bool:
    try:
        check_name(name, "cluster")
        return True
    except ValueError:
        return False

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
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator


def dfslab_home() -> Path:
    return Path(os.environ.get("DFSLAB_HOME", "/var/lib/dfslab"))


def clusters_root() -> Path:
    return dfslab_home() / "clusters"


class ClusterState:
    def __init__(self, name: str):
        self.name = name
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
        return self.file.exists()

    # -- state.json ---------------------------------------------------------------
    def create(self, initial: dict[str, Any]) -> None:
        self.dir.mkdir(parents=True, exist_ok=False)
        self._write(initial)

    def read(self) -> dict[str, Any]:
        try:
            return json.loads(self.file.read_text())
        except FileNotFoundError:
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

    def destroy(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def list_clusters() -> list[str]:
    root = clusters_root()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / "state.json").exists())

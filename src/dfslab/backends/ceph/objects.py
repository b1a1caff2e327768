"""RADOS objects for dfslab's own clients (the integrity store) through the client's librados.

Where the client runs this machine's Ceph, librados in this process; where it runs a release's
root, helper.py in that root's Python (the command the backend's client environment names in
OWN_PYTHON), since this Python's librados cannot use a newer release's keys (Tentacle's AES-256).
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import threading
from pathlib import Path

from . import helper

# The client environment's name for the command that runs the release's Python on the client
# node (a JSON list), set by the backend where the client runs a release's root.
OWN_PYTHON = "DFSLAB_CEPH_PYTHON"


def release_python(runtime, node: str) -> list[str] | None:
    """The Python of the release's root `node` runs, if it runs one with its own librados (by its
    path, not PATH's python3: a venv's bin may come first); None: this machine's."""
    root = runtime.software_root_for(node)
    return ["/usr/bin/python3"] if root is not None and "/usr/bin/python3" in root.programs else None


class ObjectError(OSError):
    """librados refused or failed an object operation in the helper (errno as librados gave it)."""


class ObjectNotFound(ObjectError):
    pass


class HelperPool:
    """One pool's objects through helper.py (write_full, read, remove_object: librados' IoCtx names)."""

    def __init__(self, pool: str, python: list[str], **conf: str):
        self.pool = pool
        self._lock = threading.Lock()
        self._proc = subprocess.Popen([*python, "-c", Path(helper.__file__).read_text(), "--from-env",
                                       *(f"{k}={v}" for k, v in conf.items())],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        ready = self._proc.stdout.readline()
        if not ready:
            raise ObjectError(f"the release's librados client did not connect (exit {self._proc.wait()})")

    def _ask(self, op: str, name: str, **args) -> dict:
        with self._lock:
            self._proc.stdin.write(json.dumps({"op": op, "pool": self.pool, "name": name, **args}) + "\n")
            self._proc.stdin.flush()
            line = self._proc.stdout.readline()
        if not line:
            raise ObjectError(f"the release's librados client exited during {op} {name}")
        reply = json.loads(line)
        if reply["ret"] == -2:
            raise ObjectNotFound(2, reply.get("err", ""), name)
        if reply["ret"] != 0:
            raise ObjectError(-reply["ret"], reply.get("err", ""), name)
        return reply

    def write_full(self, name: str, data: bytes) -> None:
        self._ask("write_full", name, data=base64.b64encode(data).decode())

    def read(self, name: str, length: int) -> bytes:
        return base64.b64decode(self._ask("read", name, length=length)["data"])

    def remove_object(self, name: str) -> None:
        self._ask("remove", name)

    def close(self) -> None:
        self._proc.stdin.close()
        self._proc.wait()


def open_pool(pool: str, **conf: str):
    """(the pool's objects, the errors they raise, the one meaning "no such object", a closer)."""
    python = os.environ.get(OWN_PYTHON)
    if python:
        objects = HelperPool(pool, json.loads(python), **conf)
        return objects, (ObjectError,), ObjectNotFound, objects.close
    import rados
    cluster = helper.connect_from_env(**conf)
    ioctx = cluster.open_ioctx(pool)

    def close() -> None:
        ioctx.close()
        cluster.shutdown()
    return ioctx, (rados.Error,), rados.ObjectNotFound, close

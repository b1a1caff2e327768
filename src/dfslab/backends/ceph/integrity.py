"""Ceph's integrity store: the fault runs' checksummed objects as RADOS objects (target rados),
opened by dfslab.chaos.integrity through the target table (dfslab.registry.TARGETS)."""

from __future__ import annotations

from .objects import open_pool


class RadosStore:
    """RADOS objects: write_full returns once every replica has the object (atomic)."""

    def __init__(self, pool: str, op_timeout: float = 0):
        # op_timeout 0: a write waits as long as Ceph needs (an ack is a promise, however late).
        self.ioctx, self.errors, self._not_found, self._close = open_pool(
            pool, rados_osd_op_timeout=str(int(op_timeout)))

    def put(self, name: str, data: bytes) -> None:
        self.ioctx.write_full(name, data)

    def get(self, name: str, size: int) -> bytes:
        return self.ioctx.read(name, length=size + 1)

    def remove_all(self, names: set[str]) -> None:
        """The objects (the pool is the cluster's benchmark pool: it stays)."""
        for name in names:
            try:
                self.ioctx.remove_object(name)
            except self._not_found:
                pass

    def close(self) -> None:
        self._close()

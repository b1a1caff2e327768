"""Clients of the cluster: CephFS mounted with ceph-fuse on a node (the kernel client is
not available here)."""

from __future__ import annotations

from pathlib import Path

from .. import BackendError
from ..fuse import fuse_mount
from .context import DAEMON_ENV, CephContext


def mount_cephfs(ctx: CephContext, node: str, timeout: float = 60) -> Path:
    if not ctx.spec.ceph.cephfs:
        raise BackendError("this cluster has no CephFS; set ceph.cephfs: true in the spec")
    mnt = ctx.layout.root.parent / "mnt" / f"cephfs-{node}"
    argv = ["ceph-fuse", "-f", "-c", str(ctx.layout.conf), "-n", "client.admin", "-k", str(ctx.layout.admin_keyring), str(mnt)]
    return fuse_mount(ctx.runtime, f"ceph-fuse.{node}", node, argv, mnt, env=DAEMON_ENV, timeout=timeout)

"""Clients of the cluster: CephFS mounted with ceph-fuse on a node (the kernel client is
not available here)."""

from __future__ import annotations

from pathlib import Path

from .. import BackendError
from ..fuse import fuse_mount, fuse_unmount
from .context import DAEMON_ENV, CephContext


def mount_point(ctx: CephContext, node: str, instance: str = "") -> tuple[str, Path]:
    """(client process name, mount point) of CephFS on `node`; `instance` names a second client."""
    suffix = f"{node}.{instance}" if instance else node
    return f"ceph-fuse.{suffix}", ctx.layout.root.parent / "mnt" / f"cephfs-{suffix}"


def mount_cephfs(ctx: CephContext, node: str, timeout: float = 60, instance: str = "") -> Path:
    if not ctx.spec.ceph.cephfs:
        raise BackendError("this cluster has no CephFS; set ceph.cephfs: true in the spec")
    name, mnt = mount_point(ctx, node, instance)
    argv = ["ceph-fuse", "-f", "-c", str(ctx.layout.conf), "-n", "client.admin", "-k", str(ctx.layout.admin_keyring), str(mnt)]
    return fuse_mount(ctx.runtime, name, node, argv, mnt, env=DAEMON_ENV, timeout=timeout)


def unmount_cephfs(ctx: CephContext, node: str, instance: str = "") -> None:
    fuse_unmount(ctx.runtime, *mount_point(ctx, node, instance))

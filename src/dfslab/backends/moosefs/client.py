"""The MooseFS FUSE client (`mfsmount`) on a node: it asks the master for metadata and reads and
writes chunks on the chunk servers directly."""

from __future__ import annotations

from pathlib import Path

from ..fuse import fuse_mount, fuse_unmount
from .context import MATOCL_PORT, MooseContext


def mount_point(ctx: MooseContext, node: str, instance: str = "") -> tuple[str, Path]:
    """(client process name, mount point) on `node`; `instance` names a second client."""
    suffix = f"{node}.{instance}" if instance else node
    return f"mfsmount.{suffix}", ctx.root.parent / "mnt" / f"moosefs-{suffix}"


def mount(ctx: MooseContext, node: str, instance: str = "", timeout: float = 60) -> Path:
    name, mnt = mount_point(ctx, node, instance)
    argv = ["mfsmount", "-f", str(mnt), "-H", ctx.master_address, "-P", str(MATOCL_PORT),
            "-o", f"mfswritecachesize={ctx.spec.moosefs.write_cache // 2**20}"]
    return fuse_mount(ctx.runtime, name, node, argv, mnt, timeout=timeout)


def unmount(ctx: MooseContext, node: str, instance: str = "") -> None:
    name, mnt = mount_point(ctx, node, instance)
    fuse_unmount(ctx.runtime, name, mnt)

"""The GlusterFS FUSE client on a node: every server is a volfile server, so the mount
survives losing the first one."""

from __future__ import annotations

from pathlib import Path

from ..fuse import fuse_mount, fuse_unmount
from .glusterd import GlusterContext
from .volume import VOLUME


def mount_point(ctx: GlusterContext, node: str, volume: str = VOLUME, instance: str = "") -> tuple[str, Path]:
    """(client process name, mount point) of `volume` on `node`; `instance` names a second client."""
    suffix = node if volume == VOLUME else f"{volume}-{node}"
    suffix = f"{suffix}.{instance}" if instance else suffix
    return f"glusterfs.{suffix}", ctx.root.parent / "mnt" / f"gluster-{suffix}"


def mount_volume(ctx: GlusterContext, node: str, volume: str = VOLUME, timeout: float = 60,
                 instance: str = "") -> Path:
    name, mnt = mount_point(ctx, node, volume, instance)
    servers = [arg for n in ctx.spec.node_names() for arg in ("--volfile-server", ctx.addresses[n])]
    argv = ["glusterfs", "-N", *servers, "--volfile-id", volume,
            "--log-file", str(ctx.root / f"client-{name}.log"), str(mnt)]
    return fuse_mount(ctx.runtime, name, node, argv, mnt, timeout=timeout)


def unmount_volume(ctx: GlusterContext, node: str, volume: str, instance: str = "") -> None:
    name, mnt = mount_point(ctx, node, volume, instance)
    fuse_unmount(ctx.runtime, name, mnt)

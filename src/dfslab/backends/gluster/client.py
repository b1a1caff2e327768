"""The GlusterFS FUSE client on a node: every server is a volfile server, so the mount
survives losing the first one."""

from __future__ import annotations

from pathlib import Path

from ..fuse import fuse_mount, fuse_unmount
from .glusterd import GlusterContext
from .volume import VOLUME


def mount_point(ctx: GlusterContext, node: str, volume: str = VOLUME) -> tuple[str, Path]:
    """(client process name, mount point) of `volume` on `node`."""
    suffix = node if volume == VOLUME else f"{volume}-{node}"
    return f"glusterfs.{suffix}", ctx.root.parent / "mnt" / f"gluster-{suffix}"


def mount_volume(ctx: GlusterContext, node: str, volume: str = VOLUME, timeout: float = 60) -> Path:
    name, mnt = mount_point(ctx, node, volume)
    servers = [arg for n in ctx.spec.node_names() for arg in ("--volfile-server", ctx.addresses[n])]
    argv = ["glusterfs", "-N", *servers, "--volfile-id", volume,
            "--log-file", str(ctx.root / f"client-{name}.log"), str(mnt)]
    return fuse_mount(ctx.runtime, name, node, argv, mnt, timeout=timeout)


def unmount_volume(ctx: GlusterContext, node: str, volume: str) -> None:
    name, mnt = mount_point(ctx, node, volume)
    fuse_unmount(ctx.runtime, name, mnt)

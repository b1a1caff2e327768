"""The GlusterFS FUSE client on a node: every server is a volfile server, so the mount
survives losing the first one."""

from __future__ import annotations

from pathlib import Path

from ..fuse import fuse_mount
from .glusterd import GlusterContext
from .volume import VOLUME


def mount_volume(ctx: GlusterContext, node: str, timeout: float = 60) -> Path:
    mnt = ctx.root.parent / "mnt" / f"gluster-{node}"
    servers = [arg for n in ctx.spec.node_names() for arg in ("--volfile-server", ctx.addresses[n])]
    argv = ["glusterfs", "-N", *servers, "--volfile-id", VOLUME,
            "--log-file", str(ctx.root / f"client-{node}.log"), str(mnt)]
    return fuse_mount(ctx.runtime, f"glusterfs.{node}", node, argv, mnt, timeout=timeout)

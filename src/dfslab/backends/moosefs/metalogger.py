"""The metalogger: downloads the master's metadata and follows its change log, so a lost master's
metadata can be restored elsewhere (MooseFS's metadata backup; not a standby master)."""

from __future__ import annotations

from .context import MATOML_PORT, MooseContext, start as start_daemon


def node_of(ctx: MooseContext) -> str | None:
    """The first chunk server's node (not the master's: a copy beside the original survives nothing)."""
    return ctx.spec.moosefs.chunk_nodes(ctx.spec)[0] if ctx.spec.moosefs.metalogger else None


def start(ctx: MooseContext) -> None:
    node = node_of(ctx)
    if node:
        start_daemon(ctx, "metalogger", node, "mfsmetalogger",
                     {"MASTER_HOST": ctx.master_address, "MASTER_PORT": MATOML_PORT, "META_DOWNLOAD_FREQ": 1})

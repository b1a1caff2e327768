"""The metalogger: downloads the master's metadata and follows its change log, so a lost master's
metadata can be restored elsewhere (MooseFS's metadata backup; not a standby master)."""

from __future__ import annotations

from .context import MATOML_PORT, MooseContext, start as start_daemon


def start(ctx: MooseContext) -> None:
    node = ctx.spec.moosefs.metalogger_node(ctx.spec)
    if node:
        start_daemon(ctx, "metalogger", node, "mfsmetalogger",
                     {"MASTER_HOST": ctx.master_address, "MASTER_PORT": MATOML_PORT, "META_DOWNLOAD_FREQ": 1})

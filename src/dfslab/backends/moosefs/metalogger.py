"""The metalogger: downloads the master's metadata and follows its change log, so a lost master's
metadata can be restored elsewhere (MooseFS's metadata backup; not a standby master)."""

from __future__ import annotations

from .context import MATOML_PORT, Daemon, MooseContext, configure


def daemon(ctx: MooseContext) -> Daemon | None:
    """The metalogger, if the spec has one."""
    node = ctx.spec.moosefs.metalogger_node(ctx.spec)
    if node is None:
        return None
    return configure(ctx, "metalogger", node, "mfsmetalogger",
                     {"MASTER_HOST": ctx.master_address, "MASTER_PORT": MATOML_PORT, "META_DOWNLOAD_FREQ": 1})

"""The manager: one, on the first node. It owns PG stats, so HEALTH_OK waits on it."""

from __future__ import annotations

from .conf import MGR_CAPS, gen_key, keyring_text
from .context import CephContext


def create(ctx: CephContext) -> None:
    node = ctx.spec.nodes[0].name
    keyring = keyring_text("mgr.x", gen_key(ctx.spec.ceph.release), MGR_CAPS)
    ctx.admin.cmd("auth import", inbuf=keyring)
    ctx.write_keyring("mgr.x", keyring)
    ctx.start_daemon("mgr", "x", node)

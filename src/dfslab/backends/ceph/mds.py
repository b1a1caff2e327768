"""The metadata server and the CephFS file system it serves."""

from __future__ import annotations

from .conf import MDS_CAPS, gen_key, keyring_text
from .context import CephContext

FS_NAME = "cephfs"


def create(ctx: CephContext) -> None:
    if not ctx.spec.ceph.cephfs:
        return
    node = ctx.spec.nodes[-1].name
    keyring = keyring_text("mds.a", gen_key(ctx.spec.ceph.release), MDS_CAPS)
    ctx.admin.cmd("auth import", inbuf=keyring)
    ctx.write_keyring("mds.a", keyring)
    ctx.start_daemon("mds", "a", node)
    pg = ctx.spec.ceph.pg_num
    for pool in ("cephfs_metadata", "cephfs_data"):
        ctx.admin.cmd("osd pool create", pool=pool, pg_num=pg, pgp_num=pg)
    ctx.admin.cmd("fs new", fs_name=FS_NAME, metadata="cephfs_metadata", data="cephfs_data")

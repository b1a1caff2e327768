"""OSDs: BlueStore on a sparse block file each, placed in CRUSH under their node."""

from __future__ import annotations

import json
import uuid
from concurrent.futures import ThreadPoolExecutor

from .. import BackendError
from .conf import OSD_CAPS, gen_key, keyring_text, osd_placement
from .context import CephContext


def _mkfs(ctx: CephContext, osd_id: int, node: str, osd_uuid: str, key: str) -> None:
    ctx.layout.data(f"osd.{osd_id}").mkdir(parents=True, exist_ok=True)
    res = ctx.runtime.run(node, ["ceph-osd", "-c", str(ctx.layout.conf), "-i", str(osd_id), "--mkfs",
                                 "--osd-uuid", osd_uuid, "--key", key], check=False, timeout=180)
    if res.returncode != 0:
        raise BackendError(f"ceph-osd --mkfs for osd.{osd_id} failed; see {ctx.daemon_log(f'osd.{osd_id}')}: "
                           f"{(res.stderr or res.stdout).strip()[-500:]}")


def create(ctx: CephContext) -> None:
    placement = osd_placement(ctx.spec)
    keys = {}
    for osd_id in placement:
        osd_uuid, key = str(uuid.uuid4()), gen_key(ctx.spec.ceph.release)
        ctx.admin.cmd("osd new", uuid=osd_uuid, id=osd_id, inbuf=json.dumps({"cephx_secret": key}))
        keys[osd_id] = (osd_uuid, key)
    # mkfs is the slow part (~2 s each, mostly waiting on fsync); overlap it.
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = [pool.submit(_mkfs, ctx, osd_id, node, *keys[osd_id]) for osd_id, node in placement.items()]
        for fut in futures:
            fut.result()
    for osd_id, node in placement.items():
        ctx.write_keyring(f"osd.{osd_id}", keyring_text(f"osd.{osd_id}", keys[osd_id][1], OSD_CAPS))
        ctx.start_daemon("osd", osd_id, node)

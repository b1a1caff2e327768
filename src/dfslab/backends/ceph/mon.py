"""Monitors: monmap, mkfs, start. The admin key is born here, in the mon keyring."""

from __future__ import annotations

from ...safety import write_private
from .. import BackendError
from .conf import ADMIN_CAPS, gen_key, keyring_text, mon_addrvec, mon_placement
from .context import CephContext


def _run(ctx: CephContext, node: str, argv: list[str]) -> None:
    res = ctx.runtime.run(node, argv, check=False)
    if res.returncode != 0:
        raise BackendError(f"`{' '.join(argv)}` failed: {res.stderr.strip() or res.stdout.strip()}")


def create(ctx: CephContext) -> None:
    layout = ctx.layout
    mons = mon_placement(ctx.spec)
    conf_dir = layout.conf.parent
    monmap = conf_dir / "monmap"
    argv = ["monmaptool", "--create", "--clobber", "--fsid", ctx.fsid]
    for mon_id, node in mons.items():
        argv += ["--addv", mon_id, mon_addrvec(ctx.addresses[node])]
    # The release's own monmaptool, on a monitor's node: the map says which release made it
    # (min_mon_release) and, from Tentacle on, which ciphers cephx allows (aes256k only).
    _run(ctx, next(iter(mons.values())), argv + [str(monmap)])

    admin = keyring_text("client.admin", gen_key(ctx.spec.ceph.release), ADMIN_CAPS)
    write_private(layout.admin_keyring, admin)
    # Also where ceph.conf's `keyring = .../$name/keyring` points, so any client given only
    # the conf (fio's rbd engine, ceph-fuse) authenticates as client.admin.
    admin_home = layout.data("client.admin")
    admin_home.mkdir(parents=True, exist_ok=True)
    write_private(admin_home / "keyring", admin)
    mon_keyring = conf_dir / "mon.keyring"
    write_private(mon_keyring, keyring_text("mon.", gen_key(ctx.spec.ceph.release), {"mon": "allow *"}) + admin)

    for mon_id, node in mons.items():
        data = layout.data(f"mon.{mon_id}")
        data.mkdir(parents=True, exist_ok=True)
        # mkfs touches only the local store; run on the node anyway so a container runtime works alike.
        res = ctx.runtime.run(node, ["ceph-mon", "--mkfs", "-i", mon_id, "-c", str(layout.conf),
                                     "--monmap", str(monmap), "--keyring", str(mon_keyring)], check=False)
        if res.returncode != 0:
            raise BackendError(f"ceph-mon --mkfs for mon.{mon_id} failed: {res.stderr.strip()}")
        ctx.start_daemon("mon", mon_id, node)

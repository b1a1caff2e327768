"""Clients of the cluster: CephFS mounted with ceph-fuse on a node (the kernel client is
not available here), tracked like a daemon and recorded as a mount for `down`."""

from __future__ import annotations

import time
from pathlib import Path

from .. import BackendError
from .context import DAEMON_ENV, CephContext


def is_mounted(path: Path) -> bool:
    return any(line.split()[1] == str(path) for line in Path("/proc/mounts").read_text().splitlines())


def mount_cephfs(ctx: CephContext, node: str, timeout: float = 60) -> Path:
    if not ctx.spec.ceph.cephfs:
        raise BackendError("this cluster has no CephFS; set ceph.cephfs: true in the spec")
    mnt = ctx.layout.root.parent / "mnt" / f"cephfs-{node}"
    if is_mounted(mnt):
        return mnt
    mnt.mkdir(parents=True, exist_ok=True)
    state = ctx.runtime.state
    state.add_resource("mounts", str(mnt))
    name = f"ceph-fuse.{node}"
    # nsenter --net only (not `ip netns exec`): the mount stays visible to every process.
    proc = ctx.runtime.spawn(name, node, ["ceph-fuse", "-f", "-c", str(ctx.layout.conf), "-n", "client.admin",
                                          "-k", str(ctx.layout.admin_keyring), str(mnt)],
                             env=DAEMON_ENV, meta={"kind": "client", "mount": str(mnt)})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if is_mounted(mnt):
            return mnt
        if ctx.runtime.procs.exited(name) is not None:
            break
        time.sleep(0.1)
    raise BackendError(f"ceph-fuse did not mount {mnt} within {timeout:.0f} s; see {proc.log}")

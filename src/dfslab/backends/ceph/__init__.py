"""Ceph from Debian's packages, vstart-style: MON(s), MGR, BlueStore OSDs, MDS + CephFS.

One module per daemon kind (mon, mgr, osd, mds), as Rook keeps them apart; this class
only orders them.
"""

from __future__ import annotations

import ipaddress
import uuid
from typing import Any

from ...runtime import CLIENT
from .. import Backend, Progress
from . import health, mds, mgr, mon, osd, pools
from .conf import CephLayout, render_conf
from .context import CephContext


class CephBackend(Backend):
    name = "ceph"

    def __init__(self, runtime, spec):
        super().__init__(runtime, spec)
        self.layout = CephLayout(self.state.dir / "ceph")
        info = self.state.read()
        self.ctx = CephContext(spec, runtime, self.layout, info.get("fsid", ""), info.get("addresses", {}))

    def deploy(self, progress: Progress, timeout: float) -> None:
        ctx = self.ctx
        ctx.fsid = str(uuid.uuid4())
        self.state.update(fsid=ctx.fsid)
        self.layout.make_dirs()
        public = str(ipaddress.IPv4Network(self.spec.network.subnet)) if self.runtime.kind == "local" else None
        self.layout.conf.write_text(render_conf(self.spec, self.layout, ctx.fsid, ctx.addresses, public))

        progress("starting monitors", f"{self.spec.ceph.mons} MON(s)")
        mon.create(ctx)
        progress("connecting to the monitors", "waiting for quorum")
        ctx.admin.start(timeout=90)
        progress("starting manager", "mgr.x")
        mgr.create(ctx)
        n_osds = len(self.spec.nodes) * self.spec.ceph.osds_per_node
        progress("creating OSDs", f"{n_osds} BlueStore OSD(s) of {self.spec.ceph.osd_size / 2**30:.1f} GiB (sparse)")
        osd.create(ctx)
        progress("creating pools", ", ".join(pools.POOLS))
        pools.create(ctx)
        if self.spec.ceph.cephfs:
            progress("starting MDS", "CephFS 'cephfs'")
            mds.create(ctx)
        health.wait_healthy(ctx.admin, self.runtime.procs, n_osds, self.spec.ceph.cephfs, progress, timeout)

    def status(self) -> dict[str, Any]:
        snap = health.snapshot(self.ctx.admin)
        pools_detail = self.ctx.admin.cmd("osd pool ls", detail="detail") or []
        return {
            "health": snap.health,
            "checks": snap.checks,
            "osds": dict(zip(("total", "up", "in"), snap.osds)),
            "pgs": {"total": snap.num_pgs, "expected": snap.expected_pgs, "by_state": snap.pgs_by_state},
            "mgr_available": snap.mgr_available,
            "mds_active": snap.mds_active,
            "pools": [{"name": p["pool_name"], "size": p["size"], "min_size": p["min_size"], "pg_num": p["pg_num"],
                       "application": sorted(p.get("application_metadata", {}))} for p in pools_detail],
        }

    def client_env(self) -> dict[str, str]:
        """Environment for ceph/rados tools run on the client node."""
        return {"CEPH_CONF": str(self.layout.conf), "CEPH_ARGS": f"--keyring {self.layout.admin_keyring}"}

    def close(self) -> None:
        self.ctx.admin.close()


__all__ = ["CephBackend", "CLIENT"]

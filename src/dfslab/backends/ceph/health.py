"""Waiting for a cluster that is really healthy, and saying why when it is not."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...procs import ProcessTable
from .. import BackendError, Progress
from .admin import CephAdmin
from ...polling import wait_until


@dataclass
class Snapshot:
    health: str = "?"
    checks: dict[str, str] = field(default_factory=dict)
    osds: tuple[int, int, int] = (0, 0, 0)  # total, up, in
    pgs_by_state: dict[str, int] = field(default_factory=dict)
    num_pgs: int = 0
    expected_pgs: int = 0
    mgr_available: bool = False
    mds_active: int = 0
    pools: list[dict[str, Any]] = field(default_factory=list)  # `osd pool ls detail`

    @property
    def clean_pgs(self) -> int:
        return self.pgs_by_state.get("active+clean", 0)

    def pg_line(self) -> str:
        if not self.pgs_by_state:
            return f"PGs 0/{self.expected_pgs}"
        states = ", ".join(f"{n} {s}" for s, n in sorted(self.pgs_by_state.items(), key=lambda kv: -kv[1]))
        return f"PGs {self.clean_pgs}/{self.expected_pgs} clean ({states})"


def snapshot(admin: CephAdmin) -> Snapshot:
    status = admin.cmd("status")
    pools = admin.cmd("osd pool ls", detail="detail") or []
    osdmap = status.get("osdmap", {})
    osdmap = osdmap.get("osdmap", osdmap)  # older releases nest it
    pgmap = status.get("pgmap", {})
    fsmap = status.get("fsmap", {})
    return Snapshot(
        health=status["health"]["status"],
        # a muted check (`ceph health mute`) is one the operator has acknowledged: Ceph's own status leaves it out too
        checks={k: v["summary"]["message"] for k, v in status["health"].get("checks", {}).items() if not v.get("muted")},
        osds=(osdmap.get("num_osds", 0), osdmap.get("num_up_osds", 0), osdmap.get("num_in_osds", 0)),
        pgs_by_state={s["state_name"]: s["count"] for s in pgmap.get("pgs_by_state", [])},
        num_pgs=pgmap.get("num_pgs", 0),
        expected_pgs=sum(p.get("pg_num", 0) for p in pools),
        mgr_available=bool(status.get("mgrmap", {}).get("available")),
        mds_active=sum(1 for r in fsmap.get("by_rank", []) if r.get("status") == "up:active"),
        pools=pools,
    )


def ready(snap: Snapshot, want_osds: int, want_mds: bool) -> bool:
    total, up, in_ = snap.osds
    return (
        snap.health == "HEALTH_OK"
        and total == up == in_ == want_osds
        and snap.mgr_available
        and (snap.mds_active >= 1 or not want_mds)
        # PGs of a pool just created are not in the MGR's map yet: count them against
        # the pools' pg_num, or HEALTH_OK shows before the PGs even exist.
        and snap.expected_pgs > 0
        and snap.num_pgs == snap.expected_pgs == snap.clean_pgs
    )


def check_daemons(procs: ProcessTable) -> None:
    for proc in procs.all():
        if proc.meta.get("kind") and procs.exited(proc.name) is not None:
            log = proc.meta.get("log", proc.log)
            raise BackendError(f"{proc.name} on {proc.node} exited during start-up; see {log} and {proc.log}")


def wait_healthy(admin: CephAdmin, procs: ProcessTable, want_osds: int, want_mds: bool,
                 progress: Progress, timeout: float) -> Snapshot:
    seen = {"snap": Snapshot(), "passes": 0}

    def healthy() -> Snapshot | None:
        check_daemons(procs)
        snap = seen["snap"] = snapshot(admin)
        total, up, _ = snap.osds
        detail = f"{snap.health} · OSDs {up}/{want_osds} up · {snap.pg_line()}"
        if snap.checks:
            detail += " · " + "; ".join(snap.checks.values())
        progress("waiting for HEALTH_OK", detail)
        # Three passes half a second apart: the MGR's view lags, one good sample can be stale.
        seen["passes"] = seen["passes"] + 1 if ready(snap, want_osds, want_mds) else 0
        return snap if seen["passes"] >= 3 else None
    return wait_until(healthy, "HEALTH_OK", timeout, 0.5, lambda _: BackendError(diagnose(admin, procs, seen["snap"], timeout)))


def diagnose(admin: CephAdmin, procs: ProcessTable, snap: Snapshot, timeout: float) -> str:
    lines = [f"cluster not healthy after {timeout:.0f} s: {snap.health}, {snap.pg_line()}"]
    lines += [f"  {name}: {msg}" for name, msg in snap.checks.items()]
    logs = {p.name: p.meta.get("log", p.log) for p in procs.all()}
    try:
        osd_dump: dict[str, Any] = admin.cmd("osd dump")
        for osd in osd_dump.get("osds", []):
            if not osd.get("up"):
                name = f"osd.{osd['osd']}"
                lines.append(f"  {name} is down; see {logs.get(name, 'its log')}")
    except BackendError:
        pass
    if not snap.mgr_available and "mgr.x" in logs:
        lines.append(f"  no active MGR; see {logs['mgr.x']}")
    if "mds.a" in logs and snap.mds_active == 0:
        lines.append(f"  MDS not active; see {logs['mds.a']}")
    return "\n".join(lines)

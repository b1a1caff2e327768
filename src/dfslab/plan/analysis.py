"""What the mappings say: PGs and bytes per OSD, what fills first, what a failure degrades
and how long re-replication takes at the hosts' NIC and disk figures, what growth moves."""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

from ..backends.ceph import plan_maps
from ..safety import remove_owned_tree
from .balancer import CEPH_BALANCER_MAX_WORK, PoolMembers, balance_pool
from .layout import Layout
from .model import NONE, Cluster, crush_text, place, pool_plans

Mapping = dict[str, list[int]]


def _pool_of(pgid: str, ids: dict[int, str]) -> str:
    return ids[int(pgid.split(".")[0])]


def usage(cluster: Cluster, pgs: Mapping, ids: dict[int, str], plans: dict[str, Any]) -> dict[int, dict[str, float]]:
    """{osd: {pgs, bytes, fill}} for the OSDs in the map."""
    pools = {p.name: p for p in cluster.layout.pools}
    out = {o: {"pgs": 0, "bytes": 0.0} for o in cluster.osds()}
    for pgid, up in pgs.items():
        name = _pool_of(pgid, ids)
        shard = pools[name].stored / plans[name].pg_num * pools[name].shard_fraction()
        for osd in up:
            if osd != NONE:
                out[osd]["pgs"] += 1
                out[osd]["bytes"] += shard
    for osd, u in out.items():
        u["fill"] = u["bytes"] / cluster.osd_size(osd)
    return out


def spread(values: list[float]) -> dict[str, float]:
    return {"min": min(values), "max": max(values), "mean": statistics.fmean(values),
            "stddev": statistics.pstdev(values) if len(values) > 1 else 0.0}


def balance_summary(cluster: Cluster, use: dict[int, dict[str, float]]) -> dict[str, Any]:
    live = {o: u for o, u in use.items() if o in set(cluster.osds(added=False))}
    first = max(live, key=lambda o: live[o]["fill"])
    raw = sum(cluster.osd_size(o) for o in live)
    stored = sum(u["bytes"] for u in live.values())
    ratio = cluster.layout.full_ratio
    # Data grows in proportion: osd `first` reaches the full ratio when the whole cluster holds this much.
    at = stored / raw * ratio / live[first]["fill"] if live[first]["fill"] else None
    return {"pgs_per_osd": spread([u["pgs"] for u in live.values()]),
            "fill": spread([u["fill"] for u in live.values()]),
            "fills_first": {"osd": first, "host": cluster.osd_host[first].name, "fill": live[first]["fill"],
                            "cluster_fill_when_full": at},
            "raw_bytes": raw, "stored_bytes": stored}


def undersized(cluster: Cluster, pgs: Mapping, ids: dict[int, str]) -> dict[str, int]:
    width = {p.name: p.width() for p in cluster.layout.pools}
    out: dict[str, int] = defaultdict(int)
    for pgid, up in pgs.items():
        name = _pool_of(pgid, ids)
        if len([o for o in up if o != NONE]) < width[name]:
            out[name] += 1
    return dict(out)


def movement(cluster: Cluster, before: Mapping, after: Mapping, ids: dict[int, str], plans: dict[str, Any],
             lost: set[int]) -> dict[str, Any]:
    """PGs whose members change, bytes written to new members, and the time that takes: every
    receiving OSD's disk, every receiving and sending host's NIC; the slowest names the limit."""
    pools = {p.name: p for p in cluster.layout.pools}
    osd_in: dict[int, float] = defaultdict(float)
    host_in: dict[str, float] = defaultdict(float)
    host_out: dict[str, float] = defaultdict(float)
    degraded = moved_pgs = 0
    total = 0.0
    hosts = cluster.osd_host
    for pgid, old in before.items():
        new = after.get(pgid, [])
        name = _pool_of(pgid, ids)
        shard = pools[name].stored / plans[name].pg_num * pools[name].shard_fraction()
        old_set = {o for o in old if o != NONE}
        degraded += bool(old_set & lost)
        gained = [o for o in new if o != NONE and o not in old_set]
        if not gained:
            continue
        moved_pgs += 1
        sources = [o for o in old if o != NONE and o not in lost] or [o for o in new if o != NONE]
        # A replica is copied from one survivor; an erasure-coded chunk is rebuilt from k of them.
        reads = 1 if pools[name].size else pools[name].k
        for osd in gained:
            osd_in[osd] += shard
            host_in[hosts[osd].name] += shard
            total += shard
            for i in range(reads):
                host_out[hosts[sources[i % len(sources)]].name] += shard
    limits = []
    for osd, b in osd_in.items():
        limits.append((b / hosts[osd].group.osd_throughput, f"disk of osd.{osd} ({hosts[osd].name})"))
    for name, b in host_in.items():
        nic = next(h.group.nic for h in cluster.hosts if h.name == name) / 8
        limits.append((b / nic, f"NIC of {name} (receiving)"))
    for name, b in host_out.items():
        nic = next(h.group.nic for h in cluster.hosts if h.name == name) / 8
        limits.append((b / nic, f"NIC of {name} (sending)"))
    seconds, limit = max(limits) if limits else (0.0, "nothing moves")
    return {"pgs_degraded": degraded, "pgs_moving": moved_pgs, "bytes_moved": total,
            "recovery_seconds": seconds, "limit": limit}


def failed_osds(cluster: Cluster, failure) -> set[int]:
    if failure.osd is not None:
        if failure.osd not in set(cluster.osds(added=False)):
            raise ValueError(f"failures: there is no osd.{failure.osd} (osd.0 .. osd.{len(cluster.osds(added=False)) - 1})")
        return {failure.osd}
    key, value = ("name", failure.host) if failure.host else ("rack", failure.rack)
    found = {o for h in cluster.hosts if not h.added and getattr(h, key) == value for o in h.osds}
    if not found:
        names = sorted({getattr(h, key) for h in cluster.hosts if not h.added})
        raise ValueError(f"failures: there is no {'host' if failure.host else 'rack'} {value!r} "
                         f"(e.g. {', '.join(names[:4])})")
    return found


def _failure_mapping(planning, prepared: Path, scratch: Path, lost: dict[int, float]) -> Mapping:
    """Every PG's up set with `lost` ({osd: its CRUSH weight}) marked out, as Ceph marks out OSDs
    down for mon_osd_down_out_interval."""
    failed = planning.mark_out(prepared, scratch, lost)
    try:
        return planning.map_pgs(failed, mark_up_in=False)
    finally:
        failed.unlink()


def _split_balancing(cluster: Cluster, plans: dict[str, Any]) -> tuple[dict[str, list[int]], list[str]]:
    """The pools dfslab's balancer takes (with their eligible OSDs) and those Ceph's osdmaptool
    balances: Ceph's wherever it answers in seconds."""
    pools = {p.name: p for p in cluster.layout.pools}
    eligible = {name: cluster.in_class(pools[name].device_class) for name in plans}
    ours = {name: eligible[name] for name, p in plans.items() if p.pg_num * len(eligible[name]) > CEPH_BALANCER_MAX_WORK}
    return ours, [name for name in plans if name not in ours]


def _pool_members(cluster: Cluster, base: Mapping, ids: dict[int, str], name: str, eligible: list[int]) -> PoolMembers:
    domain_of = {"host": lambda o: cluster.osd_host[o].name, "rack": lambda o: cluster.osd_host[o].rack,
                 "osd": lambda o: f"osd.{o}"}[next(p for p in cluster.layout.pools if p.name == name).failure_domain]
    return PoolMembers(pgs={pgid: up for pgid, up in base.items() if _pool_of(pgid, ids) == name},
                       weights={o: cluster.crush_weight(o) for o in eligible},
                       domain={o: domain_of(o) for o in eligible})


def _balanced(cluster: Cluster, planning, osdmap: Path, base: Mapping, ids: dict[int, str], plans: dict[str, Any],
              added: dict[int, float]) -> dict[str, Any]:
    """After the upmap balancer: Ceph's (osdmaptool, in a thread) on the pools it answers in
    seconds, dfslab's on the others."""
    ours, theirs = _split_balancing(cluster, plans)
    with ThreadPoolExecutor(1) as pool:
        ceph = pool.submit(planning.balance, osdmap, theirs, added) if theirs else None
        upmaps: dict[str, list[tuple[int, int]]] = {}
        for name, eligible in ours.items():
            upmaps.update(balance_pool(_pool_members(cluster, base, ids, name, eligible)))
        if ceph is not None:
            upmaps.update(ceph.result())
    balancers = {name: "dfslab" if name in ours else "ceph (osdmaptool)" for name in plans}
    balanced_use = usage(cluster, planning.apply_upmaps(base, upmaps), ids, plans)
    return {"after_balancer": {**balance_summary(cluster, balanced_use), "upmap_entries": len(upmaps),
                               "balancer": balancers},
            "per_osd_balanced": {str(o): balanced_use[o] for o in cluster.osds(added=False)}}


def plan(layout: Layout, workdir: Path, progress: Callable[[str, str], None] = lambda s, d: None) -> dict[str, Any]:
    """Build the maps with Ceph's tools and answer every question the layout asks."""
    planning = plan_maps()
    started = time.monotonic()
    cluster = place(layout)
    plans = {p.name: p for p in pool_plans(cluster)}
    added = {o: 0.0 for o in cluster.osds(added=True)}
    lost_by_failure = [failed_osds(cluster, f) for f in layout.failures]  # a bad name is refused before any tool runs
    workdir.mkdir(parents=True, exist_ok=True)
    n = len(cluster.osds())
    progress("building maps", f"{len(cluster.hosts)} hosts, {n} OSDs, {sum(p.pg_num for p in plans.values())} PGs "
                              f"in {len(plans)} pool(s), on a scratch ceph-mon")
    mon = planning.ScratchMon(workdir)
    try:
        with mon:
            osdmap = planning.build_osdmap(mon, crush_text(cluster), n, list(plans.values()), workdir / "osdmap")
    finally:
        remove_owned_tree(mon.dir, [workdir], "the scratch monitor dfslab plan started in its own directory")
    ids = planning.pool_ids(osdmap)
    progress("mapping", "every PG with osdmaptool")
    first = cluster.osds(added=False)[0]
    prepared = planning.prepare(osdmap, workdir / "osdmap.up", added or {first: cluster.crush_weight(first)})
    with ThreadPoolExecutor(2) as pool:
        # The failures' maps (osdmaptool, one call per OSD out: a rack of 500 is 500 calls in a
        # row) and the grown map start from the maps made so far and depend on nothing after:
        # they run beside the mapping and the balancer.
        failing = [pool.submit(_failure_mapping, planning, prepared, workdir / f"osdmap.failure{i}",
                               {o: cluster.crush_weight(o) for o in lost})
                   for i, lost in enumerate(lost_by_failure)]
        growing = pool.submit(planning.map_pgs, osdmap, None) if layout.add_hosts else None
        base = planning.map_pgs(prepared, mark_up_in=False)
        result: dict[str, Any] = {"layout": layout.model_dump(mode="json"), "osds": len(cluster.osds(added=False)),
                                  "hosts": len([h for h in cluster.hosts if not h.added]),
                                  "pools": {name: {"pg_num": p.pg_num, "width": p.size} for name, p in plans.items()}}
        use = usage(cluster, base, ids, plans)
        result["before_balancer"] = balance_summary(cluster, use)
        result["undersized_pgs"] = undersized(cluster, base, ids)
        result["per_osd"] = {str(o): use[o] for o in cluster.osds(added=False)}
        progress("balancing", "the upmap balancer (osdmaptool --upmap, or dfslab's for pools too large for it)")
        result.update(_balanced(cluster, planning, osdmap, base, ids, plans, added))
        result["failures"] = []
        for failure, lost, job in zip(layout.failures, lost_by_failure, failing):
            progress("failure", f"{failure.label()}: {len(lost)} OSD(s) out")
            after = job.result()
            result["failures"].append({"failure": failure.label(), "osds": sorted(lost),
                                       **movement(cluster, base, after, ids, plans, lost),
                                       "undersized_pgs": undersized(cluster, after, ids)})
        if growing is not None:
            progress("growth", f"adding {layout.add_hosts} host(s)")
            result["add_hosts"] = {"hosts": layout.add_hosts, **movement(cluster, base, growing.result(), ids, plans, set())}
    result["seconds"] = time.monotonic() - started
    return result

"""From a layout to what Ceph's tools take: hosts placed in racks, OSD ids, a CRUSH map in
crushtool's text form (weights in TiB, device classes, one rule per pool), and the pools."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from ..backends.ceph import plan_maps
from .layout import HostGroup, Layout

NONE = 2147483647  # CRUSH_ITEM_NONE: a hole in an erasure-coded PG's up set
# CRUSH weights are 16.16 fixed point in 32 bits: a bucket's weight (the root's, the sum of every
# OSD's) must stay under 65536. Real maps weigh an OSD by its size in TiB; a cluster of more than
# 64 PiB (10,000 8 TiB disks) overflows that, so its weights count in a larger power-of-two unit.
# straw2 picks by weight ratios, which a common unit leaves unchanged.
CRUSH_WEIGHT_LIMIT = 65535.0


@dataclass
class Host:
    name: str
    rack: str
    group: HostGroup
    osds: list[int]
    added: bool = False  # one of `add_hosts`, out of the map until "after adding"


@dataclass
class Cluster:
    layout: Layout
    hosts: list[Host] = field(default_factory=list)

    @cached_property  # asked per OSD in loops over every OSD; hosts are fixed once placed
    def osd_host(self) -> dict[int, Host]:
        return {o: h for h in self.hosts for o in h.osds}

    def osds(self, added: bool | None = None) -> list[int]:
        return [o for h in self.hosts if added is None or h.added == added for o in h.osds]

    def osd_size(self, osd: int) -> int:
        return self.osd_host[osd].group.osd_size

    @cached_property
    def crush_unit(self) -> int:
        """Bytes per 1.0 of CRUSH weight: a TiB, or the smallest power-of-two multiple of it that
        keeps the root's weight within CRUSH's fixed point."""
        total = sum(h.group.osd_size * len(h.osds) for h in self.hosts)
        unit = 2**40
        while total / unit > CRUSH_WEIGHT_LIMIT:
            unit *= 2
        return unit

    def crush_weight(self, osd: int) -> float:
        """An OSD's CRUSH weight as the map has it: its size in `crush_unit`s."""
        return self.osd_size(osd) / self.crush_unit

    def in_class(self, device_class: str | None) -> list[int]:
        return [o for h in self.hosts if not h.added and device_class in (None, h.group.device_class) for o in h.osds]


def place(layout: Layout) -> Cluster:
    """Hosts round-robin over racks, each group in turn, then the hosts to add (like the last group)."""
    cluster = Cluster(layout)
    groups = [(g, False) for g in layout.hosts for _ in range(g.count)]
    groups += [(layout.hosts[-1], True)] * layout.add_hosts
    next_osd = 0
    for i, (group, added) in enumerate(groups):
        osds = list(range(next_osd, next_osd + group.osds))
        next_osd += group.osds
        cluster.hosts.append(Host(f"host{i}", f"rack{i % layout.racks}", group, osds, added))
    return cluster


def _bucket(kind: str, name: str, bid: int, items: list[tuple[str, float]]) -> str:
    lines = [f"{kind} {name} {{", f"\tid {bid}", "\talg straw2", "\thash 0"]
    lines += [f"\titem {item} weight {weight:.5f}" for item, weight in items]
    return "\n".join(lines + ["}"])


def crush_text(cluster: Cluster) -> str:
    layout = cluster.layout
    out = ["tunable choose_local_tries 0", "tunable choose_local_fallback_tries 0", "tunable choose_total_tries 50",
           "tunable chooseleaf_descend_once 1", "tunable chooseleaf_vary_r 1", "tunable chooseleaf_stable 1",
           "tunable straw_calc_version 1", "tunable allowed_bucket_algs 54", ""]
    out += [f"device {o} osd.{o} class {h.group.device_class}" for h in cluster.hosts for o in h.osds]
    out += ["", "type 0 osd", "type 1 host", "type 3 rack", "type 11 root", ""]
    bid = -1
    unit = cluster.crush_unit
    rack_items: dict[str, list[tuple[str, float]]] = {}
    for h in cluster.hosts:
        bid -= 1
        weight = h.group.osd_size / unit
        out.append(_bucket("host", h.name, bid, [(f"osd.{o}", weight) for o in h.osds]))
        rack_items.setdefault(h.rack, []).append((h.name, weight * len(h.osds)))
    for rack, items in rack_items.items():
        bid -= 1
        out.append(_bucket("rack", rack, bid, items))
    out.append(_bucket("root", "default", -1, [(r, sum(w for _, w in items)) for r, items in rack_items.items()]))
    for rule_id, pool in enumerate(layout.pools):
        take = "step take default" + (f" class {pool.device_class}" if pool.device_class else "")
        mode = "firstn" if pool.size else "indep"
        choose = (f"step choose {mode} 0 type osd" if pool.failure_domain == "osd"
                  else f"step chooseleaf {mode} 0 type {pool.failure_domain}")
        steps = ([] if pool.size else ["step set_chooseleaf_tries 5", "step set_choose_tries 100"]) + [take, choose, "step emit"]
        out.append("\n".join([f"rule {pool.name} {{", f"\tid {rule_id}", f"\ttype {'replicated' if pool.size else 'erasure'}",
                              "\tmin_size 1", "\tmax_size 64", *[f"\t{s}" for s in steps], "}"]))
    return "\n".join(out) + "\n"


def pool_plans(cluster: Cluster) -> list:
    planning = plan_maps()
    plans = []
    for pool in cluster.layout.pools:
        pg = cluster.layout.pg_num(pool, len(cluster.in_class(pool.device_class)))
        plans.append(planning.PoolPlan(pool.name, pg, pool.name, pool.width(), pool.k or 0, pool.m or 0,
                                       pool.failure_domain, pool.device_class))
    return plans

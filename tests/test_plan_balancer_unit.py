"""dfslab's own upmap balancer (plan/balancer.py) on placements whose answer can be checked: every
OSD ends within the deviation of its weighted share, no PG gets an OSD twice or two members in
one failure domain, and the pg-upmap-items it returns, applied as the OSD map applies them,
give exactly the balanced up sets."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from dfslab.backends.ceph.planning import apply_upmaps
from dfslab.plan.balancer import NONE, PoolMembers, balance_pool


def placement(seed: int, hosts: int, osds_per_host: int, pgs: int, width: int, big_hosts: int = 0,
              holes: bool = False) -> PoolMembers:
    """PGs placed at random, one member per host, with some hosts' OSDs twice the weight (and
    twice as likely), and some erasure-coded holes."""
    rng = random.Random(seed)
    weight = {h * osds_per_host + i: (2.0 if h < big_hosts else 1.0) for h in range(hosts) for i in range(osds_per_host)}
    domain = {o: f"host{o // osds_per_host}" for o in weight}
    osds = list(weight)
    up = {}
    for pg in range(pgs):
        chosen: list[int] = []
        while len(chosen) < width:
            osd = rng.choices(osds, weights=[weight[o] ** 1.5 for o in osds])[0]  # skewed on purpose
            if domain[osd] not in {domain[c] for c in chosen}:
                chosen.append(osd)
        if holes and pg % 17 == 0:
            chosen[-1] = NONE
        up[f"1.{pg:x}"] = chosen
    return PoolMembers(up, weight, domain)


def counts(up: dict[str, list[int]]) -> Counter:
    return Counter(o for members in up.values() for o in members if o != NONE)


@pytest.mark.parametrize("seed,hosts,per_host,pgs,width,big,holes", [
    (1, 12, 4, 512, 3, 0, False),
    (2, 10, 3, 256, 6, 3, True),  # erasure-coded 4+2 with holes, mixed weights
    (3, 40, 10, 2048, 3, 5, False),
])
def test_every_osd_ends_within_the_deviation(seed, hosts, per_host, pgs, width, big, holes):
    pool = placement(seed, hosts, per_host, pgs, width, big, holes)
    before = counts(pool.pgs)
    total = sum(before.values())
    weight_sum = sum(pool.weights.values())
    target = {o: total * w / weight_sum for o, w in pool.weights.items()}
    worst_before = max(abs(before[o] - target[o]) for o in pool.weights)
    assert worst_before > 5  # the case is one the balancer has work to do in

    items = balance_pool(pool, deviation=5)
    after_up = apply_upmaps(pool.pgs, items)
    after = counts(after_up)
    assert sum(after.values()) == total  # members moved, none made or lost
    assert max(abs(after[o] - target[o]) for o in pool.weights) <= 5
    for pgid, members in after_up.items():
        real = [m for m in members if m != NONE]
        assert len(set(real)) == len(real), pgid
        assert len({pool.domain[m] for m in real}) == len(real), pgid
        assert [m == NONE for m in members] == [m == NONE for m in pool.pgs[pgid]]  # holes stay holes


def test_a_pool_already_balanced_gets_no_items():
    osds = {o: 1.0 for o in range(6)}
    up = {f"1.{i:x}": [i % 6, (i + 1) % 6, (i + 2) % 6] for i in range(60)}  # 30 members each
    pool = PoolMembers(up, osds, {o: f"host{o}" for o in osds})
    assert balance_pool(pool) == {}


def test_members_move_only_where_the_failure_domains_allow():
    # Two hosts, replica 2: every PG uses both hosts, so a member may move only within its host:
    # osd.0 holds every PG of host a, and osd.1 (host a, empty) is the only OSD that may take some.
    weights = {0: 1.0, 1: 1.0, 2: 1.0, 3: 1.0}
    domain = {0: "a", 1: "a", 2: "b", 3: "b"}
    up = {f"1.{i:x}": [0, 2 + i % 2] for i in range(20)}  # osd.0 holds 20, osd.1 none
    items = balance_pool(PoolMembers(up, weights, domain), deviation=1)
    after = apply_upmaps(up, items)
    for members in after.values():
        assert {domain[m] for m in members} == {"a", "b"}
    assert counts(after)[1] > 0  # within host a, osd.1 took PGs from osd.0

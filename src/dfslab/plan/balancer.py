"""dfslab's own upmap balancer, for pools too large for osdmaptool's in a plan's time.

osdmaptool's `--upmap` (Ceph's `calc_pg_upmaps`, what the MGR's balancer module runs) costs about
0.1 s per change on a 10,000-OSD map (measured: 100 changes of a 65,536-PG pool in 11.5 s), and
such a pool needs thousands of changes. This one follows the same rule and produces the same
kind of answer, pg-upmap-items: move one PG member at a time from the OSD furthest above its
weighted share of the pool's PG members to the one furthest below it, never onto an OSD already
in the PG nor into a failure domain (host, rack) another member of the PG uses, until every OSD
is within `deviation` PGs of its share. Heaps keep each move O(log OSDs).

`plan` uses Ceph's balancer where it answers quickly (pools up to CEPH_BALANCER_MAX_WORK PGs x
OSDs) and this one above, and says which it used for each pool. (osdmaptool's answer also differs
from run to run: its balancer shuffles; three runs on one map gave 1,078, 1,081 and 1,082 entries.)"""

from __future__ import annotations

import heapq
from collections import defaultdict
from dataclasses import dataclass

NONE = 2147483647  # CRUSH_ITEM_NONE
# PGs x OSDs up to which osdmaptool balances the pool. plan-1000's largest pool (16,384 PGs on
# 1,000 OSDs) took osdmaptool 4.9 s alone and ~9.5 s beside the other pools on 2 cores (2026-11-29,
# AMD EPYC), 37.7 s on a slower machine the day before: past plan-1000's 30-s target there. This
# balancer brings plan-1000 to the same spread in 1.5 s (bench/plan.py), so pools above 10^7 are
# its; a 65,536-PG pool on 10,000 OSDs took osdmaptool more than 5 min.
CEPH_BALANCER_MAX_WORK = 1e7


@dataclass
class PoolMembers:
    """One pool's PGs and the OSDs that may hold them."""
    pgs: dict[str, list[int]]  # pgid -> up set (NONE for a hole)
    weights: dict[int, float]  # eligible OSD -> CRUSH weight
    domain: dict[int, str]  # OSD -> its failure domain's name (host, rack, or the OSD itself)


def balance_pool(pool: PoolMembers, deviation: int = 5, max_changes: int = 1_000_000) -> dict[str, list[tuple[int, int]]]:
    """pg-upmap-items {pgid: [(from, to), ...]} that bring every eligible OSD within `deviation`
    PG members of its weighted share, or as near as the failure domains allow."""
    up = {pgid: list(members) for pgid, members in pool.pgs.items()}
    on: dict[int, set[str]] = defaultdict(set)
    for pgid, members in up.items():
        for osd in members:
            if osd != NONE:
                on[osd].add(pgid)
    total_weight = sum(pool.weights.values())
    if not total_weight:
        return {}
    members_total = sum(len(on[o]) for o in pool.weights)
    target = {o: members_total * w / total_weight for o, w in pool.weights.items()}

    def dev(osd: int) -> float:
        return len(on[osd]) - target[osd]

    over = [(-dev(o), o) for o in pool.weights]
    under = [(dev(o), o) for o in pool.weights]
    heapq.heapify(over)
    heapq.heapify(under)
    stuck: set[int] = set()  # OSDs no move can help, left out of further picks

    def top(heap: list, sign: int) -> int | None:
        """The OSD at the heap's head, dropping entries that are stale (every move pushes its two
        OSDs' current entries) or stuck."""
        while heap:
            key, osd = heap[0]
            if osd not in stuck and key == sign * dev(osd):
                return osd
            heapq.heappop(heap)
        return None

    def fits(pgid: str, src: int, dst: int) -> bool:
        members = up[pgid]
        if dst in members:
            return False
        used = {pool.domain[m] for m in members if m != NONE and m != src and m in pool.domain}
        return pool.domain[dst] not in used

    def move(pgid: str, src: int, dst: int) -> None:
        members = up[pgid]
        members[members.index(src)] = dst
        on[src].discard(pgid)
        on[dst].add(pgid)
        for osd in (src, dst):
            heapq.heappush(over, (-dev(osd), osd))
            heapq.heappush(under, (dev(osd), osd))

    def fit(src: int, dst: int) -> str | None:
        """A PG of `src` that `dst` can take."""
        return next((pgid for pgid in sorted(on[src]) if fits(pgid, src, dst)), None)

    def move_from(src: int, candidates: list[int]) -> tuple[str, int, int] | None:
        return next(((pgid, src, dst) for dst in candidates if (pgid := fit(src, dst))), None)

    def move_into(dst: int, candidates: list[int]) -> tuple[str, int, int] | None:
        return next(((pgid, src, dst) for src in candidates if (pgid := fit(src, dst))), None)

    for _ in range(max_changes):
        src, dst = top(over, -1), top(under, 1)
        if src is None or dst is None or (dev(src) <= deviation and dev(dst) >= -deviation):
            break
        # The worse side moves first: an OSD above its share sheds a PG to the emptiest OSD that
        # can take one; else the OSD below its share takes one from the fullest that can give.
        if dev(src) > deviation:
            stuck_one, pick = src, _search(under, 1, dev, stuck, lambda cands: move_from(src, cands), src)
        else:
            stuck_one, pick = dst, _search(over, -1, dev, stuck, lambda cands: move_into(dst, cands), dst)
        if pick is None:
            stuck.add(stuck_one)
        else:
            move(*pick)
    return _items(pool.pgs, up)


def _search(heap: list, sign: int, dev, stuck: set[int], try_batch, exclude: int, batch: int = 16):
    """Offer the heap's best OSDs (most under- or over-full, still on the right side of their
    share) in growing batches to `try_batch`, and put every popped entry back."""
    popped: list[tuple[float, int]] = []
    try:
        while heap:
            batch_entries: list[int] = []
            while heap and len(batch_entries) < batch:
                key, osd = heapq.heappop(heap)
                popped.append((key, osd))
                if osd in stuck or osd == exclude or key != sign * dev(osd) or sign * dev(osd) >= 0:
                    continue
                batch_entries.append(osd)
            if not batch_entries:
                if not heap or heap[0][0] >= 0:
                    return None
                continue
            found = try_batch(batch_entries)
            if found:
                return found
            batch *= 2
        return None
    finally:
        for entry in popped:
            heapq.heappush(heap, entry)


def _items(before: dict[str, list[int]], after: dict[str, list[int]]) -> dict[str, list[tuple[int, int]]]:
    """pg-upmap-items from each PG's up set before and after: (old, new) per changed position."""
    items = {}
    for pgid, old in before.items():
        pairs = [(a, b) for a, b in zip(old, after[pgid]) if a != b]
        if pairs:
            items[pgid] = pairs
    return items

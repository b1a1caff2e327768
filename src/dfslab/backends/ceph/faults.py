"""Faults only a Ceph cluster has: an OSD marked out, an OSD filled until OSD_FULL. They are
Ceph's, so they live here and build `ceph` commands; `chaos` runs them like any other kind.

Fill: Fill one OSD until Ceph's full ratios trip.

Really filling an 8 GiB OSD to 95 % would take minutes and most of the machine's disk, so
the fault does what Ceph's own full-ratio tests do with lowered ratios: it writes real objects
onto the target OSD alone (a size-1 pool whose CRUSH rule takes a device class only the target
carries) until it holds `headroom` more than any other OSD, then sets the cluster's full ratio
halfway between the others' use and the target's (nearfull / backfillfull below it), so the
target, and only it, crosses the full ratio and Ceph raises OSD_FULL. Ratios are cluster-wide,
so under a concurrent writer (which grows every OSD) the gap is re-measured and more is written
until the target is reported full. Ceph then flags every pool with a PG on the target FULL
(POOL_FULL) and client writes to those pools block, as on a full production cluster: measured
on replica 3 over 3 OSDs, 0 acknowledged writes while full (docs/faults.md). While the
fault is still filling (10-20 s), client writes go on, slowed by the fill's own writes.
Undo restores the ratios and the OSD's device class and deletes the fill pool; blocked writes
resume. The pool, its CRUSH rule and the device class are named after the cluster
(`dfslab-fill-NAME`): on a Ceph dfslab did not make (`external.allow_faults: [fill]`) the fault
refuses to start where one of those names is taken or where the MONs would refuse to delete the
pool at the undo (`mon_allow_pool_delete` false), and it takes the CRUSH root that holds the OSD.
"""

from __future__ import annotations

import json
import math
import re
import time
from typing import Any

from ...fault import Fault, FaultError, FaultInputError, daemons_of, not_one_of
from ...units import UnitError, parse_duration, parse_size


OSD_TARGET = re.compile(r"(?:osd\.)?(\d+)")  # osd.N or N


class CephFault(Fault):
    """A fault that talks to the cluster with the `ceph` CLI on the client node."""

    @classmethod
    def target_problem(cls, target: str, spec: Any) -> str | None:
        m = OSD_TARGET.fullmatch(target)
        if not m:
            return f"fault {cls.kind} takes an OSD like osd.1, got {target!r}"
        names = daemons_of(spec)
        return not_one_of("OSD", f"osd.{m.group(1)}", names and [n for n in names if n.startswith("osd.")])

    def osd_id(self, target: str) -> int:
        """N of a target written osd.N or N."""
        m = OSD_TARGET.fullmatch(target)
        if not m:
            raise FaultInputError(f"fault {self.kind} takes an OSD like osd.1, got {target!r}")
        return int(m.group(1))

    def ceph(self, *args: str) -> str:
        res = self.cluster.runtime.run("client", ["ceph", *args], timeout=120, check=False, env=self.cluster.env)
        if res.returncode != 0:
            raise FaultError(f"`ceph {' '.join(args)}` failed: {res.stderr.strip()[-300:]}")
        return res.stdout


class MarkOut(CephFault):
    kind = "out"
    help = "ceph osd out N (placement groups move off it); undo: ceph osd in N"

    def inject(self, target: str) -> dict[str, Any]:
        self.ceph("osd", "out", str(self.osd_id(target)))
        return {}

    def undo(self, target: str, record: dict[str, Any]) -> None:
        self.ceph("osd", "in", str(self.osd_id(target)))


POOL = "dfslab-fill"
OBJECT = 4 << 20


class FillOsd(CephFault):
    kind = "fill"
    help = ("fill an OSD until OSD_FULL: real data written onto it until it holds headroom (default 128MiB) "
            "more than any other OSD, full ratio set between; undo: ratios back, fill data deleted")

    def json(self, *args: str) -> Any:
        return json.loads(self.ceph(*args, "--format", "json"))

    def usage(self) -> dict[int, tuple[int, int]]:
        """{osd id: (bytes used, bytes total)} as Ceph counts them for the full ratios."""
        return {n["id"]: (n["kb_used"] * 1024, n["kb"] * 1024) for n in self.json("osd", "df")["nodes"]}

    def inject(self, target: str, headroom: str = "128MiB", timeout: str = "90s") -> dict[str, Any]:
        osd = self.osd_id(target)
        try:
            gap, limit = parse_size(headroom), parse_duration(timeout)
        except UnitError as exc:
            raise FaultInputError(f"fill headroom / timeout: {exc}") from None
        known = self.usage()
        if osd not in known:
            raise FaultInputError(f"no osd.{osd}; OSDs: {', '.join(f'osd.{i}' for i in sorted(known))}")
        dump = self.json("osd", "dump")
        self.check_room(dump)
        record = {"osd": osd, "ratios": {k: dump[f"{k}_ratio"] for k in ("nearfull", "backfillfull", "full")},
                  "device_class": self.device_class(osd), "pool": self.pool}
        try:
            self.pin_pool(osd)
            record["full_ratio"] = self.fill_until_full(osd, gap, limit)
        except FaultError as exc:
            # Undone here, with the cluster's own ratios and device class (an undo without this
            # record would set Ceph's defaults, which a site's cluster may not use).
            self.undo(target, record)
            raise FaultInputError(f"{exc}; the fill was undone (ratios, device class and pool as they were)") from None
        return record

    @property
    def pool(self) -> str:
        """The fill's pool, CRUSH rule and device class: the cluster's own name (never another's)."""
        return f"{POOL}-{self.cluster.spec.name}"

    def check_room(self, dump: dict[str, Any]) -> None:
        """Refuse before anything changes what the undo could not take back: a pool, rule or
        device class of the fill's name that is not this fault's, or pools the MONs will not delete."""
        taken = [f"pool {self.pool}" for p in dump.get("pools", []) if p.get("pool_name") == self.pool]
        taken += [f"CRUSH rule {self.pool}" for r in self.json("osd", "crush", "rule", "ls") if r == self.pool]
        taken += [f"device class {self.pool}" for c in self.json("osd", "crush", "class", "ls") if c == self.pool]
        if taken:
            raise FaultInputError(f"fault fill: {', '.join(taken)} already exist(s); the fill makes and removes them "
                                  f"itself (a leftover of an interrupted fill: `dfslab fault {self.cluster.spec.name} "
                                  f"restore`)")
        allowed = self.mon_setting("mon_allow_pool_delete")
        if allowed not in ("true", "1"):
            raise FaultInputError("fault fill: the MONs refuse to delete pools (mon_allow_pool_delete is "
                                  f"{allowed or 'unset'}), so the fill's data could not be removed at the undo; "
                                  "allow it for the run (ceph config set mon mon_allow_pool_delete true) or leave fill out")

    def device_class(self, osd: int) -> str:
        for item in self.json("osd", "tree")["nodes"]:
            if item.get("id") == osd:
                return item.get("device_class", "hdd")
        raise FaultError(f"no osd.{osd} in the CRUSH tree")

    def mon_setting(self, name: str) -> str:
        """A MON option as the leading MON runs with it (it decides a pool's commands): the value of
        its conf file or of the config database (`config get mon` sees the database only)."""
        leader = self.json("quorum_status")["quorum_leader_name"]
        try:
            return self.ceph("config", "show", f"mon.{leader}", name).strip().lower()
        except FaultError:  # a MGR too old or busy to report its MONs' running config
            return self.ceph("config", "get", "mon", name).strip().lower()

    def root_of(self, osd: int) -> str:
        """The CRUSH root whose tree holds `osd` (`default` on dfslab's clusters; a site's may differ)."""
        nodes = {n["id"]: n for n in self.json("osd", "tree")["nodes"]}
        parent = {c: n["id"] for n in nodes.values() for c in n.get("children", [])}
        at = osd
        while at in parent:
            at = parent[at]
        if nodes.get(at, {}).get("type") != "root":
            raise FaultError(f"osd.{osd} is under no CRUSH root")
        return nodes[at]["name"]

    def pin_pool(self, osd: int) -> None:
        """A size-1 pool whose only OSD is `osd`: a device class nobody else has."""
        pool, root = self.pool, self.root_of(osd)
        self.ceph("osd", "crush", "rm-device-class", f"osd.{osd}")
        self.ceph("osd", "crush", "set-device-class", pool, f"osd.{osd}")
        self.ceph("osd", "crush", "rule", "create-replicated", pool, root, "osd", pool)
        self.ceph("osd", "pool", "create", pool, "8", "8", "replicated", pool)
        # Size 1 where the MONs allow it (dfslab's own clusters); elsewhere (a site's MONs refuse
        # size 1 unless mon_allow_pool_size_one) the pool keeps its size, its PGs undersized on
        # the one OSD of their class, which is all the fill needs: one copy, on that OSD.
        if self.mon_setting("mon_allow_pool_size_one") in ("true", "1"):
            self.ceph("osd", "pool", "set", pool, "size", "1", "--yes-i-really-mean-it")
        # A cluster whose pools default to min_size 2 (replica 3) would leave the PGs inactive.
        self.ceph("osd", "pool", "set", pool, "min_size", "1")
        self.ceph("osd", "pool", "application", "enable", pool, "rados")

    def fill_until_full(self, osd: int, gap: int, timeout: float) -> float:
        deadline = time.monotonic() + timeout
        chunk, n, ratio = math.ceil(gap / OBJECT), 0, 0.0
        while time.monotonic() < deadline:
            use = self.usage()
            used, total = use[osd]
            others = max((u / t for i, (u, t) in use.items() if i != osd and t), default=0.0)
            if used / total - others >= gap / 2 / total:
                # Halfway between the others and the target: only the target is over it.
                ratio = (others + used / total) / 2
                step = (ratio - others) / 3
                self.ceph("osd", "set-nearfull-ratio", f"{others + step:.5f}")
                self.ceph("osd", "set-backfillfull-ratio", f"{others + 2 * step:.5f}")
                self.ceph("osd", "set-full-ratio", f"{ratio:.5f}")
                for _ in range(20):  # the OSD reports its state within a few heartbeats
                    if self.osd_full(osd):
                        return ratio
                    time.sleep(0.5)
                continue
            self.write(chunk, n, deadline)
            n, chunk = n + 1, max(1, math.ceil(gap / 2 / OBJECT))
        used, total = self.usage()[osd]
        raise FaultError(f"osd.{osd} did not trip OSD_FULL within {timeout:.0f} s ({used / total:.2%} used)")

    def write(self, objects: int, n: int, deadline: float) -> None:
        # Once any OSD is full, writes block: a write that hangs is cut off by timeout.
        seconds = max(5, int(min(30, deadline - time.monotonic())))
        bench = ["timeout", "-s", "KILL", str(seconds), "rados", "-p", self.pool, "bench", str(seconds), "write",
                 "--no-cleanup", "-t", "4", "--max-objects", str(objects), "--run-name", f"{self.pool}-{n}"]
        self.cluster.runtime.run("client", bench, timeout=seconds + 30, check=False, env=self.cluster.env)
        time.sleep(1.5)  # the MGR's view of OSD use lags a little

    def osd_full(self, osd: int) -> bool:
        check = self.json("health", "detail").get("checks", {}).get("OSD_FULL", {})
        return any(f"osd.{osd} " in d.get("message", "") + " " for d in check.get("detail", []))

    def undo(self, target: str, record: dict[str, Any]) -> None:
        osd = record.get("osd", self.osd_id(target))
        ratios = record.get("ratios", {"nearfull": 0.85, "backfillfull": 0.90, "full": 0.95})
        # Raise full first so the order stays valid at every step.
        for key in ("full", "backfillfull", "nearfull"):
            self.ceph("osd", f"set-{key}-ratio", str(ratios[key]))
        pool = record.get("pool", self.pool)
        self.ceph("osd", "pool", "rm", pool, pool, "--yes-i-really-really-mean-it")
        self.ceph("osd", "crush", "rule", "rm", pool)
        self.ceph("osd", "crush", "rm-device-class", f"osd.{osd}")
        self.ceph("osd", "crush", "set-device-class", record.get("device_class", "hdd"), f"osd.{osd}")

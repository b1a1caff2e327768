"""The layout file of `dfslab plan`: racks, hosts, OSDs and pools of a cluster to be bought,
in the spec's units (8TiB, 25gbit, 200MB/s). Everything Ceph would refuse is refused here,
naming the field and the fix, before any tool runs."""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from ..fields import BitsPerSecond, Bytes, Strict
from ..safety import check_name
from ..units import UnitError, parse_byte_rate

MAX_POOL_PGS = 65536  # Ceph's mon_max_pool_pg_num: the monitor refuses a pool with more


def _throughput(value: Any) -> Any:
    """200MB/s (bytes per second), or measured:RUN_DIR (the disk baseline of a dfslab run)."""
    if isinstance(value, str) and value.startswith("measured:"):
        run = Path(value.removeprefix("measured:"))
        table = run / "results.csv"
        if not table.is_file():
            raise ValueError(f"{value}: no results.csv in {run}; give a dfslab run directory (runs/<id>)")
        rows = [float(r["value"]) for r in csv.DictReader(table.open()) if r["metric"] == "disk_write_bandwidth"]
        if not rows:
            raise ValueError(f"{value}: that run has no disk baseline (baselines: {{disk: true}})")
        return sum(rows) / len(rows) * 1e6
    if isinstance(value, str):
        try:
            return parse_byte_rate(value)
        except UnitError as exc:
            raise ValueError(f"{exc}; e.g. 200MB/s or measured:runs/<id>") from None
    return value


class HostGroup(Strict):
    count: int = Field(ge=1, le=20000, description="hosts of this kind, spread round-robin over the racks")
    osds: int = Field(ge=1, le=128, description="OSDs per host")
    osd_size: Bytes = Field(description="capacity of each OSD, e.g. 8TiB")
    device_class: str = Field("hdd", pattern=r"^[a-z][a-z0-9_]{0,15}$")
    nic: BitsPerSecond = Field("25gbit", description="each host's network link")
    osd_throughput: float = Field(200e6, description="bytes/s one OSD's disk sustains (200MB/s, or measured:runs/<id>)")

    _throughput = field_validator("osd_throughput", mode="before")(classmethod(lambda cls, v: _throughput(v)))

    @field_validator("osd_size")
    @classmethod
    def _size(cls, value: int) -> int:
        if value <= 0:
            raise ValueError("an OSD needs a size above zero, e.g. 8TiB")
        return value


class Pool(Strict):
    name: str
    size: int | None = Field(None, ge=1, le=10, description="replicas (a replicated pool)")
    k: int | None = Field(None, ge=1, le=32, description="data chunks (an erasure-coded pool, with m)")
    m: int | None = Field(None, ge=1, le=16)
    pg_num: int | Literal["auto"] = Field("auto", description="a power of two, or auto (about 100 PGs per OSD)")
    failure_domain: Literal["osd", "host", "rack"] = "host"
    device_class: str | None = None
    stored: Bytes = Field(description="user data the pool will hold, e.g. 200TiB")

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_name(value, "pool")

    @field_validator("pg_num")
    @classmethod
    def _pg(cls, value: Any) -> Any:
        if isinstance(value, int) and (value < 1 or value & (value - 1)):
            low = 1 << max(0, value.bit_length() - 1)
            raise ValueError(f"{value} is not a power of two (Ceph warns POOL_PG_NUM_NOT_POWER_OF_TWO); use {low} or {low * 2}")
        if isinstance(value, int) and value > MAX_POOL_PGS:
            raise ValueError(f"{value} is more than Ceph's {MAX_POOL_PGS} PGs per pool (mon_max_pool_pg_num); "
                             f"use {MAX_POOL_PGS} or split the data over more pools")
        return value

    @model_validator(mode="after")
    def _kind(self) -> "Pool":
        if (self.size is None) == (self.k is None):
            raise ValueError("give size (replicated) or k and m (erasure-coded), not both")
        if self.k is not None and self.m is None:
            raise ValueError("an erasure-coded pool needs m as well as k")
        return self

    def width(self) -> int:
        """OSDs each PG needs: replicas, or k + m chunks."""
        return self.size if self.size is not None else self.k + self.m

    def shard_fraction(self) -> float:
        """Bytes one PG member holds per byte of the PG's data."""
        return 1.0 if self.size is not None else 1.0 / self.k


class Failure(Strict):
    osd: int | None = Field(None, ge=0)
    host: str | None = None
    rack: str | None = None

    @model_validator(mode="after")
    def _one(self) -> "Failure":
        if sum(v is not None for v in (self.osd, self.host, self.rack)) != 1:
            raise ValueError("a failure is one of {osd: N}, {host: NAME}, {rack: NAME}")
        return self

    def label(self) -> str:
        return f"osd.{self.osd}" if self.osd is not None else f"host {self.host}" if self.host else f"rack {self.rack}"


class Layout(Strict):
    name: str
    racks: int = Field(1, ge=1, le=1000)
    hosts: list[HostGroup] = Field(min_length=1)
    pools: list[Pool] = Field(min_length=1)
    failures: list[Failure] = Field(default_factory=list)
    add_hosts: int = Field(0, ge=0, le=10000, description="hosts like the last group's to add (data that moves)")
    full_ratio: float = Field(0.95, gt=0.5, le=0.99)
    target_pgs_per_osd: int = Field(100, ge=10, le=1000)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_name(value, "plan")

    @model_validator(mode="after")
    def _cross(self) -> "Layout":
        names = [p.name for p in self.pools]
        if len(set(names)) != len(names):
            raise ValueError("pools: two pools share a name")
        classes = {g.device_class for g in self.hosts}
        for i, p in enumerate(self.pools):
            if p.device_class is not None and p.device_class not in classes:
                raise ValueError(f"pools[{i}].device_class: no OSD has class {p.device_class!r} "
                                 f"(classes: {', '.join(sorted(classes))}); fix the class or add hosts of it")
            domains = self.domains(p)
            if domains < p.width():
                raise ValueError(f"pools[{i}]: {p.width()} {'replicas' if p.size else 'chunks (k+m)'} need "
                                 f"{p.width()} {p.failure_domain}s{' of class ' + p.device_class if p.device_class else ''}; "
                                 f"the layout has {domains}: add {p.failure_domain}s, lower "
                                 f"{'size' if p.size else 'k+m'}, or use a smaller failure_domain")
        return self

    def host_count(self) -> int:
        return sum(g.count for g in self.hosts)

    def domains(self, pool: Pool) -> int:
        groups = [g for g in self.hosts if pool.device_class in (None, g.device_class)]
        if pool.failure_domain == "osd":
            return sum(g.count * g.osds for g in groups)
        hosts = sum(g.count for g in groups)
        return hosts if pool.failure_domain == "host" else min(self.racks, hosts)

    def pg_num(self, pool: Pool, osds_in_class: int) -> int:
        """The pool's pg_num; auto is what the autoscaler aims at: target PGs per OSD, shared
        by stored bytes, divided by the PG's width, to the nearest power of two."""
        if pool.pg_num != "auto":
            return pool.pg_num
        total = sum(p.stored for p in self.pools) or 1
        share = pool.stored / total if total else 1 / len(self.pools)
        want = max(1.0, self.target_pgs_per_osd * osds_in_class * share / pool.width())
        return min(MAX_POOL_PGS, 1 << max(0, round(math.log2(want))))

"""The `ceph:` section of a cluster spec, and the checks that need the rest of the spec."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal

from pydantic import Field, field_validator

from ...fields import Bytes, ClientReleaseName, ReleaseName, Strict
from ...registry import runtime_of
from .options import as_text, option_problem

if TYPE_CHECKING:
    from ...spec import ClusterSpec


class CephSpec(Strict):
    mons: Literal[1, 3] = Field(1, description="number of monitors: 1, or 3 for quorum tests")
    mgr: bool = Field(True, description="always true: Ceph reports PG states and health through its MGR")
    osds_per_node: int = Field(1, ge=1, le=8)
    osd_size: Bytes = Field("4GiB", description="sparse BlueStore block file per OSD")
    replica_size: int = Field(2, ge=1, le=5, description="size of every pool")
    failure_domain: Literal["host", "osd"] = Field("host", description="CRUSH bucket replicas are spread over")
    pg_num: int = Field(16, ge=1, le=1024, description="placement groups per pool")
    cephfs: bool = True
    rgw: int = Field(0, ge=0, le=8, description="RADOS gateways (S3): one radosgw on each of the first RGW nodes "
                                                "(runtime kubernetes: Rook's CephObjectStore, on the servers), "
                                                "serving S3 on port 7480 of its node's address, with an S3 user "
                                                "whose keys dfslab keeps 0600 in the cluster's state")
    release: ReleaseName("ceph", "Ceph")
    client_release: ClientReleaseName("ceph", "Ceph")
    conf: dict[str, dict[str, str | int | float | bool]] = Field(
        default_factory=dict, description="extra ceph.conf options by section: {global: {...}, osd: {...}}"
    )

    @field_validator("osd_size")
    @classmethod
    def _osd_size(cls, value: int) -> int:
        if value < 1024**3:
            raise ValueError("BlueStore needs at least 1GiB per OSD; use e.g. 4GiB")
        return value

    @field_validator("mgr")
    @classmethod
    def _mgr(cls, value: bool) -> bool:
        if not value:
            raise ValueError("a Ceph cluster cannot reach HEALTH_OK with active+clean PGs without a MGR (since "
                             "Luminous the MGR reports PG states and raises MGR_DOWN without one); remove `mgr: false`")
        return value

    @field_validator("pg_num")
    @classmethod
    def _pg_num(cls, value: int) -> int:
        if value & (value - 1):
            raise ValueError(f"pg_num must be a power of two (e.g. 16, 32), got {value}")
        return value

    @field_validator("conf")
    @classmethod
    def _conf_sections(cls, value: dict) -> dict:
        for section in value:
            if not re.fullmatch(r"global|mon|mgr|osd|mds|client|(mon|mgr|osd|mds|client)\.[\w-]+", section):
                raise ValueError(f"unknown ceph.conf section {section!r}; use global, mon, mgr, osd, mds, client or e.g. osd.0")
            for key, option in value[section].items():
                # A newline or '[' would start a section or an option of the user's own in ceph.conf.
                if not re.fullmatch(r"[A-Za-z0-9_ .-]+", key):
                    raise ValueError(f"ceph.conf [{section}] {key!r}: option names are letters, digits, '_', '-', '.' and spaces")
                if isinstance(option, str) and (re.search(r"[\r\n\[\]]", option) or not option.isprintable()):
                    raise ValueError(f"ceph.conf [{section}] {key}: a value is one line without '[' or ']' (got {option!r})")
        return value

    def check(self, cluster: "ClusterSpec") -> None:
        """What depends on the nodes too, and what Ceph's own parser says of the conf options; a
        ValueError starts with the field it is about."""
        for section, options in self.conf.items():
            for key, value in options.items():
                problem = option_problem(section, key, as_text(value))
                if problem:
                    raise ValueError(f"ceph.conf.{section}.{key}: {problem}")
        if runtime_of(cluster).disk_per_node:  # your nodes' own devices, one per OSD
            for node in cluster.node_names():  # Rook makes an OSD on each device it is given
                given = len(cluster.kubernetes.devices.get(node, []))
                if given != self.osds_per_node:
                    raise ValueError(f"kubernetes.devices: node {node} needs {self.osds_per_node} device(s) "
                                     f"(ceph.osds_per_node); it has {given}")
        if self.rgw > len(cluster.nodes):
            raise ValueError(f"ceph.rgw: {self.rgw} gateways need {self.rgw} nodes (one per node), but nodes has "
                             f"{len(cluster.nodes)}; add nodes or lower rgw")
        if self.mons > len(cluster.nodes):
            raise ValueError(
                f"ceph.mons: {self.mons} monitors need {self.mons} nodes (one MON per node, as a quorum "
                f"needs independent failures), but nodes has {len(cluster.nodes)}; add nodes or set mons: 1"
            )
        total_osds = self.osds_per_node * len(cluster.nodes)
        domains = len(cluster.nodes) if self.failure_domain == "host" else total_osds
        if self.replica_size > domains:
            raise ValueError(
                f"ceph.replica_size: {self.replica_size} replicas cannot be placed on {domains} "
                f"{'node(s)' if self.failure_domain == 'host' else 'OSD(s)'} (failure_domain: {self.failure_domain}); "
                f"lower replica_size, add nodes, or set failure_domain: osd"
            )


SECTION = CephSpec

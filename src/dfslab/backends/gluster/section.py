"""The `gluster:` section of a cluster spec, and the checks that need the rest of the spec."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field, field_validator

from ...fields import ClientReleaseName, ReleaseName, Seconds, Strict

if TYPE_CHECKING:
    from ...spec import ClusterSpec


GLUSTER_VOLUME_TYPES = ("distribute", "replicate", "disperse")


class GlusterSpec(Strict):
    bricks_per_node: int = Field(1, ge=1, le=4, description="brick directories per server node")
    release: ReleaseName("gluster", "GlusterFS")
    client_release: ClientReleaseName("gluster", "GlusterFS")
    volume: Literal["distribute", "replicate", "disperse"] = Field("replicate", description="volume type")
    replica: Literal[2, 3] = Field(3, description="copies per file (volume: replicate)")
    arbiter: bool = Field(False, description="replica 3 with the third brick of each set an arbiter (metadata only)")
    disperse_data: int = Field(2, ge=2, le=16, description="k: data bricks per disperse set (volume: disperse)")
    redundancy: int = Field(1, ge=1, le=8, description="m: bricks of a disperse set that may be lost")
    ping_timeout: Seconds = Field("10s", description="network.ping-timeout: how long clients wait on a silent server "
                                                      "(GlusterFS's default of 42 s freezes clients for over a minute)")
    heal_interval: Seconds = Field("60s", description="cluster.heal-timeout, 60 s or more: how often the self-heal "
                                                       "daemon looks for work (GlusterFS's 600 s default left a volume "
                                                       "unhealed for minutes after a partition here)")
    options: dict[str, str | int | float | bool] = Field(
        default_factory=dict, description="extra `gluster volume set` options, e.g. {performance.cache-size: 64MB}")

    @field_validator("heal_interval")
    @classmethod
    def _heal_interval(cls, value: float) -> float:
        if value < 60:
            raise ValueError("GlusterFS accepts a cluster.heal-timeout of 60s or more")
        return value

    def set_size(self) -> int:
        """Bricks per replica or disperse set (1 for distribute)."""
        return {"distribute": 1, "replicate": self.replica, "disperse": self.disperse_data + self.redundancy}[self.volume]

    def check(self, cluster: "ClusterSpec") -> None:
        """What depends on the nodes too; a ValueError starts with the field it is about."""
        nodes = len(cluster.nodes)
        bricks = self.bricks_per_node * nodes
        per_set = self.set_size()
        if self.arbiter and (self.volume != "replicate" or self.replica != 3):
            raise ValueError("gluster.arbiter: an arbiter needs volume: replicate with replica: 3")
        if self.volume == "disperse" and self.redundancy * 2 >= per_set:
            raise ValueError(f"gluster.redundancy: {self.redundancy} of {per_set} bricks may not be lost; "
                             "redundancy must be less than half of disperse_data + redundancy (e.g. 2+1, 4+2)")
        if bricks % per_set:
            raise ValueError(f"gluster.bricks_per_node: {nodes} node(s) x {self.bricks_per_node} brick(s) = {bricks} "
                             f"bricks, not a multiple of the {self.volume} set size {per_set}; "
                             f"use {per_set} x k bricks (change nodes or bricks_per_node)")
        if self.volume != "distribute" and per_set > nodes:
            raise ValueError(f"gluster.volume: a {self.volume} set of {per_set} bricks on {nodes} node(s) puts two "
                             "copies on one server, which then loses both; add nodes or use a smaller set")


SECTION = GlusterSpec

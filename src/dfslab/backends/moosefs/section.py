"""The `moosefs:` section of a cluster spec, and the checks that need the rest of the spec."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field, field_validator

from ...fields import Bytes, ClientReleaseName, ReleaseName, Strict

if TYPE_CHECKING:
    from ...spec import ClusterSpec


class MooseFSSpec(Strict):
    master: str | None = Field(None, description="the node the master runs on (default: the first); it holds every "
                                                  "file's metadata, as Lustre's MDS does; chunk servers run on the others")
    metalogger: bool = Field(True, description="a metalogger (a running copy of the master's metadata) on the first "
                                                "chunk server's node")
    write_cache: Bytes = Field("1MiB", description="each client's write-back cache (mfsmount's mfswritecachesize, "
                                                    "whole MiB, 1 MiB or more): 1 MiB, dfslab's default, sends writes "
                                                    "on to the chunk servers as they come, as O_DIRECT does on the other "
                                                    "filesystems; with MooseFS's own 256 MiB (and with 0, which mfsmount "
                                                    "takes as no limit) the client absorbs rewrites: fio's 1 MiB writes "
                                                    "over a 32 MiB file sent 15 % of their bytes to the chunk servers")
    release: ReleaseName("moosefs", "MooseFS")
    client_release: ClientReleaseName("moosefs", "MooseFS")
    goal: int = Field(2, ge=1, le=9, description="copies of every chunk (the root directory's goal, which everything "
                                                 "inherits)")

    @field_validator("write_cache")
    @classmethod
    def _write_cache(cls, value: int) -> int:
        if value < 2**20 or value % 2**20:
            raise ValueError("a whole number of MiB, 1MiB or more (mfsmount takes 0 as no limit)")
        return value

    def master_node(self, cluster: "ClusterSpec") -> str:
        return self.master or cluster.node_names()[0]

    def chunk_nodes(self, cluster: "ClusterSpec") -> list[str]:
        return [n for n in cluster.node_names() if n != self.master_node(cluster)]

    def metalogger_node(self, cluster: "ClusterSpec") -> str | None:
        """The first chunk server's node (not the master's: a copy beside the original survives nothing)."""
        return self.chunk_nodes(cluster)[0] if self.metalogger else None

    def check(self, cluster: "ClusterSpec") -> None:
        """What depends on the nodes too; a ValueError starts with the field it is about."""
        names = cluster.node_names()
        if self.master is not None and self.master not in names:
            raise ValueError(f"moosefs.master: {self.master!r} is not a node; nodes: {', '.join(names)}")
        if len(names) < 2:
            raise ValueError("nodes: MooseFS needs the master on one node and chunk servers on others (one node for "
                             "everything would measure none of its traffic); give nodes: 3")
        chunk = len(self.chunk_nodes(cluster))
        if self.goal > chunk:
            raise ValueError(f"moosefs.goal: {self.goal} copies need {self.goal} chunk servers, and {len(names)} nodes "
                             f"leave {chunk} beside the master; add nodes or lower goal")


SECTION = MooseFSSpec

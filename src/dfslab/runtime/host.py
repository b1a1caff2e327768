"""The host runtime: nothing is created. For clusters dfslab did not make (filesystem:
external), every client-side tool runs on this machine, against what the spec points at."""

from __future__ import annotations

from ..spec import ClusterSpec
from .base import CLIENT, Runtime, RuntimeError_


class HostRuntime(Runtime):
    kind = "host"
    where = "a cluster you run, reached from this machine (runtime host)"
    starts_nodes = False
    owns_machines = False
    one_host = False
    deploy_seconds = 2.0
    sample = {"runtime": "host"}  # its kinds are the filesystems' (external-ceph, -posix, -s3)
    # A cluster you run, reached from this machine: its interfaces carry the client's traffic
    # (and whatever else this machine sends, which the ledger cannot tell apart).
    client_wire_counted = True

    def preflight(self, spec: ClusterSpec) -> None:
        if spec.nodes:
            raise RuntimeError_("runtime host starts no nodes; remove nodes: (the cluster is one you already run)")

    def create(self, spec: ClusterSpec) -> dict[str, str]:
        return {CLIENT: "127.0.0.1"}

    def command(self, node: str, argv: list[str]) -> list[str]:
        if node != CLIENT:
            raise RuntimeError_(f"runtime host has only the client (this machine), no node {node!r}")
        return list(argv)

    def destroy(self) -> list[str]:
        return []

    def leftovers(self) -> list[str]:
        return []

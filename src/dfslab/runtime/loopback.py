"""Fallback when network namespaces cannot be made (no CAP_NET_ADMIN): every node gets
its own 127.x address on the host's loopback. No isolation and no shaping; dfslab says so.
"""

from __future__ import annotations

import hashlib

from ..spec import ClusterSpec
from .base import Runtime, RuntimeError_


class LoopbackRuntime(Runtime):
    kind = "loopback"
    where = "runtime local (loopback addresses: no namespaces here)"
    deploy_seconds = 10.0

    def __init__(self, state, fallback: bool = False):
        super().__init__(state)
        self.fallback = fallback

    def preflight(self, spec: ClusterSpec) -> None:
        shaped = spec.network.bandwidth or spec.network.latency or any(n.bandwidth or n.latency for n in spec.nodes)
        if shaped:
            raise RuntimeError_(
                "network shaping needs network namespaces, which this machine does not allow "
                "(no CAP_NET_ADMIN); remove network.bandwidth/latency or run as root with CAP_NET_ADMIN"
            )

    def create(self, spec: ClusterSpec) -> dict[str, str]:
        # A per-cluster third octet keeps several clusters' daemons apart on one loopback.
        octet = int(hashlib.sha1(spec.name.encode()).hexdigest(), 16) % 200 + 20
        addrs = {node: f"127.77.{octet}.{10 + i}" for i, node in enumerate(spec.node_names())}
        for i, client in enumerate(spec.client_names()):
            addrs[client] = f"127.77.{octet}.{200 + i}"
        return addrs

    def command(self, node: str, argv: list[str]) -> list[str]:
        return list(argv)

    def destroy(self) -> list[str]:
        return []

    def leftovers(self) -> list[str]:
        return []

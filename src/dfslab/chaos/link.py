"""Link faults on the local runtime: cut a node's link to the bridge (a partition: both
directions, silently, as a pulled cable), or degrade its bandwidth with tc. Latency and loss
need tc netem, which this kernel may not have: refused then, with the reason."""

from __future__ import annotations

import subprocess
from typing import Any

from ..runtime.local import LocalNetnsRuntime, hub_ports, netem_available, tbf_args
from ..units import UnitError, parse_bandwidth
from . import Fault, FaultError


class _LinkFault(Fault):
    def runtime(self) -> LocalNetnsRuntime:
        rt = self.cluster.runtime
        if not isinstance(rt, LocalNetnsRuntime):
            raise FaultError(f"link faults need the local (network namespace) runtime; this cluster runs on {rt.kind}")
        return rt

    def port(self, node: str) -> str:
        ports = hub_ports(self.cluster.spec)
        if node not in ports:
            raise FaultError(f"no node {node!r}; nodes: {', '.join(ports)}")
        return ports[node]

    def sh(self, *argv: str, check: bool = True) -> None:
        res = subprocess.run(list(argv), capture_output=True, text=True)
        if check and res.returncode != 0:
            raise FaultError(f"`{' '.join(argv)}` failed: {res.stderr.strip()}")


class CutLink(_LinkFault):
    kind = "partition"
    help = "cut a node's link (both directions); undo: link up"

    def inject(self, target: str, **options: Any) -> dict[str, Any]:
        rt = self.runtime()
        self.sh("ip", "-n", rt.hub, "link", "set", self.port(target), "down")
        return {}

    def undo(self, target: str, record: dict[str, Any]) -> None:
        rt = self.runtime()
        self.sh("ip", "-n", rt.hub, "link", "set", self.port(target), "up")


class DegradeLink(_LinkFault):
    kind = "degrade"
    help = "cap a node's link at a bandwidth (e.g. bandwidth=100mbit); undo: the spec's shaping"

    def inject(self, target: str, bandwidth: str = "100mbit", latency: str | None = None, loss: str | None = None,
               **options: Any) -> dict[str, Any]:
        if (latency or loss) and not netem_available():
            raise FaultError("latency and loss need tc netem, which this kernel does not have; degrade bandwidth only")
        try:
            rate = parse_bandwidth(bandwidth)
        except UnitError as exc:
            raise FaultError(f"degrade bandwidth: {exc}") from None
        rt = self.runtime()
        for ns, dev in ((rt.hub, self.port(target)), (rt.ns(target), "eth0")):
            self.sh("tc", "-n", ns, "qdisc", "replace", "dev", dev, "root", *tbf_args(rate))
        return {"bandwidth": bandwidth}

    def undo(self, target: str, record: dict[str, Any]) -> None:
        rt = self.runtime()
        node = next((n for n in self.cluster.spec.nodes if n.name == target), None)
        rate = self.cluster.spec.shape_of(node).bandwidth if node else self.cluster.spec.network.bandwidth
        for ns, dev in ((rt.hub, self.port(target)), (rt.ns(target), "eth0")):
            if rate:
                self.sh("tc", "-n", ns, "qdisc", "replace", "dev", dev, "root", *tbf_args(rate))
            else:
                self.sh("tc", "-n", ns, "qdisc", "del", "dev", dev, "root", check=False)

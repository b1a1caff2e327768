"""Link faults on any runtime with links of its own (local namespaces, docker): cut a node's link to the bridge (a partition: both
directions, silently, as a pulled cable), or degrade its bandwidth with tc. Latency and loss
need tc netem, which this kernel may not have: refused then, with the reason."""

from __future__ import annotations

import subprocess
from typing import Any

from ..runtime import RuntimeError_
from ..runtime.local import netem_available, tbf_args
from ..units import UnitError, parse_bandwidth
from . import Fault, FaultError


class _LinkFault(Fault):
    def ends(self, node: str) -> list[tuple[str, str]]:
        """Both ends of the node's link (switch side first), from the runtime that made it."""
        try:
            return self.cluster.runtime.link_ends(node)
        except RuntimeError_ as exc:
            raise FaultError(f"link faults: {exc}") from None

    def sh(self, *argv: str, check: bool = True) -> None:
        res = subprocess.run(list(argv), capture_output=True, text=True)
        if check and res.returncode != 0:
            raise FaultError(f"`{' '.join(argv)}` failed: {res.stderr.strip()}")


class CutLink(_LinkFault):
    kind = "partition"
    help = "cut a node's link (both directions); undo: link up"

    def inject(self, target: str, **options: Any) -> dict[str, Any]:
        ns, dev = self.ends(target)[0]
        self.sh("ip", "-n", ns, "link", "set", dev, "down")
        return {}

    def undo(self, target: str, record: dict[str, Any]) -> None:
        ns, dev = self.ends(target)[0]
        self.sh("ip", "-n", ns, "link", "set", dev, "up")


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
        for ns, dev in self.ends(target):
            self.sh("tc", "-n", ns, "qdisc", "replace", "dev", dev, "root", *tbf_args(rate))
        return {"bandwidth": bandwidth}

    def undo(self, target: str, record: dict[str, Any]) -> None:
        node = next((n for n in self.cluster.spec.nodes if n.name == target), None)
        rate = self.cluster.spec.shape_of(node).bandwidth if node else self.cluster.spec.network.bandwidth
        for ns, dev in self.ends(target):
            if rate:
                self.sh("tc", "-n", ns, "qdisc", "replace", "dev", dev, "root", *tbf_args(rate))
            else:
                self.sh("tc", "-n", ns, "qdisc", "del", "dev", dev, "root", check=False)

"""Link faults on any runtime with links of its own (local namespaces, docker): cut a node's link to the bridge (a partition: both
directions, silently, as a pulled cable), or degrade its bandwidth with tc. Latency and loss
need tc netem, which this kernel may not have: refused then, with the reason. Where the runtime
has no links of dfslab's but reaches its daemon pods' networks (a Kubernetes you run: its fault
agent), the same kinds act on every daemon of dfslab's on the node (chaos/pod.py), nothing else
of the node's: the cut both ways, the cap on what they send (bandwidth only)."""

from __future__ import annotations

import subprocess
from typing import Any

from ..runtime import RuntimeError_
from ..runtime.local import netem_available, tbf_args
from ..units import UnitError, parse_bandwidth, parse_duration, parse_percent
from ..fault import Fault, FaultError, FaultInputError, not_a_machine


class _LinkFault(Fault):
    aims = "node"
    @classmethod
    def runtime_refusal(cls, runtime) -> str | None:
        if runtime.links or runtime.pod_networks:
            return None
        return f"needs the nodes' own links, which {runtime.where} does not have"

    def in_pods(self):
        """Without links of dfslab's, the daemon pods' networks (a Kubernetes you run)."""
        if self.cluster.runtime.links or not self.cluster.runtime.pod_networks:
            return None
        from .pod import PodNetworkFault
        return PodNetworkFault(self.cluster, self.kind)

    @classmethod
    def target_problem(cls, target: str, spec: Any) -> str | None:
        return not_a_machine(target, spec)

    def ends(self, node: str) -> list[tuple[str, str]]:
        """Both ends of the node's link (switch side first), from the runtime that made it."""
        try:
            return self.cluster.runtime.link_ends(node)
        except RuntimeError_ as exc:
            raise FaultInputError(f"link faults: {exc}") from None

    def sh(self, *argv: str, check: bool = True) -> None:
        res = subprocess.run(list(argv), capture_output=True, text=True)
        if check and res.returncode != 0:
            raise FaultError(f"`{' '.join(argv)}` failed: {res.stderr.strip()}")


class CutLink(_LinkFault):
    kind = "partition"
    help = ("cut a node's link (both directions; on a Kubernetes you run: the network of dfslab's daemons on the "
            "node, through its fault agent); undo: link up")

    def inject(self, target: str) -> dict[str, Any]:
        if pods := self.in_pods():
            return pods.inject(target)
        ns, dev = self.ends(target)[0]
        self.sh("ip", "-n", ns, "link", "set", dev, "down")
        return {}

    def undo(self, target: str, record: dict[str, Any]) -> None:
        if pods := self.in_pods():
            return pods.undo(target, record)
        ns, dev = self.ends(target)[0]
        self.sh("ip", "-n", ns, "link", "set", dev, "up")


class DegradeLink(_LinkFault):
    kind = "degrade"
    help = ("cap a node's link at a bandwidth (default 100mbit); latency=5ms / loss=1% where the kernel has tc netem "
            "(refused where it has not); on a Kubernetes you run: what dfslab's daemons on the node send, bandwidth "
            "only; undo: the spec's shaping")

    def inject(self, target: str, bandwidth: str = "100mbit", latency: str | None = None,
               loss: str | None = None) -> dict[str, Any]:
        try:
            rate = parse_bandwidth(bandwidth)
            delay = parse_duration(latency) if latency is not None else None
            drop = parse_percent(loss) if loss is not None else None
        except (UnitError, ValueError) as exc:
            raise FaultInputError(f"degrade bandwidth / latency / loss: {exc}") from None
        if pods := self.in_pods():
            if delay is not None or drop is not None:
                raise FaultInputError("degrade latency / loss: on a Kubernetes you run degrade caps what dfslab's daemons "
                                      "on the node send (bandwidth only; nothing was applied): e.g. --set bandwidth=100mbit")
            return {**pods.inject(target, rate_bps=rate), "bandwidth": bandwidth}
        if (delay is not None or drop is not None) and not netem_available():
            raise FaultInputError("degrade latency / loss: this kernel has no tc netem, so neither can be emulated "
                                  "(nothing was applied); degrade bandwidth only, e.g. --set bandwidth=100mbit")
        ends = self.ends(target)
        for ns, dev in ends:
            if delay is None and drop is None:
                self.sh("tc", "-n", ns, "qdisc", "replace", "dev", dev, "root", *tbf_args(rate))
                continue
            # netem holds the delay and loss; a tbf child under it holds the rate.
            netem = [*(["delay", f"{delay * 1e6:.0f}us"] if delay is not None else []),
                     *(["loss", f"{drop:g}%"] if drop is not None else [])]
            self.sh("tc", "-n", ns, "qdisc", "del", "dev", dev, "root", check=False)
            self.sh("tc", "-n", ns, "qdisc", "add", "dev", dev, "root", "handle", "1:", "netem", *netem)
            self.sh("tc", "-n", ns, "qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:", *tbf_args(rate))
        return {"bandwidth": bandwidth, "latency": latency, "loss": loss}

    def undo(self, target: str, record: dict[str, Any]) -> None:
        if pods := self.in_pods():
            return pods.undo(target, record)
        node = next((n for n in self.cluster.spec.nodes if n.name == target), None)
        rate = self.cluster.spec.shape_of(node).bandwidth if node else self.cluster.spec.network.bandwidth
        for ns, dev in self.ends(target):
            if rate:
                self.sh("tc", "-n", ns, "qdisc", "replace", "dev", dev, "root", *tbf_args(rate))
            else:
                self.sh("tc", "-n", ns, "qdisc", "del", "dev", dev, "root", check=False)

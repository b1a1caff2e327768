"""Daemon faults: kill -9 one daemon, stop it gracefully, or lose a whole node (every daemon
in its namespace). Undo starts the same daemons again with the same command line, identity
and data, as a restarted host would."""

from __future__ import annotations

import os
import signal
from typing import Any

from ..procs import TrackedProcess
from ..fault import Fault, FaultInputError, daemons_of, not_one_of, start_again


class KillDaemon(Fault):
    kind = "kill"
    aims = "daemon"
    help = ("kill -9 a daemon, by its name (`fault NAME list` names the cluster's: osd.1, glusterd.node2, master.node1); "
            "undo: start it again (on Kubernetes: its kubelet does)")
    signal = signal.SIGKILL

    @classmethod
    def target_problem(cls, target: str, spec: Any) -> str | None:
        return not_one_of("daemon", target, daemons_of(spec))

    def tracked(self, name: str) -> TrackedProcess:
        proc = self.cluster.runtime.procs.get(name)
        if proc is None:
            known = ", ".join(p.name for p in self.cluster.runtime.procs.all() if p.meta.get("kind") != "client")
            raise FaultInputError(f"no daemon {name!r} in cluster {self.cluster.state.name}; daemons: {known}")
        return proc

    def stop(self, proc: TrackedProcess) -> None:
        if not proc.alive():
            raise FaultInputError(f"{proc.name} is not running")
        # On docker this is `docker kill` / `docker stop` of the daemon's container.
        self.cluster.runtime.signal_process(proc, self.signal, grace=30)

    def in_pods(self):
        """On runtime kubernetes the daemons are pods' containers: their processes get the signal
        and their kubelet, not dfslab, starts them again (chaos/pod.py)."""
        if not self.cluster.runtime.daemons_in_pods:
            return None
        from .pod import SignalDaemonContainers
        return SignalDaemonContainers(self.cluster, self.kind, self.signal)

    def inject(self, target: str) -> dict[str, Any]:
        if pods := self.in_pods():
            return pods.inject(target)
        proc = self.tracked(target)
        self.stop(proc)
        return {"daemons": [proc.restartable()]}

    def undo(self, target: str, record: dict[str, Any]) -> None:
        if pods := self.in_pods():
            return pods.undo(target, record)
        runtime = self.cluster.runtime
        for d in record.get("daemons", []):
            current = runtime.procs.get(d["name"])
            if current is not None and current.alive():
                continue
            start_again(runtime, d)


class StopDaemon(KillDaemon):
    kind = "stop"
    help = "stop a daemon with SIGTERM (it shuts down cleanly); undo: start it again"
    signal = signal.SIGTERM


class LoseNode(KillDaemon):
    kind = "node"
    aims = "node"
    help = "kill -9 every daemon of a node at once; undo: start them all again"

    @classmethod
    def target_problem(cls, target: str, spec: Any) -> str | None:
        return not_one_of("node", target, spec.node_names())

    def in_pods(self):
        """Daemons in pods: every one of dfslab's on the node, signalled where the runtime reaches
        their containers (a Kubernetes you run; on the local one a node is lost with `nodeloss`, and
        the filesystem's refusal of `node` says so)."""
        if not self.cluster.runtime.daemons_in_pods:
            return None
        from .pod import SignalNodeDaemons
        return SignalNodeDaemons(self.cluster)

    def inject(self, target: str) -> dict[str, Any]:
        if pods := self.in_pods():
            return pods.inject(target)
        procs = [p for p in self.cluster.runtime.procs.all() if p.node == target and p.meta.get("kind") != "client"]
        if not procs:
            raise FaultInputError(f"no daemons on node {target!r}; nodes: {', '.join(self.cluster.spec.node_names())}")
        for proc in procs:
            self.cluster.runtime.signal_process(proc, signal.SIGKILL)
        # Daemons the tracked ones started (GlusterFS bricks and self-heal daemon) die with the node too.
        for pid in self.children_on(target):
            os.kill(pid, signal.SIGKILL)
        return {"daemons": [p.restartable() for p in procs]}

    def children_on(self, node: str) -> list[int]:
        """PIDs marked with this cluster, on `node`, that dfslab did not spawn itself."""
        tracked = {p.pid for p in self.cluster.runtime.procs.all()}
        return [pid for pid in self.cluster.runtime.marked_on(node) if pid not in tracked]

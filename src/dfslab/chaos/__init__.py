"""Faults: each kind is a module with an inject and its own undo, behind `Fault`.

What a fault changed is written to the cluster's state directory before it is changed
(resource kind "faults"), so `dfslab fault NAME restore` undoes it later and `dfslab down`
finds nothing half-broken after dfslab itself was killed (namespaces and processes go with
the cluster anyway). To add a fault kind: a `Fault` subclass (dfslab.fault) registered in
`GENERIC_FAULTS` (every cluster) or in its filesystem package's `FAULTS` (that filesystem only).
The table of kinds is read from the registry each time it is asked (`fault_kinds`), so a
filesystem registered after dfslab was imported brings its kinds along.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ..fault import Fault, FaultedCluster, FaultError, FaultInputError, daemons_of, not_a_machine, not_one_of
from ..registry import FILESYSTEMS, backend_class_of, fault_owner, faults_of, load_class, runtime_of

__all__ = ["Fault", "FaultError", "FaultInputError", "FaultedCluster", "daemons_of", "not_a_machine", "not_one_of",
           "GENERIC_FAULTS", "fault_kinds", "fault_class", "refusal_of", "kinds_for", "check_applies", "inject", "undo",
           "active", "restore_all", "Injected", "targets_of"]


@dataclass
class Injected:
    kind: str
    target: str
    at: float  # when injecting began
    record: dict[str, Any]
    in_effect: float | None = None  # when inject returned: the fault holds from here (fill takes a while)

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "target": self.target, "at": self.at, "record": self.record, "in_effect": self.in_effect}


# Kinds every cluster has; a filesystem's own kinds come from its package (registry.faults_of).
GENERIC_FAULTS = {
    "kill": "dfslab.chaos.daemon:KillDaemon",
    "stop": "dfslab.chaos.daemon:StopDaemon",
    "node": "dfslab.chaos.daemon:LoseNode",
    "partition": "dfslab.chaos.link:CutLink",
    "degrade": "dfslab.chaos.link:DegradeLink",
    "pod": "dfslab.chaos.pod:DeletePod",
    "drain": "dfslab.chaos.kube:DrainNode",
    "nodeloss": "dfslab.chaos.kube:NodeLoss",
    "upgrade": "dfslab.chaos.upgrade:Upgrade",
}


def fault_kinds() -> dict[str, str]:
    """Every fault kind, {kind: "module:Class"}: the generic ones and each registered filesystem's own."""
    return {**GENERIC_FAULTS, **{k: v for fs in FILESYSTEMS for k, v in faults_of(fs).items()}}


def refusal_of(kind: str, spec: Any) -> str | None:
    """Why a cluster of `spec` does not take fault `kind` (None: it does): a kind the cluster's
    backend refuses (e.g. any fault not allowed on a cluster dfslab did not make), a kind its
    runtime cannot do, and a filesystem's own kind on another's cluster unless that backend
    borrows it (it works through the same client tools)."""
    backend = backend_class_of(spec.filesystem, spec.runtime)
    refusal = backend.refusal(spec, fault=kind)
    if refusal:
        return refusal
    if kind in fault_kinds():
        refusal = fault_class(kind).runtime_refusal(runtime_of(spec)) or fault_class(kind).backend_refusal(backend)
        if refusal:
            return f"fault {kind}: {refusal}"
    owner = fault_owner(kind)
    if owner and owner != spec.filesystem and kind not in backend.facts.borrowed_faults:
        return f"fault {kind} is for {owner} clusters; this one is {spec.filesystem}"
    return None


def kinds_for(spec: Any) -> list[str]:
    """The fault kinds a cluster of `spec` takes, by name."""
    return [k for k in sorted(fault_kinds()) if refusal_of(k, spec) is None]


def check_applies(kind: str, spec: Any) -> None:
    """Refused before anything runs: what refusal_of says, with the kinds this cluster takes."""
    refusal = refusal_of(kind, spec)
    if refusal:
        raise FaultInputError(f"{refusal}: kinds here: {', '.join(kinds_for(spec)) or 'none'}")


def fault_class(kind: str) -> type[Fault]:
    kinds = fault_kinds()
    if kind not in kinds:
        raise FaultInputError(f"unknown fault {kind!r}; kinds: {', '.join(sorted(kinds))}")
    return load_class(kinds[kind])


def inject(cluster: FaultedCluster, kind: str, target: str, **options: Any) -> Injected:
    check_applies(kind, cluster.spec)  # before anything is recorded or broken
    fault_class(kind).check_options(options)
    fault = fault_class(kind)(cluster)
    pending = {"kind": kind, "target": target, "at": time.time(), "record": {"pending": True, **options}}
    cluster.state.add_resource("faults", pending)
    try:
        record = fault.inject(target, **options)
    except FaultInputError:
        cluster.state.remove_resource("faults", pending)  # refused before anything changed
        raise
    except Exception:
        # Half an inject is still a change: try the undo before giving up the record.
        try:
            fault.undo(target, {})
        except Exception:
            pass
        cluster.state.remove_resource("faults", pending)
        raise
    done = Injected(kind, target, pending["at"], record, time.time())
    cluster.state.remove_resource("faults", pending)
    if fault.undoable:
        cluster.state.add_resource("faults", done.as_dict())
    return done


def undo(cluster: FaultedCluster, injected: dict[str, Any]) -> str | None:
    seen = fault_class(injected["kind"])(cluster).undo(injected["target"], injected["record"])
    cluster.state.remove_resource("faults", injected)
    return seen


def active(cluster: FaultedCluster) -> list[dict[str, Any]]:
    return cluster.state.resources("faults")


def restore_all(cluster: FaultedCluster) -> list[dict[str, Any]]:
    """Undo every recorded fault, newest first."""
    undone = []
    for injected in reversed(active(cluster)):
        undo(cluster, injected)
        undone.append(injected)
    return undone


def targets_of(cluster: FaultedCluster) -> dict[str, list[str]]:
    """What each kind this cluster takes can be aimed at, by the names its target takes: the
    cluster's daemons (the spec's names, or on Kubernetes those of its running pods) or its
    machines; a kind of its own (a brick, an OSD to fill) is left out."""
    spec = cluster.spec
    daemons = daemons_of(spec)
    if daemons is None and cluster.runtime.daemons_in_pods:  # Kubernetes names them: its running pods say which
        from .pod import running_daemons
        daemons = running_daemons(cluster)
    names = {"daemon": daemons or [], "node": [*spec.node_names(), *spec.client_names()]}
    out = {}
    for kind in kinds_for(spec):
        cls = fault_class(kind)
        if cls.aims in names:
            out[kind] = [n for n in names[cls.aims] if cls.target_problem(n, spec) is None]
    return out

"""Faults: each kind is a module with an inject and its own undo, behind `Fault`.

What a fault changed is written to the cluster's state directory before it is changed
(resource kind "faults"), so `dfslab fault NAME restore` undoes it later and `dfslab down`
finds nothing half-broken after dfslab itself was killed (namespaces and processes go with
the cluster anyway). To add a fault kind: a `Fault` subclass registered in `GENERIC_FAULTS`
(every cluster) or in its filesystem package's `FAULTS` (that filesystem only).
"""

from __future__ import annotations

import inspect
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..registry import FILESYSTEMS, backend_class_of, faults_of, load_class, runtime_of

if TYPE_CHECKING:  # the cluster layer is above this package's registry and base class
    from ..cluster import Attached


class FaultError(RuntimeError):
    """A fault cannot be injected or undone; the message says why."""


class FaultInputError(FaultError):
    """A bad kind, target or option, found before anything was changed (so nothing is undone)."""


@dataclass
class Injected:
    kind: str
    target: str
    at: float  # when injecting began
    record: dict[str, Any]
    in_effect: float | None = None  # when inject returned: the fault holds from here (fill takes a while)

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "target": self.target, "at": self.at, "record": self.record, "in_effect": self.in_effect}


class Fault(ABC):
    kind: str = "?"
    help: str = ""

    def __init__(self, cluster: Attached):
        self.cluster = cluster

    @abstractmethod
    def inject(self, target: str, **options: Any) -> dict[str, Any]:
        """Break `target`; return what `undo` needs. A subclass names each option it takes as a
        keyword parameter with its default: that signature is the option list users see."""

    @classmethod
    def option_defaults(cls) -> dict[str, Any]:
        """{option: default} from the inject signature."""
        params = list(inspect.signature(cls.inject).parameters.values())[2:]  # self, target
        return {p.name: p.default for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY
                or p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD}

    @classmethod
    def check_options(cls, options: dict[str, Any]) -> dict[str, Any]:
        """The options with defaults filled in; an unknown key is a FaultError naming the valid ones."""
        known = cls.option_defaults()
        unknown = sorted(set(options) - set(known))
        if unknown:
            valid = ", ".join(f"{k} (default {v})" for k, v in known.items()) or "none"
            raise FaultInputError(f"fault {cls.kind}: unknown option(s) {', '.join(map(repr, unknown))}; options: {valid}")
        return {**known, **options}

    @classmethod
    def runtime_refusal(cls, runtime: Any) -> str | None:
        """Why this kind cannot be injected on `runtime` (a Runtime class: what it declares it can
        do), None where it can."""
        return None

    @classmethod
    def target_problem(cls, target: str, spec: Any) -> str | None:
        """Why `target` names nothing a cluster of `spec` will have (None: it may), found from the
        spec before a run starts rather than by the inject mid-run."""
        return None

    @abstractmethod
    def undo(self, target: str, record: dict[str, Any]) -> str | None:
        """Put `target` back as it was; may return what the system showed of the fault just
        before the undo (a node loss: whether Kubernetes had marked the node and its pods)."""

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
}


FAULTS = {**GENERIC_FAULTS, **{k: v for fs in FILESYSTEMS for k, v in faults_of(fs).items()}}
FILESYSTEM_OF = {k: fs for fs in FILESYSTEMS for k in faults_of(fs)}


def refusal_of(kind: str, spec: Any) -> str | None:
    """Why a cluster of `spec` does not take fault `kind` (None: it does): a kind the cluster's
    backend refuses (e.g. any fault not allowed on a cluster dfslab did not make), a kind its
    runtime cannot do, and a filesystem's own kind on another's cluster unless that backend
    borrows it (it works through the same client tools)."""
    backend = backend_class_of(spec.filesystem, spec.runtime)
    refusal = backend.refuses_faults(spec, kind)
    if refusal:
        return refusal
    if kind in FAULTS:
        refusal = fault_class(kind).runtime_refusal(runtime_of(spec))
        if refusal:
            return f"fault {kind}: {refusal}"
    owner = FILESYSTEM_OF.get(kind)
    if owner and owner != spec.filesystem and kind not in backend.borrowed_faults:
        return f"fault {kind} is for {owner} clusters; this one is {spec.filesystem}"
    return None


def kinds_for(spec: Any) -> list[str]:
    """The fault kinds a cluster of `spec` takes, by name."""
    return [k for k in sorted(FAULTS) if refusal_of(k, spec) is None]


def check_applies(kind: str, spec: Any) -> None:
    """Refused before anything runs: what refusal_of says, with the kinds this cluster takes."""
    refusal = refusal_of(kind, spec)
    if refusal:
        raise FaultInputError(f"{refusal}: kinds here: {', '.join(kinds_for(spec)) or 'none'}")


def not_one_of(what: str, target: str, names: list[str] | None) -> str | None:
    """A target_problem: `target` is not among `names` (None: the spec does not tell)."""
    if names is None or target in names:
        return None
    return f"no {what} {target!r} in a cluster of this spec; {what}s: {', '.join(names) or 'none'}"


def not_a_machine(target: str, spec: Any) -> str | None:
    """A target_problem for faults on a node's link or host: any node of the spec, clients included."""
    return not_one_of("node", target, [*spec.node_names(), *spec.client_names()])


def daemons_of(spec: Any) -> list[str] | None:
    return backend_class_of(spec.filesystem, spec.runtime).daemon_names(spec)


def fault_class(kind: str) -> type[Fault]:
    if kind not in FAULTS:
        raise FaultInputError(f"unknown fault {kind!r}; kinds: {', '.join(sorted(FAULTS))}")
    return load_class(FAULTS[kind])


def inject(cluster: Attached, kind: str, target: str, **options: Any) -> Injected:
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
    cluster.state.add_resource("faults", done.as_dict())
    return done


def undo(cluster: Attached, injected: dict[str, Any]) -> str | None:
    seen = fault_class(injected["kind"])(cluster).undo(injected["target"], injected["record"])
    cluster.state.remove_resource("faults", injected)
    return seen


def active(cluster: Attached) -> list[dict[str, Any]]:
    return cluster.state.resources("faults")


def restore_all(cluster: Attached) -> list[dict[str, Any]]:
    """Undo every recorded fault, newest first."""
    undone = []
    for injected in reversed(active(cluster)):
        undo(cluster, injected)
        undone.append(injected)
    return undone

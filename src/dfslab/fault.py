"""What a fault kind is (the contract every kind implements, generic or a filesystem's own) and
what it acts on. Below the backends: a filesystem's package implements its own kinds against this
module (backends/ceph/faults.py), while chaos/ registers, injects, records and undoes them.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Protocol

from .polling import wait_until
from .registry import backend_class_of

if TYPE_CHECKING:
    from .runtime import Runtime
    from .spec import ClusterSpec
    from .state import ClusterState


class FaultedCluster(Protocol):
    """A cluster that is up, as a fault acts on it (cluster.Attached is one): its state directory
    (where faults are recorded), spec, runtime and backend, and the environment its tools run in."""

    state: ClusterState
    spec: ClusterSpec
    runtime: Runtime
    backend: Any  # its Backend (the layer above this contract, which its own fault kinds implement)

    @property
    def env(self) -> dict[str, str]: ...


class FaultError(RuntimeError):
    """A fault cannot be injected or undone; the message says why."""


class FaultInputError(FaultError):
    """A bad kind, target or option, found before anything was changed (so nothing is undone)."""


class Fault(ABC):
    kind: str = "?"
    help: str = ""
    # False for a change nothing puts back (an upgrade: Ceph supports no downgrade): once made it
    # is not kept among the cluster's active faults, and `restore` has nothing of it to undo.
    undoable: bool = True
    # What its target names: "daemon" (osd.1, as `fault NAME list` lists the cluster's), "node",
    # or "" (a kind of its own: a brick, an OSD to fill, the operator), for `fault NAME list`.
    aims: str = ""

    def __init__(self, cluster: FaultedCluster):
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
    def backend_refusal(cls, backend: Any) -> str | None:
        """Why a cluster of `backend` (its class) cannot take this kind at all (None: it can)."""
        return None

    @classmethod
    def target_problem(cls, target: str, spec: Any) -> str | None:
        """Why `target` names nothing a cluster of `spec` will have (None: it may), found from the
        spec before a run starts rather than by the inject mid-run."""
        return None

    @classmethod
    def spec_after(cls, target: str, spec: Any) -> Any:
        """The cluster's spec once this fault is in (a later fault's target is checked against it):
        unchanged, but for a fault that changes what the cluster is (an upgrade: its release)."""
        return spec

    @abstractmethod
    def undo(self, target: str, record: dict[str, Any]) -> str | None:
        """Put `target` back as it was; may return what the system showed of the fault just
        before the undo (a node loss: whether Kubernetes had marked the node and its pods)."""


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


def start_again(runtime: Any, record: dict[str, Any]) -> None:
    """Start a daemon stopped by a fault as it was (`TrackedProcess.restartable()`): the same
    command line, identity and data (on docker: a new container, same bind mounts), from the
    software its node runs now (after an upgrade, the new release's)."""
    runtime.procs.exited(record["name"])  # reap a child of ours, if it is one
    runtime.spawn(record["name"], record["node"], record["cmd"], env=record.get("env"), meta=record["meta"])


RESTART_TIMEOUT = 300  # seconds an undo waits for what Kubernetes makes again (a pod, a node's pods)


class KubernetesFault(Fault):
    """A fault through the API server of a cluster dfslab runs on its local Kubernetes."""

    @classmethod
    def runtime_refusal(cls, runtime) -> str | None:
        if not runtime.daemons_in_pods:
            return (f"for a filesystem in Kubernetes' pods (runtime kubernetes); on {runtime.where} its daemons are "
                    "processes: use kill, stop or node")
        return None

    def api(self):
        if not self.cluster.runtime.daemons_in_pods:
            raise FaultInputError(f"fault {self.kind} is for a filesystem in Kubernetes' pods; cluster "
                                  f"{self.cluster.state.name} runs on {self.cluster.runtime.where}")
        return self.cluster.backend.api()

    def core(self):
        from kubernetes import client
        return client.CoreV1Api(self.api())

    @property
    def namespace(self) -> str:
        return self.cluster.runtime.namespace  # Rook's (the spec's) or the filesystem's own

    def wait(self, done, what: str, timeout: float = RESTART_TIMEOUT) -> None:
        wait_until(done, what, timeout, 1.0, lambda _: FaultError(
            f"{what} not within {timeout:.0f} s; `dfslab status {self.cluster.state.name}` shows the pods"))

    def wait_for_nothing_missing(self, missing, what: str, timeout: float = RESTART_TIMEOUT) -> None:
        """`wait`, naming in its error what was still missing at the deadline."""
        left: list[str] = []

        def done() -> bool:
            left[:] = missing()
            return not left
        try:
            self.wait(done, what, timeout)
        except FaultError as exc:
            raise FaultError(f"{exc}; still missing: {'; '.join(left[:6])}{' …' if len(left) > 6 else ''}"
                             if left else str(exc)) from None

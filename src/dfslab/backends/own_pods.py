"""What an engine of dfslab's own on the local Kubernetes shares (GlusterFS's and MooseFS's: no
operator runs them, dfslab's StatefulSets do): its daemons are pods, so a fault that signals their
processes is refused (its undo would start a daemon outside Kubernetes; `pod` and `nodeloss` act
on them there), and a Kubernetes you run is refused until the engine is built for one, as is a
release of another suite than this machine's (its image is made, but these engines have not run one)."""

from __future__ import annotations

from abc import abstractmethod

from ..registry import rooted_release
from .abilities import PodsOnKubernetes


class OwnPods(PodsOnKubernetes):
    """Put first among a backend's bases, so that its `refusal` is asked before the filesystem's."""

    signal_faults: tuple[str, ...] = ("kill", "stop", "node")  # kinds whose undo starts a process
    in_pods = ""  # what runs in pods, as the refusal says it: "glusterd and its bricks"
    not_on_yours = ""  # why it is not built for a Kubernetes you run ("": it is, and says its own refusals there)

    @classmethod
    @abstractmethod
    def pod_example(cls, spec) -> str:
        """A daemon of `spec` that `fault pod` takes, for the refusal's example."""

    @classmethod
    def refusal(cls, spec, target: str | None = None, fault: str | None = None) -> str | None:
        if fault in cls.signal_faults:
            return (f"fault {fault}: on runtime kubernetes {cls.in_pods} run in pods; use fault pod "
                    f"(e.g. dfslab fault {spec.name} pod {cls.pod_example(spec)}) or nodeloss")
        if fault is None and target is None and spec.kubernetes.user_cluster and cls.not_on_yours:
            return (f"kubernetes.kubeconfig: {cls.not_on_yours}; use kubernetes: {{local: {{}}}}, or filesystem: "
                    f"external with your own cluster's mount")
        release = rooted_release(spec)
        if fault is None and target is None and release is not None:
            return (f"{spec.filesystem}.release: {release.name} ({release.says}) on runtime kubernetes is not built yet "
                    f"(dfslab's engine here runs this machine's packages); use runtime local or docker for it")
        return super().refusal(spec, target, fault)

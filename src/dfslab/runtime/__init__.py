"""Where processes run. A runtime gives every node an address and a way to run a command
on it; backends reach a node only through those commands and never make or remove
namespaces, containers or pods themselves (a backend's own command may still isolate
itself inside its node, as glusterd's `unshare --mount` gives it a private /run).

To add a runtime (docker, kubernetes): implement `Runtime` (base.py) in a new module and register
it in `RUNTIMES`. Teardown must work from the state directory alone (`attach`), because
dfslab may have been killed in the middle of `up`.
"""

from __future__ import annotations

import os

from ..registry import load_class
from ..spec import ClusterSpec
from ..state import ClusterState
from .base import CLIENT, RUN_DIR_ENV, Runtime, RuntimeError_

__all__ = ["CLIENT", "RUN_DIR_ENV", "Runtime", "RuntimeError_", "RUNTIMES", "runtime_class", "select_runtime",
           "attach_runtime"]

RUNTIMES = {
    "local": "dfslab.runtime.local:LocalNetnsRuntime",
    "loopback": "dfslab.runtime.loopback:LoopbackRuntime",
    "docker": "dfslab.runtime.docker:DockerRuntime",
    "kubernetes": "dfslab.runtime.kubernetes:KubernetesRuntime",
    "kubernetes-existing": "dfslab.runtime.kubernetes.existing:ExistingKubernetesRuntime",
    "host": "dfslab.runtime.host:HostRuntime",
}


def runtime_class(kind: str) -> type[Runtime]:
    return load_class(RUNTIMES[kind])


def select_runtime(spec: ClusterSpec, state: ClusterState) -> Runtime:
    """The spec's runtime; `local` falls back to loopback addresses without CAP_NET_ADMIN."""
    if spec.runtime == "local":
        from .local import LocalNetnsRuntime, netns_available  # the registry picks among runtimes
        # DFSLAB_NO_NETNS=1 takes the fallback on purpose (to test it, or to share the host's lo).
        if os.environ.get("DFSLAB_NO_NETNS") != "1" and netns_available():
            return LocalNetnsRuntime(state)
        from .loopback import LoopbackRuntime
        return LoopbackRuntime(state, fallback=True)
    if spec.runtime == "kubernetes" and spec.kubernetes.user_cluster:
        return runtime_class("kubernetes-existing")(state)
    return runtime_class(spec.runtime)(state)


def attach_runtime(state: ClusterState) -> Runtime:
    """The runtime a cluster was created with, rebuilt from its state directory."""
    kind = state.read().get("runtime_kind", "local")
    return runtime_class(kind)(state)

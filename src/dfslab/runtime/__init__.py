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

from ..registry import RUNTIMES, runtime_class, runtime_of
from ..spec import ClusterSpec
from ..state import ClusterState
from .base import CLIENT, POD_DIRS_ENV, RUN_DIR_ENV, Runtime, RuntimeError_

__all__ = ["CLIENT", "POD_DIRS_ENV", "RUN_DIR_ENV", "Runtime", "RuntimeError_", "RUNTIMES", "runtime_class", "runtime_of",
           "select_runtime", "attach_runtime"]


def select_runtime(spec: ClusterSpec, state: ClusterState) -> Runtime:
    """The spec's runtime; `local` falls back to loopback addresses without CAP_NET_ADMIN."""
    chosen = runtime_of(spec)
    if chosen.kind == "local":
        from .local import netns_available  # the registry picks among runtimes
        # DFSLAB_NO_NETNS=1 takes the fallback on purpose (to test it, or to share the host's lo).
        if os.environ.get("DFSLAB_NO_NETNS") == "1" or not netns_available():
            from .loopback import LoopbackRuntime
            return LoopbackRuntime(state, fallback=True)
    return chosen(state)


def attach_runtime(state: ClusterState) -> Runtime:
    """The runtime a cluster was created with, rebuilt from its state directory."""
    kind = state.read().get("runtime_kind", "local")
    return runtime_class(kind)(state)

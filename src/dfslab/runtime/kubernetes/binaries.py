"""Where the Kubernetes and Rook binaries dfslab builds are (scripts/build-kubernetes.sh caches
them), and the API server's port: what both the runtime and its control plane need, kept apart
so that neither imports the other."""

from __future__ import annotations

import os
from pathlib import Path

from ..base import RuntimeError_

API_PORT = 6443
# The engine in dfslab's image where the cluster's release names none (`Release.engine`), as the
# build names its binary (bin/NAME-VERSION): Rook v1.12.11, the last that runs Ceph Pacific, this
# machine's Ceph. scripts/build-kubernetes.sh builds it by default.
ENGINE_DEFAULT = "rook-v1.12.11"


def k8s_cache() -> Path:
    return Path(os.environ.get("DFSLAB_K8S_CACHE", Path.home() / ".cache/dfslab/kubernetes"))


def binary(name: str) -> str:
    path = k8s_cache() / "bin" / name
    if not path.exists():
        raise RuntimeError_(f"runtime kubernetes: {path} is missing; `dfslab up` builds the Kubernetes and Rook "
                            "binaries on first use, or ahead: bash scripts/build-kubernetes.sh (~10 min cold)")
    return str(path)



def engine_of(release) -> str:
    """The engine build a cluster of `release` (a `registry.Release`, or None) runs: the one it names, else the default."""
    return getattr(release, "engine", None) or ENGINE_DEFAULT

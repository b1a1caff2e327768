"""Where the Kubernetes and Rook binaries dfslab builds are (scripts/build-kubernetes.sh caches
them), and the API server's port: what both the runtime and its control plane need, kept apart
so that neither imports the other."""

from __future__ import annotations

import os
from pathlib import Path

from ..base import RuntimeError_

API_PORT = 6443


def k8s_cache() -> Path:
    return Path(os.environ.get("DFSLAB_K8S_CACHE", Path.home() / ".cache/dfslab/kubernetes"))


def binary(name: str) -> str:
    path = k8s_cache() / "bin" / name
    if not path.exists():
        raise RuntimeError_(f"runtime kubernetes: {path} is missing; `dfslab up` builds the Kubernetes and Rook "
                            "binaries on first use, or ahead: bash scripts/build-kubernetes.sh (~10 min cold)")
    return str(path)

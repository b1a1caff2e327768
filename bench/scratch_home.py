"""A DFSLAB_HOME of a benchmark's own, removed afterwards (unless a cluster is left in it,
so `DFSLAB_HOME=... dfslab down --all` can still clean up). A home the user set is theirs:
it is used as it is and never removed."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


@contextmanager
def scratch_home(keep_runs: bool = False) -> Iterator[Path]:
    """keep_runs: run directories go to $DFSLAB_RUNS or ./runs (the benchmark prints their
    reports) instead of the scratch home."""
    if "DFSLAB_HOME" in os.environ:
        yield Path(os.environ["DFSLAB_HOME"])
        return
    home = Path(tempfile.mkdtemp(prefix="dfslab-bench-"))
    os.environ["DFSLAB_HOME"] = str(home)
    if not keep_runs:
        os.environ.setdefault("DFSLAB_RUNS", str(home / "runs"))
    try:
        yield home
    finally:
        clusters = home / "clusters"
        if clusters.is_dir() and any(clusters.iterdir()):
            print(f"left a cluster in {home}: DFSLAB_HOME={home} dfslab down --all", file=sys.stderr)
        else:
            shutil.rmtree(home)

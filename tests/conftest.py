"""Shared fixtures. Cluster tests run real Ceph daemons in network namespaces: they need
root and Debian's Ceph packages (scripts/install-deps.sh installs them)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

# Every dfslab process a test starts (CLI subprocesses included) keeps its state here,
# away from a user's own clusters in /var/lib/dfslab.
_HOME = tempfile.mkdtemp(prefix="dfslab-test-")
os.environ["DFSLAB_HOME"] = _HOME
os.environ["DFSLAB_RUNS"] = str(Path(_HOME) / "runs")

REPO = Path(__file__).resolve().parent.parent
DFSLAB = [sys.executable, "-m", "dfslab.cli"]


def pytest_sessionfinish(session, exitstatus):
    # The temporary DFSLAB_HOME goes when no cluster is left in it (a test that failed to tear
    # down keeps its state, so `DFSLAB_HOME=... dfslab down --all` can still clean up).
    clusters = Path(_HOME) / "clusters"
    if not clusters.is_dir() or not any(clusters.iterdir()):
        shutil.rmtree(_HOME, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="cluster tests need root (network namespaces, Ceph daemons)")
    for item in items:
        if "cluster" in item.keywords:
            item.add_marker(skip)


def dfslab(*args: str, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess:
    res = subprocess.run([*DFSLAB, *args], capture_output=True, text=True, timeout=timeout, cwd=REPO)
    if check and res.returncode != 0:
        raise AssertionError(f"dfslab {' '.join(args)} exited {res.returncode}\nstdout:{res.stdout}\nstderr:{res.stderr}")
    return res


def small_spec(name: str, cephfs: bool = True, clients: int = 1) -> str:
    return SMALL_SPEC.format(name=name, cephfs=str(cephfs).lower(), clients=clients)


def write_spec(tmp: Path, text: str) -> Path:
    path = tmp / "spec.yaml"
    path.write_text(text)
    return path


def status_json(name: str) -> dict:
    return json.loads(dfslab("status", name, "--json").stdout)


def wait_for(pred, timeout: float, what: str, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


SMALL_SPEC = """
name: {name}
nodes: 3
clients: {clients}
ceph:
  mons: 1
  osds_per_node: 1
  osd_size: 2GiB
  replica_size: 2
  cephfs: {cephfs}
"""

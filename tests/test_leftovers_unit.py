"""The check every test session ends with (tests/leftovers.py) names what a test left behind:
a process carrying the session's mark, a network namespace and its mount; and nothing once they
are gone, nor a process of someone else's."""

from __future__ import annotations

import os
import subprocess
import uuid

import pytest

from conftest import wait_for
from leftovers import SESSION_MARK, Snapshot


@pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
def test_a_marked_process_and_a_namespace_are_named_until_they_are_gone(tmp_path):
    before = Snapshot(str(tmp_path))
    ns = f"t-left-{uuid.uuid4().hex[:6]}"
    ours = subprocess.Popen(["sleep", "60"])  # inherits this session's mark
    theirs = subprocess.Popen(["sleep", "60"], env={k: v for k, v in os.environ.items() if k != SESSION_MARK})
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        left = before.left()
        assert [p for p in left["processes"] if p.startswith(f"pid {ours.pid} ")]
        assert not [p for p in left["processes"] if p.startswith(f"pid {theirs.pid} ")]
        assert ns in left["network namespaces"] and f"/run/netns/{ns} (nsfs)" in left["mounts"]
    finally:
        for proc in (ours, theirs):
            proc.kill()
            proc.wait()
        subprocess.run(["ip", "netns", "del", ns], check=True)
    # (other tests may run beside this one: only what this one made is looked for)
    def gone() -> bool:
        left = before.left()
        return not [p for p in left.get("processes", []) if p.startswith(f"pid {ours.pid} ")] \
            and ns not in left.get("network namespaces", [])
    wait_for(gone, 10, "the process and the namespace no longer named")


def test_a_cluster_state_dir_left_in_the_sessions_home_is_named(tmp_path):
    (tmp_path / "clusters" / "t-forgotten").mkdir(parents=True)
    left = Snapshot(str(tmp_path), machine=False).left()
    assert left["dfslab clusters"] == ["t-forgotten"] and "network namespaces" not in left  # (machine=False)

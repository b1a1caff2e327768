"""`down` on the local Kubernetes removes its containers' cgroups (runc leaves a killed
container's behind) even when a killed process is still in one for a moment, and a cgroup
that stays is recorded, named as left over, and removed by the next `down`. A real cgroup with
a real process in it, in every kind of cgroup tree this machine has: a v1 controller (pids) and
the v2 tree (at /sys/fs/cgroup on Debian 12's default, at /sys/fs/cgroup/unified on a hybrid)."""

from __future__ import annotations

import secrets
import subprocess
from pathlib import Path

import pytest

from dfslab.runtime.kubernetes import KubernetesRuntime
from dfslab.state import ClusterState

def _trees() -> dict[str, Path]:
    """Where this machine mounts cgroup trees a container's cgroup can be made in."""
    found = {}
    for line in Path("/proc/mounts").read_text().splitlines():
        _, where, kind, options, *_ = line.split()
        if kind == "cgroup2":
            found["v2"] = Path(where)
        elif kind == "cgroup" and "pids" in options.split(","):
            found["v1 pids"] = Path(where)
    return found


TREES = _trees()


@pytest.fixture(params=sorted(TREES) or ["none"])
def container_cgroup(request):
    if request.param == "none":
        pytest.skip("no cgroup tree is mounted here")
    tree = TREES[request.param]
    parent = tree / "k8s.io"
    made_parent = not parent.exists()
    cgroup = parent / secrets.token_hex(32)  # a container id's shape
    cgroup.mkdir(parents=True)
    try:
        yield cgroup
    finally:
        if cgroup.exists():
            for pid in (cgroup / "cgroup.procs").read_text().split():
                (tree / "cgroup.procs").write_text(pid)
            cgroup.rmdir()
        if made_parent:
            parent.rmdir()


def test_a_busy_cgroup_is_recorded_named_and_removed_by_the_next_down(container_cgroup):
    state = ClusterState("t-cgroup-unit")
    state.create({"name": "t-cgroup-unit"})
    rt = KubernetesRuntime(state)
    cid = container_cgroup.name
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        (container_cgroup / "cgroup.procs").write_text(str(sleeper.pid))
        rt._remove_cgroups([cid], timeout=0.5)  # a process still in it: rmdir is refused
        assert container_cgroup.is_dir()
        assert state.resources("cgroup") == [str(container_cgroup)]
        assert f"cgroup {container_cgroup}" in rt.leftovers()

        sleeper.kill()
        sleeper.wait()
        rt._remove_cgroups([])  # the next down: the container ids are gone, the record is not
        assert not container_cgroup.exists()
        assert state.resources("cgroup") == []
        assert not [x for x in rt.leftovers() if x.startswith("cgroup ")]
    finally:
        sleeper.kill()
        state.destroy()


def test_a_cgroup_is_removed_once_its_last_process_has_ended(container_cgroup):
    state = ClusterState("t-cgroup-unit2")
    state.create({"name": "t-cgroup-unit2"})
    rt = KubernetesRuntime(state)
    ending = subprocess.Popen(["sleep", "1"])  # a process on its way out as down removes the cgroup
    try:
        (container_cgroup / "cgroup.procs").write_text(str(ending.pid))
        rt._remove_cgroups([container_cgroup.name], timeout=10)
        assert not container_cgroup.exists()
        assert state.resources("cgroup") == []
    finally:
        ending.kill()
        ending.wait()
        state.destroy()


def test_a_hand_edited_record_outside_containers_cgroups_is_never_removed(tmp_path):
    state = ClusterState("t-cgroup-unit3")
    state.create({"name": "t-cgroup-unit3"})
    elsewhere = tmp_path / "k8s.io" / ("a" * 64)
    elsewhere.mkdir(parents=True)
    state.add_resource("cgroup", str(elsewhere))
    try:
        KubernetesRuntime(state)._remove_cgroups([])
        assert elsewhere.is_dir()
    finally:
        state.destroy()

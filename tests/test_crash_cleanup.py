"""`dfslab down` cleans up after a dfslab that was killed -9 or interrupted in the middle of `up`."""

import os
import signal
import subprocess
from pathlib import Path

import pytest

from conftest import DFSLAB, REPO, ctrl_c_as_at_a_terminal, small_spec, dfslab, wait_for, write_spec
from dfslab import cluster
from dfslab.procs import marked_pids
from dfslab.state import ClusterState

pytestmark = pytest.mark.cluster


def start_up(tmp_path: Path, name: str, *options: str) -> subprocess.Popen:
    spec = write_spec(tmp_path, small_spec(name, cephfs=True))
    return subprocess.Popen([*DFSLAB, "up", str(spec), *options], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=ctrl_c_as_at_a_terminal)


def osds_started(name: str) -> bool:
    pids = ClusterState(name).dir / "pids"
    return pids.is_dir() and len(list(pids.glob("osd.*.json"))) == 3


@pytest.mark.parametrize("moment, runtime", [("namespaces made", "local"), ("OSDs started", "local"),
                                             ("OSDs started", "docker")])
def test_down_after_kill_9_mid_up(tmp_path, moment, runtime):
    name = "t-kill" + ("-ns" if moment == "namespaces made" else "-osd") + ("-dk" if runtime == "docker" else "")
    proc = start_up(tmp_path, name, "--runtime", runtime)
    try:
        if moment == "namespaces made":
            wait_for(lambda: Path(f"/run/netns/dfs-{name}-client").exists(), 60, "the client namespace")
        else:
            # docker: the first up on a fresh machine builds the image first (~70 s)
            wait_for(lambda: osds_started(name), 300 if runtime == "docker" else 120, "three OSDs to be spawned")
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert cluster.leftovers(name), "kill -9 came too late: nothing was left to clean up"
        if moment == "OSDs started":
            assert len(marked_pids(name)) >= 3  # daemons outlived the dfslab that started them
        if runtime == "docker":  # `down` finds the containers by their label
            assert any(item.startswith("container ") for item in cluster.leftovers(name))
        res = dfslab("down", name)
        assert "left:" not in res.stderr
        assert cluster.leftovers(name) == []
    finally:
        if proc.poll() is None:
            proc.kill()
        cluster.down(name, missing_ok=True)


def test_ctrl_c_during_up_removes_everything(tmp_path):
    name = "t-intr"
    proc = start_up(tmp_path, name)
    try:
        wait_for(lambda: (ClusterState(name).dir / "pids" / "mon.a.json").exists(), 60, "the MON to be spawned")
        os.kill(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert "interrupted" in err
        assert cluster.leftovers(name) == []
    finally:
        if proc.poll() is None:
            proc.kill()
        cluster.down(name, missing_ok=True)

"""What each use installs: `make demo` only Ceph and the quickstart's tools; GlusterFS, Docker's
and Kubernetes' pieces on the first use that needs them (one list, read by scripts/install-deps.sh
and dfslab.deps alike)."""

from __future__ import annotations

import subprocess

from conftest import REPO
from dfslab import deps
from dfslab.registry import FILESYSTEMS, RUNTIMES, runtime_class, runtime_of
from dfslab.experiment import load_experiment


def test_the_demo_group_holds_what_the_quickstart_runs_and_nothing_heavier():
    demo = set(deps.groups()["demo"])
    assert {"ceph-osd", "ceph-fuse", "fio", "iperf3", "mariadb-server"} <= demo
    assert not demo & {"docker.io", "debootstrap", "chromium", "prometheus", "golang-go", "etcd-server", "glusterfs-server"}
    exp = load_experiment(f"{REPO}/examples/quickstart.yaml")
    assert exp.cluster.filesystem == "ceph" and exp.cluster.runtime == "local"  # nothing beyond demo on first use
    assert runtime_of(exp.cluster).debian_groups == () and runtime_of(exp.cluster).builds == ()
    assert deps.debian_groups("ceph") == []


def test_every_group_dfslab_asks_for_is_one_the_install_script_knows():
    wanted = {g for gs in (*(runtime_class(k).debian_groups for k in RUNTIMES), *map(deps.debian_groups, FILESYSTEMS))
              for g in gs}
    assert "docker" in wanted and "kubernetes" in wanted  # the runtimes' own, not only the filesystems'
    assert {b for k in RUNTIMES for b in runtime_class(k).builds} <= set(deps.BUILDS)
    assert wanted <= set(deps.groups())
    res = subprocess.run(["bash", "scripts/install-deps.sh", "no-such-group"], cwd=REPO, capture_output=True, text=True)
    assert res.returncode == 2 and "no group no-such-group" in res.stderr


def test_installed_packages_are_not_installed_again():
    assert deps.missing("demo") == []  # this machine ran `make test`'s install, which has every group


def test_a_package_dpkg_does_not_know_is_missing_beside_installed_ones(monkeypatch):
    # one dpkg-query for the whole group: an unknown name must not hide the others' status
    monkeypatch.setattr(deps, "groups", lambda: {"g": ["fio", "dfslab-no-such-package", "iperf3"]})
    assert deps.missing("g") == ["dfslab-no-such-package"]

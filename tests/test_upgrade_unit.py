"""The rolling upgrade's own rules (chaos/upgrade.py), with the cluster stood in for: the release is
installed on the servers before the first restart, groups restart in the backend's order, each only
once it may stop and the next only once it is back on the new version, the recorded spec ends as
`release: NEW, client_release: OLD`, and after a failed group the backend's flags are still undone.
Real clusters: tests/test_releases.py (Pacific to Reef under load, Reef to Tentacle)."""

from __future__ import annotations

import signal
from types import SimpleNamespace

import pytest

from dfslab.backends.abilities import RollingUpgrade
from dfslab.chaos import upgrade as upgrade_module
from dfslab.chaos.upgrade import Upgrade, upgrade_problem
from dfslab.fault import FaultError, FaultInputError
from dfslab.spec import parse_spec

SPEC = parse_spec({"name": "u", "filesystem": "ceph", "nodes": 2, "ceph": {"mons": 1}})


class Proc:
    def __init__(self, name, node):
        self.name, self.node = name, node

    def restartable(self):
        return {"name": self.name, "node": self.node, "cmd": [self.name], "meta": {}, "env": {}}


class Backend(RollingUpgrade):
    name = "ceph"

    def __init__(self, log, back_after=1, fail_on=None):
        self.log, self.back_after, self.fail_on, self.asked = log, back_after, fail_on, {}

    def before_upgrade(self, upgraded):
        self.log.append(("before", upgraded.ceph.release))
        return ["flag set"]

    def upgrade_groups(self):
        return [["mon.a"], ["osd.0", "osd.1"]]

    def may_stop(self, names):
        self.log.append(("may_stop", tuple(names)))
        return True

    def stop_started(self, names):
        self.log.append(("stop_started", tuple(names)))

    def started_again(self, names):
        return ["rejoined"] if names == ["mon.a"] else []

    def upgraded(self, names, version):
        if self.fail_on and names == self.fail_on:
            raise FaultError("never back")
        self.asked[tuple(names)] = self.asked.get(tuple(names), 0) + 1
        return self.asked[tuple(names)] >= self.back_after

    def after_upgrade(self, release, completed):
        self.log.append(("after", release, completed))
        return ["flag unset"] + ([f"finalised {release}"] if completed else [])


class Runtime:
    software_roots, where = True, "runtime local"

    def __init__(self, log):
        self.log = log
        self.procs = SimpleNamespace(get=lambda name: Proc(name, "node1" if name != "osd.1" else "node2"),
                                     exited=lambda name: None)

    def install_release(self, release, clients, progress):
        self.log.append(("install", release.name, tuple(clients)))

    def signal_process(self, proc, sig, grace=30):
        assert sig == signal.SIGTERM  # a clean stop, as an upgrade's restart is
        self.log.append(("stop", proc.name))

    def spawn(self, name, node, cmd, env=None, meta=None):
        self.log.append(("start", name))


def cluster(backend, log):
    state = SimpleNamespace(updates=[], name="u")
    state.update = lambda **kw: state.updates.append(kw)
    return SimpleNamespace(spec=SPEC, backend=backend, runtime=Runtime(log), state=state, env={})


def test_the_release_goes_on_first_then_each_group_in_order_and_the_spec_says_both(monkeypatch):
    monkeypatch.setattr(upgrade_module, "wait_until", lambda done, what, *a, **k: done() or done())
    log: list = []
    c = cluster(Backend(log, back_after=2), log)
    record = Upgrade(c).inject("reef")
    assert log[0] == ("install", "reef", ("client",))
    # what a group started itself is stopped after the group, before it starts again
    assert [e for e in log if e[0] in ("stop", "start", "stop_started")] == [
        ("stop", "mon.a"), ("stop_started", ("mon.a",)), ("start", "mon.a"), ("stop", "osd.0"), ("stop", "osd.1"),
        ("stop_started", ("osd.0", "osd.1")), ("start", "osd.0"), ("start", "osd.1")]
    assert log.index(("may_stop", ("osd.0", "osd.1"))) > log.index(("start", "mon.a"))
    assert log[-1] == ("after", "reef", True)
    spec = c.state.updates[0]["spec"]["ceph"]
    assert (spec["release"], spec["client_release"]) == ("reef", "pacific")
    steps = [s["what"] for s in record["steps"]]
    assert steps[1:] == ["flag set", "mon.a", "rejoined", "osd.0, osd.1", "flag unset", "finalised reef"] and "installed" in steps[0]
    assert [s.get("node") for s in record["steps"] if s["what"].startswith(("mon", "osd"))] == ["node1", "node1"]


def test_a_group_that_does_not_come_back_stops_the_upgrade_and_the_flags_are_undone(monkeypatch):
    monkeypatch.setattr(upgrade_module, "wait_until", lambda done, what, *a, **k: done())
    log: list = []
    with pytest.raises(FaultError, match="never back"):
        Upgrade(cluster(Backend(log, fail_on=["osd.0", "osd.1"]), log)).inject("reef")
    assert log[-1] == ("after", "reef", False)  # noout unset, no require-osd-release


def test_a_downgrade_an_unknown_release_and_a_leap_are_refused_before_anything_changes():
    backend = type("B", (Backend,), {"upgrade_problem": classmethod(lambda cls, s, c, t: None)})
    reef = parse_spec({"name": "u", "filesystem": "ceph", "nodes": 2, "ceph": {"release": "reef"}})
    assert "no downgrade" in upgrade_problem(reef, backend, "pacific")
    assert "unknown release 'squid'" in upgrade_problem(SPEC, backend, "squid")
    from dfslab.backends.ceph.backend import CephBackend
    assert "upgrade to reef first" in upgrade_problem(SPEC, CephBackend, "tentacle")
    assert upgrade_problem(SPEC, CephBackend, "reef") is None
    # a cluster whose OSDs could never be stopped one host at a time is refused, naming the field
    alone = parse_spec({"name": "u", "filesystem": "ceph", "nodes": 1, "ceph": {"replica_size": 1}})
    assert "ceph.replica_size is 1" in upgrade_problem(alone, CephBackend, "reef")
    one_node = parse_spec({"name": "u", "filesystem": "ceph", "nodes": 1, "ceph": {"osds_per_node": 2, "replica_size": 2, "failure_domain": "osd"}})
    assert "one node" in upgrade_problem(one_node, CephBackend, "reef")
    from dfslab.backends.external.backend import ExternalBackend
    assert Upgrade.backend_refusal(ExternalBackend) == "external has no rolling upgrade in dfslab yet"
    log: list = []
    with pytest.raises(FaultInputError):
        Upgrade(cluster(Backend(log), log)).inject("pacific")
    assert log == []  # nothing installed, nothing stopped


def test_ceph_asks_each_kind_of_daemon_by_its_own_id_and_waits_for_the_quorum_and_up():
    """`mon metadata id=a`, `osd metadata id=1` (a number), `mgr metadata who=x`: each must report
    the new version, a monitor be in the quorum and an OSD be up."""
    from dfslab.backends.ceph import upgrade as ceph_upgrade
    new = "ceph version 18.2.7 (abc) reef (stable)"

    class Admin:
        quorum, up = ["a"], {1: 1}

        def raw(self, prefix, **args):
            assert args == {"mon metadata": {"id": "a"}, "osd metadata": {"id": 1}, "mgr metadata": {"who": "x"}}[prefix], args
            return 0, f'{{"ceph_version": "{new}"}}', ""

        def cmd(self, prefix, **args):
            return {"quorum_status": {"quorum_names": self.quorum},
                    "osd dump": {"osds": [{"osd": i, "up": u} for i, u in self.up.items()]}}[prefix]

    admin = Admin()
    backend = SimpleNamespace(ctx=SimpleNamespace(admin=admin))
    assert ceph_upgrade.upgraded(backend, ["mon.a", "mgr.x", "osd.1"], "18.2.7")
    assert not ceph_upgrade.upgraded(backend, ["mon.a"], "20.2.4")  # still the old version
    admin.quorum, admin.up = [], {1: 0}
    assert not ceph_upgrade.upgraded(backend, ["mon.a"], "18.2.7") and not ceph_upgrade.upgraded(backend, ["osd.1"], "18.2.7")


def test_glusterfs_upgrades_only_volumes_that_keep_serving_while_one_server_restarts():
    from dfslab.backends.gluster.backend import GlusterBackend
    gluster = lambda nodes=3, **g: parse_spec({"name": "g", "filesystem": "gluster", "nodes": nodes, "gluster": g})  # noqa: E731
    assert "gluster.volume: distribute" in upgrade_problem(gluster(volume="distribute"), GlusterBackend, "11")
    assert "gluster.replica: 2" in upgrade_problem(gluster(2, volume="replicate", replica=2), GlusterBackend, "11")
    assert upgrade_problem(gluster(volume="replicate", replica=3), GlusterBackend, "11") is None
    assert upgrade_problem(gluster(volume="disperse", disperse_data=2, redundancy=1), GlusterBackend, "11") is None
    assert "no downgrade" in upgrade_problem(gluster(release="11"), GlusterBackend, "10")


def test_a_glusterfs_daemons_version_is_the_one_its_newest_start_logged(tmp_path):
    """Each glusterd and brick logs its version when it starts; the log holds every start since the
    cluster was made (10.3's first, then 11.1's), so the newest line is the running process's."""
    from dfslab.backends.gluster.upgrade import last_started_version
    line = ("[2026-11-29 06:37:{s} +0000] I [MSGID: 100030] [glusterfsd.c:2872:main] 0-/usr/sbin/glusterfsd: Started running "
            "version [{{arg=/usr/sbin/glusterfsd}}, {{version={v}}}, {{cmdlinestr=/usr/sbin/glusterfsd -s 10.77.5.10}}]\n")
    log = tmp_path / "brick.log"
    log.write_text(line.format(s="21.99", v="10.3") + "[...] I [server.c:500] 0-dfslab-server: disconnecting\n"
                   + line.format(s="27.82", v="11.1"))
    assert last_started_version(log) == "11.1"
    log.write_text(line.format(s="21.99", v="10.3"))
    assert last_started_version(log) == "10.3"
    log.write_text("[...] I [server.c:500] 0-dfslab-server: disconnecting\n")
    assert last_started_version(log) is None and last_started_version(tmp_path / "absent.log") is None


def test_a_bricks_port_is_the_one_its_command_line_gives_it():
    """After the upgrade a restarted glusterd can hand clients a brick's old port (both runs of
    2026-11-29 10:40: ports 50852 and 58515 for bricks listening on 51795 and 52427); the port a
    brick listens on is its --brick-port argument, read from its /proc entry."""
    import subprocess
    import sys
    from dfslab.backends.gluster.upgrade import brick_port
    child = "print('ready', flush=True); import time; time.sleep(30)"  # says so once it runs its own argv

    def started(*args: str) -> subprocess.Popen:
        proc = subprocess.Popen([sys.executable, "-c", child, *args], stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline() == "ready\n"
        return proc
    proc = started("--brick-name", "/b0", "--brick-port", "51795", "--xlator-option", "dfslab-server.listen-port=51795")
    try:
        assert brick_port(proc.pid) == "51795"
    finally:
        proc.kill()
        proc.wait()
    plain = started("--brick-port")  # no value
    try:
        assert brick_port(plain.pid) is None
    finally:
        plain.kill()
        plain.wait()
    assert brick_port(plain.pid) is None  # gone


def test_each_upgrade_of_a_run_is_checked_against_the_release_the_one_before_leaves():
    """examples/ceph-upgrade-chain.yaml: Pacific to Reef, then Reef to Tentacle (each two majors at
    most) is accepted; Reef then Pacific is refused at the second (not newer than what the first
    leaves), and Pacific straight to Tentacle at the first, before any cluster is made."""
    from pathlib import Path
    from dfslab.experiment import load_experiment, parse_experiment
    from dfslab.run import check_against_cluster
    from dfslab.spec import SpecError
    examples = Path(__file__).resolve().parent.parent / "examples"
    chain = load_experiment(examples / "ceph-upgrade-chain.yaml")
    spec = chain.cluster
    check_against_cluster(chain, spec)
    raw = chain.file.model_dump(mode="json", exclude_none=True)
    raw["cluster"] = spec.model_dump(mode="json", exclude_none=True)

    def refusals(targets: list[str]) -> str:
        for fault, target in zip(raw["faults"], targets):
            fault["target"] = target
        with pytest.raises(SpecError) as err:
            check_against_cluster(parse_experiment(raw, examples), spec)
        return str(err.value)
    backwards = refusals(["reef", "pacific"])
    assert "faults[1].target" in backwards and "faults[0].target" not in backwards and "no downgrade" in backwards
    skipping = refusals(["tentacle", "tentacle"])
    assert "faults[0].target" in skipping and "pacific -> tentacle is 4" in skipping

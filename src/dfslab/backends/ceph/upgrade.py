"""The rolling upgrade: a running cluster moved to a newer Ceph release daemon by daemon, in the
order Ceph documents for clusters not run by cephadm ("Upgrading from Pacific or Quincy", Reef's
release notes): the monitors, the managers, the OSDs one host at a time under `noout` (each host
only once `ceph osd ok-to-stop` agrees), the MDS, the gateways; then `ceph osd require-osd-release`.

As on a site, the servers' packages are replaced first (Runtime.install_release: the new release's
root on the server nodes) and each daemon runs the new release from its restart (SIGTERM, then the
same command line, identity and data); the clients keep theirs, so the cluster ends as
`release: NEW, client_release: OLD`, which its recorded spec then says. Ceph supports no
downgrade, so neither does this fault: its undo is none.
"""

from __future__ import annotations

import signal
import time
from typing import Any

from ...fault import FaultError, FaultInputError, start_again
from ...polling import wait_until
from ...registry import release_named, release_problem
from . import rgw
from .faults import CephFault

STEP_TIMEOUT = 300  # s a restarted daemon has to come back (an OSD replays its journal first)
# Ceph upgrades at most two major releases at once (Reef from Pacific or Quincy, Tentacle from
# Reef or Squid).
MAX_MAJOR_STEP = 2
ORDER = ("mon", "mgr", "osd", "mds", "rgw")  # the documented order, by daemon kind


def _major(release: str) -> int:
    return int(release_named("ceph", release).version.split(".")[0])


def upgrade_problem(current: str, target: str) -> str | None:
    """Why a cluster of release `current` cannot be upgraded to `target` (None: it can)."""
    if problem := release_problem("ceph", target):
        return f"upgrade to what? {problem}"
    step = _major(target) - _major(current)
    if step <= 0:
        return (f"the cluster runs {current} already or a newer release than {target}: Ceph supports no "
                "downgrade (its monitors' and OSDs' stores move forward at the first start of a newer release)")
    if step > MAX_MAJOR_STEP:
        between = [r.name for r in _releases() if _major(current) < _major(r.name) < _major(target)]
        return (f"Ceph upgrades at most two major releases at once ({current} -> {target} is {step}): "
                f"upgrade to {' or '.join(between) or 'a release between'} first")
    return None


def _releases():
    from . import RELEASES
    return RELEASES


class Upgrade(CephFault):
    kind = "upgrade"
    undoable = False
    help = ("upgrade the servers to a newer release (target: its name, e.g. reef) daemon by daemon as Ceph "
            "documents it: MONs, MGR, OSDs one host at a time under noout, MDS, RGW; the clients keep "
            "theirs; undo: none (Ceph supports no downgrade)")

    @classmethod
    def runtime_refusal(cls, runtime) -> str | None:
        if not runtime.software_roots:
            return f"runs a release's daemons from its root, which {runtime.where} cannot (runtime local can)"
        return None

    @classmethod
    def target_problem(cls, target: str, spec: Any) -> str | None:
        return upgrade_problem(spec.ceph.release, target)

    def inject(self, target: str) -> dict[str, Any]:
        spec = self.cluster.spec
        before = spec.ceph.release
        if problem := upgrade_problem(before, target):
            raise FaultInputError(problem)
        release = release_named("ceph", target)
        began = time.time()
        self.cluster.runtime.install_release(release, spec.client_names(), lambda *_: None)
        upgraded = spec.model_copy(update={"ceph": spec.ceph.model_copy(
            update={"release": target, "client_release": spec.ceph.client_release or before})})
        self.cluster.backend.write_conf(upgraded)  # the new release's own options (conf.RELEASE_CONF)
        self.cluster.state.update(spec=upgraded.model_dump(mode="json"))
        steps = [{"what": f"{release.says} installed on the servers", "start": began, "end": time.time()}]
        admin = self.cluster.backend.ctx.admin
        admin.cmd("osd set", key="noout")
        try:
            for kind in ORDER:
                for group in self._groups(kind):
                    steps.append(self._restart(group, release, admin))
        finally:
            admin.cmd("osd unset", key="noout")
        start = time.time()
        admin.cmd("osd require-osd-release", release=target, yes_i_really_mean_it=True)
        steps.append({"what": f"osd require-osd-release {target}", "start": start, "end": time.time()})
        return {"from": before, "to": target, "steps": steps}

    def _groups(self, kind: str) -> list[list[Any]]:
        """The running daemons of `kind`, in the groups they restart in: OSDs by host, others one by one."""
        procs = [p for p in self.cluster.runtime.procs.all() if p.name.split(".")[0] == kind]
        if kind != "osd":
            return [[p] for p in procs]
        hosts: dict[str, list[Any]] = {}
        for proc in procs:
            hosts.setdefault(proc.node, []).append(proc)
        return list(hosts.values())

    def _restart(self, group: list[Any], release, admin) -> dict[str, Any]:
        names = [p.name for p in group]
        kind = names[0].split(".")[0]
        if kind == "osd":  # Ceph's own word that stopping these keeps every PG available
            ids = [n.split(".")[1] for n in names]
            self._wait(lambda: admin.raw("osd ok-to-stop", ids=ids)[0] == 0, f"ceph osd ok-to-stop {' '.join(ids)}")
        start = time.time()
        runtime = self.cluster.runtime
        again = [p.restartable() for p in group]
        for proc in group:
            runtime.signal_process(proc, signal.SIGTERM, grace=30)
        stopped = time.time()
        for record in again:
            start_again(runtime, record)
        self._wait(lambda: all(self._runs(name, release, admin) for name in names),
                   f"{', '.join(names)} back on {release.version}")
        return {"what": ", ".join(names), "node": group[0].node, "start": start, "stopped": stopped, "end": time.time()}

    def _runs(self, name: str, release, admin) -> bool:
        """`name` is back and reports the new version (a monitor in the quorum, an OSD up)."""
        kind, ident = name.split(".", 1)
        if kind == "rgw":
            return all(rgw.answers(self.cluster.runtime, url) for _, url, _ in self.cluster.backend.gateways())
        which = {"mon": {"id": ident}, "osd": {"id": int(ident) if ident.isdigit() else ident}}.get(kind, {"who": ident})
        ret, out, _ = admin.raw(f"{kind} metadata", **which)
        if ret != 0 or f"ceph version {release.version} " not in out:
            return False
        if kind == "mon":
            return ident in admin.cmd("quorum_status").get("quorum_names", [])
        if kind == "osd":
            return any(o["osd"] == int(ident) and o["up"] for o in admin.cmd("osd dump")["osds"])
        return True

    def _wait(self, done, what: str) -> None:
        wait_until(done, what, STEP_TIMEOUT, 1.0, lambda message: FaultError(
            f"upgrade stopped: {message}; `dfslab status {self.cluster.state.name}` shows the daemons"))

    def undo(self, target: str, record: dict[str, Any]) -> None:
        """Ceph supports no downgrade: the cluster stays on the new release."""

"""Ceph's rolling upgrade (its backend's RollingUpgrade ability; chaos/upgrade.py moves the
daemons): the order Ceph documents for clusters not run by cephadm ("Upgrading from Pacific or
Quincy", Reef's release notes): the monitors, the managers, the OSDs one host at a time under
`noout` (each host only once `ceph osd ok-to-stop` agrees), the MDS, the gateways; then
`ceph osd require-osd-release`. Ceph upgrades at most two major releases at once (Reef from
Pacific or Quincy, Tentacle from Reef or Squid).
"""

from __future__ import annotations

from typing import Any

from ...registry import release_named
from . import rgw

MAX_MAJOR_STEP = 2
ORDER = ("mon", "mgr", "osd", "mds", "rgw")  # the documented order, by daemon kind


def _major(release: str) -> int:
    return int(release_named("ceph", release).version.split(".")[0])


def problem(spec: Any, current: str, target: str) -> str | None:
    """Why a cluster of `spec` on `current` cannot be upgraded to `target` daemon by daemon (None: it can)."""
    return major_step_problem(current, target) or availability_problem(spec)


def availability_problem(spec: Any) -> str | None:
    """The OSDs are restarted one host at a time, each once `ceph osd ok-to-stop` agrees: where one
    host holds every copy of some placement group it never agrees, and the upgrade would wait out
    its timeout at the first OSD. Refused before anything changes instead."""
    c = spec.ceph
    if c.replica_size < 2:
        return ("ceph.replica_size is 1: every OSD holds the only copy of its placement groups, so none can be "
                "stopped for its restart without its data going offline (`ceph osd ok-to-stop` never agrees); "
                "upgrade a cluster with replica_size 2 or more")
    if c.failure_domain != "host" or len(spec.nodes) < 2:
        return (f"{'one node' if len(spec.nodes) < 2 else 'ceph.failure_domain: ' + c.failure_domain}: the OSDs are "
                "restarted one host at a time, and a host holding every copy of a placement group can never be "
                "stopped (`ceph osd ok-to-stop`); upgrade a cluster of 2 or more nodes with failure_domain host")
    return None


def major_step_problem(current: str, target: str) -> str | None:
    step = _major(target) - _major(current)
    if step <= MAX_MAJOR_STEP:
        return None
    from . import RELEASES
    between = [r.name for r in RELEASES if _major(current) < _major(r.name) < _major(target)]
    return (f"Ceph upgrades at most two major releases at once ({current} -> {target} is {step}): "
            f"upgrade to {' or '.join(between) or 'a release between them'} first")


def groups(procs: list[Any]) -> list[list[str]]:
    """The running daemons in the documented order: OSDs by host, the others one by one."""
    out: list[list[str]] = []
    for kind in ORDER:
        mine = [p for p in procs if p.name.split(".")[0] == kind]
        if kind != "osd":
            out += [[p.name] for p in mine]
            continue
        hosts: dict[str, list[str]] = {}
        for proc in mine:
            hosts.setdefault(proc.node, []).append(proc.name)
        out += list(hosts.values())
    return out


def may_stop(admin: Any, names: list[str]) -> bool:
    """Ceph's own word that stopping these OSDs keeps every PG available (others: always)."""
    ids = [n.split(".", 1)[1] for n in names if n.startswith("osd.")]
    return not ids or admin.raw("osd ok-to-stop", ids=ids)[0] == 0


def upgraded(backend: Any, names: list[str], version: str) -> bool:
    """Each of `names` is back and reports `version` (a monitor in the quorum, an OSD up, a
    gateway answering)."""
    admin = backend.ctx.admin
    for name in names:
        kind, ident = name.split(".", 1)
        if kind == "rgw":
            if not all(rgw.answers(backend.runtime, url) for _, url, _ in backend.gateways()):
                return False
            continue
        which = {"id": int(ident)} if kind == "osd" else {"id": ident} if kind == "mon" else {"who": ident}
        ret, out, _ = admin.raw(f"{kind} metadata", **which)
        if ret != 0 or f"ceph version {version} " not in out:
            return False
    # Asked once for the group (a host's OSDs), not once per daemon.
    mons = [n.split(".", 1)[1] for n in names if n.startswith("mon.")]
    if mons and not set(mons) <= set(admin.cmd("quorum_status").get("quorum_names", [])):
        return False
    osds = {int(n.split(".", 1)[1]) for n in names if n.startswith("osd.")}
    return not osds or osds <= {o["osd"] for o in admin.cmd("osd dump")["osds"] if o["up"]}


def before(backend: Any, upgraded_spec: Any) -> list[str]:
    backend.write_conf(upgraded_spec)  # the new release's own options (conf.RELEASE_CONF)
    backend.ctx.admin.cmd("osd set", key="noout")
    return ["ceph.conf for the new release", "osd set noout"]


def after(backend: Any, release: str, completed: bool) -> list[str]:
    admin = backend.ctx.admin
    admin.cmd("osd unset", key="noout")
    if not completed:
        return ["osd unset noout"]
    admin.cmd("osd require-osd-release", release=release, yes_i_really_mean_it=True)
    return ["osd unset noout", f"osd require-osd-release {release}"] + mute_old_key_checks(admin)


INSECURE_KEYS = "AUTH_INSECURE_"  # Tentacle's checks for the AES-128 keys every earlier release made


def mute_old_key_checks(admin: Any) -> list[str]:
    """The checks a release raises against the keys the cluster was made with (Tentacle: HEALTH_ERR
    for AES-128 keys, until every key is rotated as Ceph's "Upgrading CephX keys" says, and its
    rotating service keys keep the old type 2-3 h after), muted (sticky: a count that grows does
    not unmute them) and said so: they say nothing of whether the data came through the upgrade,
    which the recovery wait measures. `ceph health detail` still lists them, marked muted."""
    checks = (admin.cmd("status") or {}).get("health", {}).get("checks", {})
    codes = sorted(code for code in checks if code.startswith(INSECURE_KEYS))
    for code in codes:
        admin.cmd("health mute", code=code, sticky=True)
    if not codes:
        return []
    return [f"health mute --sticky {' '.join(codes)}: the keys are the old release's AES-128; rotate them as Ceph's "
            f"\"Upgrading CephX keys\" says (dfslab does not)"]

"""The ceph backend: orders its daemon modules; everything dfslab knows about ceph lives in this package."""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

import psutil

from ...units import human_bytes
from ...runtime import CLIENT
from ...state import dfslab_home
from ..abilities import (CapacityPlan, ClientSetup, ConfinedStorage, HealthAlarms, LiveSettings, Metrics, ObjectPools,
                         OpenHandles, RollingUpgrade, SecondClients, ServerCaches, ToolTargets)
from .. import Backend, BackendError, Chart, Facts, new_bucket, PreflightError, Progress, Reach, drop_page_cache, release_versions, table
from ...registry import S3Endpoint, rooted_release
from . import client, health, live, mds, mgr, mon, options, osd, pools, rgw, tools, upgrade
from .keys import key_type
from .checks import HealthChecks
from .conf import CephLayout, mon_placement, osd_placement, render_conf
from .objects import OWN_PYTHON, release_python
from .context import CephContext


# Planned resident memory per daemon on this kind of machine (an OSD was seen at 240-890 MB under load).
PLANNED_RSS = {"mon": 64 << 20, "mgr": 320 << 20, "osd": 768 << 20, "mds": 128 << 20}


class CephBackend(Backend, OpenHandles, ToolTargets, ObjectPools, LiveSettings, ConfinedStorage, SecondClients, HealthAlarms, ClientSetup,
                  ServerCaches, CapacityPlan, Metrics, RollingUpgrade):
    name = "ceph"
    facts = Facts(
        required_programs=("ceph-mon", "ceph-mgr", "ceph-osd", "ceph-mds", "monmaptool", "nsenter", "ip", "tc"),
        log_dirs=("logs", "ceph/logs", "ceph/conf"),
        offers={"fs": "ceph.cephfs: true", "rados": "", "rbd": "", "confine": "", "s3": "ceph.rgw: 1 or more",
                # cls_dfslab is built against this machine's (Pacific's) headers: another release's OSDs must not load it
                "objclass": "ceph.release: pacific"},
        peek="ceph -s",
        metadata_servers=r"mds\..+",
        metadata_path="CephFS's MDS (one active here), which the OSDs back with its journal and directories",
        # examples/fault-matrix.yaml (docs/measurements.md): HEALTH_OK with every PG clean 0-17 s after
        # the undo, 7 s for half of the kinds
        typical_recovery_seconds=7.0,
        charts=(
            Chart(r"ceph\.pgs\..*|ceph\.osds_(up|in)|ceph\.health", "count",
                  "Ceph: PG states, OSDs up/in and health (0 OK, 1 WARN, 2 ERR) over time"),
            Chart(r"ceph\.client_(write|read)", "MB/s", "client throughput as Ceph saw it", faults_only=True),
        ),
        # The admin CLIs set a step up (pools, CRUSH rules, the RBD image fio's rbd engine opens): on a
        # runtime of Jobs each takes the control path and spares a pod start (~5 s: 11 of them made a
        # 3 s servers-scaling step take 80 s). s3cmd too: `dfslab exec NAME -- s3cmd ...` finds the S3
        # user's keys where they are kept, in the cluster's state on this machine (a pod has neither).
        admin_tools=frozenset({"ceph", "rbd", "s3cmd"}),
    )

    @classmethod
    def preflight(cls, spec) -> None:
        super().preflight(spec)
        c = spec.ceph
        # A new cluster's keys are its release's kind; a cluster upgraded into a release keeps the
        # keys it was made with, so this holds for new clusters only (not in the spec's checks).
        servers_key, clients_key = key_type(c.release), key_type(c.client_release or c.release)
        if clients_key < servers_key:
            raise PreflightError(f"ceph.client_release: a new {c.release} cluster's cephx keys are AES-256, which "
                                 f"{c.client_release}'s librados cannot use; name a client release of {c.release} "
                                 "or newer, or leave it out")
        planned = (c.mons * PLANNED_RSS["mon"] + PLANNED_RSS["mgr"] * c.mgr + PLANNED_RSS["mds"] * c.cephfs
                   + len(spec.nodes) * c.osds_per_node * PLANNED_RSS["osd"])
        available = psutil.virtual_memory().available
        if planned > 0.8 * available:
            raise PreflightError(f"ceph.osds_per_node/nodes: this cluster plans ~{planned / 2**30:.1f} GiB of daemon "
                                 f"memory but only {available / 2**30:.1f} GiB is available; use fewer OSDs")
        free = shutil.disk_usage(dfslab_home() if dfslab_home().exists() else "/").free
        osd_bytes = len(spec.nodes) * c.osds_per_node * c.osd_size
        # OSD block files are sparse, but a host disk that fills before the OSDs do crashes them.
        if osd_bytes > free:
            raise PreflightError(f"ceph.osd_size: the OSD files can grow to {osd_bytes / 2**30:.0f} GiB but only "
                                 f"{free / 2**30:.0f} GiB is free under {dfslab_home()}; lower osd_size or set "
                                 "DFSLAB_HOME to a larger disk")

    @classmethod
    def versions(cls, spec=None) -> dict[str, str]:
        return release_versions(spec, "ceph", ["ceph", "--version"])

    @classmethod
    def usable_bytes(cls, spec) -> int | None:
        c = spec.ceph
        return len(spec.nodes) * c.osds_per_node * c.osd_size // c.replica_size

    @classmethod
    def targets_for(cls, spec) -> frozenset[str]:
        # objclass: the OSDs load classes from this machine's rados-classes (the docker image links it)
        own = rooted_release(spec) is None  # this machine's Ceph, whose headers cls_dfslab is built against
        return frozenset({"rados", "rbd", "confine", *(["objclass"] if own else []), *(["fs"] if spec.ceph.cephfs else []),
                          *(["s3"] if spec.ceph.rgw else [])})

    @classmethod
    def daemon_names(cls, spec) -> list[str] | None:
        # As mon.py, mgr.py, osd.py, mds.py and rgw.py name what they start.
        c = spec.ceph
        return ([f"mon.{m}" for m in mon_placement(spec)] + (["mgr.x"] if c.mgr else [])
                + [f"osd.{i}" for i in osd_placement(spec)] + (["mds.a"] if c.cephfs else [])
                + [f"rgw.{node}" for node in spec.node_names()[:c.rgw]])

    def __init__(self, runtime, spec):
        super().__init__(runtime, spec)
        self.layout = CephLayout(self.state.dir / "ceph")
        info = self.state.read()
        self.ctx = CephContext(spec, runtime, self.layout, info.get("fsid", ""), info.get("addresses", {}))

    def deploy(self, progress: Progress, timeout: float) -> None:
        ctx = self.ctx
        ctx.fsid = str(uuid.uuid4())
        self.state.update(fsid=ctx.fsid)
        self.layout.make_dirs()
        self.write_conf(self.spec)

        progress("starting monitors", f"{self.spec.ceph.mons} MON(s)")
        mon.create(ctx)
        progress("connecting to the monitors", "waiting for quorum")
        ctx.admin.start(timeout=90)
        progress("starting manager", "mgr.x")
        mgr.create(ctx)
        n_osds = len(self.spec.nodes) * self.spec.ceph.osds_per_node
        progress("creating OSDs", f"{n_osds} BlueStore OSD(s) of {self.spec.ceph.osd_size / 2**30:.1f} GiB (sparse)")
        osd.create(ctx)
        progress("creating pools", ", ".join(pools.POOLS))
        pools.create(ctx)
        if self.spec.ceph.cephfs:
            progress("starting MDS", "CephFS 'cephfs'")
            mds.create(ctx)
        if self.spec.ceph.rgw:
            progress("starting RADOS gateways", f"{self.spec.ceph.rgw} radosgw (S3) on port {rgw.PORT}")
            rgw.create(ctx)
        health.wait_healthy(ctx.admin, self.runtime.procs, n_osds, self.spec.ceph.cephfs, progress, timeout)

    def status(self) -> dict[str, Any]:
        snap = health.snapshot(self.ctx.admin)
        pools = [{"name": p["pool_name"], "size": p["size"], "min_size": p["min_size"], "pg_num": p["pg_num"],
                  "application": sorted(p.get("application_metadata", {}))} for p in snap.pools]
        osds = dict(zip(("total", "up", "in"), snap.osds))
        states = ", ".join(f"{n} {s}" for s, n in snap.pgs_by_state.items())
        gateways = self.gateways()  # asked once: on Kubernetes it is an API call
        return {
            "health": snap.health,
            "checks": snap.checks,
            "osds": osds,
            "pgs": {"total": snap.num_pgs, "expected": snap.expected_pgs, "by_state": snap.pgs_by_state},
            "mgr_available": snap.mgr_available,
            "mds_active": snap.mds_active,
            "pools": pools,
            "write_amplification": self.spec.ceph.replica_size,
            "summary": [f"PGs: {snap.num_pgs}/{snap.expected_pgs} — {states}; OSDs {osds['up']}/{osds['total']} up, "
                        f"{osds['in']} in", *self._gateway_lines(gateways)],
            "gateways": [url for _, url, _ in gateways],
            "tables": [table("pools", ["pool", "size", "min_size", "PGs", "application"],
                             [[p["name"], p["size"], p["min_size"], p["pg_num"], ",".join(p["application"])] for p in pools])],
        }

    def _s3(self) -> S3Endpoint:
        creds = rgw.credentials(self.layout.root)
        if not creds:
            raise BackendError(f"cluster {self.spec.name} has no RADOS gateway: set ceph.rgw: 1 in its spec")
        if "endpoints" not in creds:  # the keys only: its bring-up stopped before the gateways answered
            raise BackendError(f"cluster {self.spec.name}'s gateways never answered during `dfslab up`; "
                               f"`dfslab down {self.spec.name}` and up again")
        return S3Endpoint(tuple(creds["endpoints"]), str(self.layout.root / "conf" / rgw.CREDENTIALS), "us-east-1",
                          new_bucket())

    def gateways(self) -> list[tuple[str, str, bool]]:
        """(name, S3 endpoint, whether it runs) of each RADOS gateway."""
        if not self.spec.ceph.rgw:
            return []
        alive = {p.name: p.alive() for p in self.runtime.procs.all()}
        return [(name, url, bool(alive.get(name))) for name, url in zip(rgw.placement(self.ctx), rgw.endpoints(self.ctx))]

    def _gateway_lines(self, gateways: list[tuple[str, str, bool]]) -> list[str]:
        """Each RADOS gateway (as `gateways()` gave them), whether it runs, and where the S3 user's keys are."""
        if not self.spec.ceph.rgw:
            return []
        shown = ", ".join(f"{name} {url} ({'up' if up else 'DOWN'})" for name, url, up in gateways)
        where = f"user {rgw.USER}, keys in {self.layout.root / 'conf' / rgw.CREDENTIALS} (0600)"
        return [f"S3 (RGW): {shown}; {where}; dfslab exec {self.spec.name} -- s3cmd ls"]

    def confine(self, runner, nodes: list[str], pgs: int):
        return tools.confine(runner, self.ctx.admin, nodes, pgs)

    def apply_live(self, new) -> list[str] | None:
        """Options of ceph.conf that Ceph updates at run time; anything else needs a fresh cluster."""
        old = self.spec
        same_rest = old.model_dump(exclude={"ceph"}) == new.model_dump(exclude={"ceph"}, exclude_defaults=False)
        if not same_rest or old.ceph.model_dump(exclude={"conf"}) != new.ceph.model_dump(exclude={"conf"}):
            return None
        changes = live.conf_changes(old.ceph.conf, new.ceph.conf)
        if changes is None:
            return None
        daemons: dict[str, list[str]] = {}
        for proc in self.runtime.procs.all():
            kind = proc.name.split(".")[0]
            if kind in live.LIVE_SECTIONS and proc.alive():
                daemons.setdefault(kind, []).append(proc.name)

        def run_ceph(args: list[str]) -> str:
            res = self.runtime.run(CLIENT, ["ceph", *args], timeout=120, check=False, env={**os.environ, **self.client_env()})
            if res.returncode != 0:
                raise BackendError(f"`ceph {' '.join(args)}` failed: {res.stderr.strip()[-300:]}")
            return res.stdout

        done = live.apply(self.ctx, run_ceph, changes, daemons)
        if done is not None:
            self.spec = new
            self.write_conf(new)
            for section, option, value in changes:
                if section == live.CLIENT_SECTION:
                    self._check_client_option(option, value)
        return done

    # RollingUpgrade: Ceph's documented order (upgrade.py)
    @classmethod
    def upgrade_problem(cls, spec, current: str, target: str) -> str | None:
        return upgrade.problem(spec, current, target)

    def before_upgrade(self, upgraded) -> list[str]:
        return upgrade.before(self, upgraded)

    def upgrade_groups(self) -> list[list[str]]:
        return upgrade.groups(self.runtime.procs.all())

    def may_stop(self, names: list[str]) -> bool:
        return upgrade.may_stop(self.ctx.admin, names)

    def upgraded(self, names: list[str], version: str) -> bool:
        return upgrade.upgraded(self, names, version)

    def after_upgrade(self, release: str, completed: bool) -> list[str]:
        return upgrade.after(self, release, completed)

    def write_conf(self, spec) -> None:
        """ceph.conf for `spec` (its release's options too): what a daemon or client reads at its next start."""
        public = str(ipaddress.IPv4Network(spec.network.subnet)) if self.runtime.nodes_on_subnet else None
        self.layout.conf.write_text(render_conf(spec, self.layout, self.ctx.fsid, self.ctx.addresses, public))

    def _check_client_option(self, option: str, value: Any) -> None:
        """What a client starting now reads from ceph.conf (ceph-conf parses it as librados does)."""
        res = options.read_option(str(self.layout.conf), "client.admin", option)
        got = res.stdout.strip()
        if res.returncode != 0 or not options.same_value(options.as_text(value), got):
            raise BackendError(f"ceph.conf [client] {option} reads back {got!r} after setting it to {value!r}")

    def bench_pool(self, requested: str | None) -> str:
        return requested or pools.BENCH_POOL

    def drop_server_caches(self, runner) -> str:
        # BlueStore reads with O_DIRECT: its cache is in each OSD (onodes, data), emptied by the OSD itself
        runner.run(["ceph", "tell", "osd.*", "cache", "drop"], "server-cache-drop", timeout=120)
        return "BlueStore caches (ceph tell osd.* cache drop)" + (", page cache" if drop_page_cache() else "")

    def reach(self, runner, target: str, size_bytes: int, client_cache: bool | None = None) -> Reach:
        if target == "s3":
            return self._s3()
        if client_cache is None:  # the cluster's conf decides where it sets the cache (a swept setting)
            client = {k.replace(" ", "_"): v for k, v in (self.spec.ceph.conf.get("client") or {}).items()}
            client_cache = None if "rbd_cache" in client else False
        return tools.reach(runner, target, size_bytes, client_cache)

    def pool_free_bytes(self, runner, pool: str) -> int:
        return tools.pool_free_bytes(self.ctx.admin, pool)

    def mount(self, node: str = CLIENT) -> Path:
        return client.mount_cephfs(self.ctx, node)

    def mount_instance(self, node: str, instance: str) -> Path:
        return client.mount_cephfs(self.ctx, node, instance=instance)

    def unmount_instance(self, node: str, instance: str) -> None:
        client.unmount_cephfs(self.ctx, node, instance)

    def client_env(self) -> dict[str, str]:
        """Environment for ceph/rados tools run on the client node (and s3cmd, with gateways)."""
        env = {"CEPH_CONF": str(self.layout.conf), "CEPH_ARGS": f"--keyring {self.layout.admin_keyring}",
               **rgw.client_env(self.layout.root)}
        python = release_python(self.runtime, CLIENT)
        if python:  # dfslab's own librados clients (objects.open_pool) run in the release's Python
            env[OWN_PYTHON] = json.dumps(self.runtime.command(CLIENT, python))
        return env

    def sample(self) -> dict[str, tuple[float, str]]:
        with self.checks.silence.asking():
            status = self.ctx.admin.cmd("status", timeout=10)
        self.checks.saw(status)
        health = {"HEALTH_OK": 0, "HEALTH_WARN": 1}.get(status["health"]["status"], 2)
        osdmap = status.get("osdmap", {})
        pgmap = status.get("pgmap", {})
        unclean = sum(e["count"] for e in pgmap.get("pgs_by_state", []) if e["state_name"] != "active+clean")
        out = {"ceph.health": (health, "0=OK,1=WARN,2=ERR"),
               "ceph.degraded": (int(health > 0 or unclean > 0), "0=OK,1=degraded"),
               "ceph.osds_up": (osdmap.get("num_up_osds", 0), "OSDs"),
               "ceph.osds_in": (osdmap.get("num_in_osds", 0), "OSDs"),
               "ceph.client_read": (pgmap.get("read_bytes_sec", 0) / 1e6, "MB/s"),
               "ceph.client_write": (pgmap.get("write_bytes_sec", 0) / 1e6, "MB/s"),
               "ceph.client_ops": (pgmap.get("read_op_per_sec", 0) + pgmap.get("write_op_per_sec", 0), "op/s")}
        for entry in pgmap.get("pgs_by_state", []):
            out[f"ceph.pgs.{entry['state_name']}"] = (entry["count"], "PGs")
        return out

    @property
    def checks(self) -> HealthChecks:
        """What the watch reads (created on first use: tests build a backend without __init__)."""
        if "_checks" not in self.__dict__:
            self._checks = HealthChecks()
        return self._checks

    def alarms(self) -> list[str]:
        return self.checks.alarms()

    def warnings(self) -> list[str]:
        return self.checks.warnings()

    def space_detail(self, runner: Any) -> str | None:
        out = runner.run(["ceph", "osd", "df", "--format", "json"], "osd-df-when-stopped", timeout=30, check=False)
        try:
            nodes = json.loads(out[out.index("{"):])["nodes"]
        except (ValueError, KeyError):
            return None
        fullest = max(nodes, key=lambda n: n.get("utilization", 0))
        kib = lambda key: human_bytes(fullest.get(key, 0) * 1024)  # noqa: E731
        down = [n["name"] for n in nodes if n.get("status") == "down"]
        return (f"{fullest['name']} is {fullest.get('utilization', 0):.0f} % used: {kib('kb_used_data')} data, "
                f"{kib('kb_used_meta')} BlueFS/RocksDB metadata, {kib('kb_used_omap')} omap, of {kib('kb')}"
                + (f"; down: {', '.join(down)}" if down else ""))

    # Averages of past heartbeat times: they stay raised for minutes after a link is back and
    # say nothing about whether the data has recovered.
    LINGERING_CHECKS = {"OSD_SLOW_PING_TIME_BACK", "OSD_SLOW_PING_TIME_FRONT"}

    def healthy(self) -> bool:
        snap = health.snapshot(self.ctx.admin)
        if set(snap.checks) - self.LINGERING_CHECKS or not snap.num_pgs == snap.expected_pgs == snap.clean_pgs:
            return False
        # S3 is back when every gateway answers, not when its process or pod runs: a radosgw started
        # again after a kill first notifies its predecessor's watchers, which Ceph drops only once
        # their watch times out (Rook: the restarted gateway answered 28 s after the kill, running
        # since the first second; its log: RGWSI_Notify::robust_notify ... Watchers, twice 10 s).
        return all(rgw.answers(self.runtime, url) for _, url, _ in self.gateways())

    def enable_metrics(self) -> str | None:
        self.ctx.admin.cmd("mgr module enable", module="prometheus")
        return f"ceph-mgr prometheus module on {self.ctx.addresses.get(self.spec.nodes[0].name)}:9283 (inside the cluster's namespaces)"

    def client_pid(self) -> int | None:
        proc = self.ctx.admin._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def close(self) -> None:
        self.ctx.admin.close()


BACKEND = CephBackend

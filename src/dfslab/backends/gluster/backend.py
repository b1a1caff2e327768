"""The gluster backend: orders its daemon modules; everything dfslab knows about gluster lives in this package."""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from ...polling import wait_until
from ...procs import proc_start_time, terminate
from ...safety import remove_owned_tree
from ...state import clusters_root
from ...runtime import CLIENT
from ..silence import SilenceOf
from ..abilities import (ClientSetup, ConfinedStorage, Grows, HealthAlarms, LiveSettings, RollingUpgrade, SecondClients,
                         ToolTargets)
from .. import Backend, BackendError, Chart, Facts, Confinement, Progress, release_versions, table
from ...registry import VolumeLibrary
from ..fuse import is_mounted
from . import client, glusterd, upgrade, volume
from .glusterd import GlusterContext, daemon_name

HEAL_ASK_EVERY = 10.0  # s between two `volume heal` requests while an upgrade waits for self-heal


class GlusterBackend(Backend, ToolTargets, ConfinedStorage, Grows, LiveSettings, SecondClients, HealthAlarms, ClientSetup,
                     RollingUpgrade):
    name = "gluster"
    facts = Facts(
        required_programs=("glusterd", "gluster", "glusterfs", "unshare", "nsenter", "ip", "tc"),
        log_dirs=("logs", "gluster/*/log"),
        offers={"fs": "", "gfapi": "", "confine": ""},
        metadata_path=("no metadata server: the client hashes each name to a brick (DHT), and the bricks' glusterfsd "
                       "(started by glusterd, not sampled one by one) do the metadata work beside the data"),
        # examples/gluster-faults.yaml (docs/measurements.md): healed 14-41 s after the undo, 21 s a
        # fault over its four kinds (a degraded link heals at once)
        typical_recovery_seconds=21.0,
        charts=(Chart(r"gluster\..*", "count", "GlusterFS: bricks online, peers connected, entries pending heal, "
                      "degraded (0 OK, 1 degraded) over time"),),
    )

    @classmethod
    def versions(cls, spec=None) -> dict[str, str]:
        return release_versions(spec, "glusterfs", ["glusterfs", "--version"])

    @classmethod
    def targets_for(cls, spec) -> frozenset[str]:
        return frozenset({"fs", "gfapi", "confine"})

    @classmethod
    def daemon_names(cls, spec) -> list[str] | None:
        return [daemon_name(node) for node in spec.node_names()]  # one glusterd a server (glusterd.py)

    def __init__(self, runtime, spec):
        super().__init__(runtime, spec)
        self.ctx = GlusterContext(spec, runtime, self.state.dir / "gluster", self.state.read().get("addresses", {}))
        self._heal_asked = float("-inf")  # when `volume heal` was last requested (monotonic)

    @property
    def first(self) -> str:
        """The server the CLI talks to: the first one whose glusterd runs (node loss faults)."""
        for node in self.spec.node_names():
            proc = self.runtime.procs.get(glusterd.daemon_name(node))
            if proc is not None and proc.alive():
                return node
        raise BackendError("no glusterd is running")

    def deploy(self, progress: Progress, timeout: float) -> None:
        if not self.runtime.network_per_node:
            raise BackendError(f"GlusterFS needs a network namespace per node (runtime local or docker; this is "
                               f"{self.runtime.kind}): every glusterd listens on port 24007")
        nodes = self.spec.node_names()
        progress("starting glusterd", f"{len(nodes)} server(s), each in its own network and mount namespace")
        for node in nodes:
            glusterd.start(self.ctx, node)
        for node in nodes:
            glusterd.wait_listening(self.ctx, node)
        progress("forming the trusted pool", f"peer probe from {nodes[0]}")
        glusterd.probe_peers(self.ctx)
        g = self.spec.gluster
        n_bricks = g.bricks_per_node * len(nodes)
        progress("creating the volume", f"{volume.VOLUME}: {g.volume} of {n_bricks} brick(s) "
                 + (f"({' '.join(volume.layout_args(self.ctx))})" if g.volume != "distribute" else ""))
        volume.create(self.ctx, nodes[0])
        progress("waiting for bricks", f"{n_bricks} brick(s) online")
        volume.wait_bricks_online(self.ctx, nodes[0], n_bricks, timeout)
        progress("mounting", f"FUSE client in the client namespace at {client.mount_point(self.ctx, CLIENT)[1]}")
        self.mount(CLIENT)

    # RollingUpgrade, one server at a time (upgrade.py: GlusterFS's upgrade guide).
    @classmethod
    def upgrade_problem(cls, spec, current: str, target: str) -> str | None:
        return upgrade.problem(spec)

    def upgrade_groups(self) -> list[list[str]]:
        return [[daemon_name(node)] for node in self.spec.node_names()]

    def may_stop(self, names: list[str]) -> bool:
        """Every brick online (each server asked for its own: servers of two releases reject each
        other meanwhile) and nothing left to heal; while something is, self-heal is invoked (the
        guide's step after each server) every HEAL_ASK_EVERY s."""
        if not all(upgrade.own_bricks_online(self.ctx, n) for n in self.spec.node_names()):
            return False
        try:
            pending = volume.heal_pending(self.ctx, self.first)
        except BackendError:  # asked again
            return False
        if pending and time.monotonic() - self._heal_asked >= HEAL_ASK_EVERY:
            self._ask_heal(avoid=[upgrade.node_of(name) for name in names])
        return pending == 0

    def _ask_heal(self, avoid: list[str]) -> None:
        """`volume heal`, a transaction: led from a server not about to stop whose handshakes are
        over (glusterd.SETTLED), or not at all this time."""
        self._heal_asked = time.monotonic()
        for node in self.spec.node_names():
            if node not in avoid and glusterd.handshakes_done(glusterd.peer_states(self.ctx, node, timeout=10)):
                volume.start_heal(self.ctx, node)
                return

    def stop_started(self, names: list[str]) -> None:
        tracked = {p.pid for p in self.runtime.procs.all()}
        for name in names:
            upgrade.stop_servers(self.ctx, upgrade.node_of(name), tracked)

    def started_again(self, names: list[str]) -> list[str]:
        return [line for name in names for line in upgrade.rejoin_rejected(self.ctx, upgrade.node_of(name))]

    def upgraded(self, names: list[str], version: str) -> bool:
        return all(upgrade.on_version(self.ctx, upgrade.node_of(name), version) for name in names)

    def after_upgrade(self, release: str, completed: bool) -> list[str]:
        if not completed:
            return []
        done = upgrade.rejoin(self.ctx)
        wait_until(lambda: not any(upgrade.rejecting(self.ctx, n) for n in self.spec.node_names()),
                   "every peer back in the pool", 60, 1,
                   lambda _: BackendError("a glusterd still rejects a peer after the upgrade; `dfslab status` shows the peers"))
        done += self.repair_brick_ports()
        done.append(upgrade.raise_op_version(self.ctx, self.first))
        # the guide's last step: what the last server missed is healed now, not at the next crawl
        return done + [f"volume heal {volume.VOLUME}: {volume.start_heal(self.ctx, self.first)}"]

    def repair_brick_ports(self) -> list[str]:
        """Each brick its glusterd maps to a port it does not listen on stopped and started again by
        `volume start force` (its glusterd then maps the port it gives it). One line each."""
        wrong = upgrade.misported_bricks(self.ctx)
        if not wrong:
            return []
        terminate([b["pid"] for b, _ in wrong], {b["pid"]: proc_start_time(b["pid"]) for b, _ in wrong}, timeout=30)
        for brick, _ in wrong:
            upgrade.remove_pidfile(self.ctx, brick)
        try:
            self.start_offline_bricks()
            outcome = "started again (volume start force)"
        except BackendError as exc:  # said in the step; the wait for health that follows judges the pool
            outcome = f"not all online again: {exc}"
        return [f"brick {b['brick']}: its glusterd gave clients port {b['port']}, it listened on {actual}: stopped, "
                f"{outcome}" for b, actual in wrong]

    def view(self, timeout: float = 60) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]], int | None]:
        """(server asked, bricks, peers, entries pending heal) as one server sees the pool."""
        node = self.first
        return (node, volume.bricks(self.ctx, node, timeout=timeout), glusterd.peer_states(self.ctx, node, timeout=timeout),
                volume.heal_pending(self.ctx, node, timeout=timeout))

    @staticmethod
    def intact(bricks: list[dict[str, Any]], peers: list[dict[str, Any]], heal: int | None) -> bool:
        return all(b["online"] for b in bricks) and all(p["connected"] for p in peers) and not heal

    def status(self) -> dict[str, Any]:
        node, bricks, peers, heal = self.view()
        vol = volume.info(self.ctx, node)
        ping = vol["options"].get("network.ping-timeout")
        peer_text = ", ".join(f"{p['hostname']} ({'connected' if p['connected'] else 'DISCONNECTED'})" for p in peers)
        return {"health": "HEALTH_OK" if self.intact(bricks, peers, heal) else "HEALTH_WARN", "volume": vol,
                "bricks": bricks, "peers": peers, "heal_pending": heal, "ping_timeout": ping,
                "write_amplification": self.write_amplification(),
                "summary": [f"volume {vol['name']}: {vol['type']}, {vol['status']}, {vol['bricks']} brick(s); "
                            f"network.ping-timeout {ping} s; heal pending: "
                            f"{'n/a (no redundancy)' if heal is None else heal}",
                            f"peers of {node}: {peer_text or 'none (single server)'}"],
                "tables": [table("bricks", ["brick", "pid", "port", "state"],
                                 [[b["brick"], b["pid"], b["port"], "online" if b["online"] else "offline"] for b in bricks])]}

    def write_amplification(self) -> float:
        """Bytes stored per byte written: replica count (an arbiter holds metadata only), or
        (k+m)/k for disperse, 1 for distribute."""
        g = self.spec.gluster
        if g.volume == "replicate":
            return 2 if g.arbiter else g.replica
        if g.volume == "disperse":
            return (g.disperse_data + g.redundancy) / g.disperse_data
        return 1

    def healthy(self) -> bool:
        node, bricks, peers, heal = self.view()
        return len(bricks) == volume.info(self.ctx, node)["bricks"] and self.intact(bricks, peers, heal)

    def sample(self) -> dict[str, tuple[float, str]]:
        """Peers from the first server's own view (local, fast); bricks and heal need the
        whole pool: a server that does not answer within 3 s counts as degraded."""
        node = self.first
        try:
            with self.silence.asking():
                peers = glusterd.peer_states(self.ctx, node, timeout=3)
        except BackendError:  # glusterd busy waiting on an unreachable peer
            return {"gluster.degraded": (1, "0=OK,1=degraded")}
        out = {"gluster.peers_connected": (sum(p["connected"] for p in peers), "peers")}
        try:
            bricks, heal = self.reached_bricks(node, peers)
        except BackendError:
            out["gluster.degraded"] = (1, "0=OK,1=degraded")
            return out
        self.seen_bricks = bricks
        out["gluster.bricks_online"] = (sum(b["online"] for b in bricks), "bricks")
        if heal is not None:
            out["gluster.heal_pending"] = (heal, "entries")
        out["gluster.degraded"] = (int(not self.intact(bricks, peers, heal)), "0=OK,1=degraded")
        return out

    def reached_bricks(self, node: str, peers: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int | None]:
        """(bricks with `online`, entries pending heal) for the sampler. With redundancy, from `heal
        info summary` alone: a client's reach of each brick, no glusterd transaction (one led by a
        glusterd stopped a moment later, as a rolling upgrade does, leaves its peers' volume locks
        held for 180 s: upgrade.own_bricks_online). A distribute volume has no heal: `volume
        status`, unless a handshake still runs (glusterd.SETTLED)."""
        if self.spec.gluster.volume != "distribute":
            summary = volume.heal_summary(self.ctx, node, timeout=3)
            return ([{"brick": b["brick"], "online": b["connected"]} for b in summary],
                    volume.pending_total(summary))
        if not glusterd.handshakes_done(peers):
            raise BackendError(f"a peer of {node} is still in its handshake")
        return volume.bricks(self.ctx, node, timeout=3), None

    def bricks(self) -> list[dict[str, Any]]:
        return volume.bricks(self.ctx, self.first)

    seen_bricks: list[dict[str, Any]] = []
    GLUSTERD_SILENCE = 20  # s of questions unanswered by the first server's glusterd
    silence = SilenceOf(GLUSTERD_SILENCE)

    def alarms(self) -> list[str]:
        """A set of bricks below its quorum (replicate: the volume turns read-only; disperse:
        writes fail), a brick's filesystem out of space, glusterd silent: from the sampler's
        latest `volume status` and the bricks' own filesystems (dfslab.watch)."""
        found = set_alarms(self.spec.gluster, self.seen_bricks)
        found += space_alarms({n: self.ctx.node_dir(n, "bricks") for n in self.spec.node_names()})
        if (silent := self.silence.seconds()) is not None:
            found.append(f"glusterd on {self.first} has not answered for {silent:.0f} s")
        return found

    def start_offline_bricks(self, timeout: float = 60) -> None:
        """`volume start force` until every brick is online. It restarts bricks that are down and
        leaves running ones alone, but a brick killed a moment before may still hold the lock on its
        pidfile: glusterd then takes it for running ("discovered already-running brick", GlusterFS
        11.1, 1.4 s after a kill -9) and starts nothing, so it is asked again."""
        want = len(volume.bricks(self.ctx, self.first))

        def started() -> bool:
            glusterd.cli(self.ctx, self.first, "volume", "start", volume.VOLUME, "force")
            try:
                return bool(volume.wait_bricks_online(self.ctx, self.first, want, timeout=5))
            except BackendError:
                return False
        wait_until(started, "every brick online after volume start force", timeout, 1,
                   lambda _: BackendError(f"bricks not all online {timeout:.0f} s after volume start force; see the "
                                          f"brick logs under {self.ctx.root}/<node>/log/bricks/"))

    @contextmanager
    def confine(self, runner: Any, nodes: list[str], pgs: int = 0) -> Iterator[Confinement]:
        """A distributed volume of one new brick on each of `nodes`, mounted on the client,
        for the length of a `with` block: the Azure guide's throughput-vs-servers runs."""
        name = f"{volume.VOLUME}-s{len(nodes)}"
        dirs = [self.ctx.node_dir(node, "bricks") / name for node in nodes]
        first = self.first
        volume.delete(self.ctx, first, name)  # left by an interrupted run
        for d in dirs:
            remove_owned_tree(d, [clusters_root()], f"brick directory of the servers workload's volume {name}")
        try:
            volume.create(self.ctx, first, name, [f"{self.ctx.addresses[n]}:{d}" for n, d in zip(nodes, dirs)], [])
            volume.wait_bricks_online(self.ctx, first, len(nodes), name=name)
            yield Confinement(path=client.mount_volume(self.ctx, CLIENT, name), spans={"bricks": len(nodes)})
        finally:
            client.unmount_volume(self.ctx, CLIENT, name)
            volume.delete(self.ctx, first, name)
            for d in dirs:
                remove_owned_tree(d, [clusters_root()], f"brick directory of the servers workload's volume {name}")

    def grow(self, count: int, progress: Progress, timeout: float = 1800) -> dict[str, Any]:
        """add-brick (whole replica / disperse sets), then rebalance and wait for it."""
        g = self.spec.gluster
        if count < 1 or count % g.set_size():
            raise BackendError(f"--add-bricks: {count} is not a positive multiple of the {g.volume} set size "
                               f"{g.set_size()}; add whole sets")
        node = self.first
        existing = volume.info(self.ctx, node)["brick_names"]
        bricks = volume.new_bricks(self.ctx, existing, count)
        progress("adding bricks", ", ".join(bricks))
        glusterd.cli(self.ctx, node, "volume", "add-brick", volume.VOLUME, *bricks, "force")
        volume.wait_bricks_online(self.ctx, node, len(existing) + count)
        glusterd.cli(self.ctx, node, "volume", "rebalance", volume.VOLUME, "start")
        moved = volume.wait_rebalanced(self.ctx, node, timeout, progress)
        self._refresh_client_view(progress)
        return {"added": bricks, **moved}

    def _refresh_client_view(self, progress: Progress) -> None:
        """List every directory of dfslab's client mount. Mounted before the rebalance, it answered
        ENOENT for moved files until their directory was listed (examples/gluster-small.yaml, 200
        files, 3 bricks added: 67 missing through it; after a listing, and in 3 runs with this
        walk, none): the listing's lookups find each file where the rebalance put it."""
        _, mnt = client.mount_point(self.ctx, CLIENT)
        if is_mounted(mnt):
            progress("refreshing", f"the client's view of moved files: listing every directory under {mnt}")
            for _ in os.walk(mnt):
                pass

    def apply_live(self, new) -> list[str] | None:
        """Volume options (gluster.options, ping and heal timeouts) change on the running volume;
        anything else (layout, bricks, nodes) needs a fresh cluster."""
        live_fields = {"options", "ping_timeout", "heal_interval"}
        old = self.spec
        if old.model_dump(exclude={"gluster"}) != new.model_dump(exclude={"gluster"}) or \
                old.gluster.model_dump(exclude=live_fields) != new.gluster.model_dump(exclude=live_fields):
            return None
        before = volume.options(self.ctx)
        self.ctx.spec = self.spec = new
        return volume.change_options(self.ctx, self.first, before, volume.options(self.ctx))

    def reach(self, runner, target: str, size_bytes: int, client_cache: bool | None = None) -> VolumeLibrary:
        # client_cache: libgfapi's caches are the volume's performance translators (volume options)
        if target != "gfapi":
            raise BackendError(f"{self.name} offers no target {target!r} here")
        runner.workdir("fs", "dfslab-fio-gfapi")  # made through the mount
        return VolumeLibrary(volume.VOLUME, self.ctx.addresses[self.spec.nodes[0].name], "dfslab-fio-gfapi")

    def mount(self, node: str = CLIENT) -> Path:
        return client.mount_volume(self.ctx, node)

    def mount_instance(self, node: str, instance: str) -> Path:
        return client.mount_volume(self.ctx, node, instance=instance)

    def unmount_instance(self, node: str, instance: str) -> None:
        client.unmount_volume(self.ctx, node, volume.VOLUME, instance)

    def on_node(self, node: str, argv: list[str]) -> list[str]:
        """On a server: inside its glusterd's mount namespace, where the gluster CLI finds it."""
        return glusterd.in_mount_ns(self.ctx, node, argv) if node in self.spec.node_names() else argv


BACKEND = GlusterBackend


BRICK_FREE_FLOOR = 64 * 2**20  # bytes: below it a brick's writes fail with ENOSPC soon


def set_alarms(g: Any, bricks: list[dict[str, Any]]) -> list[str]:
    """Each replica or disperse set (consecutive bricks, as the volume lists them) with fewer
    bricks online than it needs to take writes: more than half of a replica set (client quorum
    `auto`; exactly half counts when the first brick is up), k of a k+m disperse set."""
    if g.volume == "replicate":
        size, need = g.replica, g.replica // 2 + 1
    elif g.volume == "disperse":
        size, need = g.disperse_data + g.redundancy, g.disperse_data
    else:
        return []
    out = []
    for start in range(0, len(bricks) - size + 1, size):
        members = bricks[start:start + size]
        up = sum(b["online"] for b in members)
        half_with_first = g.volume == "replicate" and 2 * up == size and members[0]["online"]
        if up < need and not half_with_first:
            down = ", ".join(b["brick"] for b in members if not b["online"])
            out.append(f"{g.volume} set {start // size} has {up} of {size} bricks online, needs {need} to take writes "
                       f"({'read-only' if g.volume == 'replicate' else 'writes fail'}; offline: {down})")
    return out


def space_alarms(brick_dirs: dict[str, Path]) -> list[str]:
    """Brick filesystems with less than BRICK_FREE_FLOOR free (their writes fail with ENOSPC)."""
    out = []
    for node, path in brick_dirs.items():
        try:
            st = os.statvfs(path)
        except OSError:
            continue  # not on this machine's filesystem (a container's own)
        free = st.f_bavail * st.f_frsize
        if free < BRICK_FREE_FLOOR:
            out.append(f"the bricks of {node} are full: {free / 2**20:.0f} MiB free of "
                       f"{st.f_blocks * st.f_frsize / 2**30:.1f} GiB at {path}")
    return out

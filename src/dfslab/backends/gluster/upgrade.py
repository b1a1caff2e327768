"""GlusterFS's rolling upgrade, in the order its upgrade guide gives for replicated and dispersed
volumes ("Upgrade procedure for servers", the online upgrade): one server at a time, its glusterd,
bricks and self-heal daemon stopped together and started again on the new release, the next server
only once every brick is online and self-heal has nothing left to heal; after the last server, the
cluster's op-version raised to the highest every server now supports. The clients come last, which
dfslab leaves to the user (they stay on the old release).

A daemon's version is its own word: each glusterd and brick logs "Started running version
[{arg=...}, {version=11.1}, ...]" when it starts (the newest such line of its log is the process
that runs now); `gluster` has no command that reports a running brick's version.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from ...polling import poll
from ...procs import proc_start_time, terminate
from .. import BackendError
from . import glusterd, volume
from .glusterd import GlusterContext

STARTED = re.compile(r"Started running version \[\{arg=[^}]*\}, \{version=([^}]+)\}")
SERVER_PROGRAMS = ("glusterfsd", "glusterfs")  # a brick; the self-heal daemon (and any other service glusterd runs)


def problem(spec) -> str | None:
    """Why a volume of `spec` cannot be upgraded one server at a time (None: it can)."""
    g = spec.gluster
    if g.volume == "distribute":
        return ("gluster.volume: distribute keeps one copy of each file, so a server's files are unavailable while "
                "it restarts; GlusterFS's rolling upgrade is for replicate and disperse volumes (use an offline "
                "upgrade: a new cluster of the new release)")
    if g.volume == "replicate" and g.replica == 2 and not g.arbiter:
        return ("gluster.replica: 2 without an arbiter: the client quorum (auto) makes the volume read-only while the "
                "first brick's server restarts; use replica 3 or arbiter: true")
    return None


def node_of(name: str) -> str:
    return name.split(".", 1)[1]


def last_started_version(log: Path) -> str | None:
    """The version the newest process that wrote `log` says it runs, if it said so."""
    try:
        found = STARTED.findall(log.read_text(errors="replace"))
    except OSError:
        return None
    return found[-1] if found else None


def brick_logs(ctx: GlusterContext, node: str) -> list[Path]:
    """Each brick of `node`'s own log (glusterd names it after the brick's path, '/' as '-')."""
    logs = ctx.node_dir(node, "log") / "bricks"
    return [logs / (str(path).strip("/").replace("/", "-") + ".log") for path in ctx.brick_paths(node)]


def own_bricks_online(ctx: GlusterContext, node: str) -> bool:
    """`node`'s bricks online, as the self-heal client on `node` reaches them. Not `volume status`:
    it is a transaction, and one led by a glusterd stopped a moment after (the sampler's), or by
    one whose peers' handshakes still run (just restarted), left its peers' volume locks held until
    glusterd's 180-s timer (three runs in five here, 2026-11-29: the upgrade stalled for minutes).
    Servers of two releases reject each other meanwhile ("Peer Rejected": 11 no longer stores the
    nfs.* options 10 does, so each computes another checksum of the volume's definition, as the
    guide to 11 warns); every brick is still served."""
    prefix = f"{ctx.addresses[node]}:{ctx.node_dir(node, 'bricks')}/"
    try:
        mine = [b for b in volume.heal_summary(ctx, node, timeout=10) if b["brick"].startswith(prefix)]
    except BackendError:  # not answering yet
        return False
    return len(mine) == len(ctx.brick_paths(node)) and all(b["connected"] for b in mine)


def on_version(ctx: GlusterContext, node: str, version: str) -> bool:
    """`node`'s glusterd and every brick of it started on `version`, and its bricks online."""
    if glusterd.cli(ctx, node, "pool", "list", timeout=10, check=False).returncode != 0:
        return False
    if last_started_version(ctx.node_dir(node, "log") / "glusterd.log") != version:
        return False
    if any(last_started_version(log) != version for log in brick_logs(ctx, node)):
        return False
    return own_bricks_online(ctx, node)


BRICKS_START = 20.0  # s a glusterd of the new release has to start its bricks before it is made to rejoin
# ... or less once every peer rejects it: the first server moved is rejected by all its (older) peers
# too, and starts its bricks within ~2 s all the same; the last one never does.
BRICKS_GRACE = 8.0


def rejoin_rejected(ctx: GlusterContext, node: str) -> list[str]:
    """`node`'s glusterd just started on the new release; if its bricks do not come online, it is
    rejected by every peer and will start none (the last server of a pool upgraded to 11: its peers
    on 11 have stored the volume in 11's form, it still holds 10's, the same version, so each side
    rejects the other and nothing resolves it). Then a `volume set` of one of dfslab's own options
    to its present value, run on `node` alone (no peer takes part: all reject it), stores the volume
    in 11's form at the next version, and `node`'s glusterd started again meets peers that take the
    newer definition from it: all three rejoin and start their bricks. What was done, one line each."""
    settled: list[bool] = []  # [True] once its bricks are online, [False] once it is plainly left out
    began = time.monotonic()

    def settles() -> bool:
        if own_bricks_online(ctx, node):
            settled.append(True)
        elif time.monotonic() - began >= BRICKS_GRACE and rejected_by_all(ctx, node):
            settled.append(False)
        return bool(settled)
    if not poll(settles, f"{node}'s bricks online, or every peer rejecting it", BRICKS_START, 1.0) or settled[0]:
        return []  # online; or neither within the wait: `upgraded` waits on, and says so if it never is
    key, value = next(iter(volume.options(ctx).items()))
    glusterd.cli(ctx, node, "volume", "set", volume.VOLUME, key, value)
    restart_with_self_heal(ctx, node)
    return [f"{node}'s bricks did not start (its peers rejected it): volume set {key} {value} on {node} alone, "
            f"glusterd.{node} started again"]


def rejected_by_all(ctx: GlusterContext, node: str) -> bool:
    """Every peer of `node`'s glusterd is in the rejected state (as `node` sees it)."""
    try:
        peers = glusterd.peer_states(ctx, node, timeout=10)
    except BackendError:  # not answering yet
        return False
    return bool(peers) and all(p["state"] == "Peer Rejected" for p in peers)


def rejecting(ctx: GlusterContext, node: str) -> bool:
    """`node`'s glusterd holds a peer in the rejected state."""
    return any(p["state"] == "Peer Rejected" for p in glusterd.peer_states(ctx, node, timeout=10))


REJECTION_PASSES = 30.0  # s a rejection may take to end by itself once the last server is back


def rejoin(ctx: GlusterContext) -> list[str]:
    """The guide's remedy once every server runs the new release: each glusterd that still rejects
    a peer is stopped and started again (it then compares the volume's checksum anew: the same now
    on every server). A rejection may be passing: a server taking the newer definition from the last
    one restarts its bricks meanwhile, and a glusterd stopped then came back mapping its brick to
    the old port (clients could not reach it: 128 of 148 files unreadable in one run). So it is
    given REJECTION_PASSES s first. What was restarted, one line each."""
    nodes = ctx.spec.node_names()
    poll(lambda: not any(rejecting(ctx, n) for n in nodes), "every rejection over", REJECTION_PASSES, 1.0)
    done = []
    for node in nodes:
        if rejecting(ctx, node):
            restart_with_self_heal(ctx, node)
            done.append(f"glusterd.{node} started again (it rejected a peer of the older release)")
    return done


def brick_port(pid: int) -> str | None:
    """The port a brick process was told to listen on (its --brick-port)."""
    args = argv(pid)
    return args[args.index("--brick-port") + 1] if "--brick-port" in args[:-1] else None


def misported_bricks(ctx: GlusterContext) -> list[tuple[dict, str]]:
    """Each brick whose glusterd hands clients another port than the one it listens on, with that
    port: a glusterd stopped while it restarted the brick keeps the brick's old port in its store."""
    out = []
    for node in ctx.spec.node_names():
        ours = set(ctx.runtime.marked_on(node))  # processes of this cluster's: never another's
        for brick in volume.bricks(ctx, node, timeout=30):
            if brick["host"] != ctx.addresses[node] or not brick["online"] or brick["pid"] not in ours:
                continue
            actual = brick_port(brick["pid"])
            if actual is not None and actual != brick["port"]:
                out.append((brick, actual))
    return out


def restart_with_self_heal(ctx: GlusterContext, node: str) -> None:
    """`node`'s glusterd started again with a self-heal daemon of its own. glusterd 11 starts a new
    one at its start, which exits on the running one's pidfile lock ("pidfile lock failed"), leaving
    that one running and unmanaged: `volume status` said N and `volume heal` failed ("brick op
    'Heal' failed"), and healing waited on its own crawl (twice in four runs: 273 entries left). So
    the running one is stopped, with its pidfile, while glusterd is down."""
    def stop_self_heal() -> None:
        shd = [pid for pid in ctx.runtime.marked_on(node) if program(pid) == "glusterfs" and "shd/" in " ".join(argv(pid))]
        terminate(shd, {pid: proc_start_time(pid) for pid in shd}, timeout=30)
        for pidfile in (ctx.node_dir(node, "run") / "gluster" / "shd").rglob("*.pid"):
            pidfile.unlink(missing_ok=True)
    glusterd.restart(ctx, node, while_down=stop_self_heal)


def argv(pid: int) -> list[str]:
    """A process's command line ([] once it is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").decode(errors="replace").split("\0")
    except OSError:
        return []


def remove_pidfile(ctx: GlusterContext, brick: dict) -> None:
    """A stopped brick's pidfile (glusterd names it HOST-PATH.pid): while the stopped process is a
    zombie its PID still has a /proc entry, and glusterd would take it for the brick running."""
    host, path = brick["brick"].split(":", 1)
    node = next(n for n, address in ctx.addresses.items() if address == host)
    for pidfile in (ctx.node_dir(node, "run") / "gluster").rglob(f"{host}-{path.strip('/').replace('/', '-')}.pid"):
        pidfile.unlink(missing_ok=True)


def program(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None


def stop_servers(ctx: GlusterContext, node: str, tracked: set[int]) -> list[int]:
    """Stop the bricks and self-heal daemon `node`'s (stopped) glusterd started: the cluster's marked
    processes in the node that dfslab does not track, by program name; then remove their pidfiles.
    A stopped brick lingers as a zombie until this machine's init reaps it (here PID 1 reaped
    slowly: over a second), and glusterd 11 takes a pidfile whose PID has a /proc entry for a
    running brick ("discovered already-running brick") and starts none: the new release's glusterd
    came back without its brick and self-heal daemon. With glusterd and all it started stopped,
    every pidfile of the node is stale. The PIDs stopped."""
    pids = [pid for pid in ctx.runtime.marked_on(node) if pid not in tracked and program(pid) in SERVER_PROGRAMS]
    stopped = terminate(pids, {pid: proc_start_time(pid) for pid in pids}, timeout=30)
    for pidfile in (ctx.node_dir(node, "run") / "gluster").rglob("*.pid"):
        pidfile.unlink(missing_ok=True)
    return stopped


def raise_op_version(ctx: GlusterContext, node: str) -> str:
    """The cluster's op-version set to the highest every server supports: the guide's last step."""
    res = glusterd.cli(ctx, node, "volume", "get", "all", "cluster.max-op-version")
    highest = re.search(r"cluster\.max-op-version\s+(\d+)", res.stdout)
    if not highest:
        raise BackendError(f"`gluster volume get all cluster.max-op-version` said: {res.stdout.strip()[-200:]}")
    glusterd.cli(ctx, node, "volume", "set", "all", "cluster.op-version", highest.group(1))
    return f"cluster.op-version {highest.group(1)}"

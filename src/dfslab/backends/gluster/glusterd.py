"""glusterd, one per server node.

Several glusterd cannot share a machine's /var/lib/glusterd, /var/log/glusterfs or /run
(the CLI socket path is fixed), so each runs in its node's network namespace AND a private
mount namespace of its own where those three paths are bind-mounted from the node's
directory under the cluster's state dir. The bricks and self-heal daemon glusterd starts
inherit both namespaces and the environment mark `down` finds them by. The gluster CLI is
run by entering the same two namespaces.
"""

from __future__ import annotations

import shlex
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable
from xml.etree import ElementTree

from ...procs import TrackedProcess
from ...runtime import Runtime
from ...spec import ClusterSpec
from .. import BackendError
from ...polling import wait_until

PRIVATE_PATHS = {"lib": "/var/lib/glusterd", "log": "/var/log/glusterfs", "run": "/run"}


@dataclass
class GlusterContext:
    spec: ClusterSpec
    runtime: Runtime
    root: Path  # <state>/gluster
    addresses: dict[str, str]
    # How a command reaches a node's glusterd, where not through its tracked process's namespaces
    # (runtime kubernetes: its pod's /run, from this machine): (node, argv) -> argv.
    enter: Callable[[str, list[str]], list[str]] | None = None
    # How such a command is run, where not by the runtime on the node (a Kubernetes you run: in the
    # node's glusterd pod through the API's exec): (node, argv, timeout) -> its outcome.
    run_on: Callable[[str, list[str], float], subprocess.CompletedProcess] | None = None

    def run(self, node: str, argv: list[str], timeout: float) -> subprocess.CompletedProcess:
        if self.run_on is not None:
            return self.run_on(node, argv, timeout)
        return self.runtime.run(node, argv, timeout=timeout, check=False)

    def node_dir(self, node: str, sub: str) -> Path:
        return self.root / node / sub

    def brick_paths(self, node: str, count: int | None = None) -> list[Path]:
        n = self.spec.gluster.bricks_per_node if count is None else count
        return [self.node_dir(node, "bricks") / f"b{i}" for i in range(n)]


def daemon_name(node: str) -> str:
    return f"glusterd.{node}"


def start(ctx: GlusterContext, node: str) -> None:
    for sub in (*PRIVATE_PATHS, "bricks"):
        ctx.node_dir(node, sub).mkdir(parents=True, exist_ok=True)
    binds = " && ".join(f"mount --bind {shlex.quote(str(ctx.node_dir(node, sub)))} {target}"
                        for sub, target in PRIVATE_PATHS.items())
    script = f"{binds} && exec glusterd -N --log-level INFO"
    # caps: in a container, the bind mounts above and the bricks' trusted.* xattrs need SYS_ADMIN.
    ctx.runtime.spawn(daemon_name(node), node, ["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
                      meta={"kind": "glusterd", "log": str(ctx.node_dir(node, "log") / "glusterd.log"),
                            "caps": ["SYS_ADMIN"], "mounts": [[str(ctx.node_dir(node, "")), "rw"]]})


def restart(ctx: GlusterContext, node: str, while_down: Callable[[], None] | None = None) -> None:
    """Stop `node`'s glusterd (SIGTERM) and start it again as it was; its bricks and self-heal
    daemon keep running (the new glusterd finds them by their pidfiles). `while_down` runs between
    the two (the upgrade stops the self-heal daemon there)."""
    ctx.runtime.signal_process(tracked(ctx, node), signal.SIGTERM, grace=30)
    ctx.runtime.procs.exited(daemon_name(node))  # reap it, if it is a child of this process
    if while_down is not None:
        while_down()
    start(ctx, node)
    wait_listening(ctx, node)


def tracked(ctx: GlusterContext, node: str) -> TrackedProcess:
    proc = ctx.runtime.procs.get(daemon_name(node))
    if proc is None or not proc.alive():
        raise BackendError(f"glusterd on {node} is not running; see {ctx.node_dir(node, 'log') / 'glusterd.log'}")
    return proc


def in_mount_ns(ctx: GlusterContext, node: str, argv: list[str]) -> list[str]:
    """argv run inside the mount namespace of `node`'s glusterd (where its CLI socket is)."""
    if ctx.enter is not None:
        return ctx.enter(node, argv)
    return ctx.runtime.in_daemon(tracked(ctx, node), argv)


BUSY = "Another transaction is in progress"


# The CLI runs helpers of its own that outlive it: `heal info` forks glfsheal, a client that
# crawls every brick, and when the CLI gives up (its --timeout) glfsheal goes on alone. A hunt
# found 39 of them at once on a disperse volume healing after a fault: the sampler asks every
# second with 3 s to answer, each unanswered ask left one more crawler, and together they kept
# every later ask (and the recovery wait) from answering, so the volume "never healed". So the
# CLI runs under timeout(1), which makes its own process group that the CLI's helpers inherit,
# and the group is killed once the CLI has returned (or timed out): nothing it started outlives it.
# The wrapper runs in the node, so it holds on every runtime (docker's containers included).
REAP = 'timeout -k 2 "$0" "$@" & p=$!; wait $p; rc=$?; kill -9 -$p 2>/dev/null; exit $rc'  # dash's kill takes no --
TIMED_OUT = 124  # timeout(1)'s exit status when the limit ran out


def reaped(argv: list[str], limit: float) -> list[str]:
    """argv run with a time limit, killing every process it leaves in its group when it ends."""
    return ["sh", "-c", REAP, f"{max(1, round(limit))}s", *argv]


def cli(ctx: GlusterContext, node: str, *args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess:
    """`gluster --mode=script ARGS` against the glusterd of `node`."""
    # --timeout: the CLI's own wait for glusterd (cluster-wide ops wait on unreachable peers).
    argv = in_mount_ns(ctx, node, reaped(["gluster", "--mode=script", f"--timeout={int(timeout)}", *args], timeout + 3))
    deadline = time.monotonic() + min(timeout, 15)
    while True:
        try:
            res = ctx.run(node, argv, timeout=timeout + 10)
        except subprocess.TimeoutExpired:
            res = None
        if res is None or res.returncode == TIMED_OUT:
            raise BackendError(f"`gluster {' '.join(args)}` on {node} did not answer within {timeout:.0f} s")
        # glusterd takes one volume lock per transaction: a concurrent status call (the sampler's)
        # makes this one fail at once, so wait for the lock rather than report a failure.
        if BUSY not in res.stdout + res.stderr or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    if check and res.returncode != 0:
        msg = (res.stderr.strip() or res.stdout.strip())[-400:]
        raise BackendError(f"`gluster {' '.join(args)}` on {node} failed: {msg}")
    return res


def xml(ctx: GlusterContext, node: str, *args: str, timeout: float = 60) -> ElementTree.Element:
    """A gluster command's --xml answer; BackendError when it reports failure."""
    res = cli(ctx, node, *args, "--xml", timeout=timeout, check=False)
    try:
        root = ElementTree.fromstring(res.stdout)
    except ElementTree.ParseError:
        raise BackendError(f"`gluster {' '.join(args)}` on {node} failed: {(res.stderr or res.stdout).strip()[-400:]}") from None
    if root.findtext("opRet", "0") != "0":
        raise BackendError(f"`gluster {' '.join(args)}` on {node} failed: {root.findtext('opErrstr', '').strip()}")
    return root


def wait_listening(ctx: GlusterContext, node: str, timeout: float = 60) -> None:
    """glusterd answers its CLI (it spends ~1.5 s in a geo-replication check at start)."""
    log = ctx.node_dir(node, 'log') / 'glusterd.log'

    def answering() -> bool:
        if ctx.runtime.procs.exited(daemon_name(node)) is not None:
            raise BackendError(f"glusterd on {node} exited before it answered; see {log}")
        return cli(ctx, node, "pool", "list", timeout=10, check=False).returncode == 0
    wait_until(answering, f"glusterd on {node} to answer", timeout, 0.2,
               lambda _: BackendError(f"glusterd on {node} did not answer within {timeout:.0f} s; see {log}"))


def probe_peers(ctx: GlusterContext, timeout: float = 60) -> None:
    """Join every server into node1's trusted pool and wait until all are connected."""
    first, *others = ctx.spec.node_names()
    for node in others:
        cli(ctx, first, "peer", "probe", ctx.addresses[node])
    def joined() -> bool:
        peers = peer_states(ctx, first)
        return len(peers) == len(others) and all(p["connected"] and p["in_cluster"] for p in peers)
    wait_until(joined, "every peer to join the trusted pool", timeout, 0.3,
               lambda _: BackendError(f"peers did not all join within {timeout:.0f} s: {peer_states(ctx, first)}"))


# The peer states a handshake ends in. A glusterd leading a transaction (a `volume status`) while a
# peer is still between (just restarted: "Accepted peer request") took that peer's volume lock and
# never released it: every transaction there refused for 180 s, its lock timer (twice in 3 upgrade
# runs here, 2026-11-29).
SETTLED = ("Peer in Cluster", "Peer Rejected")


def handshakes_done(peers: list[dict[str, Any]]) -> bool:
    """The handshake with every connected peer ended (in the pool, or rejected): a transaction
    takes no lock of a peer it is not connected to."""
    return all(p["state"] in SETTLED for p in peers if p["connected"])


def peer_states(ctx: GlusterContext, node: str, timeout: float = 60) -> list[dict[str, Any]]:
    root = xml(ctx, node, "peer", "status", timeout=timeout)
    return [{"hostname": p.findtext("hostname"), "connected": p.findtext("connected") == "1",
             "in_cluster": p.findtext("stateStr") == "Peer in Cluster", "state": p.findtext("stateStr")}
            for p in root.iter("peer")]

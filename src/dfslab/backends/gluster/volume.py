"""The volume: bricks laid out so every replica / disperse set spans distinct servers,
create + start, tuning options, and what `gluster volume status` and `heal info` say."""

from __future__ import annotations

from typing import Any, Callable

from .. import BackendError
from .glusterd import GlusterContext, cli, xml
from ...polling import wait_until

VOLUME = "dfslab"


def brick_list(ctx: GlusterContext, nodes: list[str] | None = None, first: int = 0, count: int | None = None) -> list[str]:
    """HOST:PATH of bricks `first`..`first+count` of every node, brick-major (b0 of node1,
    node2, node3, then b1 ...) so that consecutive bricks, which gluster groups into one
    replica or disperse set, sit on different servers."""
    nodes = nodes or ctx.spec.node_names()
    per_node = ctx.spec.gluster.bricks_per_node if count is None else count
    return [f"{ctx.addresses[node]}:{ctx.node_dir(node, 'bricks') / f'b{i}'}"
            for i in range(first, first + per_node) for node in nodes]


def layout_args(ctx: GlusterContext) -> list[str]:
    g = ctx.spec.gluster
    if g.volume == "replicate":
        return ["replica", "3", "arbiter", "1"] if g.arbiter else ["replica", str(g.replica)]
    if g.volume == "disperse":
        return ["disperse-data", str(g.disperse_data), "redundancy", str(g.redundancy)]
    return []


def options(ctx: GlusterContext) -> dict[str, str]:
    g = ctx.spec.gluster
    # O_DIRECT honoured: by default GlusterFS's client write-behind acknowledges O_DIRECT writes
    # from its cache (strict-o-direct off), so a 4 KiB direct write "took" 0.23 ms here with
    # nothing on a brick yet. Benchmarks time what the bricks acknowledged; gluster.options may
    # turn it off to measure the cache on purpose.
    opts = {"performance.strict-o-direct": "on", "network.ping-timeout": str(max(1, round(g.ping_timeout)))}
    if g.volume != "distribute":  # only volumes with redundancy have a self-heal daemon
        opts["cluster.heal-timeout"] = str(round(g.heal_interval))
    opts.update({k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in g.options.items()})
    return opts


def create(ctx: GlusterContext, node: str, name: str = VOLUME, bricks: list[str] | None = None,
           layout: list[str] | None = None) -> None:
    """Create and start a volume (by default the spec's, on every node's bricks)."""
    bricks = brick_list(ctx) if bricks is None else bricks
    layout = layout_args(ctx) if layout is None else layout
    # Bricks on the root filesystem (the state dir) need `force`; that is all it overrides here,
    # as brick_list already keeps each set on distinct servers.
    cli(ctx, node, "volume", "create", name, *layout, "transport", "tcp", *bricks, "force")
    for key, value in options(ctx).items():
        try:
            cli(ctx, node, "volume", "set", name, key, value)
        except BackendError as exc:
            raise BackendError(f"gluster.options: {key}={value} refused: {exc}") from None
    cli(ctx, node, "volume", "start", name)


def get_option(ctx: GlusterContext, node: str, key: str, name: str = VOLUME) -> str | None:
    """What `gluster volume get` says an option is now."""
    root = xml(ctx, node, "volume", "get", name, key)
    values = [o.findtext("Value") for o in root.iter("Opt") if o.findtext("Option") == key]
    return values[0] if values else None


def change_options(ctx: GlusterContext, node: str, old: dict[str, str], new: dict[str, str]) -> list[str]:
    """`volume set` what changed and `volume reset` what was dropped, on the running volume, each
    read back with `volume get`; what was done."""
    done = []
    for key in sorted(set(old) - set(new)):
        cli(ctx, node, "volume", "reset", VOLUME, key)
        done.append(f"{key} reset to its default ({get_option(ctx, node, key)}, read back)")
    for key, value in sorted(new.items()):
        if old.get(key) == value:
            continue
        try:
            cli(ctx, node, "volume", "set", VOLUME, key, value)
        except BackendError as exc:
            raise BackendError(f"gluster.options: {key}={value} refused: {exc}") from None
        got = get_option(ctx, node, key)
        if got is None or got.lower() != value.lower():
            raise BackendError(f"gluster.options: {key} reads back {got!r} after `volume set` to {value!r}")
        done.append(f"{key}={value} (read back with volume get)")
    return done


def delete(ctx: GlusterContext, node: str, name: str) -> None:
    cli(ctx, node, "volume", "stop", name, "force", check=False)
    cli(ctx, node, "volume", "delete", name, check=False)


def bricks(ctx: GlusterContext, node: str, name: str = VOLUME, timeout: float = 60) -> list[dict[str, Any]]:
    root = xml(ctx, node, "volume", "status", name, timeout=timeout)
    node_at = {addr: n for n, addr in ctx.addresses.items()}
    out = []
    for b in root.iter("node"):
        path = b.findtext("path", "")
        if not path.startswith("/"):
            continue  # self-heal daemon and other services are listed as nodes too
        pid = int(b.findtext("pid") or -1)
        host = b.findtext("hostname")
        if pid > 0 and host in node_at:  # glusterd reports the PID as its own PID namespace numbers it
            pid = ctx.runtime.host_pid(node_at[host], pid) or -1
        out.append({"brick": f"{host}:{path}", "host": host, "online": b.findtext("status") == "1",
                    "pid": pid, "port": b.findtext("port")})
    return out


def heal_summary(ctx: GlusterContext, node: str, timeout: float = 60) -> list[dict[str, Any]]:
    """Each brick as the self-heal client on `node` reaches it: connected, entries pending heal.
    `heal info` runs glfsheal, a client of the bricks, and leads no glusterd transaction: no
    volume lock taken on any peer (see glusterd.SETTLED for what one can leave behind)."""
    root = xml(ctx, node, "volume", "heal", VOLUME, "info", "summary", timeout=timeout)
    out = []
    for brick in root.iter("brick"):
        pending = 0
        for tag in ("totalNumberOfEntries", "numberOfEntries"):
            value = brick.findtext(tag)
            if value and value.isdigit():
                pending = int(value)
                break
        out.append({"brick": brick.findtext("name", ""), "connected": brick.findtext("status") in ("Connected", None),
                    "pending": pending})
    return out


def heal_pending(ctx: GlusterContext, node: str, timeout: float = 60) -> int | None:
    """Entries still to heal on all bricks; None for a volume without redundancy."""
    if ctx.spec.gluster.volume == "distribute":
        return None
    return pending_total(heal_summary(ctx, node, timeout))


def pending_total(summary: list[dict[str, Any]]) -> int:
    """Entries to heal over a heal summary's bricks; a brick that cannot answer has pending heals by definition."""
    return sum(b["pending"] + (not b["connected"]) for b in summary)


def start_heal(ctx: GlusterContext, node: str) -> str:
    """`gluster volume heal VOLUME`: every self-heal daemon crawls its bricks' index of pending heals
    now. Left alone, a daemon crawls when a brick of its reconnects and then every
    cluster.heal-timeout (600 s): entries marked while a later server restarted wait for that (a
    suite run: 279 pending 400 s after a rolling upgrade). What glusterd answered, one line."""
    res = cli(ctx, node, "volume", "heal", VOLUME, timeout=30, check=False)
    return " ".join((res.stdout.strip() or res.stderr.strip()).split()) or f"exit status {res.returncode}"


def info(ctx: GlusterContext, node: str) -> dict[str, Any]:
    root = xml(ctx, node, "volume", "info", VOLUME)
    vol = root.find(".//volume")
    if vol is None:
        raise BackendError(f"no volume {VOLUME}")
    return {"name": vol.findtext("name"), "type": vol.findtext("typeStr"), "status": vol.findtext("statusStr"),
            "bricks": int(vol.findtext("brickCount") or 0),
            "brick_names": [b.findtext("name") for b in vol.iter("brick")],
            "options": {o.findtext("name"): o.findtext("value") for o in vol.iter("option")}}


def wait_bricks_online(ctx: GlusterContext, node: str, want: int, timeout: float = 60,
                       name: str = VOLUME) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []

    def online() -> list[dict[str, Any]] | None:
        try:
            seen[:] = bricks(ctx, node, name)
        except BackendError:  # glusterd not answering for the volume yet
            seen[:] = []
        return list(seen) if len(seen) == want and all(b["online"] for b in seen) else None

    def failed(_: str) -> BackendError:
        offline = [b["brick"] for b in seen if not b["online"]]
        return BackendError(f"{want} bricks not all online within {timeout:.0f} s (offline: {offline or 'unknown'}); "
                            f"see the brick logs under {ctx.root}/<node>/log/bricks/")
    return wait_until(online, f"{want} bricks online", timeout, 0.3, failed)


def new_bricks(ctx: GlusterContext, existing: list[str], count: int) -> list[str]:
    """HOST:PATH of `count` new bricks, round-robin over the nodes from the one with the
    fewest bricks, each the next free bN on its node, so each new set spans distinct servers."""
    nodes = ctx.spec.node_names()
    used = {n: sum(1 for b in existing if b.startswith(f"{ctx.addresses[n]}:")) for n in nodes}
    order = sorted(nodes, key=lambda n: (used[n], nodes.index(n)))
    out = []
    for i in range(count):
        node = order[i % len(order)]
        while f"{ctx.addresses[node]}:{ctx.node_dir(node, 'bricks') / f'b{used[node]}'}" in existing:
            used[node] += 1
        out.append(f"{ctx.addresses[node]}:{ctx.node_dir(node, 'bricks') / f'b{used[node]}'}")
        used[node] += 1
    return out


# glusterd answers `rebalance status` by asking every node's rebalance process for its counts.
# That process exits as soon as its rebalance is done; asked in the moment it exits, it closes the
# connection unanswered and glusterd fails the whole query with this message (glusterd-syncop.c
# forgives the same ENOTCONN only for a brick it is terminating). The next query answers from the
# status the process sent before exiting, or says "failed" if it died without sending one, so an
# unanswered query is asked again, a bounded number of times, and never taken for the outcome.
REBALANCE_UNANSWERED = "brick op 'Rebalance' failed"
REBALANCE_UNANSWERED_LIMIT = 10  # asks in a row (about 0.5 s apart) before it counts as a failure


def overall_status(aggregate: str, nodes: list[str]) -> str:
    """"completed" only when every node says so. The CLI's aggregate ranks a node that has not
    started below one that completed (cli-xml-output.c), so one node done and another not yet
    begun read "completed" while files were still to move."""
    if aggregate == "completed" and any(s != "completed" for s in nodes):
        return "in progress"
    return aggregate


def rebalance_status(ctx: GlusterContext, node: str) -> dict[str, Any] | None:
    """The volume's rebalance counts; None when a node's rebalance process exited mid-query."""
    try:
        root = xml(ctx, node, "volume", "rebalance", VOLUME, "status")
        agg = root.find(".//aggregate")
    except BackendError as e:
        if REBALANCE_UNANSWERED in str(e):
            return None
        raise
    if agg is None:
        raise BackendError("rebalance status has no aggregate")
    nodes = [n.findtext("statusStr", "") for n in root.iter("node")]
    return {"status": overall_status(agg.findtext("statusStr", ""), nodes), "files": int(agg.findtext("files") or 0),
            "bytes": int(agg.findtext("size") or 0), "scanned": int(agg.findtext("lookups") or 0),
            "failures": int(agg.findtext("failures") or 0), "skipped": int(agg.findtext("skipped") or 0),
            "seconds": float(agg.findtext("runtime") or 0)}


def wait_rebalanced(ctx: GlusterContext, node: str, timeout: float,
                    progress: Callable[[str, str], None]) -> dict[str, Any]:
    """Wait for the rebalance to end; its counts, or BackendError naming how it failed."""
    unanswered = []

    def ended() -> dict[str, Any] | None:
        st = rebalance_status(ctx, node)
        if st is None:
            unanswered.append(1)
            if len(unanswered) >= REBALANCE_UNANSWERED_LIMIT:
                raise BackendError(f"`gluster volume rebalance {VOLUME} status` went unanswered "
                                   f"{len(unanswered)} times in a row ({REBALANCE_UNANSWERED}); "
                                   f"see {ctx.root}/<node>/log/dfslab-rebalance.log")
            return None
        unanswered.clear()
        progress("rebalancing", f"{st['status']}: {st['files']} files ({st['bytes'] / 2**20:.1f} MiB) moved, "
                 f"{st['scanned']} scanned, {st['failures']} failed")
        if st["status"] not in ("completed", "failed", "stopped"):
            return None
        if st["status"] != "completed" or st["failures"]:
            raise BackendError(f"rebalance {st['status']} with {st['failures']} failure(s); "
                               f"see {ctx.root}/<node>/log/dfslab-rebalance.log")
        return st
    return wait_until(ended, "the rebalance to complete", timeout, 0.5, BackendError)

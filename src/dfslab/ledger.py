"""The byte ledger: what crossed the clients' links and the servers' disks during one step, from
exact counter deltas at its start and end (not the sampler's 1-s rates), so every row can say how
much of what its tool counted came from the storage.

A ceph-fuse read served from its cache moves no bytes on the client's link; a librbd write
acknowledged by its cache moves them later. `from_storage` = wire bytes / tool bytes, per
direction (reads: what the clients received; writes: what they sent); under FROM_STORAGE_FLOOR
the report marks the row as not measuring the storage. Counted where the clients are network
namespaces of dfslab's (runtime local, docker, and the client node of the Kubernetes dfslab starts,
whose Jobs use its network), this machine itself (runtime host), or the client nodes of a
Kubernetes you run (read through dfslab's toolbox pod on each, on the node's network, as its Jobs
are); elsewhere (loopback, where every daemon shares `lo`) the ledger says "not counted" rather
than a number that is not the client's. A byte is counted once, on the link it leaves by: a node's
bridge to its own pods, their veths, tunnels and shaping ifbs are not links (carried_elsewhere).
The servers' disks: the block-layer bytes of their daemons (Runtime.disk_counters), from
/proc/PID/io, read from here where this machine sees the processes, from inside each daemon's pod
on a Kubernetes you run."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from .runtime.base import Reader
from .workloads import MACHINE, Measurement, direction

FROM_STORAGE_FLOOR = 0.8
READ, WRITE = "read", "write"  # as workloads.direction names them


def net_dev_totals(text: str, skipped: frozenset[str] = frozenset()) -> tuple[int, int]:
    """(received, sent) bytes over every interface of a /proc/net/dev listing but loopback and `skipped`."""
    rx = tx = 0
    for line in text.splitlines():
        name, sep, rest = line.partition(":")
        if not sep or name.strip() == "lo" or name.strip() in skipped or "|" in rest:
            continue
        fields = rest.split()
        rx, tx = rx + int(fields[0]), tx + int(fields[8])
    return rx, tx


# Devices whose bytes another device of the same namespace carries too: a tunnel's go out on its
# underlay, an ifb holds a link's ingress redirected for shaping, a tap's go through its bridge.
CARRIED_KINDS = frozenset({"vxlan", "geneve", "ipip", "sit", "gre", "gretap", "ip6tnl", "ip6gre", "wireguard", "ifb",
                           "tun"})
# Ports that make a bridge a namespace's plumbing to its own containers or VMs, not a link out.
INNER_PORT_KINDS = frozenset({"veth", "tun"})
_KINDS = CARRIED_KINDS | INNER_PORT_KINDS | {"bridge", "bridge_slave", "bond", "bond_slave", "vlan", "macvlan"}


def carried_elsewhere(links: str) -> frozenset[str]:
    """Of an `ip -o -d link show` listing, the interfaces whose bytes are counted on another: each
    port of a bridge or bond (its master counts them), each tunnel or ifb, and each bridge whose
    ports are all veths or taps (a node's bridge to its pods: their traffic leaves by the node's
    own link, which counts it, so counting the bridge and the pod's veth too would count it
    three times: measured on a Kubernetes node whose pods took 0.3-1.5 MB/s from its API server)."""
    kinds, masters = {}, {}
    for line in links.splitlines():
        head, _, details = line.partition("\\")
        fields = head.split()
        if len(fields) < 2 or not fields[0].rstrip(":").isdigit():
            continue
        name = fields[1].rstrip(":").split("@")[0]
        if "master" in fields[:-1]:
            masters[name] = fields[fields.index("master") + 1]
        chunks = [c.split() for c in details.split("\\")]
        kinds[name] = next((c[0] for c in chunks if c and c[0] in _KINDS), "")
    skipped = {n for n, kind in kinds.items() if kind in CARRIED_KINDS} | set(masters)
    for bridge in (n for n, kind in kinds.items() if kind == "bridge"):
        if all(kinds.get(port) in INNER_PORT_KINDS for port, master in masters.items() if master == bridge):
            skipped.add(bridge)
    return frozenset(skipped)


@dataclass
class Snapshot:
    wire: dict[str, tuple[int, int]] = field(default_factory=dict)  # client node -> (rx, tx)
    # client node -> when its counters were read, by that node's clock (the same clock the
    # integrity writer's journal stamps there): the window the probe's bytes are taken out over
    read_at: dict[str, float] = field(default_factory=dict)
    disk: dict[str, tuple[int, int]] = field(default_factory=dict)  # server daemon -> (read, written)


def snapshot(read: Reader | None, clients: list[str],
             disks: Callable[[], dict[str, tuple[int, int]]], start: bool = False) -> Snapshot:
    """Counters now. `read(node, argv, timeout)` runs argv in a client's network namespace (None:
    the wire is not counted; Runtime.wire_reader); /proc/net/dev read there is that namespace's (sysfs would show the
    root namespace's under nsenter --net). `disks()`: the servers' daemons' block-layer bytes
    so far (Runtime.disk_counters), read before the links at a step's `start` and after them at
    its end: where they are read over the network (an exec through an API server that runs on a
    client node) their bytes stay out of the clients' window."""
    snap = Snapshot()
    if start:
        snap.disk = dict(disks())
    if read is not None:
        counted = {node: _read_wire(read, node) for node in clients}
        # Every client's link or none: a link left out would count the step short, a share that
        # reads like a client's cache where it is a counter that could not be read.
        if all(v is not None for v in counted.values()):
            snap.wire = {node: totals for node, (totals, _) in counted.items()}
            snap.read_at = {node: at for node, (_, at) in counted.items()}
    if not start:
        snap.disk = dict(disks())
    return snap


WIRE_READS = 3  # a read through an exec (a Kubernetes you run) can fail; more tries, a moment apart


# The counters, the links (to count each byte once, where it leaves; `ip` is netlink, so the
# namespace's own under nsenter --net, where sysfs would be the root's), then the node's clock at
# that moment: a read through an exec takes a second or more from here, and the window the
# probe's bytes are taken out over must be the counters' own.
LINKS_MARK = "#links"
READ_WIRE = ["sh", "-c", f"cat /proc/net/dev; echo '{LINKS_MARK}'; ip -o -d link show 2>/dev/null; date +%s.%N"]


def wire_totals(output: str) -> tuple[int, int]:
    """(received, sent) of a READ_WIRE's output: each byte once (without `ip`: every link but lo)."""
    counters, _, links = output.partition(LINKS_MARK)
    skipped = carried_elsewhere(links)
    totals = net_dev_totals(counters, skipped)
    return totals if totals != (0, 0) or not skipped else net_dev_totals(counters)


def _read_wire(read: Reader, node: str) -> tuple[tuple[int, int], float] | None:
    """((received, sent), when they were read) on `node`, or None if it could not be read (said
    on stderr with why: the step's from_storage is then left out, not guessed)."""
    why = ""
    for attempt in range(WIRE_READS):
        if attempt:
            time.sleep(0.5)
        try:
            rc, out, err = read(node, READ_WIRE, 30)
        except Exception as exc:  # noqa: BLE001 (a timeout, an exec refused or cut: tried again, then said)
            why = str(exc) or type(exc).__name__
            continue
        lines = out.strip().splitlines()
        why = f"exit {rc}: {(err.strip() or out.strip())[-200:]}"
        if rc == 0 and ":" in out and lines:
            try:
                return wire_totals(out), float(lines[-1])
            except ValueError:
                continue
    print(f"dfslab: the byte ledger could not read {node}'s link counters ({why}); this step has no from_storage",
          file=sys.stderr)
    return None


def read_window(before: Snapshot, after: Snapshot, node: str) -> tuple[float, float] | None:
    """When `node`'s counters were read at the step's start and end (None: not read at both)."""
    if node in before.read_at and node in after.read_at:
        return before.read_at[node], after.read_at[node]
    return None


def delta(before: Snapshot, after: Snapshot) -> dict[str, int | None]:
    """Bytes moved between two snapshots: clients' received/sent, servers' disk read/written.
    A side with nothing counted in both is None (not 0); the clients' links count only where
    both snapshots read the same links; a server that died between them counts nothing (its
    counters went with it)."""
    wire_before, wire_after = (before.wire, after.wire) if before.wire.keys() == after.wire.keys() else ({}, {})
    return {"client_rx": _moved(wire_before, wire_after, 0), "client_tx": _moved(wire_before, wire_after, 1),
            "disk_read": _moved(before.disk, after.disk, 0), "disk_write": _moved(before.disk, after.disk, 1)}


def _moved(before: dict, after: dict, i: int) -> int | None:
    keys = before.keys() & after.keys()
    return sum(max(0, after[k][i] - before[k][i]) for k in keys) if keys else None


WIRE_KEY = {READ: "client_rx", WRITE: "client_tx"}
DISK_KEY = {READ: "disk_read", WRITE: "disk_write"}


def tool_bytes(rows: list[Measurement]) -> dict[str, float]:
    """What the step's tools counted each way (`tool_read`, `tool_write`), beside its counters in
    the interval: the report's link and disk shares are wire or disk bytes over these."""
    tool = {f"tool_{READ}": 0.0, f"tool_{WRITE}": 0.0}
    for row in _counted(rows):
        tool[f"tool_{direction(row.params)}"] += row.value
    return tool


def _counted(rows: list[Measurement]) -> list[Measurement]:
    """The step's `bytes` rows that crossed a link (target machine is this machine's own disk)."""
    return [r for r in rows if r.metric == "bytes" and r.t is None and r.params.get("target") != MACHINE]


def shares(ledger: dict[str, Any] | None, way: str) -> dict[str, float]:
    """Of the bytes a step's tools moved `way`: the share the clients' links carried (`link`) and
    the share the servers' disks did (`disk`: a write's real amplification, replicas and metadata
    included). Only what was counted."""
    tool = (ledger or {}).get(f"tool_{way}")
    if not tool:
        return {}
    out = {}
    for name, key in (("link", WIRE_KEY[way]), ("disk", DISK_KEY[way])):
        if ledger.get(key) is not None:
            out[name] = ledger[key] / tool
    return out


def without_probe(moved: dict[str, int | None], probe_sent: int) -> dict[str, int | None]:
    """`moved` less what dfslab's own integrity writer sent over the clients' links in the step
    (a fault window's checksummed writes, ~20 MB/s here: a slow step's whole wire otherwise), kept
    beside it as `probe_tx`."""
    if moved.get("client_tx") is None:
        return moved
    return {**moved, "client_tx": max(0, moved["client_tx"] - probe_sent), "probe_tx": probe_sent}


def ledger_rows(rows: list[Measurement], moved: dict[str, int | None]) -> list[Measurement]:
    """For each `bytes` row of a step: `wire_bytes` (what the clients' links carried that way),
    `disk_bytes` (what the servers' disks did that way) and `from_storage` (wire / tool bytes
    over the step's rows of that direction). Nothing for what was not counted."""
    tool = tool_bytes(rows)
    out = []
    for row in _counted(rows):
        way = direction(row.params)
        if not tool[f"tool_{way}"]:
            continue
        wire, disk = moved.get(WIRE_KEY[way]), moved.get(DISK_KEY[way])
        if wire is not None:
            out.append(Measurement(row.workload, "wire_bytes", float(wire), "B", row.params, row.repetition))
            out.append(Measurement(row.workload, "from_storage", wire / tool[f"tool_{way}"], "ratio", row.params,
                                   row.repetition))
        if disk is not None:
            out.append(Measurement(row.workload, "disk_bytes", float(disk), "B", row.params, row.repetition))
    return out


"""The byte ledger (dfslab.ledger): counters read inside a network namespace against a transfer
of known size, and the rows it makes from a step's counts."""

from __future__ import annotations

import os
import subprocess
import time
import sys

import pytest

from dfslab import ledger
from dfslab.runtime.base import command_reader
from dfslab.workloads import Measurement

SENT = 20_000_000


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@pytest.fixture
def veth_pair():
    """Two namespaces joined by a veth pair (10.231.0.1 and .2), removed whatever happens."""
    tag = f"dfsl-ledger-{os.getpid()}"
    names = [f"{tag}-a", f"{tag}-b"]
    try:
        for ns in names:
            _ip("netns", "add", ns)
        _ip("link", "add", "ldga", "netns", names[0], "type", "veth", "peer", "name", "ldgb", "netns", names[1])
        for ns, dev, addr in ((names[0], "ldga", "10.231.0.1/24"), (names[1], "ldgb", "10.231.0.2/24")):
            _ip("-n", ns, "addr", "add", addr, "dev", dev)
            _ip("-n", ns, "link", "set", dev, "up")
            _ip("-n", ns, "link", "set", "lo", "up")
        yield names
    finally:
        for ns in names:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


SERVER = "import socket;s=socket.create_server(('10.231.0.1',7411));print('up',flush=True);c,_=s.accept()\n" \
         "n=0\nwhile (b:=c.recv(1<<20)):n+=len(b)\nprint(n)"
CLIENT = f"import socket;c=socket.create_connection(('10.231.0.1',7411));c.sendall(b'x'*{SENT});c.close()"


def test_counters_read_inside_a_namespace_see_a_known_transfer(veth_pair):
    receiver, sender = veth_pair
    command = lambda node, argv: ["ip", "netns", "exec", node, *argv]  # noqa: E731
    before = ledger.snapshot(command_reader(command), [receiver, sender], dict)
    server = subprocess.Popen(command(receiver, [sys.executable, "-c", SERVER]), stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout.readline().strip() == "up"
        subprocess.run(command(sender, [sys.executable, "-c", CLIENT]), check=True, timeout=60)
        assert int(server.stdout.readline()) == SENT
    finally:
        server.kill()
        server.wait()
    after = ledger.snapshot(command_reader(command), [receiver, sender], dict)
    moved = ledger.delta(before, after)
    # TCP/IP headers on top of the payload (about 3 %), the acknowledgements the other way, and
    # nothing from the root namespace's traffic
    assert SENT <= moved["client_rx"] <= SENT * 1.08, moved
    assert SENT <= moved["client_tx"] <= SENT * 1.08, moved
    assert moved["disk_read"] is None and moved["disk_write"] is None  # no servers counted: not 0
    # each node's counters come with that node's clock at the read, the window the probe's
    # bytes are taken out over (a read through an exec takes a second or more from here)
    start, end = ledger.read_window(before, after, receiver)
    assert before.read_at.keys() == {receiver, sender} and start < end <= time.time() + 1
    assert ledger.read_window(before, ledger.Snapshot(), receiver) is None
    # a link that could not be read at one end: not counted, never the other link's bytes alone
    failing = lambda node, argv: ["false"] if node == sender else command(node, argv)  # noqa: E731
    partial = ledger.snapshot(command_reader(failing), [receiver, sender], dict)
    assert partial.wire == {}
    assert ledger.delta(before, partial)["client_rx"] is None
    assert ledger.delta(before, ledger.snapshot(command_reader(command), [receiver], dict))["client_tx"] is None


@pytest.fixture
def node_with_a_pod():
    """A Kubernetes node's shape: namespace `node` with its own link (eth0, 10.232.1.1) to `far`,
    and a bridge (cni0, 10.232.2.1) whose veth port leads to `pod` (10.232.2.2), routed through
    the node; removed whatever happens."""
    tag = f"dfsl-lgn-{os.getpid()}"
    node, pod, far = names = [f"{tag}-node", f"{tag}-pod", f"{tag}-far"]
    try:
        for ns in names:
            _ip("netns", "add", ns)
            _ip("-n", ns, "link", "set", "lo", "up")
        _ip("link", "add", "lgeth", "netns", node, "type", "veth", "peer", "name", "lgfar", "netns", far)
        _ip("link", "add", "lgvp", "netns", node, "type", "veth", "peer", "name", "lgpod", "netns", pod)
        _ip("-n", node, "link", "add", "lgcni", "type", "bridge")
        _ip("-n", node, "link", "set", "lgvp", "master", "lgcni")
        for ns, dev, addr in ((node, "lgeth", "10.232.1.1/24"), (far, "lgfar", "10.232.1.2/24"),
                              (node, "lgcni", "10.232.2.1/24"), (pod, "lgpod", "10.232.2.2/24")):
            _ip("-n", ns, "addr", "add", addr, "dev", dev)
            _ip("-n", ns, "link", "set", dev, "up")
        _ip("-n", node, "link", "set", "lgvp", "up")
        _ip("-n", pod, "route", "add", "default", "via", "10.232.2.1")
        _ip("-n", far, "route", "add", "10.232.2.0/24", "via", "10.232.1.1")
        subprocess.run(["ip", "netns", "exec", node, "sysctl", "-qw", "net.ipv4.ip_forward=1"], check=True)
        yield node, pod, far
    finally:
        for ns in names:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def _send(command, receiver: str, receiver_addr: str, sender: str) -> None:
    """SENT bytes over TCP from namespace `sender` to a server in `receiver` on `receiver_addr`."""
    server = subprocess.Popen(command(receiver, [sys.executable, "-c", SERVER.replace("10.231.0.1", receiver_addr)]),
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout.readline().strip() == "up"
        subprocess.run(command(sender, [sys.executable, "-c", CLIENT.replace("10.231.0.1", receiver_addr)]),
                       check=True, timeout=60)
        assert int(server.stdout.readline()) == SENT
    finally:
        server.kill()
        server.wait()


def test_a_nodes_link_counts_its_pods_traffic_once_and_its_own_bridge_not_as_a_link(node_with_a_pod):
    """A pod's bytes cross its veth, the node's bridge and the node's link: counted once, on the
    link (all three counted before: a node's API server feeding its pods 0.3-1.5 MB/s made a
    3-s S3 step on a Kubernetes node read 1.38-1.46 of its bytes on the wire)."""
    node, pod, far = node_with_a_pod
    command = lambda ns, argv: ["ip", "netns", "exec", ns, *argv]  # noqa: E731
    listing = subprocess.run(command(node, ledger.READ_WIRE), capture_output=True, text=True, check=True).stdout
    assert ledger.carried_elsewhere(listing.partition(ledger.LINKS_MARK)[2]) == {"lgvp", "lgcni"}, listing
    before = ledger.snapshot(command_reader(command), [node], dict)
    _send(command, pod, "10.232.2.2", far)  # from outside to the pod: in by the link, out by the bridge
    moved = ledger.delta(before, ledger.snapshot(command_reader(command), [node], dict))
    assert SENT <= moved["client_rx"] <= SENT * 1.08, moved
    assert moved["client_tx"] < SENT * 0.1, moved  # the bridge's and the veth's copies not counted
    # the node's own traffic to its pod stays on the node: not its link's
    before = ledger.snapshot(command_reader(command), [node], dict)
    _send(command, pod, "10.232.2.2", node)
    moved = ledger.delta(before, ledger.snapshot(command_reader(command), [node], dict))
    assert moved["client_tx"] < SENT * 0.1 and moved["client_rx"] < SENT * 0.1, moved


def test_links_carried_by_another_are_told_from_an_ip_listing():
    """`ip -o -d link show` as a node prints it: a bridge with a physical port is the link (its
    port is not), a bridge of veths and taps is not, nor a tunnel or a shaping ifb; a veth alone
    (a client namespace's only link) is."""
    listing = "\n".join([
        "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN\\    link/loopback 00:00 brd 00:00",
        "2: eth0: <BROADCAST,UP> mtu 1500 qdisc mq master br0 state UP\\    link/ether 02:fc brd ff\\    "
        "bridge_slave state forwarding priority 32",
        "3: br0: <BROADCAST,UP> mtu 1500 qdisc noqueue state UP\\    link/ether 02:fc brd ff\\    bridge forward_delay 1500",
        "4: virbr0: <BROADCAST,UP> mtu 1500 state UP\\    link/ether 52:54 brd ff\\    bridge forward_delay 200",
        "5: vnet0: <BROADCAST,UP> mtu 1500 master virbr0 state UNKNOWN\\    link/ether fe:54 brd ff\\    tun type tap "
        "pi off\\    bridge_slave state forwarding",
        "6: flannel.1: <BROADCAST,UP> mtu 1450 state UNKNOWN\\    link/ether 6a:1b brd ff\\    vxlan id 1 local 10.0.0.5",
        "7: ifb0: <BROADCAST,NOARP> mtu 1500 state DOWN\\    link/ether de:94 brd ff\\    ifb addrgenmode eui64",
        "8: veth1@if3: <BROADCAST,UP> mtu 1500 state UP\\    link/ether 0a:58 brd ff link-netnsid 0\\    veth addrgenmode eui64",
        "9: docker0: <NO-CARRIER,BROADCAST,UP> mtu 1500 state DOWN\\    link/ether 02:42 brd ff\\    bridge forward_delay 1500",
    ])
    assert ledger.carried_elsewhere(listing) == {"eth0", "virbr0", "vnet0", "flannel.1", "ifb0", "docker0"}
    counters = ("Inter-|   Receive |  Transmit\n face |bytes    packets|bytes\n"
                "    lo: 900 1 0 0 0 0 0 0 900 1 0 0 0 0 0 0\n"
                "   br0: 5000 1 0 0 0 0 0 0 7000 1 0 0 0 0 0 0\n"
                "  eth0: 5100 1 0 0 0 0 0 0 7100 1 0 0 0 0 0 0\n"
                " veth1: 300 1 0 0 0 0 0 0 200 1 0 0 0 0 0 0\n"
                "  ifb0: 4000 1 0 0 0 0 0 0 4000 1 0 0 0 0 0 0\n")
    assert ledger.wire_totals(f"{counters}{ledger.LINKS_MARK}\n{listing}\n1795870805.1\n") == (5300, 7200)
    # where `ip` printed nothing: every link but lo, as before
    assert ledger.wire_totals(f"{counters}{ledger.LINKS_MARK}\n1795870805.1\n") == (14400, 18300)


def test_rows_per_direction_from_the_step_counts():
    fio = {"bs": 4096, "target": "fs"}
    rows = [Measurement("fio", "bandwidth", 100.0, "MB/s", {**fio, "op": "read"}),
            Measurement("fio", "bytes", 4e8, "B", {**fio, "op": "read"}),
            Measurement("fio", "bytes", 1e8, "B", {**fio, "op": "write"}),
            Measurement("fio", "bytes", 5e8, "B", {"target": "machine", "op": "read"})]
    out = ledger.ledger_rows(rows, {"client_rx": 2e7, "client_tx": 1.02e8, "disk_read": 0, "disk_write": 2.1e8})
    got = {(r.metric, r.params["op"]): r.value for r in out}
    assert got == {("wire_bytes", "read"): 2e7, ("from_storage", "read"): 0.05, ("disk_bytes", "read"): 0,
                   ("wire_bytes", "write"): 1.02e8, ("from_storage", "write"): 1.02, ("disk_bytes", "write"): 2.1e8}
    assert all(r.params.get("target") != "machine" for r in out)  # this machine's disk has no wire
    # uncounted sides make no rows (not a 0 that reads as "all from cache")
    assert ledger.ledger_rows(rows, {"client_rx": None, "client_tx": None, "disk_read": None, "disk_write": None}) == []


def test_the_integrity_writers_bytes_are_not_the_workloads():
    """A fault step measured on Rook: 46 PUTs of 1 MiB acknowledged while the client's link sent
    921,689,212 B, of which the fault window's checksummed writer had sent 873,000,000: the
    PUTs' row says 1.01 from the storage, not 19.1, and the writer's bytes are kept beside it."""
    put = {"object_size": 1048576, "mode": "write"}
    rows = [Measurement("s3", "bytes", 48234496.0, "B", put)]
    moved = {"client_rx": 2e7, "client_tx": 921689212, "disk_read": None, "disk_write": None}
    unprobed = {(r.metric, r.params["mode"]): r.value for r in ledger.ledger_rows(rows, moved)}
    assert round(unprobed[("from_storage", "write")], 1) == 19.1
    cleaned = ledger.without_probe(moved, 873000000)
    assert cleaned["client_tx"] == 921689212 - 873000000 and cleaned["probe_tx"] == 873000000
    assert cleaned["client_rx"] == 2e7  # the writer only sends
    got = {(r.metric, r.params["mode"]): r.value for r in ledger.ledger_rows(rows, cleaned)}
    assert round(got[("from_storage", "write")], 2) == 1.01
    # nothing counted stays nothing counted; a writer that sent more than was seen leaves 0, not less
    assert ledger.without_probe({"client_tx": None}, 5) == {"client_tx": None}
    assert ledger.without_probe({"client_tx": 10}, 50)["client_tx"] == 0

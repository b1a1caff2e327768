"""The byte ledger (dfslab.ledger): counters read inside a network namespace against a transfer
of known size, and the rows it makes from a step's counts."""

from __future__ import annotations

import os
import subprocess
import time
import sys

import pytest

from dfslab import ledger
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
    before = ledger.snapshot(command, [receiver, sender], lambda: [])
    server = subprocess.Popen(command(receiver, [sys.executable, "-c", SERVER]), stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout.readline().strip() == "up"
        subprocess.run(command(sender, [sys.executable, "-c", CLIENT]), check=True, timeout=60)
        assert int(server.stdout.readline()) == SENT
    finally:
        server.kill()
        server.wait()
    after = ledger.snapshot(command, [receiver, sender], lambda: [])
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
    partial = ledger.snapshot(failing, [receiver, sender], lambda: [])
    assert partial.wire == {}
    assert ledger.delta(before, partial)["client_rx"] is None
    assert ledger.delta(before, ledger.snapshot(command, [receiver], lambda: []))["client_tx"] is None


def test_rows_per_direction_from_the_step_counts():
    fio = {"bs": 4096, "target": "fs"}
    rows = [Measurement("fio", "bandwidth", 100.0, "MB/s", {**fio, "op": "read"}),
            Measurement("fio", "bytes", 4e8, "B", {**fio, "op": "read"}),
            Measurement("fio", "bytes", 1e8, "B", {**fio, "op": "write"}),
            Measurement("fio", "bytes", 5e8, "B", {"target": "local", "op": "read"})]
    out = ledger.ledger_rows(rows, {"client_rx": 2e7, "client_tx": 1.02e8, "disk_read": 0, "disk_write": 2.1e8})
    got = {(r.metric, r.params["op"]): r.value for r in out}
    assert got == {("wire_bytes", "read"): 2e7, ("from_storage", "read"): 0.05, ("disk_bytes", "read"): 0,
                   ("wire_bytes", "write"): 1.02e8, ("from_storage", "write"): 1.02, ("disk_bytes", "write"): 2.1e8}
    assert all(r.params.get("target") != "local" for r in out)  # this machine's disk has no wire
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

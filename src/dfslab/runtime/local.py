"""The embedded default: every node is a network namespace on a bridge of dfslab's own.

    dfs-<cluster>-hub      holds bridge br0 (no address); the root namespace is never touched
    dfs-<cluster>-<node>   eth0 = <subnet>.(10+i), veth peer v<i> on br0 in the hub
    dfs-<cluster>-client   eth0 = <subnet>.200, where ceph CLI, rados and benchmarks run
    dfs-<cluster>-client2  eth0 = <subnet>.201, ... more clients when the spec asks (parallel I/O)

Shaping is tc on both ends of a node's veth (egress from the node on eth0, egress towards
it on v<i>), so a cap holds in both directions. Commands run with `nsenter --net` rather
than `ip netns exec`, because the latter makes a private mount namespace and would hide
ceph-fuse mounts from everyone else.
"""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
from pathlib import Path

from ..procs import marked_pids, proc_start_time, terminate
from ..registry import client_release_of, mixed_releases, rooted_release
from ..safety import mounts_under
from ..spec import ClusterSpec, LinkShape
from ..state import ClusterState, list_clusters
from . import roots
from .base import Runtime, RuntimeError_

NETNS_DIR = Path("/run/netns")


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    res = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and res.returncode != 0:
        raise RuntimeError_(f"`ip {' '.join(args)}` failed: {res.stderr.strip()}")
    return res


def netns_available() -> bool:
    probe = f"dfs-probe-{os.getpid()}"
    try:
        ok = _ip("netns", "add", probe, check=False).returncode == 0
    except FileNotFoundError:
        return False
    if ok:
        _ip("netns", "del", probe, check=False)
    return ok


def netem_available() -> bool:
    """netem is not built into every kernel (it is not on the reference machine)."""
    probe = f"dfs-probe-netem-{os.getpid()}"
    if _ip("netns", "add", probe, check=False).returncode != 0:
        return False
    try:
        _ip("-n", probe, "link", "set", "lo", "up", check=False)
        res = subprocess.run(["tc", "-n", probe, "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"],
                             capture_output=True, text=True)
        return res.returncode == 0
    finally:
        _ip("netns", "del", probe, check=False)


def node_addresses(spec: ClusterSpec) -> dict[str, str]:
    net = ipaddress.IPv4Network(spec.network.subnet)
    base = int(net.network_address)
    addrs = {node: str(ipaddress.IPv4Address(base + 10 + i)) for i, node in enumerate(spec.node_names())}
    for i, client in enumerate(spec.client_names()):
        addrs[client] = str(ipaddress.IPv4Address(base + 200 + i))
    return addrs


def burst_bytes(rate_bps: int) -> int:
    """A shaper's burst at `rate_bps`: it must hold at least one timer tick of traffic at the rate,
    or the shaper undershoots; 10 ms worth (min 32 KiB) measured 956 Mbit/s at a 1 Gbit/s tbf cap."""
    return max(rate_bps // 8 // 100, 32 * 1024)


def tbf_args(rate_bps: int) -> list[str]:
    return ["tbf", "rate", f"{rate_bps}bit", "burst", str(burst_bytes(rate_bps)), "latency", "50ms"]


def _tbf_rate(qdiscs: list[dict]) -> int | None:
    """The tbf rate among a link end's qdiscs (`tc -j qdisc show`) in bit/s; None: uncapped."""
    rates = [q["options"]["rate"] * 8 for q in qdiscs if q.get("kind") == "tbf"]
    return rates[0] if rates else None


def hub_ports(spec: ClusterSpec) -> dict[str, str]:
    """{node or client: its veth on the hub's bridge}."""
    return {node: f"v{i}" for i, node in enumerate([*spec.node_names(), *spec.client_names()])}


class LocalNetnsRuntime(Runtime):
    kind = "local"
    where = "runtime local"
    network_per_node = True
    client_wire_counted = True
    nodes_on_subnet = True
    links = True
    software_roots = True
    capability_kind = "local"
    sample = {"runtime": "local", "nodes": 3}
    deploy_seconds = 10.0

    def ns(self, node: str) -> str:
        return f"dfs-{self.state.name}-{node}"

    @property
    def hub(self) -> str:
        return self.ns("hub")

    def preflight(self, spec: ClusterSpec) -> None:
        wants_latency = spec.network.latency is not None or any(n.latency is not None for n in spec.nodes)
        if wants_latency and not netem_available():
            raise RuntimeError_(
                "network.latency / nodes[].latency: this kernel has no tc netem, so added latency cannot be "
                "emulated; remove the latency fields (bandwidth caps with tbf work)"
            )
        for name in self.planned_namespaces(spec):
            if (NETNS_DIR / name).exists():
                raise RuntimeError_(f"network namespace {name} already exists; run `dfslab down {self.state.name}` first")

    def prepare(self, spec: ClusterSpec, progress) -> None:
        """A release other than this machine's own: its root (built once per machine), and the
        cluster's client mounts made a shared mount, so a FUSE client started from the root (in a
        mount namespace of its own, rootexec.py) mounts where every process sees it. Clients of
        another release than the servers' (`client_release:`) get that release's root (or this
        machine's software, where that is their release) on the client nodes."""
        servers, clients = rooted_release(spec), client_release_of(spec)
        mixed = mixed_releases(spec)
        if servers is None and not (mixed and clients.suite):
            return  # this machine's own software throughout
        root = self._root_of(servers, progress)
        client_root = self._root_of(clients, progress) if mixed else None
        mnt = self.client_mounts
        mnt.mkdir(parents=True, exist_ok=True)
        self.state.add_resource("shared_mounts", str(mnt))
        for argv in (["mount", "--bind", str(mnt), str(mnt)], ["mount", "--make-shared", str(mnt)]):
            res = subprocess.run(argv, capture_output=True, text=True)
            if res.returncode != 0:
                raise RuntimeError_(f"`{' '.join(argv)}` failed: {res.stderr.strip()}")
        self._record_roots(root, spec.client_names() if mixed else None, client_root)

    def install_release(self, release, clients: list[str], progress) -> None:
        root = self._root_of(release, progress)
        self._record_roots(root, clients, self.software_root_for(clients[0]) if clients else None)

    @staticmethod
    def _root_of(release, progress) -> roots.SoftwareRoot | None:
        """`release`'s root, built once per machine (None: no release, or this machine's own software)."""
        if release is None or not release.suite:
            return None
        try:
            return roots.ensure(release, progress)
        except roots.RootError as exc:
            raise RuntimeError_(str(exc)) from None

    def _record_roots(self, servers: roots.SoftwareRoot | None, clients: list[str] | None = None,
                      client_root: roots.SoftwareRoot | None = None) -> None:
        """Where the nodes' programs run from (None: this machine's own software): the servers', and
        given `clients`, the client nodes' apart. The clients' first: after an upgrade's next line,
        a command on a client node still runs what it ran before, whichever the servers run."""
        if clients is not None:
            self.state.update(client_root={"nodes": clients, "root": client_root.as_json() if client_root is not None else None})
            self._client_root = (frozenset(clients), client_root)
        self.state.update(software_root=servers.as_json() if servers is not None else None)
        self._software_root = servers

    def _unshare_mounts(self) -> list[str]:
        """Undo `prepare`'s shared mount (after `down` unmounted the clients below it)."""
        removed = []
        for mnt in self.state.resources("shared_mounts"):
            while mnt in mounts_under(Path(mnt)) and subprocess.run(["umount", "-l", mnt], capture_output=True).returncode == 0:
                removed.append(f"mount {mnt}")
            self.state.remove_resource("shared_mounts", mnt)
        return removed

    def planned_namespaces(self, spec: ClusterSpec) -> list[str]:
        return [self.hub, *(self.ns(n) for n in [*spec.node_names(), *spec.client_names()])]

    def create(self, spec: ClusterSpec) -> dict[str, str]:
        addrs = node_addresses(spec)
        prefix = ipaddress.IPv4Network(spec.network.subnet).prefixlen
        self._add_ns(self.hub)
        _ip("-n", self.hub, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.hub, "link", "set", "br0", "up")
        links = {}
        for node, port in hub_ports(spec).items():
            ns = self.ns(node)
            self._add_ns(ns)
            _ip("-n", self.hub, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns)
            _ip("-n", self.hub, "link", "set", port, "master", "br0", "up")
            _ip("-n", ns, "addr", "add", f"{addrs[node]}/{prefix}", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            links[node] = [[self.hub, port], [ns, "eth0"]]
        self.state.update(links=links)
        self.shape_all(spec)
        return addrs

    @staticmethod
    def _shapes(spec: ClusterSpec) -> dict[str, LinkShape]:
        shapes = {n.name: spec.shape_of(n) for n in spec.nodes}
        for client in spec.client_names():
            shapes[client] = LinkShape.model_construct(bandwidth=spec.network.bandwidth, latency=spec.network.latency)
        return shapes

    def shape_all(self, spec: ClusterSpec) -> None:
        """The spec's caps on both ends of every link (clients get the network-wide shape)."""
        for node, shape in self._shapes(spec).items():
            for ns, dev in self.link_ends(node):
                self._shape(ns, dev, shape)

    def reshape(self, spec: ClusterSpec) -> list[str]:
        """Every link's caps replaced by `spec`'s while the cluster runs (a swept network.bandwidth),
        each read back from the kernel; what changed."""
        changed = []
        for node, shape in self._shapes(spec).items():
            for ns, dev in self.link_ends(node):
                qdiscs = self._qdiscs(ns, dev)
                netem = any(q.get("kind") == "netem" for q in qdiscs)
                if shape.latency is None and not netem and _tbf_rate(qdiscs) == shape.bandwidth:
                    continue  # already so
                # no root qdisc yet is fine: deleting it is how tc replaces a netem/tbf pair
                subprocess.run(["tc", "-n", ns, "qdisc", "del", "dev", dev, "root"], capture_output=True)
                self._shape(ns, dev, shape)
                got = _tbf_rate(self._qdiscs(ns, dev))
                if (got is None) != (shape.bandwidth is None) or got and abs(got - shape.bandwidth) > shape.bandwidth / 100:
                    raise RuntimeError_(f"{node}: {ns}/{dev} reads back rate {got} bit/s after setting {shape.bandwidth}")
                changed.append(f"{ns}/{dev}")
        shown = {f"{b / 1e9:g} Gbit/s" if b else "uncapped" for b in (s.bandwidth for s in self._shapes(spec).values())}
        return [f"links re-shaped in place to {', '.join(sorted(shown))} ({len(changed)} link end(s), read back with tc)"] if changed else []

    @staticmethod
    def _qdiscs(ns: str, dev: str) -> list[dict]:
        res = subprocess.run(["tc", "-j", "-n", ns, "qdisc", "show", "dev", dev], capture_output=True, text=True)
        if res.returncode != 0:
            raise RuntimeError_(f"`tc -n {ns} qdisc show dev {dev}` failed: {res.stderr.strip()}")
        return json.loads(res.stdout or "[]")

    def _add_ns(self, name: str) -> None:
        self.state.add_resource("netns", name)
        _ip("netns", "add", name)
        _ip("-n", name, "link", "set", "lo", "up")

    def _shape(self, ns: str, dev: str, shape: LinkShape) -> None:
        if shape.bandwidth is None and shape.latency is None:
            return
        if shape.latency is not None:
            # netem holds the delay; a tbf child under it holds the rate.
            cmd = ["tc", "-n", ns, "qdisc", "add", "dev", dev, "root", "handle", "1:", "netem", "delay", f"{shape.latency * 1e6:.0f}us"]
            self._tc(cmd)
            if shape.bandwidth is not None:
                self._tc(["tc", "-n", ns, "qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:", *tbf_args(shape.bandwidth)])
        else:
            self._tc(["tc", "-n", ns, "qdisc", "add", "dev", dev, "root", *tbf_args(shape.bandwidth)])

    @staticmethod
    def _tc(cmd: list[str]) -> None:
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            raise RuntimeError_(f"`{' '.join(cmd)}` failed: {res.stderr.strip()}")

    def marked_on(self, node: str) -> list[int]:
        """Marked PIDs in `node`'s network namespace (also those dfslab did not spawn itself)."""
        try:
            node_ns = os.stat(NETNS_DIR / self.ns(node)).st_ino
        except OSError:
            return []
        found = []
        for pid in marked_pids(self.state.name):
            try:
                if os.stat(f"/proc/{pid}/ns/net").st_ino == node_ns:
                    found.append(pid)
            except OSError:
                continue
        return found

    def command(self, node: str, argv: list[str]) -> list[str]:
        root = self.software_root_for(node)
        if root is not None:
            argv = root.wrap(argv, str(self.client_mounts))
        return ["nsenter", f"--net={NETNS_DIR / self.ns(node)}", "--", *argv]

    def counter_window(self, node: str) -> str:
        # nsenter execs sleep: the tracked PID is inside the namespace, so /proc/<pid>/net/dev is
        # the node's. kind client: on runtime docker too a host process, not a container.
        name = f"counters.{node}"
        self.spawn(name, node, ["sleep", "infinity"], meta={"kind": "client"})
        return name

    def _ours(self) -> list[str]:
        """The namespaces recorded in the state directory, exactly: each is recorded before it is
        made, so a crash cannot leave one unrecorded, and a name prefix would also match other
        clusters (`dfs-x-*` holds `dfs-x-b-hub`)."""
        return [ns for ns in self.state.resources("netns") if ns.startswith(f"dfs-{self.state.name}-")]

    def destroy(self) -> list[str]:
        removed = []
        for ns in self._ours():
            # Anything still inside a namespace dfslab created is dfslab's (a client tool).
            pids = [int(p) for p in _ip("netns", "pids", ns, check=False).stdout.split() if p.isdigit()]
            terminate(pids, {pid: proc_start_time(pid) for pid in pids}, timeout=0)
            if _ip("netns", "del", ns, check=False).returncode == 0:
                removed.append(ns)
            self.state.remove_resource("netns", ns)
        return removed + self._unshare_mounts()

    def leftovers(self) -> list[str]:
        """Recorded namespaces still there, and (a check only, never a removal) any named like
        this cluster's that no other cluster has recorded."""
        shared = [f"mount {m}" for m in self.state.resources("shared_mounts") if m in mounts_under(Path(m))]
        found = [ns for ns in self._ours() if (NETNS_DIR / ns).exists()]
        others = {ns for name in list_clusters() if name != self.state.name
                  for ns in ClusterState(name).resources("netns")}
        if NETNS_DIR.is_dir():
            found += [p.name for p in NETNS_DIR.glob(f"dfs-{self.state.name}-*") if p.name not in others and p.name not in found]
        return [f"netns {ns}" for ns in found] + shared


"""Nodes and daemons in Docker containers, on dfslab's own engine (runtime/dockerd.py).

    dfs-<cluster>                 a user-defined bridge network on the spec's subnet
    dfs-<cluster>-<node>          the node's container: holds its address (sleep), nothing else
    dfs-<cluster>-<daemon>        one container per daemon (mon.a, osd.0, ...), as the thesis's
                                  `docker run ... mon|osd`, joined to its node's network
                                  (`--network container:`), the daemon the only child of its init

What a daemon declares it needs (ceph.conf read-only, its own data directory with its own
keyring, admin sockets, logs; glusterd its node's directory) is bind-mounted from the
cluster's state directory at the same path, never the whole directory with every key, so a daemon container that is removed and created again (a
fault's undo) comes back with the same identity, as a StatefulSet pod does. No container is
privileged (root here lacks CAP_SYS_RESOURCE) and none needs to be: OSDs use BlueStore files;
glusterd's container gets CAP_SYS_ADMIN alone (its private bind mounts, the bricks' trusted.*
xattrs).

Each node's network namespace is attached as /run/netns/dfs-<cluster>-<node>, so client
tools (ceph CLI, rados bench, fio, ceph-fuse) run from the host inside the client node's
namespace exactly as on the local runtime, and tc shaping and link cuts use the node's veth
pair (the bridge side lives in the engine's namespace, never the host's).
"""

from __future__ import annotations

import hashlib
import signal
import subprocess
from pathlib import Path

from ..native import CLASS_LIB
from ..procs import ENV_MARK, TrackedProcess
from ..spec import ClusterSpec
from . import dockerd, images
from .base import RuntimeError_
from .local import LocalNetnsRuntime, node_addresses
from ..polling import poll, wait_until
from ..registry import rooted_release

# The daemon's output goes to the same log file as on the local runtime; `exec` keeps the
# daemon itself as the child of the container's init.
LOG_WRAPPER = ["sh", "-c", 'exec "$@" >>"$0" 2>&1']


def _ip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True)


def _inner_pid(host_pid: int) -> int:
    """The PID the process has in its innermost PID namespace (its container's)."""
    with open(f"/proc/{host_pid}/status") as fh:
        line = next((line for line in fh if line.startswith("NSpid:")), f"NSpid: {host_pid}")
    return int(line.split()[-1])


def host_pid_among(candidates, pid: int) -> int | None:
    """Of `candidates` (this machine's PIDs), the one whose innermost PID (its container's) is `pid`."""
    for host in candidates:
        try:
            if _inner_pid(host) == pid:
                return host
        except OSError:  # gone meanwhile
            continue
    return None


class DockerRuntime(LocalNetnsRuntime):
    kind = "docker"
    # Another release's daemons run from the image of its root; its clients and tools, host
    # processes in the client node's namespace, from the root itself, as on runtime local.
    software_roots = True
    where = "runtime docker"
    nodes_on_subnet = False  # Docker's bridge network hands out the addresses
    deploy_seconds = 30.0
    debian_groups = ("docker",)
    capability_kind = "docker"
    sample = {"runtime": "docker", "nodes": 3}

    @property
    def hub(self) -> str:
        return dockerd.NETNS

    def container(self, name: str) -> str:
        return f"dfs-{self.state.name}-{name}"

    @property
    def network(self) -> str:
        return f"dfs-{self.state.name}"

    @property
    def bridge(self) -> str:
        # Interface names are at most 15 characters; cluster names are not.
        return "dfsb" + hashlib.sha1(self.state.name.encode()).hexdigest()[:10]

    def labels(self, **extra: str) -> list[str]:
        out = ["--label", f"{dockerd.LABEL}={self.state.name}"]
        for key, value in extra.items():
            out += ["--label", f"dfslab.{key}={value}"]
        return out

    # -- lifecycle --------------------------------------------------------------
    def planned_namespaces(self, spec: ClusterSpec) -> list[str]:
        return [self.ns(n) for n in [*spec.node_names(), *spec.client_names()]]

    def preflight(self, spec: ClusterSpec) -> None:
        dockerd.docker_cli()
        super().preflight(spec)

    def prepare(self, spec: ClusterSpec, progress) -> None:
        progress("starting container engine", f"dockerd in namespace {dockerd.NETNS}, data in {dockerd.engine_home()}")
        dockerd.start()
        super().prepare(spec, progress)  # another release's root, for what runs on the host
        release = rooted_release(spec)
        progress("checking image", images.REPO if release is None else f"{images.RELEASE_REPO} ({release.says})")
        self.state.update(image=images.ensure(progress) if release is None else
                          images.ensure_release(release, self.software_root(), progress))

    def install_release(self, release, clients: list[str], progress) -> None:
        """As on runtime local, and a daemon started from now on runs from the release's image."""
        super().install_release(release, clients, progress)
        self.state.update(image=images.ensure_release(release, self.software_root(), progress))

    def create(self, spec: ClusterSpec) -> dict[str, str]:
        addrs = node_addresses(spec)
        self.state.add_resource("docker-network", self.network)
        res = dockerd.docker("network", "create", "--driver", "bridge", "--subnet", spec.network.subnet,
                            "-o", f"com.docker.network.bridge.name={self.bridge}", *self.labels(),
                            self.network, check=False)
        if res.returncode != 0:
            raise RuntimeError_(f"network.subnet: docker could not create network {self.network} on "
                                f"{spec.network.subnet} ({res.stderr.strip()}); another docker cluster may use "
                                "that subnet: give this spec another one")
        links = {node: self._node_container(node, addr) for node, addr in addrs.items()}
        self.state.update(links=links)
        self.shape_all(spec)
        return addrs

    def _node_container(self, node: str, address: str) -> list[list[str]]:
        """Start the node's container, attach its namespace; return its link ends."""
        name = self.container(node)
        self.state.add_resource("container", name)
        dockerd.docker("run", "-d", "--name", name, "--hostname", node, "--network", self.network, "--ip", address,
                      *self.labels(node=node), self.image, "sleep", "infinity")
        pid = self._pid(name)
        ns = self.ns(node)
        self.state.add_resource("netns", ns)
        if _ip("netns", "attach", ns, str(pid)).returncode != 0:
            raise RuntimeError_(f"could not attach the network namespace of container {name} (pid {pid})")
        return [[self.hub, self._bridge_side(ns)], [ns, "eth0"]]

    @property
    def image(self) -> str:
        image = self.state.read().get("image")
        if not image:
            raise RuntimeError_("no image recorded for this cluster; `dfslab images build`, then up again")
        return image

    def _pid(self, name: str) -> int:
        pid = int(dockerd.docker("inspect", "-f", "{{.State.Pid}}", name).stdout.strip() or 0)
        if pid == 0:
            raise RuntimeError_(f"container {name} is not running: `docker logs` says "
                                f"{dockerd.docker('logs', '--tail', '5', name, check=False).stderr.strip()!r}")
        return pid

    def _bridge_side(self, ns: str) -> str:
        """The veth in the engine's namespace whose peer is the node's eth0."""
        out = _ip("-n", ns, "-o", "link", "show", "eth0").stdout  # "3: eth0@if4: ..."
        peer = out.split(":")[1].strip().split("@if")[1]
        for line in _ip("-n", self.hub, "-o", "link").stdout.splitlines():
            index, name = line.split(":")[:2]
            if index.strip() == peer:
                return name.strip().split("@")[0]
        raise RuntimeError_(f"no bridge-side veth for {ns} in namespace {self.hub}")

    # -- daemons ----------------------------------------------------------------
    def spawn(self, name: str, node: str, argv: list[str], env: dict[str, str] | None = None, meta: dict | None = None) -> TrackedProcess:
        if (meta or {}).get("kind") == "client":
            # FUSE clients stay host processes in the client node's namespace: their mount must
            # be visible to the host-side benchmark tools (and a container would need SYS_ADMIN).
            return super().spawn(name, node, argv, env, meta)
        cname = self.container(name)
        self._remove(cname)  # an earlier incarnation (killed by a fault) keeps its name until removed
        log = str(self.state.logs_dir / f"{name}.out")
        env_args = [arg for key, value in {**(env or {}), ENV_MARK: self.state.name}.items() for arg in ("-e", f"{key}={value}")]
        # Only what the daemon declares it needs, at the same paths (so a recreated container is the
        # same daemon): its own keyring, never the whole state directory with every key in it.
        declared = (meta or {}).get("mounts")
        if not declared:
            raise RuntimeError_(f"daemon {name} declares no paths (meta 'mounts'); a container gets only those")
        mounts = [arg for path, mode in declared for arg in ("-v", f"{path}:{path}:{mode}")]
        mounts += ["-v", f"{self.state.logs_dir}:{self.state.logs_dir}"]  # where LOG_WRAPPER writes
        if CLASS_LIB.parent.is_dir():  # dfslab's object class, linked from the OSDs' class dir
            mounts += ["-v", f"{CLASS_LIB.parent}:{CLASS_LIB.parent}:ro"]
        # Capabilities a daemon asks for (meta caps), never --privileged.
        caps = [arg for cap in (meta or {}).get("caps", []) for arg in ("--cap-add", cap)]
        self.state.add_resource("container", cname)
        # --init: a tiny init (tini) is the container's first process and reaps orphans; without it
        # a brick glusterd daemonized and that was killed stays a zombie, and glusterd, seeing
        # its PID "alive", never restarts it. The daemon is init's one child.
        dockerd.docker("run", "-d", "--init", "--name", cname, "--network", f"container:{self.container(node)}",
                      *self.labels(node=node, daemon=name), *env_args, *mounts, *caps,
                      self.image, *LOG_WRAPPER, log, *argv)
        return self.procs.adopt(name, node, self._daemon_pid(cname), list(argv), log, env,
                                {**self.spawn_meta(node, argv, meta), "container": cname})

    def _daemon_pid(self, cname: str, timeout: float = 10) -> int:
        """The host PID of the daemon: the only child of the container's init."""
        init = self._pid(cname)

        def first_child() -> int | None:
            try:
                children = Path(f"/proc/{init}/task/{init}/children").read_text().split()
            except OSError:
                children = []
            return int(children[0]) if children else None
        return wait_until(first_child, f"the daemon of container {cname}", timeout, 0.02,
                          lambda _: RuntimeError_(f"container {cname} started no daemon; see its log in {self.state.logs_dir}"))

    def in_daemon(self, proc: TrackedProcess, argv: list[str]) -> list[str]:
        # `docker exec` enters the namespaces of the container's init, and the daemon may have a
        # mount namespace of its own (glusterd's private /run): nsenter to it from inside the
        # container. Entering it from the host instead shows tools the container's /proc from
        # another PID namespace, and the gluster CLI crashes on that.
        cname = proc.meta.get("container")
        if cname is None:
            return super().in_daemon(proc, argv)
        return [dockerd.docker_cli(), "-H", f"unix://{dockerd.socket_path()}", "exec", "-i", cname,
                "nsenter", f"--mount=/proc/{_inner_pid(proc.pid)}/ns/mnt", *argv]

    def host_pid(self, node: str, pid: int) -> int | None:
        """A PID as seen inside a container of `node` (glusterd's brick PIDs), as the host sees it:
        the marked process on the node whose innermost NSpid is `pid`."""
        return host_pid_among(self.marked_on(node), pid)

    def signal_process(self, proc: TrackedProcess, sig: int, grace: float = 30) -> None:
        cname = proc.meta.get("container")
        if cname is None:
            return super().signal_process(proc, sig, grace)
        if sig == signal.SIGKILL:
            dockerd.docker("kill", "--signal", "KILL", cname, check=False)
        else:
            dockerd.docker("stop", "-t", str(int(grace)), cname, check=False, timeout=grace + 30)
        poll(lambda: not proc.alive(), f"{proc.name}'s container to stop", 10, 0.05)

    def _remove(self, cname: str) -> None:
        dockerd.docker("rm", "-f", cname, check=False)

    # -- teardown ---------------------------------------------------------------
    def _labelled(self, *listing: str) -> list[str]:
        """Names from a docker listing (`ps -a`, `network ls`) of what carries this cluster's label."""
        if not dockerd.responding():
            return []
        res = dockerd.docker(*listing, "--format", "{{.Name}}" if listing[0] == "network" else "{{.Names}}",
                            "--filter", f"label={dockerd.LABEL}={self.state.name}", check=False)
        return res.stdout.split()

    def _containers(self) -> list[str]:
        return self._labelled("ps", "-a")

    def _networks(self) -> list[str]:
        return self._labelled("network", "ls")

    def destroy(self) -> list[str]:
        recorded = self.state.resources("container") or self.state.resources("docker-network")
        if recorded and not dockerd.responding():
            dockerd.start()  # stopped containers still hold their names and the subnet
        removed = []
        containers = self._containers()
        if containers:
            dockerd.docker("rm", "-f", *containers, check=False, timeout=300)
            removed += [f"container {c}" for c in containers]
        for net in self._networks():
            dockerd.docker("network", "rm", net, check=False)
            removed.append(f"network {net}")
        for kind in ("container", "docker-network"):
            for item in self.state.resources(kind):
                self.state.remove_resource(kind, item)
        removed += super().destroy()  # the attached namespace names
        if dockerd.stop_if_unused():
            removed.append("dockerd")
        return removed

    def leftovers(self) -> list[str]:
        found = [f"container {c}" for c in self._containers()]
        found += [f"docker network {n}" for n in self._networks()]
        found += super().leftovers()  # the attached namespace names
        return found + dockerd.leftovers()

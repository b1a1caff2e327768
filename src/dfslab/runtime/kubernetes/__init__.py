"""Runtime kubernetes, local: a real single-machine Kubernetes that dfslab starts and removes.

    dfs-<cluster>-client   etcd (loopback only), kube-apiserver :6443, controller manager,
                           scheduler, and the client node's containerd + kubelet
    dfs-<cluster>-<node>   that node's containerd + kubelet (node.py: its own mount namespace)

The nodes are the local runtime's network namespaces, links shaped the same way; each gets a
default route on its link (the API server and kubelets pick their address from it) and one
DNAT rule standing in for kube-proxy: the `kubernetes` Service's ClusterIP:443 -> the API
server, so pods' in-cluster config (Rook's operator) reaches it. dfslab's pods use the host
network; nothing else needs Services. Binaries come from scripts/build-kubernetes.sh, the
image from images.py. Everything is recorded and removed by `down` like the local runtime's.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import psutil

from ...polling import poll
from ...procs import TrackedProcess, proc_start_time, terminate
from ...registry import release_of, rooted_release
from ...safety import remove_owned_tree
from ...spec import ClusterSpec
from ...state import dfslab_home
from ..base import CLIENT, Runtime, RuntimeError_
from ..local import LocalNetnsRuntime, NETNS_DIR
from . import images as kimages
from .binaries import API_PORT, binary, engine_of
from . import node as knode
from . import pki as kpki
from .job import is_admin, shipped_module

# Debian's requests warns about the venv's newer urllib3 on import (the kubernetes client's):
# harmless, and it would be printed before every status and exec.
warnings.filterwarnings("ignore", message=r"urllib3 .* doesn't match a supported version")

# Where runc (cgroupfs driver, no per-QoS tree) puts each container of the k8s.io namespace.
CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_MEMORY = CGROUP_ROOT / "memory" / "k8s.io"
COMPONENTS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet")


def rook_host_path() -> Path:
    """Rook's dataDirHostPath: one path for every node (Rook wants one), under which each node's
    mount namespace binds that node's own directory. The directory itself stays empty."""
    return dfslab_home() / "rook-data"


def container_pids(container_id: str) -> list[int] | None:
    """The processes of a container the local nodes' containerd runs (its memory cgroup, v1);
    None when there is no such container."""
    if not re.fullmatch(r"[0-9a-f]{64}", container_id):
        return None
    try:
        return [int(p) for p in (CGROUP_MEMORY / container_id / "cgroup.procs").read_text().split()]
    except OSError:
        return None


def process_argv(pid: int) -> list[str]:
    """A process's command line, or [] when it is gone or unreadable."""
    try:
        return psutil.Process(pid).cmdline()
    except psutil.Error:
        return []


def pod_subnet(index: int) -> str:
    """The bridge-network pods' addresses on the index-th node."""
    return f"10.244.{index}.0/24"


class KubernetesRuntime(LocalNetnsRuntime):
    kind = "kubernetes"
    # Its daemons run from images: of this machine's packages, or of a release's root (whose
    # programs the clients here run too, as on runtime local); no other release for the clients,
    # no release changed under running pods (an upgrade is Rook's: not built).
    software_roots = False
    release_images = True
    where = "runtime kubernetes (the local one dfslab starts)"
    engine_deploys = True
    client_kinds = ("host", "job")
    daemons_in_pods = True
    nodes_on_subnet = False  # the pods' addresses are Kubernetes' (their CNI's)
    deploy_seconds = 80.0
    debian_groups = ("kubernetes",)
    builds = ("kubernetes",)
    capability_kind = "kubernetes"
    sample = {"runtime": "kubernetes", "nodes": 3}
    # The tools' Jobs run on the client node with the host network: its namespace's counters are
    # theirs, plus the API server's chatter with the kubelets (it runs there too), which the
    # ledger counts as the client's (measured idle: see docs; small beside a step's transfer).
    client_wire_counted = True
    # What Kubernetes itself takes while a workload runs: the control plane (etcd, kube-apiserver,
    # -controller-manager, -scheduler) and each node's kubelet and containerd, as the sampler
    # sees the processes dfslab started (cpu.<name>, % of one CPU).
    platform = r"etcd|kube-.+|kubelet-.+|containerd-.+"  # the control plane, kubelets, containerd
    charts = ({"match": rf"cpu\.({platform})", "unit": "% of one CPU",
               "title": "CPU Kubernetes itself takes (control plane, kubelets, containerd) over time",
               "faults_only": False},)

    @classmethod
    def for_spec(cls, spec: ClusterSpec) -> type[Runtime]:
        if spec.kubernetes.user_cluster:
            from .existing import ExistingKubernetesRuntime
            return ExistingKubernetesRuntime
        return cls

    @property
    def home(self) -> Path:
        return self.state.dir / "kubernetes"

    @property
    def pki(self) -> kpki.Pki:
        return kpki.Pki(self.home / "pki")

    def node_paths(self, node: str) -> knode.NodePaths:
        return knode.NodePaths(self.home / "nodes" / node)

    def kube_nodes(self, spec: ClusterSpec) -> list[str]:
        return [*spec.node_names(), *spec.client_names()]

    @property
    def api_address(self) -> str:
        return self.address(CLIENT)

    def api(self):
        """A `kubernetes.client.ApiClient` as cluster-admin of this Kubernetes."""
        from .control import api_client
        return api_client(self)

    @property
    def namespace(self) -> str:
        info = self.state.read()  # the backend's own namespace (GlusterFS), else the spec's (Rook's)
        return info.get("k8s_namespace") or info["spec"].get("kubernetes", {}).get("namespace", "rook-ceph")

    def kube_node(self, node: str) -> str:
        return node  # the spec's nodes and clients are the Kubernetes nodes

    # -- lifecycle --------------------------------------------------------------
    def preflight(self, spec: ClusterSpec) -> None:
        for name in COMPONENTS:
            binary(name)
        binary(engine_of(release_of(spec)))
        for tool in ("etcd", "containerd", "runc", "ctr", "iptables", "losetup", "unshare"):
            if subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True).returncode != 0:
                raise RuntimeError_(f"runtime kubernetes: `{tool}` is missing; `make install-deps` installs it")
        if not Path(knode.CNI_BIN, "bridge").exists():
            raise RuntimeError_("runtime kubernetes: CNI plugins are missing; install Debian's containernetworking-plugins")
        super().preflight(spec)

    def prepare(self, spec: ClusterSpec, progress) -> None:
        from .. import dockerd
        from . import images
        super().prepare(spec, progress)  # a release's root, for the image and the clients here
        release = rooted_release(spec)
        self.state.update(k8s_images=images.ensure(progress, release, self.software_root()))
        dockerd.stop_if_unused()  # the images are built and saved; the nodes' containerds run them

    def create(self, spec: ClusterSpec) -> dict[str, str]:
        addrs = super().create(spec)
        self.state.update(addresses=addrs)
        to_api = ["-d", kpki.SERVICE_IP, "-p", "tcp", "--dport", "443", "-j", "DNAT",
                  "--to-destination", f"{addrs[CLIENT]}:{API_PORT}"]
        for index, node in enumerate(self.kube_nodes(spec)):
            ns = self.ns(node)
            subprocess.run(["ip", "-n", ns, "route", "add", "default", "dev", "eth0"], check=True, capture_output=True)
            # Host-network pods (OUTPUT) and bridge pods (PREROUTING) reach the API server at the
            # ClusterIP; bridge pods leave the node with its address (no route to pod subnets).
            self._iptables(ns, ["-t", "nat", "-A", "OUTPUT", *to_api])
            self._iptables(ns, ["-t", "nat", "-A", "PREROUTING", *to_api])
            self._iptables(ns, ["-t", "nat", "-A", "POSTROUTING", "-s", pod_subnet(index), "!", "-d", pod_subnet(index),
                                "-j", "MASQUERADE"])
            subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv4.ip_forward=1"], check=True, capture_output=True)
        return addrs

    def start_kubernetes(self, spec: ClusterSpec, progress) -> None:
        """Control plane, then every node; returns when every node is Ready."""
        from . import control
        nodes = self.kube_nodes(spec)
        users = {"admin": "system:masters", "system:kube-controller-manager": "", "system:kube-scheduler": "",
                 **{f"system:node:{n}": "system:nodes" for n in nodes}}
        kpki.create(self.pki.dir, self.api_address, users)
        progress("starting Kubernetes control plane", f"etcd, kube-apiserver on {self.api_address}:{API_PORT}")
        control.start(self, progress)
        images = self.state.read()["k8s_images"]
        for i, node in enumerate(nodes):
            progress("starting Kubernetes nodes", f"{node}: containerd (its images from the seed), kubelet ({i + 1}/{len(nodes)})")
            self.start_node(node, i, images, [] if node in spec.client_names() else self.loops_of(node))
        control.wait_nodes_ready(self, nodes, progress)

    @property
    def admin_kubeconfig(self) -> Path:
        return self.home / "admin.kubeconfig"

    def write_admin_kubeconfig(self, timeout: float = 10) -> Path:
        """A kubeconfig (cluster-admin) for tools on this machine: the API server listens only in
        the client namespace, so a relay dfslab tracks (down stops it) listens on 127.0.0.1."""
        port_file = self.home / "api-relay.port"
        relay = self.procs.spawn("api-relay", "host", [sys.executable, "-m", "dfslab.runtime.kubernetes.netns_socket",
                                                        str(NETNS_DIR / self.ns(CLIENT)), self.api_address, str(API_PORT),
                                                        str(port_file)])
        knode.wait_file(port_file, "the API relay", relay.alive, timeout)
        self.admin_kubeconfig.write_text(kpki.kubeconfig(self.pki, f"https://127.0.0.1:{port_file.read_text()}", "admin"))
        self.admin_kubeconfig.chmod(0o600)
        return self.admin_kubeconfig

    def job_command(self, node: str, argv: list[str]) -> list[str]:
        # dfslab's own Python tools that need dfslab (the integrity seeder, writer and verifier)
        # exist only on this machine: they run here in the node's namespace, as do the filesystem's
        # admin CLIs (Backend.admin_tools). The field's tools, and dfslab's self-contained modules
        # (the metadata worker), run as Jobs.
        if (argv and argv[0] == sys.executable and not shipped_module(argv)) or is_admin(argv, self.admin_tools):
            return self.command(node, argv)
        return [sys.executable, "-m", "dfslab.runtime.kubernetes.job", self.state.name, node, "--", *argv]

    def signal_container(self, pod, container_id: str, sig: int) -> int:
        """From this machine: the local nodes' containers are its processes (their cgroups)."""
        signalled = 0
        for pid in container_pids(container_id.split("://", 1)[-1]) or []:
            try:
                os.kill(pid, sig)
                signalled += 1
            except ProcessLookupError:
                pass
        return signalled

    @staticmethod
    def container_rss(container_id: str) -> int | None:
        """Resident memory of a container the local nodes' containerd runs: its processes' RSS
        (as `status` shows for the local runtime's daemons), found from its cgroup (v1)."""
        pids = container_pids(container_id)
        if pids is None:
            return None
        total = 0
        for pid in pids:
            try:
                total += psutil.Process(pid).memory_info().rss
            except psutil.Error:
                continue
        return total

    # -- nodes ------------------------------------------------------------------
    def loops_of(self, node: str) -> list[str]:
        return [loop["device"] for loop in self.state.resources("loop") if loop["node"] == node]

    def add_loop(self, node: str, backing: Path, size: int) -> str:
        """A loop device over a sparse file: one disk of `node` (seen only in its /dev)."""
        backing.parent.mkdir(parents=True, exist_ok=True)
        with open(backing, "wb") as fh:
            fh.truncate(size)
        res = subprocess.run(["losetup", "--find", "--show", "--direct-io=on", str(backing)], capture_output=True, text=True)
        if res.returncode != 0:
            raise RuntimeError_(f"losetup of {backing} failed: {res.stderr.strip()}")
        device = res.stdout.strip()
        self.state.add_resource("loop", {"node": node, "device": device, "file": str(backing)})
        return device

    def start_node(self, node: str, index: int, images: dict[str, str], loops: list[str]) -> None:
        paths = self.node_paths(node)
        self.state.add_resource("containerd_state", str(paths.containerd_state))  # recorded before it exists
        knode.prepare_dirs(paths)
        rook_host_path().mkdir(parents=True, exist_ok=True)
        holder = self.spawn(f"node-{node}", node, ["unshare", "--mount", "--propagation", "slave", "--",
                                                   "sh", "-c", knode.mount_namespace_script(paths, str(rook_host_path()), loops)])
        knode.wait_file(paths.ready, f"node {node}'s mount namespace", holder.alive)
        (paths.root / "containerd.toml").write_text(knode.containerd_config(paths, images["sandbox"]))
        (paths.cni_conf / "10-dfslab.conflist").write_text(knode.cni_config(pod_subnet(index)))
        in_node = lambda argv: knode.nsenter_mount(holder.pid, argv)  # noqa: E731
        seeded = bool(images.get("seed")) and kimages.seed_root(Path(images["seed"]), paths.containerd_root)
        name = f"containerd-{node}"
        knode.start_containerd(lambda: self.spawn(name, node, in_node(["containerd", "--config", str(paths.root / "containerd.toml")])),
                               self.procs.log_path(name), paths.socket, f"containerd of {node}")
        if not seeded:
            res = subprocess.run(self.command(node, in_node(["ctr", "--address", str(paths.socket), "-n", "k8s.io",
                                                             "images", "import", "--no-unpack", images["archive"]])),
                                 capture_output=True, text=True, timeout=600)
            if res.returncode != 0:
                raise RuntimeError_(f"importing {images['archive']} into {node}'s containerd failed: {res.stderr.strip()[-400:]}")
        kubeconfig = paths.root / "kubelet.kubeconfig"
        kubeconfig.write_text(kpki.kubeconfig(self.pki, f"https://{self.api_address}:{API_PORT}", f"system:node:{node}"))
        kubeconfig.chmod(0o600)
        (paths.root / "kubelet.yaml").write_text(knode.kubelet_config(paths))
        role = "client" if node.startswith(CLIENT) else "server"
        self.spawn(f"kubelet-{node}", node, in_node([
            binary("kubelet"), "--config", str(paths.root / "kubelet.yaml"), "--kubeconfig", str(kubeconfig),
            "--root-dir", str(paths.kubelet_root), "--hostname-override", node, "--node-ip", self.address(node),
            "--node-labels", f"dfslab.io/role={role}", "--v", "1"]))

    @staticmethod
    def _iptables(ns: str, rule: list[str]) -> None:
        res = subprocess.run(["nsenter", f"--net={NETNS_DIR / ns}", "--", "iptables", *rule], capture_output=True, text=True)
        if res.returncode != 0:
            raise RuntimeError_(f"iptables in {ns} failed: {res.stderr.strip()}")

    # -- teardown ---------------------------------------------------------------
    def destroy(self) -> list[str]:
        # Kubelets first (they would restart what goes next), then everything in the namespaces.
        for proc in self.procs.all():
            if proc.name.startswith("kubelet-") and proc.alive():
                terminate([proc.pid], {proc.pid: proc.start_time}, timeout=0)
        containers = self.container_ids()
        removed = super().destroy()
        self._stop_containers(containers)
        self._remove_cgroups(containers)
        for d in self.state.resources("containerd_state"):
            remove_owned_tree(Path(d), [knode.SOCKET_ROOT], f"the containerd state dfslab made for cluster {self.state.name}")
            self.state.remove_resource("containerd_state", d)
        for loop in self.state.resources("loop"):
            self._detach(loop)
            self.state.remove_resource("loop", loop)
        return removed

    def sampled_processes(self) -> list[TrackedProcess]:
        """dfslab's own processes, and the storage daemons in pods (named by the filesystem as on
        the local runtime: osd.0, mon.a, glusterd.node1, ...), so the sampler sees their CPU,
        memory and I/O."""
        found = list(self.procs.all())
        for node, cid in self.containers_by_node():
            for pid in container_pids(cid) or []:
                name = self.daemon_of_process(process_argv(pid), node)
                start = proc_start_time(pid)
                if name and start:
                    found.append(TrackedProcess(name=name, node=node, pid=pid, start_time=start, argv=[], log=""))
        return found

    def host_pid(self, node: str, pid: int) -> int | None:
        """A PID a daemon in a pod on `node` reports (glusterd's bricks), as this machine sees it."""
        from ..docker import host_pid_among
        return host_pid_among((host for where, cid in self.containers_by_node() if where == node
                               for host in container_pids(cid) or []), pid)

    def containers_by_node(self) -> list[tuple[str, str]]:
        """(node, container id) of every container (and pod sandbox) the nodes' containerd made."""
        out = []
        nodes = self.home / "nodes"
        for node in sorted(d.name for d in nodes.iterdir()) if nodes.is_dir() else []:
            tasks = self.node_paths(node).containerd_state / "io.containerd.runtime.v2.task" / "k8s.io"
            out += [(node, d.name) for d in tasks.iterdir() if re.fullmatch(r"[0-9a-f]{64}", d.name)] if tasks.is_dir() else []
        return out

    def container_ids(self) -> list[str]:
        return [cid for _, cid in self.containers_by_node()]

    @staticmethod
    def _stop_containers(containers: list[str], grace: float = 10.0) -> None:
        """What still runs in the nodes' containers once their kubelets and containerd are gone
        (a pod a user added whose PID 1 ignores SIGTERM, as `sleep infinity` does): SIGTERM, then
        SIGKILL after `grace`. Every container here belongs to the Kubernetes dfslab made for
        this cluster (its containerd dfslab's process), which `down` takes away whole."""
        pids = [pid for cid in containers for pid in container_pids(cid) or []]
        terminate(pids, {pid: proc_start_time(pid) for pid in pids}, timeout=grace)

    @staticmethod
    def _cgroups(container_id: str) -> list[Path]:
        """A container's cgroups: under each v1 controller (and a hybrid system's `unified`
        v2 tree), or the one v2 tree mounted at /sys/fs/cgroup itself (Debian 12's default)."""
        trees = [CGROUP_ROOT, *(c for c in CGROUP_ROOT.iterdir() if c.is_dir())]
        return [t / "k8s.io" / container_id for t in trees if (t / "k8s.io" / container_id).is_dir()]

    def _remove_cgroups(self, containers: list[str], timeout: float = 15.0) -> None:
        """runc leaves a killed container's cgroups behind: remove dfslab's own. A process killed a
        moment ago may still be in its cgroup (rmdir: busy): wait for it. What stays is recorded,
        so `leftovers` names it once the containerd state that listed it is gone, and the next
        `down` tries again."""
        pending = [cg for cid in containers for cg in self._cgroups(cid)]
        # only ever a container's cgroup (the state file may have been edited by hand)
        pending += [Path(cg) for cg in self.state.resources("cgroup")
                    if re.fullmatch(r"/sys/fs/cgroup(/[a-z_,]+)?/k8s\.io/[0-9a-f]{64}", cg) and Path(cg).is_dir()
                    and Path(cg) not in pending]
        def removed() -> bool:
            for cg in list(pending):
                try:
                    cg.rmdir()
                    pending.remove(cg)
                except FileNotFoundError:
                    pending.remove(cg)
                except OSError:  # still has a process
                    pass
            return not pending
        poll(removed, "the pods' cgroups to empty", timeout, 0.2)
        for cg in self.state.resources("cgroup"):
            if Path(cg) not in pending:
                self.state.remove_resource("cgroup", cg)
        for cg in pending:
            if str(cg) not in self.state.resources("cgroup"):
                self.state.add_resource("cgroup", str(cg))

    @staticmethod
    def _detach(loop: dict) -> None:
        """Detach a loop device only while it is still backed by dfslab's own file."""
        sys_file = Path("/sys/block") / Path(loop["device"]).name / "loop" / "backing_file"
        try:
            backing = sys_file.read_text().strip()
        except OSError:
            return
        if backing == loop["file"]:
            subprocess.run(["losetup", "-d", loop["device"]], capture_output=True)

    def leftovers(self) -> list[str]:
        found = super().leftovers()
        for loop in self.state.resources("loop"):
            found.append(f"loop device {loop['device']} ({loop['file']})")
        found += [f"cgroup {cg}" for cid in self.container_ids() for cg in self._cgroups(cid)]
        found += [f"cgroup {cg}" for cg in self.state.resources("cgroup") if Path(cg).is_dir()]
        found += [f"containerd state {d}" for d in self.state.resources("containerd_state") if Path(d).exists()]
        return found

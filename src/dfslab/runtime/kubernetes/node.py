"""One Kubernetes node of the local cluster: a containerd and a kubelet in the node's network
namespace and in a mount namespace of the node's own.

Why a mount namespace per node: on one machine every node would otherwise share one /dev,
one /var/log/pods and one Rook data directory. Rook's OSD prepare lists every block device it
can open and claims every BlueStore label of its cluster it finds, so node A would report
node B's OSDs as its own. In the node's namespace /dev is a small tmpfs holding the basic
character devices and that node's loop devices only (its "disks"), and the Rook data
directory and the kubelet's pod logs are the node's own directories. The namespace is held by
a `sleep` dfslab starts (and tracks); it and every mount in it go away with the node's
processes, so nothing of it is ever seen in the host's mount table.
"""

from __future__ import annotations

import json
import hashlib
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import yaml

from ..base import RuntimeError_
from ...polling import wait_until

CNI_BIN = "/usr/lib/cni"
# Character devices every node's /dev has (what a minimal host offers its containers).
BASIC_DEVICES = ("null", "zero", "full", "random", "urandom", "tty", "kmsg", "fuse")
READY_TIMEOUT = 60
# dfslab's own root for the nodes' containerd state (sockets, task bundles), one dir per node.
SOCKET_ROOT = Path("/run/dfslab-k8s")


@dataclass(frozen=True)
class NodePaths:
    root: Path  # state/kubernetes/nodes/<node>

    @property
    def containerd_root(self) -> Path:
        return self.root / "containerd"

    @property
    def containerd_state(self) -> Path:
        """Short, whatever the state directory's length: containerd refuses a socket path over
        104 characters (its .ttrpc socket lives here too)."""
        return SOCKET_ROOT / hashlib.sha256(str(self.root).encode()).hexdigest()[:16]

    @property
    def socket(self) -> Path:
        return self.containerd_state / "containerd.sock"

    @property
    def kubelet_root(self) -> Path:
        return self.root / "kubelet"

    @property
    def pod_logs(self) -> Path:
        return self.root / "pod-logs"

    @property
    def rook_data(self) -> Path:
        return self.root / "rook"

    @property
    def cni_conf(self) -> Path:
        return self.root / "cni"

    @property
    def ready(self) -> Path:
        return self.root / "mntns-ready"


def containerd_config(paths: NodePaths, sandbox_image: str) -> str:
    """containerd 1.6 (Debian's) config v2 for one node: its own root, state and socket; the
    CRI plugin with a local sandbox image, runc on cgroupfs, CNI in the node's own conf dir."""
    return f"""version = 2
root = "{paths.containerd_root}"
state = "{paths.containerd_state}"
[grpc]
  address = "{paths.socket}"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{sandbox_image}"
  # root here lacks CAP_SYS_RESOURCE: containers may not lower their OOM score
  restrict_oom_score_adj = true
  disable_apparmor = true
  # bridge pods' network namespaces under the node's state directory, not the host's /run/netns
  # (where a killed node would leave their mount points behind)
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{CNI_BIN}"
    conf_dir = "{paths.cni_conf}"
"""


def cni_config(pod_subnet: str) -> str:
    """A bridge network inside the node's namespace (dfslab's pods use the host network; the
    kubelet reports a node NotReady without any CNI config)."""
    return json.dumps({
        "cniVersion": "0.4.0", "name": "dfslab",
        "plugins": [{"type": "bridge", "bridge": "cni0", "isGateway": True, "ipMasq": False,
                     "ipam": {"type": "host-local", "ranges": [[{"subnet": pod_subnet}]],
                              "routes": [{"dst": "0.0.0.0/0"}]}},
                    {"type": "portmap", "capabilities": {"portMappings": True}}],
    }, indent=2)


def kubelet_config(paths: NodePaths) -> str:
    """KubeletConfiguration for a node that shares one kernel (and one cgroup tree) with its
    neighbours: cgroupfs without per-QoS cgroups or allocatable enforcement, no swap, eviction,
    iptables chains or local-storage accounting, each of which a kubelet 1.34 otherwise sets
    up or enforces machine-wide."""
    return yaml.safe_dump({
        "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
        "cgroupDriver": "cgroupfs", "failCgroupV1": False, "cgroupsPerQOS": False, "enforceNodeAllocatable": [],
        "oomScoreAdj": 0, "failSwapOn": False, "makeIPTablesUtilChains": False,
        "localStorageCapacityIsolation": False, "evictionHard": {}, "podLogsDir": str(paths.pod_logs),
        "containerRuntimeEndpoint": f"unix://{paths.socket}", "staticPodPath": "",
        "serializeImagePulls": False, "resolvConf": "/etc/resolv.conf", "readOnlyPort": 0, "port": 10250,
        "healthzPort": 0, "registerNode": True,
        # The API server reaches kubelets only inside dfslab's own namespaces (exec, logs, stats).
        "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
        "authorization": {"mode": "AlwaysAllow"},
    })


def mount_namespace_script(paths: NodePaths, rook_host_path: str, loops: list[str]) -> str:
    """What the node's namespace holder runs (inside `unshare --mount`): its own /dev with the
    basic devices and its loop devices, its own Rook data directory; then it sleeps."""
    dev = paths.root / "dev"
    lines = ["set -e", f"mkdir -p {dev}", f"mount -t tmpfs -o mode=755,size=1m dfslab-dev {dev}"]
    for name in [*BASIC_DEVICES, *(Path(loop).name for loop in loops)]:
        if name in BASIC_DEVICES and not Path(f"/dev/{name}").exists():
            continue
        lines += [f"touch {dev}/{name}", f"mount --bind /dev/{name} {dev}/{name}"]
    lines += [f"mkdir -p {dev}/pts {dev}/shm {dev}/mqueue", f"mount --bind /dev/pts {dev}/pts",
              f"mount -t tmpfs -o mode=1777 shm {dev}/shm",
              f"ln -s /proc/self/fd {dev}/fd", f"ln -s /proc/self/fd/0 {dev}/stdin",
              f"ln -s /proc/self/fd/1 {dev}/stdout", f"ln -s /proc/self/fd/2 {dev}/stderr",
              f"ln -s pts/ptmx {dev}/ptmx",
              f"mount --move {dev} /dev",
              f"mount --bind {paths.rook_data} {rook_host_path}",
              f"touch {paths.ready}", "exec sleep infinity"]
    return "\n".join(lines)


def wait_file(path: Path, what: str, alive, timeout: float = 20) -> None:
    def there() -> bool:
        if path.exists():
            return True
        if not alive():
            raise RuntimeError_(f"{what} did not come up (no {path}): it exited")
        return False
    wait_until(there, f"{what} to come up", timeout, 0.1, lambda _: RuntimeError_(f"{what} did not come up (no {path})"))


# What containerd 1.6 logs the moment its CRI service is initialized (pkg/cri/server/service.go
# Run(): it recovers every container's state first, and answers every CRI call, Version included,
# with "server is not initialized yet" until then).
CRI_INITIALIZED = b'msg="Start streaming server"'
CRI_TIMEOUT = 120


def start_containerd(spawn: Callable[[], Any], log: Path, socket: Path, what: str) -> Any:
    """Start a node's containerd (`spawn()` returns its tracked process) and return it once its
    CRI answers. A kubelet's first CRI call is a Version check and the kubelet exits when it
    fails; a containerd restarted over a dead node's containers is still recovering their state
    when its socket appears (the socket is served before the CRI is initialized)."""
    offset = log.stat().st_size if log.exists() else 0  # the log is appended to: only this start's lines
    proc = spawn()
    wait_file(socket, what, proc.alive)

    def initialized() -> bool:
        with open(log, "rb") as f:
            f.seek(offset)
            if CRI_INITIALIZED in f.read():
                return True
        if not proc.alive():
            raise RuntimeError_(f"{what} exited before its CRI was ready; its log ({log}) ends: {proc.log_tail()}")
        return False
    wait_until(initialized, f"{what}'s CRI (recovering its containers' state)", CRI_TIMEOUT, 0.1,
               lambda msg: RuntimeError_(f"{msg}; its log: {log}"))
    return proc


def nsenter_mount(holder_pid: int, argv: list[str]) -> list[str]:
    return ["nsenter", f"--mount=/proc/{holder_pid}/ns/mnt", "--", *argv]


def shell_quote(argv: list[str]) -> str:
    return shlex.join(argv)


def prepare_dirs(paths: NodePaths) -> None:
    for d in (paths.containerd_root, paths.containerd_state, paths.kubelet_root, paths.pod_logs,
              paths.rook_data, paths.cni_conf):
        d.mkdir(parents=True, exist_ok=True)
    os.chmod(paths.root, 0o755)

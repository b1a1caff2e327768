"""The local Kubernetes's control plane (in the client namespace) and the API client dfslab uses.

etcd listens on the namespace's loopback only; kube-apiserver authenticates with the static
token file (pki.py) and authorizes with Node + RBAC, as kubeadm sets it up; the controller
manager publishes the CA to every namespace (pods' kube-root-ca.crt) and the scheduler places
pods. dfslab's own calls go through the official `kubernetes` client, to the API server via a
relay into the namespace (netns_socket.py).
"""

from __future__ import annotations

import os

from ..base import CLIENT, RuntimeError_
from ..local import NETNS_DIR
from . import pki as kpki
from .binaries import API_PORT, binary
from .nodeinfo import node_ready
from .netns_socket import NamespaceRelay
from .rest import raw_call
from ...polling import wait_until

_RELAYS: dict[tuple[str, int, int], NamespaceRelay] = {}


def start(rt, progress) -> None:
    home, pki = rt.home, rt.pki
    etcd_dir = home / "etcd"
    etcd_dir.mkdir(parents=True, exist_ok=True)
    etcd_dir.chmod(0o700)
    rt.spawn("etcd", CLIENT, ["etcd", "--name", "dfslab", "--data-dir", str(etcd_dir),
                              "--listen-client-urls", "http://127.0.0.1:2379", "--advertise-client-urls", "http://127.0.0.1:2379",
                              "--listen-peer-urls", "http://127.0.0.1:2380", "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
                              "--initial-cluster", "dfslab=http://127.0.0.1:2380", "--log-level", "warn"],
             env={"ETCD_UNSUPPORTED_ARCH": ""})
    rt.spawn("kube-apiserver", CLIENT, [
        binary("kube-apiserver"), "--etcd-servers", "http://127.0.0.1:2379",
        "--bind-address", "0.0.0.0", "--secure-port", str(API_PORT), "--advertise-address", rt.api_address,
        "--tls-cert-file", str(pki.server_cert), "--tls-private-key-file", str(pki.server_key),
        "--token-auth-file", str(pki.tokens), "--authorization-mode", "Node,RBAC",
        "--service-account-issuer", "https://kubernetes.default.svc", "--service-account-key-file", str(pki.sa_pub),
        "--service-account-signing-key-file", str(pki.sa_key), "--service-cluster-ip-range", kpki.SERVICE_RANGE,
        "--kubelet-preferred-address-types", "InternalIP", "--enable-admission-plugins", "NodeRestriction",
        "--allow-privileged=true", "--profiling=false", "--v", "1"])
    wait_api(rt, progress)
    for component, user in (("kube-controller-manager", "system:kube-controller-manager"),
                            ("kube-scheduler", "system:kube-scheduler")):
        conf = home / f"{component}.kubeconfig"
        conf.write_text(kpki.kubeconfig(pki, f"https://{rt.api_address}:{API_PORT}", user))
        conf.chmod(0o600)
        extra = (["--root-ca-file", str(pki.ca), "--service-account-private-key-file", str(pki.sa_key),
                  "--controllers", "*,-bootstrapsigner,-tokencleaner", "--use-service-account-credentials=true"]
                 if component == "kube-controller-manager" else [])
        rt.spawn(component, CLIENT, [binary(component), "--kubeconfig", str(conf), "--authentication-kubeconfig", str(conf),
                                     "--authorization-kubeconfig", str(conf), "--leader-elect=false",
                                     "--bind-address", "127.0.0.1", *extra, "--v", "1"])


def api_client(rt):
    """A `kubernetes.client.ApiClient` as cluster-admin of the local Kubernetes."""
    from kubernetes import client
    netns = str(NETNS_DIR / rt.ns(CLIENT))
    # Keyed by the namespace itself, not its name: a relay's dialer thread stays inside the
    # namespace it entered, and a cluster made again under the same name (the next runtime of
    # `runtimes:`) has a new one. Found when the second kubernetes run's API never answered.
    st = os.stat(netns)
    key = (str(rt.state.dir), st.st_dev, st.st_ino)
    if key not in _RELAYS:
        _RELAYS[key] = NamespaceRelay(netns, rt.api_address, API_PORT)
    conf = client.Configuration()
    conf.host = f"https://127.0.0.1:{_RELAYS[key].port}"
    conf.ssl_ca_cert = str(rt.pki.ca)
    conf.api_key = {"authorization": "Bearer " + rt.pki.token("admin")}
    return client.ApiClient(conf)


def wait_api(rt, progress, timeout: float = 90) -> None:
    api = api_client(rt)

    last = {"error": ""}

    def ready() -> bool:
        proc = rt.procs.get("kube-apiserver")
        if proc is not None and not proc.alive():
            raise RuntimeError_(f"kube-apiserver exited; see {proc.log}")
        try:
            return raw_call(api, "GET", "/readyz")[0] == 200
        except Exception as exc:  # connection refused while it starts: not yet, the last one named
            last["error"] = str(exc)[:200]
            return False
    wait_until(ready, "kube-apiserver's /readyz", timeout, 0.5, lambda _: RuntimeError_(
        f"kube-apiserver not ready within {timeout:.0f} s ({last['error']}); see {rt.state.logs_dir / 'kube-apiserver.out'}"))


def wait_nodes_ready(rt, nodes: list[str], progress, timeout: float = 120) -> None:
    from kubernetes import client
    core = client.CoreV1Api(api_client(rt))
    ready: set[str] = set()

    def all_ready() -> bool:
        for proc in rt.procs.all():
            if proc.name.startswith(("kubelet-", "containerd-", "kube-")) and not proc.alive():
                raise RuntimeError_(f"{proc.name} exited; see {proc.log}")
        ready.clear()
        ready.update(n.metadata.name for n in core.list_node().items if node_ready(n))
        progress("waiting for Kubernetes nodes", f"{len(ready)}/{len(nodes)} Ready")
        return ready >= set(nodes)
    wait_until(all_ready, "Kubernetes nodes Ready", timeout, 1.0,
               lambda _: RuntimeError_(f"Kubernetes nodes not Ready within {timeout:.0f} s: {sorted(set(nodes) - ready)}; "
                                       f"see {rt.state.logs_dir}/kubelet-*.out"))

"""Runtime kubernetes on a cluster you run (`kubernetes.kubeconfig`): dfslab starts nothing here.

Its nodes are your Kubernetes nodes, named in the spec (`nodes` for Ceph's daemons and their
`kubernetes.devices`, `kubernetes.clients` for the client Jobs). dfslab creates a namespace of
its own and records every object it makes (state resource `k8s_object`); `down` deletes those
and nothing else. Nothing on this machine reaches Ceph directly: control commands (the admin
helper, `ceph ...`) run in a toolbox pod through the API's exec (podexec.py), the field's tools
run as Jobs whose output files come back through the pod's log (job.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

from ...polling import poll, wait_until
from ...registry import rooted_release
from ...spec import ClusterSpec
from ...state import ClusterState, cluster_holding
from ..base import CLIENT, Reader, Runtime, RuntimeError_
from . import agent, rest
from .objects import apply_all, daemon_pods, internal_ip, namespace_object, node_ready
from .images import IMAGE_MODULES, image_module
from .job import SHIPPED_MODULES, is_admin, ship, shipped_module

TOOLBOX = "dfslab-toolbox"
IMAGE_KEY = "rook"  # dfslab's storage image in the state's k8s_images (images.ensure's key)


def client_number(node: str) -> int | None:
    """1 for client, N for clientN; None for a server node."""
    if node == CLIENT:
        return 1
    return int(node[len(CLIENT):]) if node.startswith(CLIENT) and node[len(CLIENT):].isdigit() else None


def toolbox_name(client: str) -> str:
    """The toolbox Deployment on a client node: dfslab-toolbox on the first, dfslab-toolbox-client2 ..."""
    return TOOLBOX if client == CLIENT else f"{TOOLBOX}-{client}"


def toolbox_pod(api, namespace: str, timeout: float = 120, name: str | None = None) -> str:
    """The Running pod of the toolbox Deployment `name` (the first client node's by default)."""
    name = name or TOOLBOX

    def running() -> str | None:
        pods = rest.pods(api, namespace, f"app={name}")
        names = [p.metadata.name for p in pods if p.status.phase == "Running" and not p.metadata.deletion_timestamp]
        return names[0] if names else None
    return wait_until(running, f"a Running {name} pod in namespace {namespace}", timeout, 1.0, RuntimeError_)


def api_for(kubeconfig: str, context: str | None):
    from kubernetes import config
    return config.new_client_from_config(config_file=kubeconfig, context=context)


def image_pushed(registry: str, local_image: str) -> str:
    """`registry/rook:<tag>` for dfslab's image `dfslab/rook:<tag>`."""
    return f"{registry.rstrip('/')}/{local_image.split('/', 1)[-1]}"


def release_stuck_content(api, namespace: str, cluster: str) -> list[str]:
    """In a namespace of dfslab's own (annotated with `cluster`) that stays Terminating, the
    finalizers of the ConfigMaps and Secrets left in it removed: Rook's operator, which dfslab
    installed there, puts `ceph.rook.io/disaster-protection` on its MON endpoints and keys and
    removes it while the CephCluster is deleted; deleted first (a deletion that outlasted dfslab's
    wait, on a loaded machine), it never does, and the namespace never goes. Everything in that
    namespace is dfslab's or its operator's; a namespace not annotated as `cluster`'s is left."""
    from kubernetes import client
    core = client.CoreV1Api(api)
    ns = core.read_namespace(namespace)
    if (ns.metadata.annotations or {}).get("dfslab.io/cluster") != cluster or not ns.metadata.deletion_timestamp:
        return []
    released = []
    for kind, listed, patch in (("ConfigMap", core.list_namespaced_config_map, core.patch_namespaced_config_map),
                                ("Secret", core.list_namespaced_secret, core.patch_namespaced_secret)):
        for obj in listed(namespace).items:
            if obj.metadata.finalizers:
                patch(obj.metadata.name, namespace, {"metadata": {"finalizers": None}})
                released.append(f"{kind} {obj.metadata.name}")
    return released


class ExistingKubernetesRuntime(Runtime):
    kind = "kubernetes-existing"
    where = "a Kubernetes you run"
    network_per_node = True
    disk_per_node = True
    engine_deploys = True
    client_kinds = ("job",)
    daemons_in_pods = True
    owns_machines = False
    pod_networks = True  # through dfslab's fault agent, with the owner's consent (agent.py)
    release_images = True  # a release's image, pushed to your registry as the default one is
    one_host = False
    deploy_seconds = 80.0
    debian_groups = ("docker",)  # dfslab's image is built here, then pushed to your registry
    mounts_here = False  # the client Jobs' pods mount the filesystem on your nodes
    # Each client node's toolbox pod shares its network (host network): its /proc/net/dev is that
    # node's, which the client Jobs there use too. Other traffic of the node counts as well: a
    # node that runs only dfslab's clients gives the client's bytes.
    client_wire_counted = True
    capability_kind = "kubernetes-yours"
    sample = {"runtime": "kubernetes", "nodes": [{"name": f"worker{i}"} for i in (1, 2, 3)],
              "kubernetes": {"kubeconfig": "~/.kube/config", "image_registry": "registry.example.org:5000/storage",
                             "devices": {f"worker{i}": ["/dev/sdb"] for i in (1, 2, 3)}, "clients": ["worker4"],
                             "allow_faults": ["pod", "out", "fill", "kill", "stop", "node", "partition", "degrade"]}}

    @classmethod
    def check_spec(cls, spec: ClusterSpec) -> None:
        spec.kubernetes.check_nodes(spec)

    @classmethod
    def runs_module(cls, module: str) -> bool:
        # Its clients are pods on your nodes: a self-contained module is shipped into them as its
        # source (job.py); dfslab's image holds the modules that need only its Python (images.py).
        return module in SHIPPED_MODULES or module in IMAGE_MODULES

    @classmethod
    def client_refusal(cls, asked: str) -> str:
        return "this machine has no route to its storage: its tools run as Jobs"

    @property
    def section(self) -> dict:
        return self.state.read()["spec"]["kubernetes"]

    @property
    def namespace(self) -> str:
        return self.section["namespace"]

    @property
    def home(self) -> Path:
        path = self.state.dir / "kubernetes"
        path.mkdir(exist_ok=True)
        return path

    def api(self):
        try:
            return api_for(self.section["kubeconfig"], self.section.get("context"))
        except Exception as exc:  # the file is gone or no longer valid
            raise RuntimeError_(f"cannot use kubeconfig {self.section['kubeconfig']} of cluster {self.state.name}: "
                                f"{str(exc).splitlines()[0][:200]}; dfslab reaches your Kubernetes only through it "
                                f"(what it made stays recorded in {self.state.dir})") from None

    def kube_node(self, node: str) -> str:
        """The Kubernetes node a spec node runs on: servers by name, client, client2... in order."""
        number = client_number(node)
        return node if number is None else (self.section.get("clients") or [])[number - 1]

    def resource_sampler(self):
        """Your nodes' processes are not this machine's: their kubelets measure them (stats.py)."""
        from .stats import KubeletStats
        nodes = [(node, self.kube_node(node)) for node in self.state.read().get("addresses", {})]
        return KubeletStats(self.api, nodes, self.namespace, self.daemon_of_pod).sample

    def disk_counters(self, clients: list[str]):
        """Your nodes' disks, read from inside each of the filesystem's daemon pods on a server
        node (stats.READ_IO through the API's exec: /proc/PID/io of its main container's
        processes, what this machine reads of its own daemons). A pod whose processes' counters
        its shell may not read (an unprivileged pod whose daemon runs as another user: Rook's
        MONs and MGRs) is not counted; Rook's OSDs are privileged. A pod replaced meanwhile
        counts from its own start (keyed by its uid), as a restarted process does here."""
        from kubernetes import client
        from .stats import io_totals, READ_IO
        servers = {self.kube_node(node) for node in self.state.read().get("addresses", {}) if node not in clients}
        made: list = []

        def read() -> dict[str, tuple[int, int]]:
            if not made:
                made.append(client.CoreV1Api(self.api()))
            core, out = made[0], {}
            for name, pod in daemon_pods(core, self.namespace, self.daemon_of_pod):
                if pod.spec.node_name not in servers or pod.status.phase != "Running":
                    continue
                try:
                    rc, text, _ = agent.exec_output(core, self.namespace, pod.metadata.name, READ_IO, timeout=30,
                                                    container=pod.spec.containers[0].name)
                except Exception:  # a pod going away under a fault: not counted, as a process that died
                    continue
                if rc == 0 and (io := io_totals(text)) is not None:
                    out[f"{name}@{pod.metadata.uid}"] = io
            return out
        return read

    # -- lifecycle --------------------------------------------------------------
    def preflight(self, spec: ClusterSpec) -> None:
        from kubernetes import client
        k = spec.kubernetes
        if not Path(k.kubeconfig).is_file():
            raise RuntimeError_(f"kubernetes.kubeconfig: no file {k.kubeconfig}; give the path of your cluster's kubeconfig")
        try:
            api = api_for(k.kubeconfig, k.context)
            client.VersionApi(api).get_code()
            nodes = {n.metadata.name: n for n in client.CoreV1Api(api).list_node().items}
        except Exception as exc:  # a bad file, context, address or credential
            raise RuntimeError_(f"kubernetes.kubeconfig: cannot reach the API server of {k.kubeconfig}"
                                f"{f' (context {k.context})' if k.context else ''}: {str(exc).splitlines()[0][:300]}") from None
        wanted = [*spec.node_names(), *k.clients]
        missing = [n for n in wanted if n not in nodes]
        if missing:
            raise RuntimeError_(f"nodes: {missing} are not nodes of the Kubernetes cluster (its nodes: "
                                f"{', '.join(sorted(nodes))}); name them in nodes and kubernetes.clients")
        not_ready = [n for n in wanted if not node_ready(nodes[n])]
        if not_ready:
            raise RuntimeError_(f"nodes: {not_ready} are not Ready; dfslab places Ceph and its Jobs only on Ready nodes")
        self._check_namespace_free(api, k.namespace)

    @staticmethod
    def _check_namespace_free(api, namespace: str) -> None:
        from kubernetes import client
        from kubernetes.client.rest import ApiException
        try:
            ns = client.CoreV1Api(api).read_namespace(namespace)
        except ApiException as exc:
            if exc.status == 404:
                return
            raise
        whose = (ns.metadata.annotations or {}).get("dfslab.io/cluster")
        raise RuntimeError_(f"kubernetes.namespace: {namespace!r} already exists"
                            f"{f' (dfslab cluster {whose}: `dfslab down {whose}`)' if whose else ' and is not dfslab’s'}; "
                            "dfslab creates only in a namespace of its own: name a new one")

    def prepare(self, spec: ClusterSpec, progress) -> None:
        k = spec.kubernetes
        if k.image:
            self.state.update(k8s_images={IMAGE_KEY: k.image})
            return
        from .. import dockerd, roots
        from . import images
        release = rooted_release(spec)
        root = roots.ensure(release, progress) if release is not None else None  # the release's image is made of it
        local = images.ensure(progress, release, root)[IMAGE_KEY]
        pushed = image_pushed(k.image_registry, local)
        progress("pushing image", f"{pushed} (kubernetes.image_registry)")
        dockerd.docker("tag", local, pushed, timeout=60)
        dockerd.docker("push", pushed, timeout=1800)
        self.state.update(k8s_images={IMAGE_KEY: pushed})

    def create(self, spec: ClusterSpec) -> dict[str, str]:
        from kubernetes import client
        api = self.api()
        self.record({"apiVersion": "v1", "kind": "Namespace", "name": self.namespace})
        client.CoreV1Api(api).create_namespace(namespace_object(self.namespace, self.state.name))
        nodes = {n.metadata.name: n for n in client.CoreV1Api(api).list_node().items}
        if agent.wanted(spec.kubernetes.allow_faults):  # the owner's consent to faults only the agent injects
            ds = agent.daemonset(self.namespace, self.state.read()["k8s_images"][IMAGE_KEY],
                                 [self.kube_node(n) for n in spec.node_names()])
            self.record(ds)
            apply_all(api, [ds])
        return {node: internal_ip(nodes[self.kube_node(node)]) for node in [*spec.node_names(), *spec.client_names()]}

    def exec_in_pod(self, pod: str, argv: list[str], timeout: float, container: str | None = None):
        """`argv` in a pod of dfslab's namespace through the API's exec, as a finished process."""
        import subprocess
        from kubernetes import client
        rc, out, err = agent.exec_output(client.CoreV1Api(self.api()), self.namespace, pod, argv, timeout=timeout,
                                         container=container)
        return subprocess.CompletedProcess(argv, rc, out, err)

    # Through dfslab's fault agent on the pods' node (agent.py): this machine has no shell there.
    def signal_container(self, pod, container_id: str, sig: int) -> int:
        return agent.signal_container(self._agent_core(), self.namespace, pod, container_id, sig)

    def cut_pod_networks(self, node: str, pods: list) -> dict:
        return agent.cut(self._agent_core(), self.namespace, node, pods)

    def cap_pod_networks(self, node: str, pods: list, rate_bps: int) -> dict:
        return agent.cap(self._agent_core(), self.namespace, node, pods, rate_bps)

    def heal_pod_networks(self, node: str, kind: str) -> None:
        agent.heal(self._agent_core(), self.namespace, node, kind)

    def _agent_core(self):
        from kubernetes import client
        if not agent.wanted(self.section.get("allow_faults") or []):
            raise RuntimeError_(f"a daemon's processes and network on {self.where} are reached through dfslab's fault "
                                f"agent, made only where kubernetes.allow_faults lists one of {', '.join(agent.AGENT_KINDS)}")
        return client.CoreV1Api(self.api())

    def _heal_agent_nodes(self) -> list[str]:
        """Every cut and cap of dfslab's undone on every node its agent runs on, before the agent
        goes with the namespace (a fault left by a dfslab that died, or not restored); what could
        not be, named."""
        from kubernetes import client
        core = client.CoreV1Api(self.api())
        pods = core.list_namespaced_pod(self.namespace, label_selector=f"app={agent.AGENT}").items
        failed = []
        # an agent that never started (its image not pulled) put nothing on its node
        for node in sorted({p.spec.node_name for p in pods if p.spec.node_name and agent.ever_started(p)}):
            for kind in agent.NETWORK_FAULTS:
                try:
                    agent.heal(core, self.namespace, node, kind)
                except RuntimeError_ as exc:
                    failed.append(f"{kind} rules of dfslab's on node {node} ({exc})")
        return failed

    def record(self, obj: dict) -> None:
        """Remember an object before it is made (a whole manifest, or {apiVersion, kind, name,
        namespace?}): `down` deletes exactly the recorded ones."""
        meta = obj.get("metadata", obj)
        self.state.add_resource("k8s_object", {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": meta["name"]}
                                | ({"namespace": meta["namespace"]} if meta.get("namespace") else {}))

    def destroy(self) -> list[str]:
        """Delete what dfslab recorded, newest first; the namespace (and everything in it) last."""
        from kubernetes.client.rest import ApiException
        from .objects import KindNotServed, delete_object, patch_merge
        objs = self.state.resources("k8s_object")
        if not objs:
            return []
        if self.kubernetes_gone():
            for obj in objs:
                self.state.remove_resource("k8s_object", obj)
            return [f"records of {len(objs)} object(s) on the Kubernetes of cluster {self._host_cluster()}, "
                    "which is down and took them with it"]
        if agent.wanted(self.section.get("allow_faults") or []) and (failed := self._heal_agent_nodes()):
            # The agent goes with the namespace: rules left now would stay on your nodes with no one to undo them.
            raise RuntimeError_(f"kept everything of dfslab's, agent included: could not undo {'; '.join(failed)}; "
                                f"`dfslab down {self.state.name}` again, or by hand on that node: iptables -D the "
                                f"jumps to chains DFSLAB-CUT-*/DFSLAB-CAP-* (tables filter, mangle), delete the chains, "
                                "and `tc qdisc del dev DEV root` where its root is dfslab's htb")
        api = self.api()
        removed = []
        for obj in reversed(objs):
            try:
                delete_object(api, obj)
                removed.append(f"{obj['kind']} {obj['name']}")
            except KindNotServed:  # its CRD went first
                continue
            except ApiException as exc:
                if exc.status != 404:
                    raise RuntimeError_(f"deleting {obj['kind']} {obj['name']} failed: {exc.reason}") from None
        poll(lambda: not self._existing(api, objs), "dfslab's objects to be deleted", 180, 2.0)
        for obj in self._existing(api, objs):
            if obj["kind"] == "Namespace":
                release_stuck_content(api, obj["name"], self.state.name)
            # Only its controller (Rook's operator, already gone or stuck) would clear these; the
            # object is dfslab's own, so its finalizers go and the namespace can follow.
            try:
                patch_merge(api, obj, {"metadata": {"finalizers": None}})
            except (ApiException, KindNotServed):
                continue
        poll(lambda: not self._existing(api, objs), "dfslab's objects to go without their finalizers", 60, 2.0)
        left = self._existing(api, objs)
        for obj in objs:
            if obj not in left:
                self.state.remove_resource("k8s_object", obj)
        return removed

    def _host_cluster(self) -> str | None:
        return cluster_holding(self.section["kubeconfig"])

    def kubernetes_gone(self) -> bool:
        """The local Kubernetes of another dfslab cluster, since torn down: every object dfslab
        made on it went with its etcd, so there is nothing left to delete (or to reach)."""
        host = self._host_cluster()
        return host is not None and host != self.state.name and not ClusterState(host).exists()

    def leftovers(self) -> list[str]:
        objs = self.state.resources("k8s_object")
        return [f"{o['kind']} {o['name']}" for o in self._existing(self.api(), objs)] if objs else []

    def _existing(self, api, objs: list[dict]) -> list[dict]:
        from .objects import exists
        return [o for o in objs if exists(api, o)]

    # -- running things ---------------------------------------------------------
    @classmethod
    def counts_wire(cls, clients: list[str], often: bool = False) -> bool:
        # A read is an exec into each client's toolbox through the API server: at a step's start
        # and end, not at the watch's looks every 2 s.
        return not often

    def wire_reader(self, clients: list[str], often: bool = False) -> Reader | None:
        """The ledger's reads through the API's exec from this process, into each client node's
        toolbox pod (`command` would start a Python process per read, which imports the Kubernetes
        client: 2.5 s each on an idle machine, 24 of them a 5-minute run's 73 s, 2026-11-30)."""
        if not self.counts_wire(clients, often):
            return None
        from kubernetes import client
        api = self.api()
        core, pods = client.CoreV1Api(api), {}

        def read(node: str, argv: list[str], timeout: float) -> tuple[int, str, str]:
            try:
                if node not in pods:
                    pods[node] = toolbox_pod(api, self.namespace, timeout=timeout, name=toolbox_name(node))
                return agent.exec_output(core, self.namespace, pods[node], argv, timeout=timeout)
            except Exception:
                pods.pop(node, None)  # a toolbox pod replaced meanwhile is looked up again at the next read
                raise
        return read

    def command(self, node: str, argv: list[str]) -> list[str]:
        """On a client node: in its toolbox pod, through the API's exec (dfslab's self-contained
        modules go as source). Nothing else of dfslab's runs on your nodes."""
        if node not in self.client_nodes():
            raise RuntimeError_(f"on a Kubernetes you run, dfslab runs commands on {node} only as Jobs "
                                f"(dfslab exec NAME --node {node} -- CMD)")
        if argv and argv[0] == sys.executable:
            if image_module(argv):
                argv = ["python3", *argv[1:]]  # the image's own Python, dfslab's modules on its path
            elif not shipped_module(argv):
                raise RuntimeError_(f"{' '.join(argv[1:3])} needs dfslab, which your nodes do not have; it runs only "
                                    "on runtimes whose nodes are on this machine")
            else:
                argv = ship(argv)
        return [sys.executable, "-m", "dfslab.runtime.kubernetes.podexec", self.state.name,
                *([] if node == CLIENT else ["--client", node]), "--", *argv]

    def client_nodes(self) -> list[str]:
        """The spec's client nodes (client, client2, ... as ClusterSpec.client_names), each with a toolbox
        pod of its own: the spec's `clients` of them (kubernetes.clients may name more nodes)."""
        return [CLIENT] + [f"{CLIENT}{i}" for i in range(2, self.state.read()["spec"].get("clients", 1) + 1)]

    def job_command(self, node: str, argv: list[str]) -> list[str]:
        # The integrity checker goes to the toolbox pod on the client node: its streams pass through
        # the exec both ways (a Job's pod has no stdin, and the writer stops at stdin's end).
        if (is_admin(argv, self.admin_tools) or image_module(argv)) and node in self.client_nodes():
            return self.command(node, argv)
        if argv and argv[0] == sys.executable and not shipped_module(argv):
            raise RuntimeError_(f"{' '.join(argv[:3])} is dfslab's own tool; on a Kubernetes you run it has no "
                                "node to run on (integrity checks and faults need runtime local, docker or "
                                "kubernetes.local)")
        return [sys.executable, "-m", "dfslab.runtime.kubernetes.job", self.state.name, node, "--", *argv]

"""The cluster spec: typed, validated YAML.

Everything a user can get wrong is caught here, before a namespace or a daemon exists,
and reported with the YAML path of the bad field (``ceph.replica_size``,
``nodes[1].bandwidth``) and what would be valid.
"""

from __future__ import annotations

import difflib
import functools
import ipaddress
import re
import typing
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field, ValidationError, create_model, field_validator, model_validator

from .registry import (FILESYSTEMS, default_runtime, engines_of, mixed_releases, rooted_release, runtime_class,
                       runtime_of, section_class, spec_runtimes)
from .fields import BitsPerSecond, Seconds, Strict
from .safety import check_name

RESERVED_NODE_NAMES = {"client", "hub"} | {f"client{i}" for i in range(2, 9)}


class SpecError(ValueError):
    """A spec that cannot be used. `problems` is a list of (yaml path, message); `partial`, what
    could be read despite them (an experiment without its broken entries), so that a later check
    can add what it finds in the rest: every mistake in one answer."""

    def __init__(self, problems: list[tuple[str, str]], source: str = "spec", partial: Any = None):
        self.problems = problems
        self.source = source
        self.partial = partial
        if len(problems) == 1 and not problems[0][0]:  # about the file as a whole (missing, not a mapping)
            super().__init__(f"{source}: {problems[0][1]}")
            return
        lines = [f"{source}: {len(problems)} problem(s):"]
        lines += [f"  {path or '(the file)'}: {msg}" for path, msg in problems]
        super().__init__("\n".join(lines))


class LinkShape(Strict):
    """Shaping of one node's link to the bridge (both directions)."""

    bandwidth: BitsPerSecond | None = Field(None, description="rate cap, e.g. 1gbit (tc tbf)")
    latency: Seconds | None = Field(None, description="added one-way delay, e.g. 0.5ms (needs tc netem)")


class Network(LinkShape):
    subnet: str = Field("10.77.0.0/24", description="addresses inside dfslab's own namespaces")

    @field_validator("subnet")
    @classmethod
    def _subnet(cls, value: str) -> str:
        try:
            net = ipaddress.IPv4Network(value, strict=True)
        except ValueError as exc:
            raise ValueError(f"not an IPv4 network like 10.77.0.0/24: {exc}") from None
        if net.prefixlen > 24:
            raise ValueError("use a /24 or larger so every node and the client get an address")
        return value


class Node(LinkShape):
    name: str

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        check_name(value, "node")
        if value in RESERVED_NODE_NAMES:
            raise ValueError(f"{value!r} is reserved by dfslab; pick another node name")
        return value


class LocalKubernetes(Strict):
    """A Kubernetes dfslab starts on this machine: the spec's nodes and clients are its nodes."""

    rook: bool = Field(True, description="false: start only the Kubernetes (its nodes, their loop disks) and write "
                                         "an admin kubeconfig, for a `kubernetes.kubeconfig` spec or your own tools")


DEVICE = re.compile(r"/dev/[A-Za-z0-9._/-]+")
K8S_NAME = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


class KubernetesSection(Strict):
    """Where runtime kubernetes runs: `local: {}` (the default) starts one here; `kubeconfig:`
    is a Kubernetes you run, where dfslab creates only inside `namespace`."""

    local: LocalKubernetes | None = Field(None, description="start a real Kubernetes here (etcd, API server, "
                                                           "a containerd + kubelet per node namespace)")
    kubeconfig: str | None = Field(None, description="a cluster you run: its kubeconfig file (e.g. ~/.kube/config)")
    context: str | None = Field(None, description="the kubeconfig context (default: its current-context)")
    namespace: str = Field("rook-ceph", description="the Kubernetes namespace dfslab creates its objects in")
    image: str | None = Field(None, description="kubeconfig: dfslab's Ceph+Rook image as your nodes pull it "
                                                "(already pushed); or give image_registry")
    image_registry: str | None = Field(None, description="kubeconfig: a registry dfslab pushes its image to "
                                                         "(e.g. registry.example.org:5000/storage)")
    data_dir_host_path: str = Field("/var/lib/rook", description="kubeconfig: Rook's dataDirHostPath on your nodes")
    # The kinds the owner permits; none by default: the cluster is the owner's.
    allow_faults: list[Literal["pod", "out", "fill", "kill", "stop", "node", "partition", "degrade"]] = Field(
        default_factory=list, description="kubeconfig: faults the owner permits: pod (a daemon's pod deleted, its "
                                          "controller makes it again); out and fill (the filesystem's own, through "
                                          "its admin commands in the toolbox pod); through dfslab's fault agent (a "
                                          "privileged DaemonSet with hostPID and hostNetwork in dfslab's namespace "
                                          "on the spec's nodes, made only when one of these is listed): kill and "
                                          "stop (a daemon's processes signalled; its kubelet restarts the "
                                          "container), node (every daemon of dfslab's on a node killed), partition "
                                          "and degrade (the network of dfslab's daemons on a node cut both ways, or "
                                          "what they send capped, by netfilter rules matching their cgroups only)")
    devices: dict[str, list[str]] = Field(default_factory=dict, description="kubeconfig: the OSD devices of each "
                                          "node in `nodes`, e.g. {node1: [/dev/sdb]}; Rook wipes them on down")
    clients: list[str] = Field(default_factory=list, description="kubeconfig: the Kubernetes nodes the client Jobs "
                                                                 "run on (client, client2, ...)")

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, value: str) -> str:
        if not K8S_NAME.fullmatch(value):
            raise ValueError(f"{value!r} is not a Kubernetes namespace name (lowercase letters, digits, '-')")
        return value

    @field_validator("kubeconfig")
    @classmethod
    def _kubeconfig(cls, value: str | None) -> str | None:
        if value is None:
            return None
        return str(Path(value).expanduser().absolute())  # whether it is there: runtime preflight

    @field_validator("devices")
    @classmethod
    def _devices(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for node, devs in value.items():
            bad = [d for d in devs if not DEVICE.fullmatch(d) or ".." in d]
            if bad:
                raise ValueError(f"{node}: {bad} are not device paths like /dev/sdb")
        return value

    @model_validator(mode="after")
    def _one_cluster(self) -> "KubernetesSection":
        if self.kubeconfig and self.local is not None:
            raise ValueError("kubernetes.local: give either local (a Kubernetes dfslab starts here) or kubeconfig "
                             "(one you run), not both")
        if not self.kubeconfig:
            if self.local is None:
                self.local = LocalKubernetes()
            for name in ("image", "image_registry", "context"):
                if getattr(self, name):
                    raise ValueError(f"kubernetes.{name}: only for a cluster you run (kubernetes.kubeconfig); "
                                     "the local Kubernetes imports dfslab's image itself")
            if self.devices or self.clients:
                raise ValueError("kubernetes.devices: the local Kubernetes makes its own loop disks; devices and "
                                 "clients are for kubernetes.kubeconfig")
            if self.allow_faults:
                raise ValueError("kubernetes.allow_faults: only for a cluster you run (kubernetes.kubeconfig); on the "
                                 "local Kubernetes every fault kind is dfslab's to inject")
        elif not (self.image or self.image_registry):
            raise ValueError("kubernetes.image: your nodes must pull dfslab's image: set image_registry (dfslab "
                             "pushes it there) or image (already pushed)")
        elif self.image and self.image_registry:
            raise ValueError("kubernetes.image: give image or image_registry, not both")
        return self

    @property
    def user_cluster(self) -> bool:
        return bool(self.kubeconfig)

    def check_nodes(self, cluster: "ClusterBase") -> None:
        """A cluster you run: devices only of the spec's nodes, every node and client a Kubernetes
        node's name (how many devices each needs is the filesystem section's check)."""
        names = cluster.node_names()
        unknown = sorted(set(self.devices) - set(names))
        if unknown:
            raise ValueError(f"kubernetes.devices: {unknown} are not in nodes ({names}); list the devices of "
                             "the spec's nodes")
        for node in names:
            if not K8S_NAME.fullmatch(node):
                raise ValueError(f"nodes: {node!r} must be the Kubernetes node's name (lowercase letters, digits, '-')")
        if len(self.clients) < cluster.clients:
            raise ValueError(f"kubernetes.clients: name {cluster.clients} Kubernetes node(s) for the client Jobs "
                             f"(clients: {cluster.clients}); {len(self.clients)} given")
        bad = [c for c in self.clients if not K8S_NAME.fullmatch(c)]
        if bad:
            raise ValueError(f"kubernetes.clients: {bad} are not Kubernetes node names")


class ClusterBase(Strict):
    """What every cluster has; `ClusterSpec` adds one section per filesystem (below)."""

    name: str = Field(description="cluster name; namespaces and the state directory are named after it")
    filesystem: str = "ceph"
    runtime: str = "local"  # one of the registered runtimes (cluster_spec_model makes it a Literal of them)
    kubernetes: KubernetesSection = Field(default_factory=lambda: KubernetesSection(local=LocalKubernetes()))
    network: Network = Field(default_factory=Network)
    nodes: list[Node] = Field(default_factory=list, max_length=16,
                              description="the servers dfslab starts (none for a cluster you already run)")
    clients: int = Field(1, ge=1, le=8, description="client nodes (client, client2, ...) for workloads on several at once (parallel, fio clients)")

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_name(value, "cluster")

    @model_validator(mode="before")
    @classmethod
    def _filesystem_defaults(cls, data: Any) -> Any:
        # A filesystem that deploys nothing (external) runs on the host runtime unless told otherwise.
        if isinstance(data, dict) and data.get("filesystem") in FILESYSTEMS and "runtime" not in data:
            runtime = default_runtime(data["filesystem"])
            if runtime:
                data = {**data, "runtime": runtime}
        return data

    @field_validator("nodes", mode="before")
    @classmethod
    def _nodes_shorthand(cls, value: Any) -> Any:
        # `nodes: 3` is the common case; it means node1..node3 with the network's shaping.
        if isinstance(value, int) and not isinstance(value, bool):
            if value < 1:
                raise ValueError("need at least one node")
            return [{"name": f"node{i}"} for i in range(1, value + 1)]
        return value

    @model_validator(mode="after")
    def _cross_checks(self) -> "ClusterSpec":
        runtime = runtime_of(self)
        deploys = runtime.starts_nodes
        fs_default = default_runtime(self.filesystem)
        starts_nothing = fs_default is not None and not runtime_class(fs_default).starts_nodes
        if deploys and starts_nothing:
            raise ValueError(f"runtime: {self.filesystem} starts nothing, so it runs on runtime {fs_default}; "
                             "leave runtime out")
        if deploys and not self.nodes:
            raise ValueError("nodes: need at least one node (e.g. nodes: 3)")
        if not deploys and not starts_nothing:
            raise ValueError(f"runtime: {self.runtime} starts nothing, so it only measures a cluster you run "
                             f"(filesystem: external); use runtime local or docker for {self.filesystem}")
        if not deploys and self.nodes:
            raise ValueError(f"nodes: runtime {self.runtime} starts no nodes (the cluster is one you already run); "
                             "remove nodes:")
        if runtime.engine_deploys and self.runtime not in engines_of(self.filesystem):
            having = [fs for fs in FILESYSTEMS if self.runtime in engines_of(fs)]
            raise ValueError(f"runtime: on {self.runtime} an engine of dfslab's deploys the filesystem (there is one "
                             f"for {', '.join(having)}); {self.filesystem} has none in dfslab yet: use runtime local "
                             f"or docker")
        runtime.check_spec(self)
        names = [n.name for n in self.nodes]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"nodes: duplicate node names {dupes}")
        release = rooted_release(self)
        if mixed_releases(self) and not runtime.software_roots:
            raise ValueError(f"{self.filesystem}.client_release: clients of another release than the servers' run "
                             f"from a root of their own, which {runtime.where} cannot start yet (runtimes local and docker can); "
                             "use runtime local or docker, or leave client_release out")
        if release is not None and not (runtime.software_roots or runtime.release_images):
            raise ValueError(f"{self.filesystem}.release: {release.name} ({release.says}) runs from a root of its own, "
                             f"which {runtime.where} cannot start daemons in yet (runtimes local, docker and "
                             f"kubernetes can); use one of them, or the default release on {self.runtime}")
        getattr(self, self.filesystem).check(self)
        return self

    def client_kinds(self) -> tuple[str, ...]:
        """Where this cluster's workload tools can run, the default first (an experiment's
        `client:`). host: in the client node's network namespace on this machine, through the
        long-lived FUSE mount dfslab keeps; job: each tool a Kubernetes Job whose pod mounts the
        filesystem anew. On a Kubernetes you run this machine has no route to the cluster."""
        return runtime_of(self).client_kinds

    def node_names(self) -> list[str]:
        return [n.name for n in self.nodes]

    def client_names(self) -> list[str]:
        return ["client"] + [f"client{i}" for i in range(2, self.clients + 1)]

    def shape_of(self, node: Node) -> LinkShape:
        return LinkShape.model_construct(
            bandwidth=node.bandwidth if node.bandwidth is not None else self.network.bandwidth,
            latency=node.latency if node.latency is not None else self.network.latency,
        )


RUNTIME_FIELD_HELP = ("local: nodes are network namespaces (the default); docker: every daemon in its own "
                      "container; kubernetes: Rook deploys Ceph (a StatefulSet GlusterFS) on a Kubernetes "
                      "(kubernetes.local: one dfslab starts here); host: nothing is started (filesystem: external, the "
                      "default there)")


@functools.cache
def _model_of(filesystems: tuple[tuple[str, str], ...], runtimes: tuple[str, ...]) -> type[ClusterBase]:
    # The filesystem's own section (ceph:, gluster:, ...) comes from its backend package.
    names = tuple(fs for fs, _ in filesystems)
    return create_model(
        "ClusterSpec", __base__=ClusterBase, __module__=__name__,
        filesystem=(Literal[names], Field("ceph", description=" or ".join(names))),  # type: ignore[valid-type]
        runtime=(Literal[runtimes], Field("local", description=RUNTIME_FIELD_HELP)),  # type: ignore[valid-type]
        **{fs: (section_class(fs), Field(default_factory=section_class(fs))) for fs in names},
    )


def cluster_spec_model() -> type[ClusterBase]:
    """The spec's model as the registry stands now: one section per registered filesystem, a
    runtime of the registered ones. Built when asked (and kept while the registry is unchanged), so
    a filesystem or runtime registered after dfslab was imported is a whole part of it."""
    return _model_of(tuple(FILESYSTEMS.items()), spec_runtimes())


def __getattr__(name: str) -> Any:
    # `spec.ClusterSpec` is the model of the registry as it stands (the name other modules annotate with).
    if name == "ClusterSpec":
        return cluster_spec_model()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _loc(loc: tuple) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part in ("function-after", "function-before", "function-plain") or str(part).startswith(("function-", "constrained-", "literal[")):
            continue
        else:
            path += ("." if path else "") + str(part)
    return path


def model_in(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model an annotation holds (X, list[X], X | None, dict[str, X], ...), else None."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next((m for arg in typing.get_args(annotation) if (m := model_in(arg)) is not None), None)


def fields_at(model: type[BaseModel] | None, loc: tuple) -> list[str]:
    """The field names valid at `loc` (a validation error's location, without its last part)
    inside `model`; [] where the path leaves the models (a free-form mapping)."""
    for part in loc:
        if model is None:
            return []
        if isinstance(part, int) or part not in model.model_fields:
            continue  # a list index, or pydantic's own step (function-after, ...)
        model = model_in(model.model_fields[part].annotation)
    return list(model.model_fields) if model is not None else []


def unknown_field(name: Any, valid: list[str]) -> str:
    """The message for a key no model has: the closest valid key if there is one, else them all."""
    close = difflib.get_close_matches(str(name), valid, n=1, cutoff=0.6)
    if close:
        return f"unknown field; did you mean {close[0]}?"
    if valid:
        return f"unknown field; valid here: {', '.join(valid)}"
    return "unknown field; check its spelling against docs/spec.md (every field), or dfslab schema spec"


def _problems(exc: ValidationError, model: type[BaseModel] | None = None) -> list[tuple[str, str]]:
    """(yaml path, message) per error; `model` (the class validated) lets an unknown key be
    answered with the closest valid one at its place."""
    problems = []
    for err in exc.errors():
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = unknown_field(err["loc"][-1], fields_at(model, err["loc"][:-1]))
        elif err["type"] == "missing":
            msg = "required field is missing"
        elif err["type"].endswith(("_parsing", "_type")) and not isinstance(err.get("input"), (dict, list)):
            msg = f"{msg}; the file says {err['input']!r}"  # what was written, beside what was expected
        problems.append((_loc(err["loc"]), msg))
    # A model-level check names its own field in the message ("ceph.mons: ...").
    fixed = []
    for path, msg in problems:
        head, sep, rest = msg.partition(": ")
        if not path and sep and re.fullmatch(r"[\w.\[\]]+", head):
            fixed.append((head, rest))
        else:
            fixed.append((path, msg))
    return fixed


def parse_spec(data: Any, source: str = "spec", name: str | None = None, runtime: str | None = None) -> ClusterSpec:
    if not isinstance(data, dict):
        raise SpecError([("", "a spec is a YAML mapping with name, nodes and ceph")], source)
    if name:
        data = {**data, "name": name}
    if runtime:
        data = {**data, "runtime": runtime}
    try:
        return cluster_spec_model().model_validate(data)
    except ValidationError as exc:
        raise SpecError(_problems(exc, cluster_spec_model()), source) from None


class _OneKeyOnceLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a key given twice in one mapping: PyYAML keeps the last one
    silently (`repetitions: 1` then `repetitions: 3` ran 3), so a file could say two things."""


def _mapping_once(loader: _OneKeyOnceLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    first_line: dict[Any, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            if key in first_line:
                raise yaml.constructor.ConstructorError(
                    None, None, f"{key!r} is given twice in one mapping (first on line {first_line[key] + 1}); "
                    "keep the one you mean", key_node.start_mark)
            first_line[key] = key_node.start_mark.line
        except TypeError:
            pass  # an unhashable key: construct_mapping says so
    return loader.construct_mapping(node, deep)


_OneKeyOnceLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_once)


def yaml_problem(exc: yaml.YAMLError) -> str:
    """A YAML error as one line naming where it is (line and column of the file) and what is wrong."""
    mark = getattr(exc, "problem_mark", None)
    what = ": ".join(str(x) for x in (getattr(exc, "context", None), getattr(exc, "problem", None)) if x) or str(exc)
    return f"line {mark.line + 1}, column {mark.column + 1}: {what}" if mark is not None else what


def read_yaml(path: str | Path) -> Any:
    """A YAML file's data, or a SpecError saying why it cannot be read (a syntax error or a key
    given twice: where in the file)."""
    path = Path(path)
    if not path.is_file():
        where = "a directory, not a file" if path.is_dir() else f"no such file (from {Path.cwd()})"
        raise SpecError([("", f"{where}; give the path of a YAML file (the examples are in examples/)")], str(path))
    try:
        return yaml.load(path.read_text(), Loader=_OneKeyOnceLoader)  # noqa: S506 (a SafeLoader)
    except yaml.YAMLError as exc:
        raise SpecError([("", f"not valid YAML: {yaml_problem(exc)}")], str(path)) from None


def load_spec(path: str | Path, name: str | None = None, runtime: str | None = None) -> ClusterSpec:
    return parse_spec(read_yaml(path), str(path), name, runtime)

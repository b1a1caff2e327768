"""The cluster spec: typed, validated YAML.

Everything a user can get wrong is caught here, before a namespace or a daemon exists,
and reported with the YAML path of the bad field (``ceph.replica_size``,
``nodes[1].bandwidth``) and what would be valid.
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, BeforeValidator, PlainSerializer, ConfigDict, Field, ValidationError, field_validator, model_validator

from .safety import check_name
from .units import UnitError, parse_bandwidth, parse_duration, parse_size

RESERVED_NODE_NAMES = {"client", "hub"} | {f"client{i}" for i in range(2, 9)}


class SpecError(ValueError):
    """A spec that cannot be used. `problems` is a list of (yaml path, message)."""

    def __init__(self, problems: list[tuple[str, str]], source: str = "spec"):
        self.problems = problems
        self.source = source
        lines = [f"{source}: {len(problems)} problem(s):"]
        lines += [f"  {path or '<top>'}: {msg}" for path, msg in problems]
        super().__init__("\n".join(lines))


def _unit_validator(parse):
    def check(value: Any) -> Any:
        if value is None:
            return None
        try:
            return parse(value)
        except UnitError as exc:
            raise ValueError(str(exc)) from None
    return BeforeValidator(check)


def _with_unit(unit: str) -> PlainSerializer:
    # Dumped specs (state.json, run directories) must load again: keep the unit on.
    return PlainSerializer(lambda v: None if v is None else f"{v}{unit}", when_used="json")


Bytes = Annotated[int, _unit_validator(parse_size), _with_unit("B")]
BitsPerSecond = Annotated[int, _unit_validator(parse_bandwidth), _with_unit("bit")]
Seconds = Annotated[float, _unit_validator(parse_duration), _with_unit("s")]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False, validate_default=True)


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


class CephSpec(Strict):
    mons: Literal[1, 3] = Field(1, description="number of monitors: 1, or 3 for quorum tests")
    mgr: bool = Field(True, description="always true: Ceph reports PG states and health through its MGR")
    osds_per_node: int = Field(1, ge=1, le=8)
    osd_size: Bytes = Field("4GiB", description="sparse BlueStore block file per OSD")
    replica_size: int = Field(2, ge=1, le=5, description="size of every pool")
    failure_domain: Literal["host", "osd"] = Field("host", description="CRUSH bucket replicas are spread over")
    pg_num: int = Field(16, ge=1, le=1024, description="placement groups per pool")
    cephfs: bool = True
    conf: dict[str, dict[str, str | int | float | bool]] = Field(
        default_factory=dict, description="extra ceph.conf options by section: {global: {...}, osd: {...}}"
    )

    @field_validator("osd_size")
    @classmethod
    def _osd_size(cls, value: int) -> int:
        if value < 1024**3:
            raise ValueError("BlueStore needs at least 1GiB per OSD; use e.g. 4GiB")
        return value

    @field_validator("mgr")
    @classmethod
    def _mgr(cls, value: bool) -> bool:
        if not value:
            raise ValueError("a Ceph cluster cannot reach HEALTH_OK with active+clean PGs without a MGR (since "
                             "Luminous the MGR reports PG states and raises MGR_DOWN without one); remove `mgr: false`")
        return value

    @field_validator("pg_num")
    @classmethod
    def _pg_num(cls, value: int) -> int:
        if value & (value - 1):
            raise ValueError(f"pg_num must be a power of two (e.g. 16, 32), got {value}")
        return value

    @field_validator("conf")
    @classmethod
    def _conf_sections(cls, value: dict) -> dict:
        for section in value:
            if not re.fullmatch(r"global|mon|mgr|osd|mds|client|(mon|mgr|osd|mds|client)\.[\w-]+", section):
                raise ValueError(f"unknown ceph.conf section {section!r}; use global, mon, mgr, osd, mds, client or e.g. osd.0")
            for key, option in value[section].items():
                # A newline or '[' would start a section or an option of the user's own in ceph.conf.
                if not re.fullmatch(r"[A-Za-z0-9_ .-]+", key):
                    raise ValueError(f"ceph.conf [{section}] {key!r}: option names are letters, digits, '_', '-', '.' and spaces")
                if isinstance(option, str) and (re.search(r"[\r\n\[\]]", option) or not option.isprintable()):
                    raise ValueError(f"ceph.conf [{section}] {key}: a value is one line without '[' or ']' (got {option!r})")
        return value


GLUSTER_VOLUME_TYPES = ("distribute", "replicate", "disperse")


class GlusterSpec(Strict):
    bricks_per_node: int = Field(1, ge=1, le=4, description="brick directories per server node")
    volume: Literal["distribute", "replicate", "disperse"] = Field("replicate", description="volume type")
    replica: Literal[2, 3] = Field(3, description="copies per file (volume: replicate)")
    arbiter: bool = Field(False, description="replica 3 with the third brick of each set an arbiter (metadata only)")
    disperse_data: int = Field(2, ge=2, le=16, description="k: data bricks per disperse set (volume: disperse)")
    redundancy: int = Field(1, ge=1, le=8, description="m: bricks of a disperse set that may be lost")
    ping_timeout: Seconds = Field("10s", description="network.ping-timeout: how long clients wait on a silent server "
                                                      "(GlusterFS's default of 42 s freezes clients for over a minute)")
    heal_interval: Seconds = Field("60s", description="cluster.heal-timeout, 60 s or more: how often the self-heal "
                                                       "daemon looks for work (GlusterFS's 600 s default left a volume "
                                                       "unhealed for minutes after a partition here)")
    options: dict[str, str | int | float | bool] = Field(
        default_factory=dict, description="extra `gluster volume set` options, e.g. {performance.cache-size: 64MB}")

    @field_validator("heal_interval")
    @classmethod
    def _heal_interval(cls, value: float) -> float:
        if value < 60:
            raise ValueError("GlusterFS accepts a cluster.heal-timeout of 60s or more")
        return value

    def set_size(self) -> int:
        """Bricks per replica or disperse set (1 for distribute)."""
        return {"distribute": 1, "replicate": self.replica, "disperse": self.disperse_data + self.redundancy}[self.volume]


class ClusterSpec(Strict):
    name: str = Field(description="cluster name; namespaces and the state directory are named after it")
    filesystem: Literal["ceph", "gluster"] = Field("ceph", description="ceph or gluster (GlusterFS)")
    runtime: Literal["local", "docker"] = Field(
        "local", description="local: nodes are network namespaces (the default); docker: every daemon in its own container")
    network: Network = Field(default_factory=Network)
    nodes: list[Node] = Field(min_length=1, max_length=16)
    clients: int = Field(1, ge=1, le=8, description="client namespaces (client, client2, ...) for parallel workloads")
    ceph: CephSpec = Field(default_factory=CephSpec)
    gluster: GlusterSpec = Field(default_factory=GlusterSpec)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_name(value, "cluster")

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
        names = [n.name for n in self.nodes]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"nodes: duplicate node names {dupes}")
        if self.filesystem == "gluster":
            return self._gluster_checks()
        ceph = self.ceph
        if ceph.mons > len(self.nodes):
            raise ValueError(
                f"ceph.mons: {ceph.mons} monitors need {ceph.mons} nodes (one MON per node, as a quorum "
                f"needs independent failures), but nodes has {len(self.nodes)}; add nodes or set mons: 1"
            )
        total_osds = ceph.osds_per_node * len(self.nodes)
        domains = len(self.nodes) if ceph.failure_domain == "host" else total_osds
        if ceph.replica_size > domains:
            raise ValueError(
                f"ceph.replica_size: {ceph.replica_size} replicas cannot be placed on {domains} "
                f"{'node(s)' if ceph.failure_domain == 'host' else 'OSD(s)'} (failure_domain: {ceph.failure_domain}); "
                f"lower replica_size, add nodes, or set failure_domain: osd"
            )
        return self

    def _gluster_checks(self) -> "ClusterSpec":
        g = self.gluster
        bricks = g.bricks_per_node * len(self.nodes)
        per_set = g.set_size()
        if g.arbiter and (g.volume != "replicate" or g.replica != 3):
            raise ValueError("gluster.arbiter: an arbiter needs volume: replicate with replica: 3")
        if g.volume == "disperse" and g.redundancy * 2 >= per_set:
            raise ValueError(f"gluster.redundancy: {g.redundancy} of {per_set} bricks may not be lost; "
                             "redundancy must be less than half of disperse_data + redundancy (e.g. 2+1, 4+2)")
        if bricks % per_set:
            raise ValueError(f"gluster.bricks_per_node: {len(self.nodes)} node(s) x {g.bricks_per_node} brick(s) = {bricks} "
                             f"bricks, not a multiple of the {g.volume} set size {per_set}; "
                             f"use {per_set} x k bricks (change nodes or bricks_per_node)")
        if g.volume != "distribute" and per_set > len(self.nodes):
            raise ValueError(f"gluster.volume: a {g.volume} set of {per_set} bricks on {len(self.nodes)} node(s) puts two "
                             "copies on one server, which then loses both; add nodes or use a smaller set")
        return self

    def node_names(self) -> list[str]:
        return [n.name for n in self.nodes]

    def client_names(self) -> list[str]:
        return ["client"] + [f"client{i}" for i in range(2, self.clients + 1)]

    def shape_of(self, node: Node) -> LinkShape:
        return LinkShape.model_construct(
            bandwidth=node.bandwidth if node.bandwidth is not None else self.network.bandwidth,
            latency=node.latency if node.latency is not None else self.network.latency,
        )


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


def _problems(exc: ValidationError) -> list[tuple[str, str]]:
    problems = []
    for err in exc.errors():
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown field; check its spelling against the spec reference in README.md"
        elif err["type"] == "missing":
            msg = "required field is missing"
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
        return ClusterSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(_problems(exc), source) from None


def read_yaml(path: str | Path) -> Any:
    """A YAML file's data, or a SpecError saying why it cannot be read."""
    path = Path(path)
    if not path.is_file():
        raise SpecError([("", f"no such file {str(path)!r}")], str(path))
    try:
        return yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise SpecError([("", f"not valid YAML: {exc}")], str(path)) from None


def load_spec(path: str | Path, name: str | None = None, runtime: str | None = None) -> ClusterSpec:
    return parse_spec(read_yaml(path), str(path), name, runtime)

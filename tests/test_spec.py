"""Malformed specs are refused before anything starts, naming the bad field."""

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from dfslab.cli import app
from dfslab.runtime.local import NETNS_DIR, netem_available
from dfslab.spec import SpecError, load_spec, parse_spec
from dfslab.state import ClusterState, clusters_root

GOOD = {"name": "s", "nodes": 3, "ceph": {"mons": 1, "osd_size": "4GiB", "replica_size": 2}}


def variant(**changes):
    spec = yaml.safe_load(yaml.safe_dump(GOOD))
    for path, value in changes.items():
        target = spec
        keys = path.split("__")
        for key in keys[:-1]:
            target = target.setdefault(key, {})
        if value is DELETE:
            target.pop(keys[-1])
        else:
            target[keys[-1]] = value
    return spec


DELETE = object()

MALFORMED = [
    ("missing name", variant(name=DELETE), "name", "required"),
    ("name with capitals", variant(name="Bad_Name"), "name", "lower-case"),
    ("unknown top-level key", {**GOOD, "nodez": 3}, "nodez", "unknown field"),
    ("zero nodes", variant(nodes=0), "nodes", "at least one"),
    ("nodes as text", variant(nodes="three"), "nodes", ""),
    ("two MONs", variant(ceph__mons=2), "ceph.mons", "1 or 3"),
    ("three MONs on one node", variant(nodes=1, ceph__mons=3, ceph__replica_size=1), "ceph.mons", "need 3 nodes"),
    ("replica size above node count", variant(ceph__replica_size=4), "ceph.replica_size", "failure_domain"),
    ("OSD size without unit", variant(ceph__osd_size=4), "ceph.osd_size", "needs a unit"),
    ("OSD size with unknown unit", variant(ceph__osd_size="4XB"), "ceph.osd_size", "valid units"),
    ("OSD size too small", variant(ceph__osd_size="512MiB"), "ceph.osd_size", "at least 1GiB"),
    ("bandwidth without unit", variant(network={"bandwidth": 1000}), "network.bandwidth", "1gbit"),
    ("node bandwidth not a quantity", variant(nodes=[{"name": "a"}, {"name": "b", "bandwidth": "fast"}]),
     "nodes[1].bandwidth", "1gbit"),
    ("unknown filesystem", variant(filesystem="lustre"), "filesystem", "'ceph'"),
    ("unknown runtime", variant(runtime="vm"), "runtime", "'local'"),
    ("OSDs per node not a number", variant(ceph__osds_per_node="two"), "ceph.osds_per_node", "integer"),
    ("pg_num not a power of two", variant(ceph__pg_num=12), "ceph.pg_num", "power of two"),
    ("subnet too small", variant(network={"subnet": "10.0.0.0/30"}), "network.subnet", "/24"),
    ("duplicate node names", variant(nodes=[{"name": "a"}, {"name": "a"}], ceph__replica_size=1), "nodes", "duplicate"),
    ("reserved node name", variant(nodes=[{"name": "client"}], ceph__replica_size=1), "nodes[0].name", "reserved"),
    ("unknown ceph.conf section", variant(ceph__conf={"osdd": {"x": 1}}), "ceph.conf", "unknown ceph.conf section"),
    ("cephfs not a boolean", variant(ceph__cephfs="maybe"), "ceph.cephfs", "boolean"),
    ("unknown ceph key", variant(ceph__osd_count=3), "ceph.osd_count", "unknown field"),
    ("negative replica size", variant(ceph__replica_size=0), "ceph.replica_size", "greater than or equal to 1"),
    ("gluster bricks not a multiple of the replica set", variant(filesystem="gluster", nodes=2, gluster={"replica": 3}),
     "gluster.bricks_per_node", "multiple of the replicate set size 3"),
    ("gluster arbiter without replica 3", variant(filesystem="gluster", nodes=2, gluster={"replica": 2, "arbiter": True}),
     "gluster.arbiter", "replica: 3"),
    ("gluster disperse redundancy too high", variant(filesystem="gluster", nodes=4,
                                                    gluster={"volume": "disperse", "disperse_data": 2, "redundancy": 2}),
     "gluster.redundancy", "less than half"),
    ("gluster replica set on one server", variant(filesystem="gluster", nodes=1, gluster={"replica": 2, "bricks_per_node": 2}),
     "gluster.volume", "two copies on one server"),
    ("gluster unknown volume type", variant(filesystem="gluster", gluster={"volume": "stripe"}), "gluster.volume", "'distribute'"),
    ("no MGR", variant(ceph__mgr=False), "ceph.mgr", "without a MGR"),
    ("name with a trailing newline", variant(name="small\n"), "name", "lower-case"),
    ("ceph.conf value with a newline", variant(ceph__conf={"osd": {"osd_op_num_shards": "4\n[mon]"}}), "ceph.conf",
     "one line"),
    ("ceph.conf key with a bracket", variant(ceph__conf={"osd": {"x]\n[global": 1}}), "ceph.conf", "option names"),
    ("gluster heal interval below GlusterFS's minimum", variant(filesystem="gluster", gluster={"heal_interval": "10s"}),
     "gluster.heal_interval", "60s or more"),
    ("gluster ping timeout without unit", variant(filesystem="gluster", gluster={"ping_timeout": 5}), "gluster.ping_timeout", "unit"),
]


@pytest.mark.parametrize("label,data,field,hint", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_spec_names_the_field(label, data, field, hint):
    with pytest.raises(SpecError) as err:
        parse_spec(data)
    paths = [p for p, _ in err.value.problems]
    assert field in paths, f"{label}: expected {field!r} among {paths}"
    message = dict(err.value.problems)[field]
    assert hint.lower() in message.lower(), f"{label}: {message!r} lacks {hint!r}"


def test_top_level_must_be_a_mapping():
    with pytest.raises(SpecError) as err:
        parse_spec([1, 2])
    assert "mapping" in str(err.value)


def test_good_spec_and_shorthands():
    spec = parse_spec(GOOD)
    assert spec.node_names() == ["node1", "node2", "node3"]
    assert spec.ceph.osd_size == 4 * 2**30
    # A dumped spec loads again (it is stored in state.json and in run directories).
    assert parse_spec(spec.model_dump(mode="json")) == spec


def test_example_specs_are_valid():
    for path in Path(__file__).parent.parent.glob("examples/*.yaml"):
        data = yaml.safe_load(path.read_text())
        if "nodes" in data:  # a cluster spec (experiments come later)
            load_spec(path)


def state_dirs() -> set:
    return set(clusters_root().iterdir()) if clusters_root().is_dir() else set()


@pytest.mark.parametrize("label,data,field,hint", MALFORMED[:16], ids=[m[0] for m in MALFORMED[:16]])
def test_cli_refuses_bad_spec_and_starts_nothing(tmp_path, label, data, field, hint):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    dirs_before = state_dirs()  # this session's own DFSLAB_HOME: nothing else writes there
    result = CliRunner().invoke(app, ["up", str(path)])
    assert result.exit_code == 2, result.output
    assert field in result.output
    assert state_dirs() == dirs_before
    # namespaces are machine-wide (other phases make theirs meanwhile): looked for by this spec's name
    name = data.get("name")
    assert not (isinstance(name, str) and NETNS_DIR.is_dir() and list(NETNS_DIR.glob(f"dfs-{name.strip()}-*")))


def test_cli_missing_file_and_bad_yaml(tmp_path):
    result = CliRunner().invoke(app, ["up", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2 and "no such file" in result.output
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: t\nnodes: [unclosed\n")
    result = CliRunner().invoke(app, ["up", str(bad)])
    # the file's path and the line, not PyYAML's "<unicode string>"
    assert result.exit_code == 2 and f"{bad}: not valid YAML: line 3" in result.output, result.output
    assert "unicode string" not in result.output


def test_a_key_given_twice_is_refused_naming_both_lines(tmp_path):
    """PyYAML keeps the last of two equal keys silently (`repetitions: 1` then `repetitions: 3`
    ran 3): the file is refused, naming the key and both lines; merge keys (<<) still merge."""
    twice = tmp_path / "twice.yaml"
    twice.write_text("name: t\nnodes: 3\nceph:\n  mons: 1\n  pg_num: 8\n  mons: 3\n")
    result = CliRunner().invoke(app, ["up", str(twice)])
    assert result.exit_code == 2, result.output
    assert "line 6, column 3: 'mons' is given twice in one mapping (first on line 4)" in result.output, result.output
    from dfslab.spec import read_yaml
    merged = tmp_path / "merged.yaml"
    merged.write_text("base: &b {a: 1, c: 3}\nthing:\n  <<: *b\n  a: 2\n")
    assert read_yaml(merged)["thing"] == {"a": 2, "c": 3}


def test_a_value_of_the_wrong_type_is_shown_beside_what_was_expected(tmp_path):
    spec = tmp_path / "typed.yaml"
    spec.write_text("name: t\nnodes: three\n")
    result = CliRunner().invoke(app, ["up", str(spec)])
    assert result.exit_code == 2 and "the file says 'three'" in result.output, result.output


def test_latency_is_refused_at_preflight_exactly_where_the_kernel_has_no_netem():
    """Whichever this kernel is (Debian 12's has netem, the reference machine's has not), the
    preflight agrees with a real netem probe: latency refused naming the fields, or accepted;
    nothing is made either way."""
    from dfslab.runtime import RuntimeError_
    from dfslab.runtime.local import LocalNetnsRuntime
    spec = parse_spec({**GOOD, "name": "lat", "network": {"latency": "0.5ms"}})
    runtime = LocalNetnsRuntime(ClusterState("lat"))
    if netem_available():
        runtime.preflight(spec)
    else:
        with pytest.raises(RuntimeError_, match=r"network.latency / nodes\[\].latency: this kernel has no tc netem"):
            runtime.preflight(spec)
    assert not ClusterState("lat").dir.exists() and not list(NETNS_DIR.glob("dfs-lat-*"))


def test_rgw_gateways_need_a_node_each_and_on_kubernetes_are_rooks_object_store():
    from dfslab.registry import debian_groups
    from dfslab.spec import ClusterSpec
    spec = ClusterSpec.model_validate({"name": "g", "nodes": 2, "ceph": {"rgw": 2}})
    assert debian_groups("ceph", spec) == ["rgw"] and debian_groups("ceph", ClusterSpec.model_validate({"name": "g", "nodes": 2})) == []
    with pytest.raises(ValueError, match=r"ceph.rgw: 3 gateways need 3 nodes"):
        ClusterSpec.model_validate({"name": "g", "nodes": 2, "ceph": {"rgw": 3}})
    assert ClusterSpec.model_validate({"name": "g", "nodes": 2, "runtime": "docker", "ceph": {"rgw": 1}}).ceph.rgw == 1
    # on Kubernetes Rook runs them: a CephObjectStore of as many gateways, on the servers, on the same port,
    # deleted before the CephCluster (Rook refuses a cluster that still has dependents)
    from dfslab.backends.ceph import rgw
    from dfslab.backends.ceph.rook import OBJECT_STORE, ROOK_CR_ORDER, cluster_objects
    k8s = ClusterSpec.model_validate({"name": "g", "nodes": 3, "runtime": "kubernetes",
                                      "ceph": {"rgw": 2, "osd_size": "6GiB", "replica_size": 2}})
    [store] = [o for o in cluster_objects(k8s, "ns", "img:1", "/var/lib/rook", {"node1": ["/dev/loop0"]})
               if o["kind"] == "CephObjectStore"]
    gateway = store["spec"]["gateway"]
    assert store["metadata"] == {"name": OBJECT_STORE, "namespace": "ns"}
    assert (gateway["port"], gateway["instances"]) == (rgw.PORT, 2) and gateway["placement"]
    assert store["spec"]["dataPool"] == {"failureDomain": "host", "replicated": {"size": 2, "requireSafeReplicaSize": True}}
    assert ROOK_CR_ORDER.index("CephObjectStore") < ROOK_CR_ORDER.index("CephCluster")
    assert not [o for o in cluster_objects(ClusterSpec.model_validate({**k8s.model_dump(mode="json"), "ceph": {
        **k8s.model_dump(mode="json")["ceph"], "rgw": 0}}), "ns", "img:1", "/x", {}) if o["kind"] == "CephObjectStore"]


def test_a_runtime_the_command_line_names_is_checked_there_and_its_help_names_every_runtime():
    """`--runtime podman` is the command's mistake (exit 2, naming the option and the runtimes),
    not a problem of the spec file; the option's help lists every runtime a spec may name."""
    from dfslab.cli.common import RUNTIME_HELP
    from dfslab.registry import spec_runtimes
    for command in (["up", "examples/ceph-small.yaml"], ["run", "examples/quickstart.yaml", "--dry-run"]):
        result = CliRunner().invoke(app, [*command, "--runtime", "podman"])
        assert result.exit_code == 2 and "'podman' is not a runtime" in result.output, result.output
        assert "ceph-small.yaml" not in result.output.split("Error")[-1]
    assert all(f"{name} (" in RUNTIME_HELP for name in spec_runtimes()), RUNTIME_HELP

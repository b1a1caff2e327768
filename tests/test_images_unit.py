"""The image's tag and the versions it is keyed by (no engine needed)."""

import pytest

from dfslab.experiment import parse_experiment
from dfslab.runtime import images
from dfslab.spec import SpecError, parse_spec

POLICY = """ceph-osd:
  Installed: 16.2.15+ds-0+deb12u2
  Candidate: 16.2.15+ds-0+deb12u2
  Version table:
 *** 16.2.15+ds-0+deb12u2 500
        500 http://deb.debian.org/debian bookworm/main amd64 Packages
glusterfs-server:
  Installed: (none)
  Candidate: 10.3-5
  Version table:
     10.3-5 500
"""


def test_policy_candidates_are_parsed():
    assert images.parse_policy(POLICY) == {"ceph-osd": "16.2.15+ds-0+deb12u2", "glusterfs-server": "10.3-5"}


def test_tag_names_the_versions_and_changes_with_any_package():
    versions = {"ceph-osd": "16.2.15+ds-0+deb12u2", "glusterfs-server": "10.3-5", "procps": "2:4.0.2-3"}
    tag = images.tag_for(versions)
    assert tag.startswith("ceph16.2.15-gluster10.3-")
    assert images.tag_for(dict(versions)) == tag  # stable
    assert images.tag_for({**versions, "procps": "2:4.0.2-4"}) != tag  # any version change rebuilds
    assert len(tag) <= 128 and all(c.isalnum() or c in "_.-" for c in tag)


def test_spec_runtime_docker_is_accepted_and_unknown_runtimes_are_refused():
    assert parse_spec({"name": "a", "nodes": 2}, runtime="docker").runtime == "docker"
    with pytest.raises(SpecError) as err:
        parse_spec({"name": "a", "nodes": 2, "runtime": "podman"})
    assert "runtime" in str(err.value) and "docker" in str(err.value)


def test_experiment_runtimes_make_one_variant_per_runtime(tmp_path):
    exp = parse_experiment({"name": "x", "cluster": {"name": "x", "nodes": 2}, "runtimes": ["local", "docker"],
                            "workloads": [{"type": "radosbench"}]}, tmp_path)
    assert [exp.on_runtime(r).cluster.runtime for r in exp.file.runtimes] == ["local", "docker"]
    assert exp.cluster.runtime == "local"  # the original is untouched
    with pytest.raises(SpecError) as err:
        parse_experiment({"name": "x", "cluster": {"name": "x", "nodes": 2}, "runtimes": ["vm"],
                          "workloads": [{"type": "radosbench"}]}, tmp_path)
    assert "runtimes" in str(err.value)

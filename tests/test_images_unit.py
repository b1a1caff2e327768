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
    versions = {"ceph-osd": "16.2.15+ds-0+deb12u2", "glusterfs-server": "10.3-5", "moosefs-master": "3.0.117-1",
                "procps": "2:4.0.2-3"}
    tag = images.tag_for(versions)
    assert tag.startswith("ceph16.2.15-gluster10.3-moosefs3.0.117-")
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


def _seed(tmp_path):
    from dfslab.runtime.kubernetes.images import SEED_DATABASES
    seed = tmp_path / "seed"
    blob = seed / "io.containerd.content.v1.content" / "blobs" / "sha256" / "ab12"
    blob.parent.mkdir(parents=True)
    blob.write_bytes(b"layer")
    for name in SEED_DATABASES:
        (seed / name).parent.mkdir(parents=True, exist_ok=True)
        (seed / name).write_bytes(b"bolt " + name.encode())
    return seed, blob.relative_to(seed)


def test_a_node_root_shares_the_seeds_files_and_owns_copies_of_its_databases(tmp_path):
    """Every node's containerd starts from the one seed: its immutable files are the seed's own
    (hard links, no copy), its two bolt databases are its own (a node writing its meta.db must
    not write the seed's or another node's)."""
    from dfslab.runtime.kubernetes.images import SEED_DATABASES, seed_root
    seed, blob = _seed(tmp_path)
    root = tmp_path / "node1" / "containerd"
    root.mkdir(parents=True)
    assert seed_root(seed, root)
    assert (root / blob).stat().st_ino == (seed / blob).stat().st_ino
    for name in SEED_DATABASES:
        assert (root / name).read_bytes() == (seed / name).read_bytes()
        assert (root / name).stat().st_ino != (seed / name).stat().st_ino


def test_a_node_root_on_another_filesystem_is_left_empty_for_the_import(tmp_path):
    """No hard link across filesystems (here the seed on disk, the root on /dev/shm's tmpfs):
    False, and the node's root as empty as before, so its containerd imports the archive."""
    import os
    import tempfile
    from pathlib import Path
    from dfslab.runtime.kubernetes.images import seed_root
    seed, _ = _seed(tmp_path)
    if os.stat(seed).st_dev == os.stat("/dev/shm").st_dev:
        pytest.skip("/dev/shm is on the same filesystem as the test's tmp_path")
    with tempfile.TemporaryDirectory(dir="/dev/shm") as other:
        root = Path(other) / "containerd"
        root.mkdir()
        assert not seed_root(seed, root)
        assert list(root.iterdir()) == []

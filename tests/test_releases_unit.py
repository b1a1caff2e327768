"""Releases as data: the spec's `release:` field, the roots' cache checks and patches, and which
programs run from a root (no root is built here: tests/test_releases.py builds and runs one)."""

import json
import re
import sys
from pathlib import Path

import pytest

from dfslab.registry import Release, release_named, release_of, releases_of
from dfslab.runtime import roots
from dfslab.runtime.roots import ROOTEXEC, RootError, SoftwareRoot, program_of
from dfslab.spec import SpecError, parse_spec

SPEC = {"name": "r", "filesystem": "ceph", "nodes": 3}


def test_release_defaults_to_this_machines_own_and_names_a_known_one():
    assert parse_spec(SPEC).ceph.release == releases_of("ceph")[0].name == "pacific"
    assert release_of(parse_spec(SPEC)).suite is None  # the default builds no root: make demo stays fast
    spec = parse_spec({**SPEC, "ceph": {"release": "reef"}})
    assert release_of(spec) == release_named("ceph", "reef") and release_of(spec).suite == "trixie"


def test_unknown_release_is_refused_naming_the_field_and_the_known_ones():
    with pytest.raises(SpecError) as err:
        parse_spec({**SPEC, "ceph": {"release": "squid"}})
    [(path, message)] = err.value.problems
    assert path == "ceph.release"
    assert "'squid'" in message and "pacific" in message and "reef" in message and "18.2.7" in message
    assert "tentacle" in message and "20.2.4" in message


def test_tentacles_keys_are_aes_256_as_its_own_ceph_authtool_makes_them():
    """The header of our keys against one printed by Tentacle's `ceph-authtool --gen-print-key`
    (20.2.4, 2026-11-28): type 2, 32 bytes; Pacific's and Reef's stay type 1, 16 bytes."""
    import base64
    import struct
    from dfslab.backends.ceph.conf import gen_key
    tentacles = base64.b64decode("AgDgNAtrTO49OSAA3mJbHDsFWhp3Ejylons0iDQr8O1Noi9VS1vuNn6Hjzg=")
    kind, _, _, size = struct.unpack("<hiih", tentacles[:12])
    ours = base64.b64decode(gen_key("tentacle"))
    assert struct.unpack("<hiih", ours[:12])[::3] == (kind, size) == (2, 32) and len(ours) == len(tentacles)
    for older in ("pacific", "reef"):
        key = base64.b64decode(gen_key(older))
        assert struct.unpack("<hiih", key[:12])[::3] == (1, 16) and len(key) == 28


def test_clients_older_than_a_new_tentacles_keys_are_refused_before_it_is_made():
    """Refused at `up` (preflight), not by the spec: a cluster upgraded into Tentacle keeps the
    AES-128 keys it was made with, and its recorded spec says `client_release: pacific`."""
    from dfslab.backends import PreflightError
    from dfslab.backends.ceph.backend import CephBackend
    mixed = parse_spec({**SPEC, "ceph": {"release": "tentacle", "client_release": "pacific"}})
    with pytest.raises(PreflightError, match=r"^ceph.client_release: .*AES-256"):
        CephBackend.preflight(mixed)
    CephBackend.preflight(parse_spec({**SPEC, "ceph": {"release": "reef", "client_release": "pacific"}}))


def test_a_rooted_release_runs_on_kubernetes_through_rook_and_is_refused_by_the_engines_that_cannot():
    from dfslab.registry import backend_class_of
    spec = parse_spec({**SPEC, "runtime": "kubernetes", "ceph": {"release": "reef"}})
    assert spec.ceph.release == "reef" and backend_class_of("ceph", "kubernetes").refusal(spec) is None
    assert parse_spec({**SPEC, "runtime": "kubernetes"}).ceph.release == "pacific"  # its own release runs there
    assert parse_spec({**SPEC, "runtime": "docker", "ceph": {"release": "reef"}}).ceph.release == "reef"  # the root's image
    gluster = parse_spec({"name": "g", "runtime": "kubernetes", "nodes": 3, "filesystem": "gluster",
                          "gluster": {"release": "11"}})
    refused = backend_class_of("gluster", "kubernetes").refusal(gluster)
    assert refused.startswith("gluster.release: 11 ") and "runtime local or docker" in refused
    # the mixed case stays the host runtimes': clients of another release run from a root here
    with pytest.raises(SpecError) as err:
        parse_spec({**SPEC, "runtime": "kubernetes", "ceph": {"release": "reef", "client_release": "pacific"}})
    [(path, message)] = err.value.problems
    assert path == "ceph.client_release" and "runtimes local and docker can" in message


def test_each_release_names_a_rook_the_build_script_builds():
    """The engine builds the releases name are the ones scripts/build-kubernetes.sh knows, the
    runtime's default first (one missing from the script would fail at the first `up`)."""
    from dfslab.registry import releases_of
    from dfslab.runtime.kubernetes.binaries import ENGINE_DEFAULT, engine_of
    text = (Path(__file__).parents[1] / "scripts/build-kubernetes.sh").read_text()
    [listed] = re.findall(r'^ENGINES="([^"]+)"', text, re.M)
    engines = listed.split()
    assert engines[0] == ENGINE_DEFAULT == engine_of(releases_of("ceph")[0]) == engine_of(None) == "rook-v1.12.11"
    assert {engine_of(r) for r in releases_of("ceph")} == set(engines)
    assert {engine_of(r) for r in releases_of("ceph")[1:]} == {"rook-v1.18.8"}  # Reef and Tentacle: Rook v1.18
    for engine in engines:  # each has its patches (the build's stamp hashes them)
        assert list((Path(__file__).parents[1] / "native/rook" / engine.removeprefix("rook-")).glob("*.patch")), engine


@pytest.mark.parametrize("argv, program", [
    (["ceph", "-s"], "ceph"),
    (["timeout", "-s", "KILL", "30", "rados", "bench"], "rados"),
    (["timeout", "--kill-after", "5", "10", "fio", "x.fio"], "fio"),
    (["timeout", "5", "fio"], "fio"),
    (["sh", "-c", "ceph -s"], "sh"),
    # glusterd's start: private mounts in a namespace of its own, then the daemon
    (["unshare", "--mount", "--propagation", "private", "sh", "-c",
      "mount --bind /s/lib /var/lib/glusterd && mount --bind /s/run /run && exec glusterd -N --log-level INFO"], "glusterd"),
    (["unshare", "--mount", "ceph-osd", "-f"], "ceph-osd"),
    (["sh", "-c", "echo exec-free; glusterfs --version"], "sh"),  # no exec: the shell is what runs
    (["timeout", "5", "sh", "-c", "cd /x && exec fio a.fio"], "fio"),
])
def test_the_program_an_argv_runs(argv, program):
    assert program_of(argv) == program


def test_only_the_releases_programs_run_from_its_root():
    root = SoftwareRoot("/cache/trixie-reef/root", ("ceph", "rados", "fio"))
    assert root.wrap(["ip", "addr"], "/state/mnt") == ["ip", "addr"]  # this machine's tools stay its own
    assert root.wrap(["mysqld", "--x"], "/state/mnt") == ["mysqld", "--x"]
    wrapped = root.wrap(["timeout", "9", "rados", "bench"], "/state/mnt")
    assert wrapped == [sys.executable, "-S", str(ROOTEXEC), "/cache/trixie-reef/root", "/state/mnt", "--",
                       "timeout", "9", "rados", "bench"]
    assert SoftwareRoot.from_json(root.as_json()) == root and SoftwareRoot.from_json(None) is None


def test_a_roots_interpreter_runs_from_it_by_its_path_only():
    """Ceph's releases run dfslab's own librados client in the root's /usr/bin/python3; dfslab's
    own Python is a python3 too (a venv's) and must stay this machine's."""
    root = SoftwareRoot("/cache/forky-tentacle/root", ("ceph", *release_named("ceph", "tentacle").interpreters))
    assert root.wrap(["/usr/bin/python3", "-c", "pass"], "/m")[-4:] == ["--", "/usr/bin/python3", "-c", "pass"]
    for own in (sys.executable, "/work/.venv/bin/python3", "python3"):
        assert root.wrap([own, "-m", "dfslab.workloads.metadata_worker"], "/m") == [own, "-m", "dfslab.workloads.metadata_worker"]


def test_a_root_is_built_with_its_helpers_which_are_not_its_programs():
    tentacle = release_named("ceph", "tentacle")
    assert "mount" in tentacle.installs and "mount" not in tentacle.packages  # ceph-fuse's remount inside the root
    assert tentacle.installs[:len(tentacle.packages)] == tentacle.packages


def _fake_root(tmp_path, monkeypatch, release, status="Package: ceph-mon\n"):
    monkeypatch.setenv("DFSLAB_RELEASES", str(tmp_path))
    tree = roots.root_home(release) / "root"
    (tree / "var/lib/dpkg").mkdir(parents=True)
    (tree / "var/lib/dpkg/status").write_text(status)
    manifest = {"suite": release.suite, "packages": list(roots.installs(release)), "patched": [],
                "status_sha256": roots._status_checksum(tree), "programs": ["ceph"]}
    (roots.root_home(release) / "manifest.json").write_text(json.dumps(manifest))
    return tree


def test_a_built_root_is_used_only_while_it_is_what_was_built(tmp_path, monkeypatch):
    release = Release("x", "1.0", "X 1", "trixie", ("ceph-mon",))
    assert roots.problem(release, None) == "not built"
    tree = _fake_root(tmp_path, monkeypatch, release)
    assert roots.problem(release, roots.read_manifest(release)) is None
    other = Release("x", "1.0", "X 1", "trixie", ("ceph-mon", "ceph-osd"))
    assert roots.problem(other, roots.read_manifest(other)) == "built for other packages"
    (tree / "var/lib/dpkg/status").write_text("Package: ceph-mon\nVersion: 2\n")  # something installed into it
    assert "checksum" in roots.problem(release, roots.read_manifest(release))


def test_patches_apply_once_and_refuse_text_that_is_not_there(tmp_path):
    (tmp_path / "usr").mkdir()
    (tmp_path / "usr/m.py").write_text("import bcrypt\nimport cephfs\n")
    release = Release("x", "1", "X 1", "s", (), patches=(("usr/m.py", "import bcrypt\n", ""),))
    roots.apply_patches(release, tmp_path)
    assert (tmp_path / "usr/m.py").read_text() == "import cephfs\n"
    with pytest.raises(RootError, match="usr/m.py .* does not hold"):
        roots.apply_patches(release, tmp_path)  # the suite's file changed: refused, not half-applied



def test_a_release_named_alone_gets_the_command_with_its_filesystem():
    from typer.testing import CliRunner
    from dfslab.cli import app
    res = CliRunner().invoke(app, ["releases", "build", "tentacle"])
    assert res.exit_code == 2 and "`dfslab releases build ceph tentacle`" in res.output, res.output
    res = CliRunner().invoke(app, ["releases", "build", "ceph"])
    assert res.exit_code == 2 and "name one of ceph's releases too" in res.output, res.output

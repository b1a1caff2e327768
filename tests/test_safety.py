"""A cluster name can never reach outside dfslab's own directories, and `down` removes only
what a state directory records as dfslab's (issue: "Safety first")."""

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from conftest import DFSLAB, REPO
from dfslab.safety import BadName, UnsafeRemoval, check_name, remove_owned_tree
from dfslab.state import ClusterState


def run_cli(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DFSLAB_HOME": str(home), "DFSLAB_RUNS": str(home / "runs")}
    return subprocess.run([*DFSLAB, *args], capture_output=True, text=True, cwd=REPO, env=env, timeout=60)


@pytest.fixture
def home(tmp_path):
    """A DFSLAB_HOME with sentinels beside and above the clusters root."""
    home = tmp_path / "home"
    (home / "clusters").mkdir(parents=True)
    for sentinel in (tmp_path / "outside" / "keep", home / "victim" / "sub"):
        sentinel.mkdir(parents=True)
        (sentinel / "data").write_text("precious")
    return home


def flat(text: str) -> str:
    """The CLI's message without the box rich draws around usage errors."""
    return re.sub(r"[│╭╮╰╯─\s]+", " ", text)


def sentinels_intact(home: Path) -> bool:
    return all((p / "data").read_text() == "precious"
               for p in (home.parent / "outside" / "keep", home / "victim" / "sub"))


TRAVERSALS = ["..", "../victim", "../../outside", "../..", str(Path("/etc")), "", ".", "a/../..", "x" * 300,
              "smäll", "small\n", "_x", "Small", "a b", "clusters/../victim"]


@pytest.mark.parametrize("command", ["down", "status", "exec", "fault"])
@pytest.mark.parametrize("name", TRAVERSALS)
def test_bad_names_are_refused_before_any_path_is_built(home, command, name):
    extra = {"exec": ["--", "true"], "fault": ["restore"]}.get(command, [])
    res = run_cli(home, command, name, *extra)
    assert res.returncode == 2, res.stderr
    assert "lower-case letters, digits and '-'" in flat(res.stderr), res.stderr
    assert sentinels_intact(home)


@pytest.mark.parametrize("option", ["--cluster", "--name"])
def test_bad_name_options_are_refused(home, tmp_path, option):
    cmd = "run" if option == "--cluster" else "up"
    res = run_cli(home, cmd, str(tmp_path / "nonexistent.yaml"), option, "../victim")
    assert res.returncode == 2
    assert "lower-case letters" in flat(res.stderr)
    assert sentinels_intact(home)


def test_unknown_cluster_is_an_error_naming_the_known_ones(home, monkeypatch):
    monkeypatch.setenv("DFSLAB_HOME", str(home))
    ClusterState("known").create({"name": "known", "runtime_kind": "local"})  # made by dfslab's own code
    res = run_cli(home, "down", "nosuchcluster")
    assert res.returncode == 1
    assert "no cluster named 'nosuchcluster'" in res.stderr and "known" in res.stderr
    assert (home / "clusters" / "known" / "state.json").is_file()


def test_symlink_planted_in_clusters_root_is_never_followed(home):
    victim = home / "victim"
    (victim / "state.json").write_text(json.dumps({"name": "evil", "runtime_kind": "local"}))
    (home / "clusters" / "evil").symlink_to(victim)
    res = run_cli(home, "down", "evil")
    assert res.returncode == 1
    assert "no cluster named 'evil'" in res.stderr
    assert sentinels_intact(home) and (victim / "state.json").exists()
    res = run_cli(home, "down", "--all")
    assert res.returncode == 0 and sentinels_intact(home)


def test_state_destroy_refuses_what_it_cannot_prove_is_dfslabs(home, monkeypatch):
    monkeypatch.setenv("DFSLAB_HOME", str(home))
    plain = home / "clusters" / "plain"  # a directory without state.json: not dfslab's
    plain.mkdir()
    (plain / "data").write_text("precious")
    with pytest.raises(UnsafeRemoval, match="nothing records it"):
        ClusterState("plain").destroy()
    assert (plain / "data").exists()
    # Recorded under another name: also not this cluster's.
    (plain / "state.json").write_text(json.dumps({"name": "other"}))
    with pytest.raises(UnsafeRemoval):
        ClusterState("plain").destroy()
    assert (plain / "data").exists()


def test_removal_refuses_paths_outside_roots_symlinks_and_mounts(tmp_path):
    root = tmp_path / "root"
    (root / "mine").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "data").write_text("precious")
    for path in (outside, root / ".." / "outside", root, Path("relative")):
        with pytest.raises(UnsafeRemoval):
            remove_owned_tree(path, [root], "test")
    (root / "link").symlink_to(outside)
    with pytest.raises(UnsafeRemoval, match="symlink"):
        remove_owned_tree(root / "link", [root], "test")
    (root / "viadir").symlink_to(tmp_path)  # a symlinked parent leads outside
    with pytest.raises(UnsafeRemoval):
        remove_owned_tree(root / "viadir" / "outside", [root], "test")
    assert (outside / "data").read_text() == "precious"
    if os.geteuid() == 0:
        mnt = root / "mine" / "mnt"
        mnt.mkdir()
        assert subprocess.run(["mount", "-t", "tmpfs", "none", str(mnt)]).returncode == 0
        try:
            (mnt / "inside-mount").write_text("x")
            with pytest.raises(UnsafeRemoval, match="mounted"):
                remove_owned_tree(root / "mine", [root], "test")
            assert (mnt / "inside-mount").exists()
        finally:
            subprocess.run(["umount", str(mnt)])
    assert remove_owned_tree(root / "mine", [root], "test") is True
    assert not (root / "mine").exists()


@settings(max_examples=500, deadline=None)
@given(st.text(min_size=0, max_size=40))
def test_name_rule_never_lets_a_path_escape(name):
    try:
        check_name(name, "cluster")
    except BadName:
        return
    # Whatever passes is one plain path component that stays where it is joined.
    assert "/" not in name and name not in (".", "..") and "\n" not in name and "\x00" not in name
    base = Path("/clusters-root")
    assert (base / name).resolve().parent == base
    assert len(name) <= 24 and name == name.strip() and name.isascii()


def test_version_as_flag_and_as_command(home):
    flag, command = run_cli(home, "--version"), run_cli(home, "version")
    assert flag.returncode == command.returncode == 0
    assert flag.stdout.strip() == command.stdout.strip() != ""


def test_unexpected_failure_is_one_line_with_a_log(home, tmp_path):
    run = tmp_path / "broken-run"
    run.mkdir()
    (run / "provenance.json").write_text("{not json")
    res = run_cli(home, "report", str(run))
    assert res.returncode == 1
    assert "Traceback" not in res.stderr and "traceback in" in flat(res.stderr)
    log = Path(re.search(r"traceback in (\S+?);", flat(res.stderr)).group(1))
    assert "Traceback" in log.read_text()


def test_fault_options_are_strict_before_anything_is_touched(home):
    for args, words in [(["degrade", "node1", "--set", "bandwith=1gbit"], "unknown option(s) 'bandwith'"),
                        (["degrade", "node1", "--set", "bandwidth"], "--set takes KEY=VALUE"),
                        (["fill", "osd.0", "--set", "headroom"], "--set takes KEY=VALUE"),
                        (["nosuchkind", "osd.0"], "unknown fault 'nosuchkind'"),
                        (["kill"], "needs a target")]:
        res = run_cli(home, "fault", "somecluster", *args)
        assert res.returncode == 2, (args, res.stderr)
        assert words in flat(res.stderr), (args, res.stderr)
        assert "Traceback" not in res.stderr


def test_fault_list_help_names_every_registered_kind(home):
    from dfslab.chaos import fault_kinds
    text = flat(run_cli(home, "fault", "--help").stdout)
    assert all(kind in text for kind in fault_kinds())


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_mounts_of_a_cluster_with_a_longer_name_are_not_this_ones(tmp_path):
    from dfslab.safety import mounts_under
    mnt = tmp_path / "x-b" / "mnt"
    mnt.mkdir(parents=True)
    (tmp_path / "x").mkdir()
    assert subprocess.run(["mount", "-t", "tmpfs", "none", str(mnt)]).returncode == 0
    try:
        assert mounts_under(tmp_path / "x") == []
        assert mounts_under(tmp_path / "x-b") == [str(mnt)]
    finally:
        subprocess.run(["umount", str(mnt)])

"""Where filegrid's read goes: through a new second client of the cluster's mount (the writing
FUSE client caches the files' data in its own process), unless every step's Job mounts anew."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

from dfslab.workloads import Runner
from dfslab.workloads import filegrid


def _runner(tmp_path: Path, fresh) -> Runner:
    return Runner(lambda node, argv: argv, {}, tmp_path / "raw", mount=lambda node: tmp_path / "mnt" / f"fs-{node}",
                  scratch=tmp_path / "scratch", fresh_client=fresh)


def test_the_read_goes_through_a_fresh_client_at_the_same_relative_path(tmp_path, monkeypatch):
    monkeypatch.setattr(filegrid, "drop_caches", lambda: None)
    opened = []

    @contextmanager
    def fresh(node):
        opened.append((node, "open"))
        yield tmp_path / "mnt" / f"fs-{node}.fresh"
        opened.append((node, "closed"))
    target = {"ioengine": "libaio", "directory": str(tmp_path / "mnt/fs-client/dfslab-fio"), "direct": 0}
    with filegrid._reading(_runner(tmp_path, fresh), "fs", target) as where:
        assert where == {**target, "directory": str(tmp_path / "mnt/fs-client.fresh/dfslab-fio")}
        assert opened == [("client", "open")]
    assert opened == [("client", "open"), ("client", "closed")]


def test_no_second_client_for_this_machines_disk_or_where_jobs_mount_anew(tmp_path, monkeypatch):
    monkeypatch.setattr(filegrid, "drop_caches", lambda: None)

    @contextmanager
    def never(node):
        raise AssertionError("no second client here")
        yield
    local = {"ioengine": "libaio", "directory": str(tmp_path / "scratch/dfslab-fio"), "direct": 0}
    with filegrid._reading(_runner(tmp_path, never), "machine", local) as where:
        assert where == local
    on_fs = {"ioengine": "libaio", "directory": str(tmp_path / "mnt/fs-client/dfslab-fio"), "direct": 0}
    with filegrid._reading(_runner(tmp_path, None), "fs", on_fs) as where:  # runtime kubernetes
        assert where == on_fs

"""The metadata workload's worker pool: a dead worker fails the step in seconds, not after
the hour-long deadline, and the others do not hang on the barrier."""

import os
import time

import pytest

from dfslab.workloads import metadata_worker


def test_phases_are_timed_for_every_process(tmp_path):
    out = metadata_worker.main(str(tmp_path / "md"), 2, 20, 64)
    assert set(out) == set(metadata_worker.PHASES)
    assert all(v["ops"] == 40 and v["seconds"] > 0 for v in out.values())
    assert not (tmp_path / "md").exists()


def test_a_dead_worker_fails_the_step_within_seconds(tmp_path, monkeypatch):
    real = metadata_worker.worker

    def dies_if_rank_one(base, later, rank, *args):
        if rank == 1:
            os._exit(3)
        real(base, later, rank, *args)

    monkeypatch.setattr(metadata_worker, "worker", dies_if_rank_one)
    started = time.monotonic()
    with pytest.raises(SystemExit, match="worker died"):
        metadata_worker.main(str(tmp_path / "md"), 3, 10, 10)
    assert time.monotonic() - started < 10


def test_stat_and_read_go_through_the_other_client_and_unlink_through_the_creator(tmp_path):
    """The later directory stands for the same files through a new client: a symlink to the
    creator's directory works; an empty directory (files not there) fails at the stat phase."""
    (tmp_path / "md").mkdir()
    (tmp_path / "through-new-client").symlink_to(tmp_path / "md")
    result = metadata_worker.main(str(tmp_path / "md"), 2, 5, 10, str(tmp_path / "through-new-client"))
    assert {p: r["ops"] for p, r in result.items()} == {"create": 10, "stat": 10, "read": 10, "unlink": 10}
    (tmp_path / "elsewhere").mkdir()
    with pytest.raises(SystemExit, match="worker died"):
        metadata_worker.main(str(tmp_path / "md2"), 2, 5, 10, str(tmp_path / "elsewhere"))

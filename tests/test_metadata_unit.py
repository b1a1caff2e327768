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

    def dies_if_rank_one(base, rank, *args):
        if rank == 1:
            os._exit(3)
        real(base, rank, *args)

    monkeypatch.setattr(metadata_worker, "worker", dies_if_rank_one)
    started = time.monotonic()
    with pytest.raises(SystemExit, match="worker died"):
        metadata_worker.main(str(tmp_path / "md"), 3, 10, 10)
    assert time.monotonic() - started < 10

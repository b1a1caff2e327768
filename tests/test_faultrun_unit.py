"""The fault schedule's own rules, with the cluster left out: a fault is undone when a run is
interrupted, and the checksummed writer (a real `dfslab.chaos.integrity write` process on a
directory) writes nothing new while dfslab waits for the cluster to heal."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from dfslab import faultrun
from dfslab.chaos import schedule
from dfslab.chaos.entry import FaultEntry
from dfslab.experiment import Integrity
from dfslab.workloads import Runner


class Recorder:
    """inject/undo as the schedule calls them: what happened, and when."""

    def __init__(self):
        self.calls: list[tuple[str, float]] = []
        self.injected = threading.Event()

    def inject(self, cluster, kind, target, **options):
        self.calls.append(("inject", time.time()))
        self.injected.set()
        return SimpleNamespace(at=time.time(), in_effect=time.time(), record={},
                               as_dict=lambda: {"kind": kind, "target": target})

    def undo(self, cluster, injected):
        self.calls.append(("undo", time.time()))
        return None


@pytest.fixture
def recorder(monkeypatch):
    rec = Recorder()
    monkeypatch.setattr(schedule, "inject", rec.inject)
    monkeypatch.setattr(schedule, "undo", rec.undo)
    return rec


def entry(at: str, duration: str) -> FaultEntry:
    return FaultEntry(kind="kill", target="osd.1", at=at, duration=duration)


def test_a_fault_in_effect_is_undone_at_once_when_the_run_is_interrupted(recorder):
    fault = schedule.TimedFault(None, entry("0s", "1h"), 0).start()
    assert recorder.injected.wait(10)
    cancelled = time.time()
    fault.cancel(timeout=10)
    assert [c for c, _ in recorder.calls] == ["inject", "undo"]
    assert recorder.calls[1][1] - cancelled < 5  # not an hour later
    assert fault.events["undo"] >= fault.events["undo_start"] >= cancelled


def test_a_fault_not_yet_due_is_never_injected_once_cancelled(recorder):
    fault = schedule.TimedFault(None, entry("1h", "1s"), 0).start()
    fault.cancel(timeout=10)
    assert recorder.calls == [] and "inject" not in fault.events


class RunDir:
    def __init__(self, path: Path):
        self.path = path

    def write_json(self, name: str, data) -> None:
        (self.path / name).write_text(json.dumps(data))


def acks(journal: Path) -> int:
    return sum('"op": "ack"' in line for line in journal.read_text().splitlines()) if journal.exists() else 0


def test_the_writer_writes_nothing_new_while_recovery_is_awaited(tmp_path, recorder, monkeypatch):
    store = tmp_path / "mount" / "dfslab-integrity"
    runner = Runner(command=lambda node, argv: argv, env=dict(os.environ), raw_dir=tmp_path / "raw")
    seen: list[int] = []

    def healthy() -> bool:
        seen.append(acks(journal))
        time.sleep(0.2)
        return len(seen) > 5

    attached = SimpleNamespace(backend=SimpleNamespace(healthy=healthy))
    run = faultrun.FaultRun([entry("0s", "0s")], Integrity(recovery_timeout="60s"), attached, runner, RunDir(tmp_path))
    run._stores = [f"fs:{store}"]
    timed = run.start(0)
    journal = timed[0][1].journal
    deadline = time.time() + 30
    while acks(journal) < 20 and time.time() < deadline:  # the writer is writing
        time.sleep(0.1)
    assert acks(journal) >= 20
    monkeypatch.setattr(faultrun, "wait_recovered",
                        lambda cluster, timeout: schedule.wait_recovered(cluster, timeout, stable=0.5))
    run.finish(timed, [])
    # the write in flight when recovery began may still be acknowledged; nothing after it
    assert seen[-1] <= seen[0] + 1, seen
    assert run.events[0]["acknowledged_writes"] == acks(journal) and run.active == []
    assert timed[0][1].proc.returncode == 0


def test_abort_stops_a_writer_and_undoes_its_fault(tmp_path, recorder):
    runner = Runner(command=lambda node, argv: argv, env=dict(os.environ), raw_dir=tmp_path / "raw")
    run = faultrun.FaultRun([entry("0s", "1h")], Integrity(), SimpleNamespace(), runner, RunDir(tmp_path))
    run._stores = [f"fs:{tmp_path / 'mount'}"]
    (fault, writer), = run.start(0)
    assert recorder.injected.wait(10)
    run.abort()
    assert [c for c, _ in recorder.calls] == ["inject", "undo"]
    assert writer.proc.returncode is not None and run.active == []


def test_the_writer_writes_to_the_faulted_steps_own_target_where_it_has_a_store(tmp_path):
    """During an s3 step's gateway fault the checksummed writes go through that gateway (their PUTs
    are what the fault may lose); a step on a target without a store (rbd) or none gets the first."""
    run = faultrun.FaultRun([], Integrity(), SimpleNamespace(), None, RunDir(tmp_path))
    run._stores = ["rados:dfslab", "fs:/mnt/c/dfslab-integrity", "s3:dfslab-s3-1,http://10.0.0.1:7480,/k.json,us-east-1"]
    assert run.writer_store("s3").startswith("s3:dfslab-s3-1,")
    assert run.writer_store("fs") == "fs:/mnt/c/dfslab-integrity"
    assert run.writer_store("rbd") == run.writer_store(None) == "rados:dfslab"


def test_healthy_again_is_the_start_of_the_last_healthy_stretch_the_sampler_saw():
    """A fault undone before its step ends: the recovery wait starts with the step's end, so the
    samples say since when the cluster was healthy (a relapse starts the stretch again)."""
    def sample(t, degraded, series="ceph.degraded"):
        return (t, series, degraded, "0=OK,1=degraded")
    samples = [sample(10, 1), sample(11, 1), sample(12, 0), sample(13, 1), sample(14, 0), sample(15, 0),
               sample(16, 0), (12.5, "net.client.tx", 5.0, "MB/s")]
    assert schedule.healthy_from(samples, 10, 16) == 14
    assert schedule.healthy_from(samples, 10, 13.5) is None  # degraded at the last sample before the wait
    assert schedule.healthy_from(samples, 15.5, 16) == 16
    assert schedule.healthy_from([], 0, 100) is None

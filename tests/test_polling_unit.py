"""dfslab.polling: every wait has a deadline, says what it waits on, and fails naming it."""

from __future__ import annotations

import re
import time

import pytest

from dfslab.polling import WaitTimeout, poll, reporting, wait_until


def test_returns_the_first_truthy_value_and_says_what_it_waited_on():
    calls, said = [], []

    def third_time():
        calls.append(1)
        return "ready" if len(calls) == 3 else None
    with reporting(said.append):
        assert wait_until(third_time, "the thing", timeout=5, interval=0.01) == "ready"
    assert len(calls) == 3
    assert [s for s in said if s][0].startswith("waiting on the thing · 0/5 s") and said[-1] == ""


def test_times_out_naming_what_and_the_last_state():
    started = time.monotonic()
    with pytest.raises(WaitTimeout, match=r"osd.2 to be up did not happen within 0 s; last seen: down"):
        wait_until(lambda: False, "osd.2 to be up", timeout=0.3, interval=0.05, last=lambda: "down")
    assert 0.25 < time.monotonic() - started < 2


def test_the_callers_error_and_a_retried_exception_named():
    class Mine(Exception):
        pass

    def refused():
        raise ConnectionRefusedError("port 6789")
    with pytest.raises(Mine, match="last seen: ConnectionRefusedError: port 6789"):
        wait_until(refused, "the MON", timeout=0.2, interval=0.05, error=Mine, retry_on=(OSError,))


def test_an_exception_not_retried_propagates_at_once():
    calls = []

    def exited():
        calls.append(1)
        raise RuntimeError("daemon exited")
    with pytest.raises(RuntimeError, match="daemon exited"):
        wait_until(exited, "the daemon", timeout=5, interval=0.01)
    assert calls == [1]


def test_poll_says_false_at_the_deadline_instead_of_raising():
    assert poll(lambda: False, "nothing", timeout=0.1, interval=0.02) is False
    assert poll(lambda: True, "something", timeout=0.1) is True


def test_no_hand_written_deadline_loop_is_left_in_the_package():
    # every wait goes through dfslab.polling; a new `while time.monotonic() < deadline` loop fails here
    from pathlib import Path
    import dfslab
    root = Path(dfslab.__file__).parent
    loops = [f"{p.relative_to(root)}:{n}" for p in root.rglob("*.py") for n, line in enumerate(p.read_text().splitlines(), 1)
             if re.search(r"time\.monotonic\(\) (<|>|>=) deadline", line) and p.name not in DEADLINE_LOOPS_ALLOWED]
    assert not loops, loops


# Loops that are no wait for a condition: they do work each pass and stop at a deadline.
DEADLINE_LOOPS_ALLOWED = {
    "metadata_worker.py",  # runs inside a worker process with nothing of dfslab's (shipped to pods as its source)
    "faults.py",  # fill_until_full writes objects each pass until the OSD reports full
    "polling.py",  # its docstring names the pattern it replaced
    # retries of one command on a transient error (not a wait for a condition): the error is the answer
    "baseline.py",  # iperf3 refused while its server starts
    "glusterd.py",  # the gluster CLI refused while another transaction holds the volume lock
}


def test_rook_waits_for_an_object_recorded_by_name_or_given_whole(monkeypatch):
    # `down` hands wait_gone the state's record ({apiVersion, kind, name, namespace}), not a
    # manifest: it must name it either way (CI run 14 failed on KeyError 'metadata')
    from dfslab.backends.ceph import rook
    left = {"n": 2}

    def exists(api, obj):
        left["n"] -= 1
        return left["n"] > 0
    monkeypatch.setattr(rook, "exists", exists)
    record = {"apiVersion": "ceph.rook.io/v1", "kind": "CephBlockPool", "name": "rbd", "namespace": "dfslab-yours"}
    assert rook.wait_gone(None, record, timeout=10)
    left["n"] = 2
    manifest = {"apiVersion": "ceph.rook.io/v1", "kind": "CephBlockPool", "metadata": {"name": "rbd", "namespace": "x"}}
    assert rook.wait_gone(None, manifest, timeout=10)
    monkeypatch.setattr(rook, "exists", lambda api, obj: True)
    assert rook.wait_gone(None, record, timeout=0.1) is False

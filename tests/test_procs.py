"""dfslab signals only processes it started: a PID whose start time changed is left alone."""

import subprocess
import time

import pytest

from dfslab.polling import wait_until
from dfslab.procs import ProcessTable, disk_read_bytes, marked_pids, proc_start_time, terminate
from dfslab.state import ClusterState


@pytest.fixture
def table():
    state = ClusterState("t-procs")
    state.create({"name": "t-procs"})
    yield ProcessTable(state)
    ProcessTable(state).stop_all(timeout=1)
    state.destroy()


def test_spawned_process_is_tracked_and_stopped(table):
    proc = table.spawn("sleeper", "node1", ["sleep", "60"])
    assert table.get("sleeper").alive()
    # Popen returns once exec closed the CLOEXEC pipe, a moment before the kernel has
    # set up the new image's environment: /proc/PID/environ can still read empty then.
    deadline = time.monotonic() + 5
    while proc.pid not in marked_pids("t-procs") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.pid in marked_pids("t-procs")
    table.stop("sleeper")
    assert table.get("sleeper") is None
    assert proc_start_time(proc.pid) is None or not proc.alive()


def test_pid_with_other_start_time_is_not_signalled():
    other = subprocess.Popen(["sleep", "60"])
    try:
        real = proc_start_time(other.pid)
        killed = terminate([other.pid], {other.pid: real + 1}, timeout=0.5)
        assert killed == []
        time.sleep(0.2)
        assert other.poll() is None  # still running: not ours by start time
    finally:
        other.kill()
        other.wait()


def test_stop_all_finds_a_marked_process_without_a_pid_file(table):
    proc = table.spawn("orphan", "node1", ["sleep", "60"])
    # Until the child has exec'd, /proc shows the parent's environment, without the mark (a loaded
    # machine once took longer than this test's next line): an orphan left by a crash is long past it.
    wait_until(lambda: proc.pid in marked_pids(table.state.name), "the orphan's marked environment", 10, 0.01)
    (table.state.dir / "pids" / "orphan.json").unlink()  # as if dfslab died before writing it
    killed = table.stop_all(timeout=1)
    assert proc.pid in killed
    assert not proc.alive()


def test_listing_skips_a_record_removed_while_it_reads(table):
    """CI's sampler thread died here: a workload stopped a client between the sampler's listing
    of pids/ and its read of that file. A record listed but gone is a process no longer running."""
    table.spawn("sleeper", "node1", ["sleep", "60"])
    gone = table.state.pids_dir / "stopped-meanwhile.json"
    gone.symlink_to(table.state.pids_dir / "no-such-record.json")  # listed by glob, unreadable
    assert [proc.name for proc in table.all()] == ["sleeper"]
    gone.unlink()


def test_an_exited_process_says_its_last_words(table):
    # what a restart that failed reports (the node-loss undo's error): the end of the log, not its start
    lines = "; ".join(f"echo line{i}" for i in range(1, 41))
    proc = table.spawn("talker", "node1", ["sh", "-c", f"{lines}; echo 'F1126 listen tcp :10250: address already in use' >&2; exit 1"])
    deadline = time.monotonic() + 5
    while proc.alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not proc.alive()
    tail = proc.log_tail(3)
    assert tail == "line39 | line40 | F1126 listen tcp :10250: address already in use", tail
    proc.log = str(table.state.dir / "no-such.log")
    assert proc.log_tail().startswith("(no log")


def test_disk_reads_count_what_came_from_the_disk_not_the_page_cache(table):
    """The pushdown rows' osd_disk_read: a daemon reading 8 MiB with O_DIRECT (as BlueStore
    reads) counts 8 MiB; one reading the same file through the page cache that holds it (just
    written) counts next to nothing; processes of another name are not counted. (A shell's
    /proc/PID/io holds what its children it has reaped did, so `sh -c "READ; sleep"` counts READ.)"""
    data = table.state.dir / "disk-read-probe"
    data.write_bytes(b"x" * (8 << 20))
    table.spawn("osd.9", "node1", ["sh", "-c", f"dd if={data} of=/dev/null bs=1M iflag=direct status=none; sleep 60"])
    cat = table.spawn("mds.z", "node1", ["sh", "-c", f"cat {data} > /dev/null; sleep 60"])

    def read_calls(pid: int) -> int:  # bytes read(2) returned, from the disk or the page cache
        with open(f"/proc/{pid}/io") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("rchar:"))

    deadline = time.monotonic() + 10
    while ((disk_read_bytes(table.all(), "osd.") or 0) < 8 << 20 or read_calls(cat.pid) < 8 << 20) \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    assert disk_read_bytes(table.all(), "osd.") >= 8 << 20
    assert read_calls(cat.pid) >= 8 << 20 and disk_read_bytes(table.all(), "mds.") < 1 << 20
    assert disk_read_bytes(table.all(), "mgr.") is None  # none running: not counted, not 0

"""No step waits blind (dfslab.watch): an alarm from the cluster stops the step's running tools
within seconds and says why; a tool past its deadline is stopped and named; a timed write that
ended early fails instead of yielding a number. Real processes, a fake cluster's alarms."""

from __future__ import annotations

from types import SimpleNamespace

from dfslab.backends.ceph.checks import HealthChecks

import sys
import time

import pytest

from dfslab.watch import StepWatch
from dfslab.workloads import Measurement, Runner, WorkloadError
from dfslab.workloads.radosbench import RadosBench, RadosBenchParams


def runner(tmp_path) -> Runner:
    return Runner(command=lambda node, argv: argv, env={"PATH": "/usr/bin:/bin"}, raw_dir=tmp_path / "raw")


def test_an_alarm_stops_the_running_tool_within_the_watch_interval(tmp_path):
    asked = []

    def alarms():
        asked.append(time.monotonic())
        return ["OSD_FULL: 1 full osd(s)"] if len(asked) >= 3 else []
    r = runner(tmp_path)
    started = time.monotonic()
    with StepWatch(r, alarms, interval=0.2) as watch, pytest.raises(WorkloadError, match="exited -15"):
        r.run(["sleep", "60"], "sleeper")
    assert time.monotonic() - started < 5
    assert watch.reason == "OSD_FULL: 1 full osd(s)" and 0.5 <= watch.after < 5
    assert not r.live  # nothing of the step's is left to stop


def test_no_alarm_leaves_the_tool_alone(tmp_path):
    r = runner(tmp_path)
    with StepWatch(r, lambda: [], interval=0.1) as watch:
        assert r.run(["sh", "-c", "sleep 0.5; echo done"], "quiet").strip() == "done"
    assert watch.reason is None


def test_a_tool_past_its_deadline_is_stopped_and_named(tmp_path):
    r = runner(tmp_path)
    started = time.monotonic()
    with pytest.raises(WorkloadError, match=r"`sleep` was still running at its deadline \(1 s\)"):
        r.run(["sleep", "60"], "stuck", timeout=1)
    assert time.monotonic() - started < 5 and not r.live


def test_a_tool_past_its_deadline_gets_sigterm_first_and_sigkill_if_it_stays(tmp_path, monkeypatch):
    """A Job's wrapper deletes its Job on SIGTERM (SIGKILL at once left the Job running); one
    that ignores SIGTERM is killed after the grace."""
    import dfslab.workloads as workloads
    monkeypatch.setattr(workloads, "END_GRACE", 1.0)
    r = runner(tmp_path)
    cleaned = tmp_path / "cleaned"
    with pytest.raises(WorkloadError, match="still running at its deadline"):
        r.run(["sh", "-c", f"trap 'kill $!; echo deleted > {cleaned}; exit 143' TERM; sleep 60 >/dev/null & wait"],
              "wrapper", timeout=1)
    assert cleaned.read_text() == "deleted\n"
    cleaned.unlink()  # the same on several nodes at once (fio's clients: a Job each)
    wrapper = ["sh", "-c", f"trap 'kill $!; echo deleted > {cleaned}; exit 143' TERM; sleep 60 >/dev/null & wait"]
    with pytest.raises(WorkloadError, match="on client was still running at its deadline"):
        r.run_at_once({"client": (wrapper, "wrapper-at-once")}, timeout=1)
    assert cleaned.read_text() == "deleted\n" and not r.live
    started = time.monotonic()
    ignores = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"
    with pytest.raises(WorkloadError, match="still running at its deadline"):
        r.run([sys.executable, "-c", ignores], "stubborn", timeout=1)
    assert 1.9 <= time.monotonic() - started < 6 and not r.live


def test_tools_stopped_by_the_watch_get_the_time_a_jobs_wrapper_takes_to_clean_up(tmp_path, monkeypatch):
    """stop_tools (the watch's stop): a wrapper that takes 6 s to delete its Job on SIGTERM (more
    than the 5 s it had before, after which SIGKILL left the Job running) ends by itself; one that
    ignores SIGTERM is killed at the grace, which all the tools share."""
    import dfslab.workloads as workloads
    monkeypatch.setattr(workloads, "END_GRACE", 8.0)  # 50 s in use
    r = runner(tmp_path)
    cleaned = tmp_path / "cleaned"
    slow = r.popen(["sh", "-c", f"trap 'sleep 6; echo deleted > {cleaned}; exit 143' TERM; sleep 60 & wait"], watched=True)
    ignores = r.popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                       "time.sleep(60)"], watched=True)
    time.sleep(0.5)  # the traps set
    started = time.monotonic()
    r.stop_tools()
    assert slow.returncode == 143 and cleaned.read_text() == "deleted\n"
    assert 7.5 <= time.monotonic() - started < 12
    assert ignores.wait(timeout=5) == -9  # killed (the tool's own `run` reaps it)


def test_a_timed_write_that_ended_early_fails_the_step():
    """The issue's case: 60 s asked, rados bench stopped after 1.74 s as the pool filled."""
    params = RadosBenchParams(mode=["write", "seq"], seconds=60)
    rows = [Measurement("radosbench", "duration", 1.74, "s", {"mode": "write"}),
            Measurement("radosbench", "duration", 0.9, "s", {"mode": "seq"})]  # a read may end early
    why = RadosBench().shortfall(params, rows)
    assert why and why.startswith("asked for 60 s of writes, the tool ran 1.74 s")
    rows[0] = Measurement("radosbench", "duration", 60.02, "s", {"mode": "write"})
    assert RadosBench().shortfall(params, rows) is None


def test_a_write_stopped_at_dfslabs_own_object_cap_is_marked_not_failed():
    """rados bench's --max-objects (40 % of the pool's free space) ends a timed write on a small
    cluster before its seconds, on purpose: the step stands, with a cap_reached row the report lists."""
    from dfslab.report import short_phase_lines
    from dfslab.workloads.radosbench import cap_rows
    params = RadosBenchParams(mode=["write"], seconds=2)
    labels = {"mode": "write", "seconds": 2}
    rows = [Measurement("radosbench", "duration", 1.55, "s", labels),
            Measurement("radosbench", "bytes", 190 * 4 * 2**20, "B", labels)]
    assert cap_rows(rows, 191, 4 * 2**20) == []  # one object short of the cap: the tool ended by itself
    assert RadosBench().shortfall(params, rows).startswith("asked for 2 s of writes")
    rows += cap_rows(rows, 190, 4 * 2**20)
    assert [(r.metric, r.value, r.unit) for r in rows[2:]] == [("cap_reached", 190.0, "objects")]
    assert RadosBench().shortfall(params, rows) is None
    # not a failure, and not as asked either: 1.55 of 2 s is under 80 % of what was asked
    assert RadosBench().not_as_asked(params, rows) == (
        "stopped at dfslab's cap of 190 objects (40 % of the pool's free space, so the write cannot fill the cluster) "
        "after 1.6 of 2 s: give the OSDs more room (ceph.osd_size), or ask for fewer seconds")
    assert RadosBench().not_as_asked(RadosBenchParams(mode=["write"], seconds=1), rows) is None  # it ran its 1 s
    as_dicts = [{"workload": r.workload, "metric": r.metric, "value": r.value, "unit": r.unit, "params": r.params,
                 "repetition": 0, "t": None} for r in rows]
    assert any("stopped at dfslab's cap of 190 objects" in line for line in short_phase_lines(as_dicts))


def _bricks(*online: bool) -> list[dict]:
    return [{"brick": f"10.0.0.{i + 1}:/b{i}", "online": up} for i, up in enumerate(online)]


def test_a_gluster_set_below_its_quorum_is_an_alarm_and_one_brick_down_is_not():
    from dfslab.backends.gluster.backend import set_alarms
    from dfslab.backends.gluster.section import GlusterSpec
    replica3 = GlusterSpec(volume="replicate", replica=3)
    assert set_alarms(replica3, _bricks(True, False, True)) == []  # 2 of 3: writes go on
    [alarm] = set_alarms(replica3, _bricks(True, False, False))
    assert "replicate set 0 has 1 of 3 bricks online, needs 2" in alarm and "read-only" in alarm and "/b2" in alarm
    # two sets of a 2 x 3 volume: only the second is named
    [alarm] = set_alarms(replica3, _bricks(True, True, True, False, False, True))
    assert alarm.startswith("replicate set 1 ")
    replica2 = GlusterSpec(volume="replicate", replica=2)
    assert set_alarms(replica2, _bricks(True, False)) == []  # half, with the first brick up: quorum auto allows it
    assert set_alarms(replica2, _bricks(False, True))  # half without the first: read-only
    disperse = GlusterSpec(volume="disperse", disperse_data=2, redundancy=1)
    assert set_alarms(disperse, _bricks(False, True, True)) == []
    assert "needs 2" in set_alarms(disperse, _bricks(False, False, True))[0]
    assert set_alarms(GlusterSpec(volume="distribute"), _bricks(False, False)) == []


def test_a_brick_filesystem_out_of_space_is_an_alarm(tmp_path):
    import subprocess
    from dfslab.backends.gluster.backend import space_alarms
    assert space_alarms({"node1": tmp_path}) == []  # this machine's disk has room
    # a real filesystem with no room: a 1 MiB tmpfs
    small = tmp_path / "small"
    small.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "dfslab-test", str(small)], capture_output=True).returncode:
        pytest.skip("needs root to mount a tmpfs")
    try:
        [alarm] = space_alarms({"node2": small, "node3": tmp_path / "missing"})
        assert alarm.startswith("the bricks of node2 are full: 1 MiB free")
    finally:
        subprocess.run(["umount", str(small)], check=True)


def test_a_warning_is_kept_once_and_never_stops_the_tool(tmp_path):
    r = runner(tmp_path)
    said = iter([[], ["OSD_NEARFULL: 1 nearfull osd(s)"], ["OSD_NEARFULL: 1 nearfull osd(s)"], []] + [[]] * 50)
    with StepWatch(r, lambda: [], interval=0.1, warnings=lambda: next(said)) as watch:
        assert r.run(["sh", "-c", "sleep 0.8; echo done"], "nearfull").strip() == "done"
    assert watch.reason is None and watch.warnings == ["OSD_NEARFULL: 1 nearfull osd(s)"]


def test_ceph_says_nearfull_and_backfillfull_as_warnings_not_alarms():
    from dfslab.backends.ceph.backend import CephBackend
    from dfslab.backends.external.backend import ExternalBackend
    status = {"health": {"checks": {name: {"summary": {"message": said}} for name, said in (
        ("OSD_NEARFULL", "1 nearfull osd(s)"), ("POOL_BACKFILLFULL", "1 pool(s) backfillfull"), ("OSD_FULL", "1 full osd(s)"))}}}
    ceph = CephBackend.__new__(CephBackend)  # only what `sample` recorded matters here
    ceph.checks.saw(status)
    assert ceph.warnings() == ["OSD_NEARFULL: 1 nearfull osd(s)", "POOL_BACKFILLFULL: 1 pool(s) backfillfull"]
    assert ceph.alarms() == ["OSD_FULL: 1 full osd(s)"]
    # a Ceph dfslab was given is watched alike: its sample's status feeds the same checks
    site = ExternalBackend.__new__(ExternalBackend)
    site.ceph = SimpleNamespace(checks=HealthChecks())
    assert site.alarms() == []
    site.ceph.checks.saw(status)
    assert site.alarms() == ["OSD_FULL: 1 full osd(s)"] and len(site.warnings()) == 2
    for _ in range(2):  # answered before, then two questions in a row unanswered, the first 25 s ago
        site.ceph.checks.silence.missed(time.monotonic() - 25)
    assert "the monitors have not answered for 25 s" in site.alarms()[-1]
    site.ceph = None  # a POSIX mount only: nothing to watch
    assert site.alarms() == [] and site.warnings() == []


def test_the_report_lists_the_warnings_a_step_ran_under(tmp_path):
    from dfslab.report import build
    from dfslab.results import RunDir
    run = RunDir.create("warned", tmp_path)
    run.start("hash", {}, [])
    run.add([Measurement("radosbench", "bandwidth", 500.0, "MB/s", {"mode": "write"}, 0)])
    run.write_json("intervals.json", [{"label": "radosbench[0] mode=write", "workload": "radosbench", "repetition": 0,
                                       "start": 1.0, "end": 2.0, "error": None, "headlines": [], "rows": 1,
                                       "warnings": ["OSD_NEARFULL: 1 nearfull osd(s)"]}])
    run.write_json("status.json", {"name": "u", "filesystem": "ceph", "runtime": "local", "daemons": []})
    run.finish(failures=[], skipped=[], cluster="u", experiment="unit")
    html = build(run.path).read_text()
    assert "Ran under a warning" in html and "radosbench[0] mode=write rep 1: OSD_NEARFULL: 1 nearfull osd(s)" in html


def test_a_sized_run_that_moved_fewer_bytes_than_asked_fails_the_step(tmp_path):
    """filegrid asks for file_size x threads each way; the bytes rows are fio's own io_bytes (a real
    fio run here, 3 MiB x 2 jobs with 1 MiB records), so a run that stopped short fails, and
    one that moved them all stands. The file size is not a whole number of records, so fio's
    rounding down is what the check must allow for (asked 6 MiB of the 7 MiB the sizes add up to)."""
    import shutil
    from dfslab.workloads.filegrid import FileGrid, FileGridParams
    from dfslab.workloads.fiotool import fio_argv, parse_json
    if shutil.which("fio") is None:
        pytest.skip("fio is not installed (scripts/install-deps.sh installs it)")
    params = FileGridParams(target="machine", file_size="3584KiB", threads=2, record_size="1MiB")
    assert FileGrid().asked_bytes(params) == 6 * 2**20
    labels = params.model_dump(mode="python")
    rows = []
    for op in ("write", "read"):
        argv = fio_argv("grid", rw=op, bs=params.record_size, numjobs=params.threads, size=params.file_size,
                        ioengine="psync", directory=str(tmp_path))
        rows += [r for r in parse_json(runner(tmp_path).run(argv, f"grid-{op}"), "filegrid", labels, 0)
                 if r.params["op"] == op]
    assert FileGrid().shortfall(params, rows) is None
    short = [Measurement(r.workload, r.metric, r.value - 2**20 if r.metric == "bytes" and r.params["op"] == "read"
                         else r.value, r.unit, r.params) for r in rows]
    why = FileGrid().shortfall(params, short)
    assert why and why.startswith("asked to read 6,291,456 bytes, the tool reported 5,242,880")


def test_a_tool_whose_client_side_moves_nothing_is_stopped_as_no_progress(tmp_path):
    """A hung mount with a healthy cluster raises no alarm of the cluster's: the client side's
    bytes on the wire stop growing, and a window with under stall_bytes stops the tool."""
    r = runner(tmp_path)
    keepalives = iter(range(0, 10**9, 100))  # 100 bytes a look: a client's keepalives, nothing more
    started = time.monotonic()
    with StepWatch(r, lambda: [], interval=0.1, moved=lambda: next(keepalives), stall_seconds=1.0,
                   stall_bytes=2**20) as watch, pytest.raises(WorkloadError, match="exited -15"):
        r.run(["sleep", "60"], "hung")
    assert 1.0 <= watch.after < 5 and time.monotonic() - started < 10
    assert watch.reason.startswith("no progress: the client side moved 1,000 bytes on the wire in the last 1 s")


def test_a_tool_that_streams_is_left_alone_and_an_uncounted_wire_is_no_stall(tmp_path):
    r = runner(tmp_path)
    streaming = iter(range(0, 10**12, 2**20))  # 1 MiB a look
    with StepWatch(r, lambda: [], interval=0.1, moved=lambda: next(streaming), stall_seconds=0.3) as watch:
        r.run(["sleep", "1.5"], "busy")
    assert watch.reason is None
    with StepWatch(r, lambda: [], interval=0.1, moved=lambda: None, stall_seconds=0.3) as watch:
        r.run(["sleep", "1"], "uncounted")
    assert watch.reason is None


def test_only_workloads_that_stream_over_the_wire_are_watched_for_progress():
    from dfslab.workloads import workload as load_workload
    fio = load_workload("fio")
    assert fio.streams(fio.Params(target="fs")) and not fio.streams(fio.Params(target="machine"))
    for name in ("metadata", "sql"):  # small operations: a slow minute is no stall
        w = load_workload(name)
        assert not w.streams(w.Params())


def test_silence_counts_unanswered_questions_not_the_time_since_the_last_answer():
    """A sampler round slower than the threshold (a loaded machine, an exec through an API server)
    is not a silent daemon; two questions in a row unanswered over more than the limit are."""
    from dfslab.backends.silence import Silence
    silence = Silence(limit=20)
    silence.missed(time.monotonic() - 40)
    silence.missed(time.monotonic() - 30)
    assert silence.seconds() is None  # never answered at all: a question it cannot answer, not silence
    with silence.asking():  # answered...
        pass
    assert silence.seconds() is None  # ... and not asked again for a long while: no alarm
    silence.missed(time.monotonic() - 30)  # one question unanswered, 30 s ago: a single slow answer
    assert silence.seconds() is None
    with pytest.raises(TimeoutError):
        with silence.asking():  # the second in a row: silent since the first was asked
            raise TimeoutError
    assert silence.seconds() == pytest.approx(30, abs=1)
    with silence.asking():
        pass
    assert silence.seconds() is None  # an answer ends it
    silence.missed(time.monotonic() - 5)
    silence.missed(time.monotonic() - 1)
    assert silence.seconds() is None  # two misses, but within the limit


def test_each_backend_has_its_own_silence_at_its_own_limit():
    """A MooseFS and a GlusterFS backend (built without __init__, as tests do) each keep one Silence,
    at their own limits; two backends of one kind do not share it."""
    from dfslab.backends.gluster.backend import GlusterBackend
    from dfslab.backends.moosefs.backend import MooseFSBackend
    first, second = MooseFSBackend.__new__(MooseFSBackend), MooseFSBackend.__new__(MooseFSBackend)
    assert first.silence is first.silence and first.silence is not second.silence
    assert first.silence.limit == MooseFSBackend.MASTER_SILENCE
    assert GlusterBackend.__new__(GlusterBackend).silence.limit == GlusterBackend.GLUSTERD_SILENCE

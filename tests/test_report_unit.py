"""Report tables hold one unit per column; fault rows say whether writes blocked; run ids are
printed whole."""

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import DFSLAB, REPO
from dfslab.chaos.schedule import longest_stall
from dfslab.report import _fault_row, _scaling_figures, not_from_storage_lines, summarize


def row(workload, metric, value, unit, **params):
    return {"workload": workload, "metric": metric, "value": value, "unit": unit, "params": params, "t": None}


def test_latency_column_converts_seconds_and_milliseconds_to_one_unit():
    rows = [row("fio", "latency_avg", 0.4635, "ms", rw="randread"), row("fio", "latency_avg", 0.4635, "ms", rw="randread"),
            row("radosbench", "latency_avg", 0.25, "s", mode="write"),
            row("radosbench", "bandwidth", 300.0, "MB/s", mode="write")]
    lines, columns = summarize(rows, ["bandwidth", "latency_avg"])
    assert [head for _, head in columns] == ["bandwidth (MB/s)", "latency avg (ms)"]
    by = {line["workload"]: line["cells"] for line in lines}
    assert by["radosbench"]["latency_avg (ms)"].startswith("250")  # 0.25 s shown as 250 ms, not relabelled
    assert by["fio"]["latency_avg (ms)"].startswith("0.464")  # 3 significant figures


def test_metric_in_units_that_do_not_convert_gets_a_column_each():
    rows = [row("a", "bandwidth", 1.0, "MB/s"), row("b", "bandwidth", 2.0, "op/s")]
    _, columns = summarize(rows, ["bandwidth"])
    assert [head for _, head in columns] == ["bandwidth (MB/s)", "bandwidth (op/s)"]


def test_longest_stall_is_the_longest_gap_without_an_ack():
    acks = [{"ack": t} for t in (10.0, 10.5, 11.0, 23.0, 23.2)]
    assert longest_stall(acks, 10.0, 25.0) == 12.0
    assert longest_stall(acks, 12.0, 20.0) == 8.0  # no ack at all inside the window
    assert longest_stall([], 0, 10) is None


def test_fault_row_says_whether_writes_blocked():
    base = {"kind": "fill", "target": "osd.2", "inject": 100.0, "undo": 150.0, "in_effect": 113.0, "inject_s": 13.0}
    blocked = _fault_row({**base, "blocked_s": 37.0, "acked_during": 0}, 90.0)
    assert blocked["blocked"] == "yes, 37.0 s" and blocked["acked"] == "0" and blocked["in_effect"] == "13.0"
    flowing = _fault_row({**base, "blocked_s": 0.04, "acked_during": 900}, 90.0)
    assert flowing["blocked"].startswith("no") and not flowing["blocked_flag"]


def test_runs_prints_whole_ids_when_piped(tmp_path):
    long_id = "20261122-235959-" + "x" * 60
    run = tmp_path / long_id
    run.mkdir()
    (run / "provenance.json").write_text(json.dumps({"experiment": "e", "cluster": "c", "start": 1.0, "end": 2.0}))
    res = subprocess.run([*DFSLAB, "runs", "--root", str(tmp_path)], capture_output=True, text=True, cwd=REPO,
                         env={"COLUMNS": "80", "PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stderr
    assert str(run) in res.stdout.splitlines()[1]
    res = subprocess.run([*DFSLAB, "runs", "--root", str(tmp_path), "--json"], capture_output=True, text=True, cwd=REPO)
    assert json.loads(res.stdout)[0]["id"] == str(run)


def test_runs_says_how_each_run_ended_and_report_takes_a_bare_id(tmp_path):
    ends = {"a-ok": {"end": 2.0, "failures": []}, "b-int": {"end": 2.0, "interrupted": True, "failures": ["run aborted"]},
            "c-kill9": {}, "d-bad": {"end": 2.0, "failures": ["x"], "not_as_asked": ["y", "z"]}}
    for name, prov in ends.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "provenance.json").write_text(json.dumps({"experiment": "e", "cluster": "c", "start": 1.0, **prov}))
    res = subprocess.run([*DFSLAB, "runs", "--root", str(tmp_path), "--json"], capture_output=True, text=True, cwd=REPO)
    assert {Path(r["id"]).name: r["state"] for r in json.loads(res.stdout)} == {
        "a-ok": "ok", "b-int": "interrupted", "c-kill9": "running, or killed", "d-bad": "1 failed, 2 not as asked"}
    # `dfslab report ID` takes the id `runs` prints, as compare does, from the runs directory
    res = subprocess.run([*DFSLAB, "report", "no-such-run"], capture_output=True, text=True, cwd=REPO,
                         env={**os.environ, "DFSLAB_RUNS": str(tmp_path)})
    assert res.returncode == 2 and "a run id from `dfslab runs`" in res.stdout + res.stderr
    res = subprocess.run([*DFSLAB, "report", "a-ok"], capture_output=True, text=True, cwd=REPO,
                         env={**os.environ, "DFSLAB_RUNS": str(tmp_path)})
    assert "not a run directory" not in res.stdout + res.stderr  # found by its id (this stand-in has no results)


def test_ctrl_c_says_what_was_kept_removed_and_checked():
    from dfslab.results import runs_root
    from dfslab.phases import RunInterrupted
    run = runs_root() / "20261127-061500-quick"
    made = RunInterrupted(run, "small", removed=True, measured=3, faults=False).lines()
    assert made[0].startswith("interrupted: run 20261127-061500-quick keeps the 3 step(s) measured")
    assert made[1] == "cluster small, made for this run, was removed"
    assert made[2].startswith("dfslab run --resume ") and made[2].endswith(" runs the remaining steps on a fresh cluster")
    given = RunInterrupted(run, "small", removed=False, measured=1, faults=True).lines()
    assert given[1].startswith("cluster small was kept, as it was given (--cluster)")
    assert given[2].startswith("the integrity check did not run: dfslab verify small ") and "manifest.json" in given[2]
    assert given[3] == "runs with faults cannot be resumed yet: run the experiment again"  # no --resume advice
    gone = RunInterrupted(run, "faults", removed=True, measured=0, faults=True).lines()
    assert gone[2] == "the integrity check did not run, and the checksummed data went with the cluster"


def test_rows_that_did_not_reach_the_storage_are_listed_by_direction():
    rows = [{**row("fio", "from_storage", 0.001, "ratio", rw="randread", op="read", direct=False), "repetition": 0},
            {**row("fio", "from_storage", 0.001, "ratio", rw="randread", op="read", direct=True), "repetition": 0},
            {**row("fio", "from_storage", 1.004, "ratio", rw="randread", op="read", direct=True), "repetition": 1},
            {**row("fio", "from_storage", 0.3, "ratio", rw="write", op="write", direct=True), "repetition": 0}]
    lines = not_from_storage_lines(rows)
    assert len(lines) == 3
    assert "read, repetition 0: 0.00 of its bytes reached the client over its link" in lines[0]
    assert "write, repetition 0: 0.30 of its bytes left the client while it was timed" in lines[2]


def test_a_servers_sweep_on_one_machine_says_it_cannot_show_scaling():
    rows = [row("servers", "bandwidth", v, "MB/s", servers=n, op="write") for n, v in ((1, 850.0), (2, 899.0), (3, 906.0))]
    one = _scaling_figures(rows, {"servers": {"servers"}}, one_host=True)
    own = _scaling_figures(rows, {"servers": {"servers"}}, one_host=False)
    assert "cannot show how the filesystem scales" in one[0]["caption"]
    assert "cannot show" not in own[0]["caption"]


def test_help_texts_are_whole_sentences():
    """Every command's summary in `dfslab --help` ends a sentence, and a docstring's paragraph is
    not broken where its source line ended."""
    from dfslab.cli import app, data_app, images_app, whole_paragraphs
    assert whole_paragraphs("One.\n    Two,\n    three.\n\n    Four.") == "One. Two, three.\n\nFour."
    for group in (app, data_app, images_app):
        for info in group.registered_commands:
            summary = info.callback.__doc__.split("\n\n")[0]
            assert "\n" not in summary and summary.rstrip().endswith((".", ")")), (info.callback.__name__, summary)
            assert not summary.endswith("e.g."), summary


def progress_lines(*calls: tuple[str, str]) -> list[str]:
    """What a LiveProgress fed `calls` leaves on a pipe (as in CI logs), in a process of its own."""
    script = "from dfslab.cli import LiveProgress\nwith LiveProgress() as p:\n" + "".join(f"    p{c!r}\n" for c in calls)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO,
                          check=True).stderr.splitlines()


def test_progress_lines_are_whole_when_piped():
    """A finished step's line, piped (CI logs, grep): one line however long, nothing padded."""
    lines = progress_lines(("workload 1/2", "fio[1] target=fs, numjobs=4, iodepth=1, size=32MiB, seconds=4, rw=randread, "
                                            "bs=4KiB, direct=True, client_cache=None · rep 1/2"), ("workload 2/2", "next"))
    assert len(lines) == 1 and lines[0].startswith("✓ workload 1/2 fio[1] target=fs") and "rep 1/2 (" in lines[0], lines
    assert not lines[0].endswith(" ")


def test_a_step_that_failed_or_did_not_run_as_asked_is_no_check_mark():
    """run.py says how the running step ended before the next begins: ✗ failed, ◐ not as asked,
    each with its reason on the step's own line; the next step, fine, gets ✓ again."""
    lines = progress_lines(("workload 1/3", "radosbench[0] mode=write · rep 1/1"),
                           ("step not as asked", "stopped at dfslab's cap of 139 objects after 1.9 of 60 s"),
                           ("workload 2/3", "fio[1] · rep 1/1"), ("step failed", "fio exited 1"),
                           ("workload 3/3", "fio[2] · rep 1/1 · ETA 1m05s"), ("writing report", "runs/x"))
    assert lines[0].startswith("◐ workload 1/3 radosbench[0]") and lines[0].endswith(
        "not as asked: stopped at dfslab's cap of 139 objects after 1.9 of 60 s"), lines
    assert lines[1].startswith("✗ workload 2/3 fio[1]") and lines[1].endswith("failed: fio exited 1"), lines
    assert lines[2].startswith("✓ workload 3/3 fio[2] · rep 1/1 (") and "ETA" not in lines[2] and len(lines) == 3, lines


def test_a_phase_timed_under_two_seconds_is_marked_once_per_line_with_its_shortest_time():
    from dfslab.report import short_phase_lines, short_phases
    rows = [row("parallel", "duration", 0.13, "s", clients=1, op="write"),
            row("parallel", "duration", 0.19, "s", clients=1, op="write"),
            row("parallel", "duration", 2.4, "s", clients=2, op="write"),
            row("fio", "duration", 4.0, "s", rw="write"),
            {**row("radosbench", "duration", 0.5, "s", mode="write"), "t": 3}]  # a per-second row is no phase
    assert short_phases(rows) == {("parallel", "clients=1, op=write"): 0.13}
    (line,) = short_phase_lines(rows)
    assert line.startswith("parallel clients=1, op=write: timed over 0.13 s (under 2 s")


def test_the_first_screen_reads_a_small_block_step_by_its_iops():
    """4 KiB random reads are read in IOPS (their MB/s looks negligible beside a 1 MiB step's); the
    MB/s stays beside it, and a 1 MiB step keeps MB/s alone."""
    from dfslab.report import bottleneck_rows
    rows, intervals = [], []
    for bs, mbs, iops in ((4096, 24.3, 5930.0), (2**20, 426.0, 406.0)):
        params = {"target": "fs", "rw": "randread", "bs": bs, "op": "read"}
        step = f"fio[1] bs={bs} rep 0"
        rows += [{**row("fio", "bandwidth", mbs, "MB/s", **params), "step": step},
                 {**row("fio", "iops", iops, "op/s", **params), "step": step}]
        intervals.append({"workload": "fio", "label": f"fio[1] bs={bs}", "repetition": 0, "start": 10.0, "end": 20.0,
                          "headlines": [{"metric": "bandwidth", "value": mbs, "unit": "MB/s", "params": params}]})
    series = {"net.client.rx": [(float(t), 100.0) for t in range(10, 21)], "cpu.total": [(float(t), 50.0) for t in range(10, 21)]}
    small, large = bottleneck_rows(rows, intervals, series, replicas=2, units={"fio": {"bs": "B"}})
    assert small["result"] == "5.93 k op/s (24.3 MB/s)" and "bs=4KiB" in small["step"], small
    assert large["result"] == "426 MB/s" and "bs=1MiB" in large["step"], large


def test_a_step_too_short_to_time_shows_no_rate_on_the_first_screen_either():
    """The terminal's results table shows "–" for a phase under 2 s; the report's step table said
    its number (687 MB/s for a 1.7 s seq read) and a limit from its burst. Both say it now."""
    from dfslab.report import bottleneck_rows
    rows, intervals = [], []
    for mode, mbs, seconds in (("seq", 687.0, 1.7), ("write", 431.0, 10.0)):
        params = {"mode": mode, "op": "read" if mode == "seq" else "write"}
        step = "radosbench[0] rep 0"
        rows += [{**row("radosbench", "bandwidth", mbs, "MB/s", **params), "step": step},
                 {**row("radosbench", "duration", seconds, "s", **params), "step": step}]
        intervals.append({"workload": "radosbench", "label": "radosbench[0]", "repetition": 0, "start": 10.0, "end": 20.0,
                          "headlines": [{"metric": "bandwidth", "value": mbs, "unit": "MB/s", "params": params}]})
    series = {"net.client.rx": [(float(t), 100.0) for t in range(10, 21)], "cpu.total": [(float(t), 50.0) for t in range(10, 21)]}
    seq, write = bottleneck_rows(rows, intervals, series, replicas=2)
    assert seq["result"] == "–" and seq["limit"] == "too short to time (1.7 s)" and seq["bound"] is None, seq
    assert write["result"] == "431 MB/s" and write["limit"] != "too short to time (10 s)", write


def test_each_step_shows_what_kubernetes_itself_took_in_its_transfer_seconds():
    """`cpu.platform` (the sampler's sum over the runtime's platform processes) is averaged over the
    seconds the step moved data, as its CPU share is; a run without it has no such column."""
    from dfslab.report import bottleneck_rows
    rows = [row("fio", "bandwidth", 400.0, "MB/s", rw="write", op="write")]
    headline = {"metric": "bandwidth", "value": 400.0, "unit": "MB/s", "params": rows[0]["params"]}
    intervals = [{"workload": "fio", "start": 10.0, "end": 20.0, "headlines": [headline]}]
    net = [(float(t), 500.0 if 12 <= t <= 18 else 1.0) for t in range(10, 21)]
    # Kubernetes busy while the pool was made (t 10-11) and at 15 % of the machine during the transfer
    platform = [(float(t), 60.0 if t < 12 else 15.0) for t in range(10, 21)]
    series = {"net.client.tx": net, "cpu.total": [(float(t), 50.0) for t in range(10, 21)], "cpu.platform": platform}
    [line] = bottleneck_rows(rows, intervals, series, replicas=2)
    assert line["platform"] == "15 %"
    [without] = bottleneck_rows(rows, intervals, {k: v for k, v in series.items() if k != "cpu.platform"}, replicas=2)
    assert without["platform"] is None


def test_a_faulted_repetition_is_a_row_of_its_own_and_the_terminal_says_each_fault():
    """examples/s3.yaml's 1 MiB PUTs once read "66.4 ± 300 MB/s": the mean of 42.6 MB/s with the
    gateway killed and 90.3 MB/s without. A faulted repetition's rows carry the fault, so summaries
    and comparisons keep it apart; the terminal says what each fault did as it ends."""
    from dfslab.run import fault_line
    rows = [row("s3", "bandwidth", 42.6, "MB/s", mode="write", object_size=2**20, fault="kill rgw.node1"),
            {**row("s3", "bandwidth", 90.3, "MB/s", mode="write", object_size=2**20), "repetition": 1}]
    lines, _ = summarize(rows, ["bandwidth"])
    assert sorted(line["params"] for line in lines) == ["fault=kill rgw.node1, mode=write", "mode=write"], lines
    event = {"kind": "kill", "target": "rgw.node1", "error": None, "workload_start": 100.0, "inject": 103.0,
             "in_effect": 103.1, "undo": 107.2, "recover_s": 26.0}
    assert fault_line(event) == ("fault kill rgw.node1: in effect 3.1 s into the step, undone at 7.2 s, healthy "
                                 "again 26.0 s after the undo began")
    assert fault_line({**event, "recover_s": None}).endswith("not healthy again in time")  # a run before the wait was kept
    assert fault_line({**event, "recover_s": None, "recovery_timeout": 300.0}).endswith("not healthy again within 300 s")
    assert fault_line({**event, "error": "no daemon 'rgw.node9'"}) == "fault kill rgw.node1: no daemon 'rgw.node9'"
    # an upgrade acts step by step and has no undo: when it acted, and health after its last step
    steps = [{"what": "installed", "start": 105.0, "end": 105.0}, {"what": "mon.a", "start": 105.0, "end": 148.4}]
    upgrade = {**event, "kind": "upgrade", "target": "reef", "steps": steps, "undo_start": 149.4, "recover_s": 1.5}
    assert fault_line(upgrade) == ("fault upgrade reef: 2 steps from 5.0 s into the step, 43.4 s in all, "
                                   "healthy again 2.5 s after its last step")


def test_what_a_fault_cost_its_step_is_with_over_without_for_every_kind():
    from dfslab.report import _fault_row, fault_costs
    put = {"mode": "write", "object_size": 2**20}
    rows = [{**row("s3", "bandwidth", 42.6, "MB/s", **put, fault="kill rgw.node1"), "repetition": 0},
            {**row("s3", "bandwidth", 90.3, "MB/s", **put), "repetition": 1},
            {**row("fio", "bandwidth", 50.0, "MB/s", rw="write", fault="kill osd.1 + partition node2"), "repetition": 0},
            *({**row("fio", "bandwidth", v, "MB/s", rw="write"), "repetition": i} for i, v in ((1, 99.0), (2, 101.0), (3, 100.0)))]
    costs = fault_costs(rows)
    assert costs["kill rgw.node1"] == ["write 0.47 (one repetition each: no interval)"]
    (fio,) = costs["kill osd.1 + partition node2"]
    assert fio.startswith("write 0.50 (") and fio.endswith(")") and "no interval" not in fio  # over 3 clean repetitions
    event = {"kind": "partition", "target": "node2", "inject": 100.0, "undo": 110.0}
    assert _fault_row(event, 90.0, costs)["cost"] == fio  # each fault of the step shows its step's cost
    assert _fault_row({**event, "target": "node3"}, 90.0, costs)["cost"] == "–"

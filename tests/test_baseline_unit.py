"""The network baseline's client against a server that is not listening yet (a server in a pod
listens only once its pod runs): a refused connection is tried again, any other error is not.
The runner is a stand-in that writes what iperf3 would have printed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dfslab.workloads import WorkloadError
from dfslab.workloads import baseline

REFUSED = {"start": {"connected": []}, "intervals": [], "end": {}, "error": "unable to connect to server: Connection refused"}
MEASURED = {"start": {}, "intervals": [], "end": {"sum_received": {"bits_per_second": 8e9}}}


class ScriptedRunner:
    def __init__(self, raw_dir: Path, replies: list[dict]):
        self.raw_dir, self.replies, self.calls = raw_dir, list(replies), []

    def run(self, argv, name, node="client", timeout=600, check=True):
        self.calls.append((argv[:3], node, check))
        self.raw_dir.mkdir(parents=True, exist_ok=True)
        (self.raw_dir / f"{name}.txt").write_text(json.dumps(self.replies.pop(0)))
        return ""  # iperf3 exited non-zero: the output is only in raw/


def test_a_refused_connection_is_tried_again_until_the_server_listens(tmp_path, monkeypatch):
    monkeypatch.setattr(baseline.time, "sleep", lambda s: None)
    runner = ScriptedRunner(tmp_path, [REFUSED, REFUSED, MEASURED])
    assert baseline._iperf3(runner, "10.0.0.2", "5201", 3, "b", node="node1") == 1000.0
    assert runner.calls == [(["iperf3", "-c", "10.0.0.2"], "node1", False)] * 3


def test_another_error_or_a_server_that_never_listens_fails_with_its_message(tmp_path, monkeypatch):
    monkeypatch.setattr(baseline.time, "sleep", lambda s: None)
    runner = ScriptedRunner(tmp_path, [{"error": "unable to connect to server: No route to host"}])
    with pytest.raises(WorkloadError, match="No route to host; output in raw/b.txt"):
        baseline._iperf3(runner, "10.0.0.2", "5201", 3, "b")
    assert len(runner.calls) == 1
    monkeypatch.setattr(baseline, "CONNECT_WAIT", -1)  # the wait is over at the first refusal
    with pytest.raises(WorkloadError, match="Connection refused"):
        baseline._iperf3(ScriptedRunner(tmp_path, [REFUSED]), "10.0.0.2", "5201", 3, "b")


class LocalRunner:
    """Runs fio here for real, recording which node each run was meant for."""

    def __init__(self, raw_dir: Path, nodes: list[str], disk_per_node: bool, scratch: Path):
        self.raw_dir, self.nodes, self.disk_per_node, self.scratch = raw_dir, nodes, disk_per_node, scratch
        self.storage, self.calls, self.together = None, [], []

    def run(self, argv, name, node="client", timeout=600, check=True):
        import subprocess
        self.calls.append((name, node, [a for a in argv if a.startswith(("--directory", "--unlink"))]))
        return subprocess.run(argv, capture_output=True, text=True, check=True, timeout=timeout).stdout

    def run_at_once(self, tools, timeout=600):
        self.together.append(sorted(tools))
        return {node: self.run(argv, name, node, timeout) for node, (argv, name) in tools.items()}


def test_the_disk_baseline_runs_on_each_node_that_has_its_own_disk(tmp_path, monkeypatch):
    monkeypatch.setattr(baseline, "DISK_FILE_SIZE", "16M")  # the test's disk is this machine's
    shared = LocalRunner(tmp_path / "raw", ["node1", "node2"], False, tmp_path / "scratch")
    rows = baseline.disk(shared, 1)
    # the three jobs in one fio run, each its own rows (their reporting groups, not one sum)
    assert [(r.metric, r.params) for r in rows] == [(f"disk_{label}_{m}", {}) for label in ("write", "read", "randread")
                                                     for m in ("bandwidth", "iops")]
    bandwidth = {r.metric: r.value for r in rows if r.metric.endswith("bandwidth")}
    # a 4 KiB random read is not a 1 MiB sequential one: were the groups summed or confused, these would coincide
    assert len(set(bandwidth.values())) == 3 and all(v > 0 for v in bandwidth.values()), bandwidth
    assert [c[1] for c in shared.calls] == ["client"]
    own = LocalRunner(tmp_path / "raw", ["node1", "node2"], True, tmp_path / "scratch")
    rows = baseline.disk(own, 1)
    assert sorted({r.params["node"] for r in rows}) == ["node1", "node2"] and all(r.value > 0 for r in rows)
    assert len(rows) == 12
    assert [(c[0], c[1]) for c in own.calls] == [("baseline-fio-node1", "node1"), ("baseline-fio-node2", "node2")]
    assert own.together == [["node1", "node2"]] and shared.together == []  # own disks: every node's at once
    # fio removes its file in the Job's emptyDir: nothing to carry back, nothing left on the node
    assert all(f"--directory={tmp_path / 'raw' / ('baseline-disk-' + c[1])}" in c[2] and "--unlink=1" in c[2]
               for c in own.calls)
    assert "--unlink=1" not in shared.calls[0][2]
    assert sorted(p.name for p in (tmp_path / "raw").iterdir()) == []
